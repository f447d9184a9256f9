#!/usr/bin/env bash
# The CUDA paths on one GPU, in one call (docs/ablation_archive.md, "On a GPU"): AMP against fp32 training (40 steps
# each), `vc convert` on the GPU and on the CPU, then the many-voice model (conf/any2one.yaml, batch 64)
# trained for what is left of BUDGET seconds, and its last 3 snapshots averaged. Its data is
# gpu_carry/feats.xz, written here by .ci/gpu/pack_features.py (the GPU machine has neither the corpus
# nor the TTS voices); gpu_carry/ (git-ignored, carried) also holds copies of this folder's scripts and eight
# eval FLACs of bdl (arctic_b0440..b0447).
#   bash gpu_carry/run.sh OUT [BUDGET_S=540] [DEVICE=cuda]    (CHECK_STEPS, MAX_STEPS, TRAIN_EVAL: smaller local trials)
set -u
OUT=${1:-$OUT}; BUDGET=${2:-540}; DEV=${3:-cuda}
START=$(date +%s); W=/tmp/w; mkdir -p $W
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
. .ci/gpu/device.sh
CONF=egs/arctic/vc1/conf/any2one.yaml
$PY gpu_carry/unpack_features.py gpu_carry/feats.xz $CONF $W/data || exit 1
echo "unpacked at +$(( $(date +%s) - START )) s"
DATA="data.train_list=$W/data/train.tsv data.dev_list=$W/data/dev.tsv data.cache_dir=$W/data/features"
# 1. AMP against fp32: 40 steps each, same seed and data
for amp in false true; do
  t0=$(date +%s%N)
  timeout 150 $PY -m vc.cli train --config $CONF --out $W/check_amp_$amp --no-progress $DATA \
    train.max_minutes=0 train.max_steps=${CHECK_STEPS:-40} train.eval_every=${CHECK_EVAL:-20} train.log_every=10 train.amp=$amp data.batch_size=64 \
    > $W/check_amp_$amp.log 2>&1; rc=$?
  echo "AMP=$amp rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"; grep -iE "step|loss|error|Traceback" $W/check_amp_$amp.log | tail -6
done
# 2. conversion: bundled model on GPU and CPU, same 8 files
for d in $DEV cpu; do
  t0=$(date +%s%N)
  timeout 120 $PY -m vc.cli convert --device $d --out-dir $W/conv_$d --no-progress gpu_carry/wav/*.flac > $W/conv_$d.log 2>&1; rc=$?
  echo "convert device=$d rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"; tail -3 $W/conv_$d.log
done
$PY - <<PYEOF
import glob, numpy as np, soundfile as sf, os
for a in sorted(glob.glob("$W/conv_$DEV/*.wav")):
    b = a.replace("conv_$DEV", "conv_cpu")
    if not os.path.exists(b): print("missing", b); continue
    x, _ = sf.read(a); y, _ = sf.read(b); n = min(len(x), len(y))
    snr = 10*np.log10(np.sum(y[:n]**2)/max(np.sum((x[:n]-y[:n])**2), 1e-20))
    print(os.path.basename(a), "len", len(x), len(y), "SNR(gpu vs cpu) %.1f dB" % snr)
PYEOF
cp $W/check_amp_true.log $OUT/check_amp_true.log 2>/dev/null; cp $W/check_amp_false.log $OUT/check_amp_false.log 2>/dev/null
# 3. the many-voice model, for the time left (minus 75 s for the final evaluation, averaging and copying)
left=$(( BUDGET - ($(date +%s) - START) - 75 ))
minutes=$($PY -c "print(max(1.0, round($left / 60, 2)))")
echo "training for $minutes min at +$(( $(date +%s) - START )) s"
$PY -m vc.cli train --config $CONF --out $W/exp --no-progress $DATA train.max_minutes=$minutes \
  data.batch_size=64 train.eval_every=${TRAIN_EVAL:-200} train.max_steps=${MAX_STEPS:-100000} > $W/train.log 2>&1; echo "train rc=$?"
tail -5 $W/train.log
$PY -m vc.cli average $W/exp/checkpoints --last 3 --out $W/exp/checkpoints/averaged.pt; echo "average rc=$?"
cp $W/exp/checkpoints/averaged.pt $W/exp/config.yaml $W/exp/stats.json $OUT/ 2>/dev/null
cp $W/train.log $OUT/train_console.log; cp $W/exp/train.log $OUT/train.log 2>/dev/null
ls -la $W/exp/checkpoints
echo "done at +$(( $(date +%s) - START )) s"
