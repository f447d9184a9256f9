#!/usr/bin/env bash
# The second device call (docs/ablation.md, "Many voices on a GPU"): fine-tune the main job's model
# (gpu_carry/init.pt = vc export --no-postfilter of its averaged.pt) on the many-voice third
# for what is left of BUDGET seconds; average the last 3 snapshots. Usage: bash finetune.sh OUT [BUDGET] [PY]
set -u
OUT=$1; BUDGET=${2:-190}; PY=${3:-python3}; START=$(date +%s); W=/tmp/w; mkdir -p $W
export PYTHONUNBUFFERED=1
if [ "$PY" = python3 ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
CONF=egs/arctic/vc1/conf/any2one.yaml
$PY gpu_carry/unpack_features.py gpu_carry/feats.xz $CONF $W/data || exit 1
left=$(( BUDGET - ($(date +%s) - START) - 35 ))
minutes=$($PY -c "print(max(0.5, round($left / 60, 2)))")
echo "fine-tuning for $minutes min at +$(( $(date +%s) - START )) s"
$PY -m vc.cli train --config $CONF --out $W/ft --no-progress data.train_list=$W/data/train.tsv \
  data.dev_list=$W/data/dev.tsv data.cache_dir=$W/data/features train.init_from=gpu_carry/init.pt \
  train.learning_rate=0.0005 train.warmup_steps=50 train.max_minutes=$minutes data.batch_size=64 \
  train.eval_every=${TRAIN_EVAL:-150} train.max_steps=${MAX_STEPS:-100000} > $W/ft.log 2>&1; echo "train rc=$?"
grep -E "starting from|monitor|valid loss" $W/ft.log | tail -12
$PY -m vc.cli average $W/ft/checkpoints --last 3 --out $W/ft/checkpoints/averaged.pt; echo "average rc=$?"
cp $W/ft/checkpoints/averaged.pt $W/ft/config.yaml $W/ft/stats.json $W/ft/train.log $OUT/
echo "done at +$(( $(date +%s) - START )) s"
