#!/usr/bin/env bash
# The one training loop's CUDA paths in one lent-GPU call (docs/ablation_archive.md, "On a GPU, 2026-11-27 (H200):
# one loop for every network"): each network the toolkit trains, through vc/training/loop.py, on the
# GPU: the student with the phonetic loss (its phone classifier a job of the loop too) in fp32 and with
# AMP, the attention model with AMP, the mel -> linear network and the adversarial post-filter (two
# optimizers, one gradient scaler) in fp32 and with AMP; a resume on the GPU; the student's conversions
# on the GPU against the CPU; the GPU conversion test. gpu_carry/ (git-ignored, carried with .whl, the
# wheels of librosa and soundfile and their needs) holds: train.tsv dev.tsv eval.tsv (the first 40 / 10
# / 4 pairs of the recipe's lists, paths wav/... beside them), wav/ (their FLACs), durations.pt and
# phones.json (the recipe's EXP/durations_phones.pt and its phone alignments).
#   bash .ci/gpu/loop.sh OUT [DEVICE=cuda] [STEPS=200]   (cpu 6: a local trial)
#   QUICK=1: without the attention model and the student in fp32
set -u
OUT=${1:-$OUT}; DEV=${2:-cuda}; STEPS=${3:-200}
export PYTHONUNBUFFERED=1; PY=${PY:-python3}; W=/tmp/w; rm -rf $W; mkdir -p $W
. .ci/gpu/device.sh
G=gpu_carry; C=egs/arctic/vc1/conf
DATA="data.train_list=$G/train.tsv data.dev_list=$G/dev.tsv data.cache_dir=$W/features data.durations=$G/durations.pt data.phones=$G/phones.json train.max_minutes=0 train.eval_every=$((STEPS/2)) train.log_every=$((STEPS/4))"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
run() {  # name command...: its exit code, wall time and the lines that say what it did
  local name=$1; shift; local t0; t0=$(date +%s%N)
  timeout 150 "$@" > $W/$name.log 2>&1; echo "== $name rc=$? wall_ms=$(ms $t0)"
  grep -iE "training on|resumed|phone classifier|step +[0-9]+:|mel -> linear network|post-filter:|skipped|error|Traceback" $W/$name.log | tail -8
}
AMPS="false true"; [ -n "${QUICK:-}" ] && AMPS=true
for amp in $AMPS; do
  run student_$amp $PY -m vc.cli train --config $C/student.yaml --out $W/student_$amp --no-progress $DATA \
    train.max_steps=$STEPS train.amp=$amp train.phonetic_weight=1.0 train.phonetic_minutes=0.25
done
[ -z "${QUICK:-}" ] && run attention_true $PY -m vc.cli train --config $C/default.yaml --out $W/attention_true --no-progress $DATA \
  train.max_steps=$STEPS train.amp=true
run student_resumed $PY -m vc.cli train --config $C/student.yaml --out $W/student_true --no-progress --resume $DATA \
  train.max_steps=$((STEPS + STEPS / 2)) train.amp=true train.phonetic_weight=1.0 train.phonetic_minutes=0.25
CK=$W/student_true/checkpoints
for amp in false true; do
  run mel2linear_$amp $PY -m vc.cli mel2linear-train $G/train.tsv --config $W/student_true/config.yaml \
    --out $W/m2l_$amp/mel2linear.pt --device $DEV --max-steps $((STEPS * 3)) --max-minutes 0 --valid-files 4 \
    --no-progress --set train.amp=$amp --set mel2linear.valid_every=$STEPS
  run postfilter_$amp $PY -m vc.cli postfilter-train $G/train.tsv --checkpoint $CK/best.pt \
    --out $W/pf_$amp/postfilter.pt --device $DEV --max-steps $STEPS --max-minutes 0 --valid-files 4 --no-progress \
    --set postfilter.warmup_steps=$((STEPS / 4)) --set train.amp=$amp
done
cp $W/m2l_true/mel2linear.pt $W/pf_true/postfilter.pt $CK/
for d in $DEV cpu; do
  t0=$(date +%s%N)
  timeout 120 $PY -m vc.cli convert --checkpoint $CK/best.pt --device $d --out-dir $W/conv_$d --no-progress \
    $(cut -f2 $G/eval.tsv | sed "s|^|$G/|") > $W/conv_$d.log 2>&1
  echo "convert device=$d rc=$? wall_ms=$(ms $t0)"; tail -n 2 $W/conv_$d.log
done
$PY - "$W" "$DEV" <<'PYEOF'
import glob, os, sys, numpy as np, soundfile as sf
w, dev = sys.argv[1:]
for a in sorted(glob.glob(f"{w}/conv_{dev}/*.wav")):
    x, _ = sf.read(a); y, _ = sf.read(a.replace(f"conv_{dev}", "conv_cpu")); n = min(len(x), len(y))
    snr = 10 * np.log10(np.sum(y[:n] ** 2) / max(np.sum((x[:n] - y[:n]) ** 2), 1e-20))
    print(os.path.basename(a), "samples", len(x), len(y), "SNR(%s vs cpu) %.1f dB" % (dev, snr))
PYEOF
if [ "$DEV" = cuda ]; then
  $PY -m pytest -q -p no:cacheprovider tests/test_convert.py -k gpu 2>&1 | tail -n 3
fi
for f in $W/*.log; do cp $f $OUT/ 2>/dev/null; done
ls $OUT | head -20
