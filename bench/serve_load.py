"""Section 5: `vc serve` under load, with the bundled model.

Cold start: `python -m vc.cli serve --port 0` (as the `vc` script runs) from process start until
GET / answers. Then a 3 s recording posted to /api/convert by 1, 4 and 16 concurrent clients, the
same number of requests at each level: latency per request (p50, p95, from send to the last byte)
and requests per minute over the level's wall time. Conversions run one at a time inside the
server (vc/serving/app.py), so latency grows with the queue while throughput stays that of one
conversion.
"""

from __future__ import annotations

import io
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

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


def post(url: str, body: bytes, content_type: str) -> float:
    request = urllib.request.Request(f"{url}/api/convert", data=body, headers={"Content-Type": content_type})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        response.read()
    return time.perf_counter() - started


def load_level(url: str, body: bytes, content_type: str, clients: int, requests: int) -> dict:
    """``requests`` conversions spread over ``clients`` threads: latencies and throughput."""
    latencies: list[float] = []
    lock = threading.Lock()

    def client(count: int) -> None:
        for _ in range(count):
            seconds = post(url, body, content_type)
            with lock:
                latencies.append(seconds)

    share = [requests // clients + (k < requests % clients) for k in range(clients)]
    threads = [threading.Thread(target=client, args=(n,)) for n in share]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "clients": clients,
        "requests": len(ordered),
        "p50_s": statistics.median(ordered),
        "p95_s": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "requests_per_minute": 60 * len(ordered) / wall,
    }


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
        levels = [load_level(url, body, content_type, n, requests) for n in CLIENTS]
    finally:
        process.terminate()
        process.wait()
    return {"input_seconds": INPUT_SECONDS, "cold_start_s": cold, "levels": levels}
