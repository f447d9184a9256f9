#!/usr/bin/env bash
# The main job's model on CUDA in one lent-GPU call (docs/ablation_archive.md, "On a GPU, 2026-12-04 (NVIDIA H200): the
# main job's model and HiFi-GAN on CUDA"): the recognition-synthesis converter (its recognizer with
# its augmented crops, then its synthesizer) trained in fp32 and with AMP, resumed on the GPU, its
# companions (mel -> linear network, post-filter) trained on its conversions with AMP; its conversions
# through Griffin-Lim and through HiFi-GAN on the GPU against the CPU (wall time, waveform SNR); the GPU
# tests. gpu_carry/ (git-ignored, carried with .whl, the wheels of librosa and soundfile and their needs):
#   train.tsv dev.tsv eval.tsv   the first 120 / 16 / 8 pairs of the recipe's lists (64 MiB in all), paths wav/... beside
#   wav/                         their FLACs
#   phones.json durations.pt     the recipe's EXP/phones.json (those pairs) and EXP/durations_dtw.pt
#   universal16.pt               the wheel's universal generator in float16 (the carry limit is 64 MiB):
#                                python .ci/gpu/hifigan_join.py --half gpu_carry/universal16.pt
#   bash .ci/gpu/recognition_synthesis.sh OUT [DEVICE=cuda] [STEPS=300]   (cpu 20: a local trial)
set -u
OUT=${1:-$OUT}; DEV=${2:-cuda}; STEPS=${3:-300}
export PYTHONUNBUFFERED=1; PY=${PY:-python3}; W=/tmp/w_rs; rm -rf $W; mkdir -p $W/hifigan
. .ci/gpu/device.sh
G=gpu_carry; C=egs/arctic/vc1/conf
$PY .ci/gpu/hifigan_join.py --float32 $G/universal16.pt $W/hifigan/generator.pth || exit 1
DATA="data.train_list=$G/train.tsv data.dev_list=$G/dev.tsv data.cache_dir=$W/features data.durations=$G/durations.pt data.phones=$G/phones.json train.max_minutes=0 train.eval_every=$((STEPS/2)) train.log_every=$((STEPS/4))"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
run() {  # name command...: its exit code, wall time and the lines that say what it did
  local name=$1; shift; local t0; t0=$(date +%s%N)
  timeout 150 "$@" > $W/$name.log 2>&1; echo "== $name rc=$? wall_ms=$(ms $t0)"
  grep -iE "training on|resumed|phone classifier|recognizer|step +[0-9]+:|training: |mel -> linear network|post-filter:|skipped|error|Traceback" $W/$name.log | tail -8
}
for amp in false true; do
  run rs_$amp $PY -m vc.cli train --config $C/recognition_synthesis.yaml --out $W/rs_$amp --no-progress $DATA \
    train.max_steps=$STEPS train.amp=$amp train.phonetic_minutes=0.5
done
run rs_resumed $PY -m vc.cli train --config $C/recognition_synthesis.yaml --out $W/rs_true --no-progress --resume \
  $DATA train.max_steps=$((STEPS + STEPS / 2)) train.amp=true train.phonetic_minutes=0.5
CK=$W/rs_true/checkpoints
run mel2linear $PY -m vc.cli mel2linear-train $G/train.tsv --config $W/rs_true/config.yaml --checkpoint $CK/best.pt \
  --out $CK/mel2linear.pt --device $DEV --max-steps $((STEPS * 2)) --max-minutes 0 --valid-files 4 --no-progress \
  --set mel2linear.valid_every=$STEPS
run postfilter $PY -m vc.cli postfilter-train $G/train.tsv --checkpoint $CK/best.pt --out $CK/postfilter.pt \
  --device $DEV --max-steps $STEPS --max-minutes 0 --valid-files 4 --no-progress --set postfilter.warmup_steps=$((STEPS / 4))
EVAL=$(cut -f2 $G/eval.tsv | sed "s|^|$G/|")
for voc in griffin-lim hifigan; do
  extra=(); [ $voc = hifigan ] && extra=(--vocoder-checkpoint $W/hifigan/generator.pth)
  for d in $DEV cpu; do
    threads=(); [ $d = cpu ] && threads=(--threads 4)
    for round in 1 2; do  # the second round's time: the first pays for cuDNN's and the generator's set-up
      rm -rf $W/conv_${voc}_$d; t0=$(date +%s%N)
      timeout 150 $PY -m vc.cli convert --checkpoint $CK/best.pt --device $d --vocoder $voc "${extra[@]}" \
        "${threads[@]}" --out-dir $W/conv_${voc}_$d --no-progress $EVAL > $W/conv_${voc}_$d.log 2>&1
      echo "convert $voc device=$d round $round rc=$? wall_ms=$(ms $t0)"
    done
    tail -n 2 $W/conv_${voc}_$d.log
  done
done
$PY - "$W" "$DEV" "$G" <<'PYEOF'
import glob, os, sys, numpy as np, soundfile as sf
w, dev, g = sys.argv[1:]
seconds = sum(sf.info(f"{g}/" + line.split("\t")[1]).duration for line in open(f"{g}/eval.tsv").read().splitlines())
print("eval input: %.1f s" % seconds)
for voc in ("griffin-lim", "hifigan"):
    for a in sorted(glob.glob(f"{w}/conv_{voc}_{dev}/*.wav")):
        x, _ = sf.read(a); y, _ = sf.read(a.replace(f"_{dev}/", "_cpu/")); n = min(len(x), len(y))
        snr = 10 * np.log10(np.sum(y[:n] ** 2) / max(np.sum((x[:n] - y[:n]) ** 2), 1e-20))
        print(voc, os.path.basename(a), "samples", len(x), len(y), "SNR(%s vs cpu) %.1f dB" % (dev, snr))
PYEOF
if [ "$DEV" = cuda ]; then
  $PY -m pytest -q -p no:cacheprovider tests/test_convert.py tests/test_vocoders.py -k gpu 2>&1 | tail -n 3
fi
for f in $W/*.log; do cp $f $OUT/ 2>/dev/null; done
ls $OUT | head -20
