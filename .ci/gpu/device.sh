# Sourced by the device scripts once DEV and PY are set: on a CUDA call, the carried wheels (.whl: librosa,
# soundfile and their needs) installed beside the source on PYTHONPATH, and the machine named; then which
# torch runs and whether it sees the GPU.
if [ "$DEV" = cuda ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; lscpu | grep "Model name"
fi
$PY -c "import torch, librosa, soundfile; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
