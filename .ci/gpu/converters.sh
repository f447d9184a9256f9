#!/usr/bin/env bash
# The converters' CUDA paths in one lent-GPU call (docs/ablation_archive.md, "On a GPU, 2026-11-27"): the student
# with the phonetic loss (its phone classifier trained on the GPU too), fp32 against AMP, STEPS steps each;
# the AMP checkpoint converting eight eval files on the GPU and on
# the CPU (waveform SNR between them); the GPU conversion test. gpu_carry/ (git-ignored, carried with .whl,
# the wheels of librosa and soundfile and their needs) holds the data, made here from the recipe's folders:
#   train.tsv dev.tsv (the first 240 and 40 lines of the recipe's lists), exp/features/ (vc features
#   --config egs/arctic/vc1/conf/student.yaml --out gpu_carry/exp on those lists: the caches are named after
#   the lists' text, so the corpus need not travel), durations_dtw.pt (the recipe's EXP/durations_dtw.pt),
#   durations_phones.phones.json (its EXP/phones.json), wav/ (bdl's arctic_b0440..b0447) and this script.
#   bash gpu_carry/check.sh OUT [DEVICE=cuda] [STEPS=200]     (PY=python PM=0.02 ... cpu 4: a local trial)
set -u
OUT=${1:-$OUT}; DEV=${2:-cuda}; STEPS=${3:-200}
export PYTHONUNBUFFERED=1; PY=${PY:-python3}; W=/tmp/w; rm -rf $W; mkdir -p $W
. .ci/gpu/device.sh
G=gpu_carry
DATA="data.train_list=$G/train.tsv data.dev_list=$G/dev.tsv data.cache_dir=$G/exp/features data.durations=$G/durations_dtw.pt data.phones=$G/durations_phones.phones.json train.phonetic_weight=1.0 train.max_minutes=0 train.max_steps=$STEPS train.eval_every=$((STEPS/2)) train.log_every=$((STEPS/4))"
run_train() {  # name config extra...
  local name=$1 conf=$2; shift 2; local t0; t0=$(date +%s%N)
  timeout 200 $PY -m vc.cli train --config $conf --out $W/$name --no-progress $DATA "$@" > $W/$name.log 2>&1
  echo "== $name rc=$? wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"
  grep -iE "training on|phone classifier|step +[0-9]+|dev|error|Traceback|took" $W/$name.log | tail -12
  cp $W/$name.log $OUT/ 2>/dev/null
}
run_train student_fp32 egs/arctic/vc1/conf/student.yaml train.amp=false train.phonetic_minutes=${PM:-0.3}
run_train student_amp egs/arctic/vc1/conf/student.yaml train.amp=true train.phonetic_minutes=${PM:-0.3}
for m in student_amp; do
  for d in $DEV cpu; do
    t0=$(date +%s%N)
    timeout 120 $PY -m vc.cli convert --checkpoint $W/$m/checkpoints/best.pt --device $d --out-dir $W/conv_${m}_$d --no-progress $G/wav/*.flac > $W/conv_${m}_$d.log 2>&1
    echo "convert $m device=$d rc=$? wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"; tail -2 $W/conv_${m}_$d.log
  done
done
$PY - <<PYEOF
import glob, os, numpy as np, soundfile as sf
for m in ("student_amp",):
    for a in sorted(glob.glob("$W/conv_%s_$DEV/*.wav" % m)):
        b = a.replace("_$DEV/", "_cpu/")
        if not os.path.exists(b): print("missing", b); continue
        x, _ = sf.read(a); y, _ = sf.read(b); n = min(len(x), len(y))
        snr = 10 * np.log10(np.sum(y[:n] ** 2) / max(np.sum((x[:n] - y[:n]) ** 2), 1e-20))
        print(m, os.path.basename(a), "len", len(x), len(y), "SNR(%s vs cpu) %.1f dB" % ("$DEV", snr))
PYEOF
[ "$DEV" = cuda ] && timeout 120 $PY -m pytest -q -p no:cacheprovider tests/test_convert.py -k gpu 2>&1 | tail -3
echo done
