"""Section 5: `vc serve` under load, with the bundled model.

Cold start: `python -m vc.cli serve --port 0` (as the `vc` script runs) from process start until
GET / answers. Then a 3 s recording posted to /api/convert by 1, 4 and 16 concurrent clients, the
same number of requests at each level: latency per request (p50, p95, from send to the last byte)
and requests per minute over the level's wall time, with the server's peak memory (VmHWM) after
it. Conversions run one at a time inside the server (vc/serving/app.py), so latency grows with the
queue while throughput stays that of one conversion. Then 16 clients at once post a recording just
under the default limit (119 s of eval sources, joined), after 16 that post a decompression bomb (a
1.1 MB FLAC of two hours of 48 kHz silence): how many were answered or refused, the wall time, and the peak memory
after each.
"""

from __future__ import annotations

import io
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

import numpy as np
import soundfile as sf
from benchlib import Setup, list_pairs

INPUT_SECONDS = 3.0
CLIENTS = (1, 4, 16)


def multipart(audio: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="audio"; filename="in.wav"\r\n'
        "Content-Type: audio/wav\r\n\r\n".encode()
        + audio
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def post(url: str, body: bytes, content_type: str) -> tuple[float, int]:
    """Seconds from send to the last byte, and the HTTP status."""
    request = urllib.request.Request(f"{url}/api/convert", data=body, headers={"Content-Type": content_type})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        exc.read()
        status = exc.code
    return time.perf_counter() - started, status


def peak_memory_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def load_level(url: str, body: bytes, content_type: str, clients: int, requests: int) -> dict:
    """``requests`` conversions spread over ``clients`` threads: latencies of the answered ones,
    throughput, and how many were refused (503: the queue was full)."""
    latencies: list[float] = []
    refused: list[int] = []
    lock = threading.Lock()

    def client(count: int) -> None:
        for _ in range(count):
            seconds, status = post(url, body, content_type)
            with lock:
                (latencies if status == 200 else refused).append(seconds)

    share = [requests // clients + (k < requests % clients) for k in range(clients)]
    threads = [threading.Thread(target=client, args=(n,)) for n in share]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    ordered = sorted(latencies) or [float("nan")]
    return {
        "clients": clients,
        "requests": len(latencies),
        "refused": len(refused),
        "p50_s": statistics.median(ordered),
        "p95_s": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "requests_per_minute": 60 * len(latencies) / wall,
    }


def bomb() -> bytes:
    """A 1.1 MB FLAC holding two hours of 48 kHz silence (1.3 GB as float32 once decoded)."""
    out = io.BytesIO()
    with sf.SoundFile(out, "w", samplerate=48000, channels=1, format="FLAC") as f:
        block = np.zeros(48000 * 600, dtype=np.float32)
        for _ in range(12):
            f.write(block)
    return out.getvalue()


def burst(url: str, pid: int, clients: int, audio: bytes) -> dict:
    """``clients`` posts of ``audio`` at once: their statuses, the wall time and the peak memory after."""
    body, content_type = multipart(audio)
    statuses: list[int] = []
    threads = [
        threading.Thread(target=lambda: statuses.append(post(url, body, content_type)[1]))
        for _ in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "clients": clients,
        "answered": statuses.count(200),
        "refused_413": statuses.count(413),
        "wall_s": time.perf_counter() - started,
        "peak_memory_mb": peak_memory_mb(pid),
    }


def longest(setup: Setup, seconds: float = 119.0) -> bytes:
    """Eval sources joined up to ``seconds``, as FLAC."""
    waves, rate = [], None
    for pair in list_pairs(setup, "eval", 100):
        wave, rate = sf.read(pair.source, dtype="float32")
        waves.append(wave)
        if sum(map(len, waves)) >= seconds * rate:
            break
    out = io.BytesIO()
    sf.write(out, np.concatenate(waves)[: int(seconds * rate)], rate, format="FLAC")
    return out.getvalue()


def start_server() -> tuple[subprocess.Popen, str, float]:
    """`vc serve --port 0` in a new process; its URL and the seconds until the page answered."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "vc.cli", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = process.stdout.readline()  # "vc serve: http://127.0.0.1:PORT/ ..."
    url = line.split()[2].rstrip("/")
    while True:
        try:
            with urllib.request.urlopen(f"{url}/", timeout=5) as response:
                response.read()
            return process, url, time.perf_counter() - started
        except OSError:
            time.sleep(0.02)


def measure_serve(setup: Setup) -> dict:
    source = list_pairs(setup, "eval", 1)[0].source
    wave, rate = sf.read(source, dtype="float32")
    encoded = io.BytesIO()
    sf.write(encoded, wave[: int(INPUT_SECONDS * rate)], rate, format="WAV")
    body, content_type = multipart(encoded.getvalue())
    requests = max(CLIENTS) if setup.sizes.gl_repeats > 3 else max(CLIENTS) // 2
    process, url, cold = start_server()
    try:
        post(url, body, content_type)  # the model loads on its first conversion
        started_mb = peak_memory_mb(process.pid)
        levels = []
        for clients in CLIENTS:
            levels.append(load_level(url, body, content_type, clients, requests))
            levels[-1]["peak_memory_mb"] = peak_memory_mb(process.pid)
        bombs = burst(url, process.pid, max(CLIENTS), bomb())  # first: its peak is the bombs' own
        long = burst(url, process.pid, max(CLIENTS), longest(setup))
    finally:
        process.terminate()
        process.wait()
    return {
        "input_seconds": INPUT_SECONDS,
        "cold_start_s": cold,
        "memory_after_first_mb": started_mb,
        "levels": levels,
        "long": long,
        "bombs": bombs,
    }
