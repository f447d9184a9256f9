# The bundled model's conversions of gpu_carry/wav/*.flac on the GPU against the CPU: output frames, mel
# and waveform differences, log-spectral distance (docs/ablation_archive.md, "On a GPU").
set -u; export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
python3 - <<'PYEOF'
import glob, time, numpy as np, torch
from vc.inference.converter import Converter
files = sorted(glob.glob("gpu_carry/wav/*.flac"))
res = {}
for dev in ("cuda", "cpu"):
    c = Converter.from_pretrained(device=dev)
    c.convert_file(files[0])
    if dev == "cuda": torch.cuda.synchronize()
    t = time.perf_counter(); res[dev] = [c.convert_file(f) for f in files]
    if dev == "cuda": torch.cuda.synchronize()
    print(dev, "8 files one by one: %.2f s" % (time.perf_counter() - t))
def spec(x): return np.log10(np.abs(np.fft.rfft(np.lib.stride_tricks.sliding_window_view(x, 1024)[::256] * np.hanning(1024), axis=1)) + 1e-5)
for f, g, c in zip(files, res["cuda"], res["cpu"]):
    n = min(len(g.wave), len(c.wave)); m = min(len(g.mel), len(c.mel))
    snr = 10 * np.log10(np.sum(c.wave[:n] ** 2) / max(np.sum((g.wave[:n] - c.wave[:n]) ** 2), 1e-20))
    lsd = np.sqrt(np.mean((20 * (spec(g.wave[:n]) - spec(c.wave[:n]))) ** 2))
    print(f.split("/")[-1], "frames", len(g.mel), len(c.mel), "mel max|diff| %.2e" % np.abs(g.mel[:m] - c.mel[:m]).max(), "wave SNR %.1f dB" % snr, "LSD %.2f dB" % lsd)
PYEOF
