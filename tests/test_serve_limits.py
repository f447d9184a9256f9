"""`vc serve` against what a network can send it: files that decode to hours, lying headers, many
requests at once, and pages on other sites reaching the server through DNS rebinding (issue 53)."""

from __future__ import annotations

import io
import json
import socket
import struct
import threading
import time
import tracemalloc
import urllib.error

import numpy as np
import pytest
import soundfile as sf

from tests.helpers import speech_like

pytest.importorskip("flask", reason="vc serve needs the serve extra: pip install -e '.[serve]'")

from tests.conftest import TINY  # noqa: E402
from tests.test_serve import http_convert, post, wav_bytes  # noqa: E402
from vc.audio.reading import read_bounded  # noqa: E402
from vc.errors import AudioError, AudioTooLong  # noqa: E402
from vc.inference.converter import Converter  # noqa: E402
from vc.serving.app import Limits, create_app  # noqa: E402
from vc.serving.server import build_server  # noqa: E402

MB = 1 << 20


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """A 180 kB FLAC holding an hour of 16 kHz silence: 230 MB of float32 once decoded."""
    out = io.BytesIO()
    with sf.SoundFile(out, "w", samplerate=16000, channels=1, format="FLAC") as f:
        block = np.zeros(16000 * 600, dtype=np.float32)
        for _ in range(6):
            f.write(block)
    assert len(out.getvalue()) < 1 * MB
    return out.getvalue()


def peak_growth(call):
    """``call()``'s result and the peak of Python-visible memory (numpy arrays included) above the start."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_a_small_file_that_decodes_to_hours_is_refused_at_once_with_little_memory(catalog, bomb):
    client = create_app(catalog, Limits(max_upload_mb=1.0, max_seconds=5.0)).test_client()
    started = time.perf_counter()
    response, growth = peak_growth(lambda: post(client, bomb, model=TINY))
    seconds = time.perf_counter() - started
    assert response.status_code == 413 and "3600 s long; the limit is 5 s" in response.get_json()["error"]
    assert seconds < 1.0 and growth < 100 * MB, (seconds, growth / MB)


def wav_with_data_size(wave: np.ndarray, rate: int, size: int) -> bytes:
    """A 16-bit WAV of ``wave`` whose data chunk header claims ``size`` bytes."""
    out = io.BytesIO()
    sf.write(out, wave, rate, format="WAV", subtype="PCM_16")
    data = bytearray(out.getvalue())
    at = data.find(b"data") + 4
    data[at : at + 4] = struct.pack("<I", size)
    return bytes(data)


def test_a_wav_whose_header_under_reports_its_length_is_decoded_only_as_far_as_it_says(catalog):
    """10 s of sound behind a header that says 1 s: the server converts the 1 s it was told of."""
    client = create_app(catalog, Limits(max_upload_mb=1.0, max_seconds=5.0)).test_client()
    wave = speech_like(10.0)
    response = post(client, wav_with_data_size(wave, 16000, 2 * 16000), model=TINY, griffin_lim_iters="2")
    assert response.status_code == 200, response.get_json()
    out, rate = sf.read(io.BytesIO(response.data))
    assert len(out) / rate < 2.0


def test_a_wav_whose_header_gives_no_length_is_held_to_the_limit(catalog):
    """A streaming WAV's size field (0xFFFFFFFF) says nothing: the length comes from the data, and 10 s
    of it are refused against a 5 s limit."""
    client = create_app(catalog, Limits(max_upload_mb=1.0, max_seconds=5.0)).test_client()
    response = post(client, wav_with_data_size(speech_like(10.0), 16000, 0xFFFFFFFF), model=TINY)
    assert response.status_code == 413 and "the limit is 5 s" in response.get_json()["error"]


def test_the_reader_stops_one_frame_past_the_limit_when_the_header_says_nothing(monkeypatch):
    """Whatever the header says, at most limit x rate + 1 frames (and one block) are decoded."""
    encoded = io.BytesIO()
    sf.write(encoded, speech_like(10.0), 16000, format="FLAC")
    monkeypatch.setattr(sf.SoundFile, "frames", property(lambda self: 2**63 - 1))  # "unknown"
    decoded = []
    real_read = sf.SoundFile.read

    def counting_read(self, frames=-1, *args, **kwargs):
        assert frames > 0, "the reader asked for the whole file"
        block = real_read(self, frames, *args, **kwargs)
        decoded.append(len(block))
        return block

    monkeypatch.setattr(sf.SoundFile, "read", counting_read)
    with pytest.raises(AudioTooLong, match="longer than the limit of 2 s"):
        read_bounded(io.BytesIO(encoded.getvalue()), max_seconds=2.0)
    assert 2 * 16000 + 1 <= sum(decoded) <= 2 * 16000 + 1 + max(decoded)


def test_the_reader_mixes_to_mono_and_refuses_absurd_rates_and_channels():
    stereo = np.stack([speech_like(1.0), -speech_like(1.0, seed=1)], axis=1).astype(np.float32)
    encoded = io.BytesIO()
    sf.write(encoded, stereo, 16000, format="WAV", subtype="FLOAT")
    wave, rate = read_bounded(io.BytesIO(encoded.getvalue()), max_seconds=5.0)
    assert rate == 16000 and wave.shape == (16000,) and np.allclose(wave, stereo.mean(axis=1), atol=1e-6)
    for rate, channels, message in ((400_000, 1, "sample rate"), (16000, 40, "channels")):
        encoded = io.BytesIO()
        sf.write(encoded, np.zeros((100, channels), np.float32), rate, format="WAV")
        with pytest.raises(AudioError, match=message):
            read_bounded(io.BytesIO(encoded.getvalue()), max_seconds=5.0)


@pytest.fixture()
def open_server(catalog):
    """start(limits, allow_hosts=()) -> the base URL of a real threaded server on a free local port."""
    servers = []

    def start(limits: Limits, allow_hosts=()) -> str:
        httpd = build_server("127.0.0.1", 0, catalog, limits, allow_hosts=allow_hosts)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.port}"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def convert_status(url: str, audio: bytes, **fields) -> tuple[int, dict | None]:
    try:
        http_convert(url, audio, **fields)
        return 200, None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_several_bombs_at_once_stay_under_the_memory_budget(open_server, bomb):
    url = open_server(Limits(max_upload_mb=1.0, max_seconds=5.0, max_active=2, max_queue=8))
    results: list = [None] * 6

    def run(k: int) -> None:
        results[k] = convert_status(url, bomb, model=TINY)

    def together() -> None:
        threads = [threading.Thread(target=run, args=(k,)) for k in range(len(results))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

    _, growth = peak_growth(together)
    assert [status for status, _ in results] == [413] * len(results), results
    assert growth < 100 * MB, growth / MB


def test_requests_past_the_queue_get_a_503_json_error(open_server, monkeypatch):
    """One converting, one waiting: a third is refused at once, and the first two finish."""
    release, entered = threading.Event(), threading.Event()
    real_convert = Converter.convert

    def held_convert(self, wave, rate):
        entered.set()
        release.wait(timeout=60)
        return real_convert(self, wave, rate)

    monkeypatch.setattr(Converter, "convert", held_convert)
    url = open_server(Limits(max_upload_mb=1.0, max_seconds=5.0, max_active=1, max_queue=1))
    results: list = [None, None]

    def run(k: int) -> None:
        results[k] = convert_status(url, wav_bytes(seed=k), model=TINY, griffin_lim_iters="2")

    first = threading.Thread(target=run, args=(0,))
    first.start()
    assert entered.wait(timeout=60)
    second = threading.Thread(target=run, args=(1,))
    second.start()
    time.sleep(0.5)  # the second is now waiting in the queue
    status, body = convert_status(url, wav_bytes(seed=2), model=TINY, griffin_lim_iters="2")
    assert status == 503 and "busy" in body["error"], body
    release.set()
    first.join(timeout=60)
    second.join(timeout=60)
    assert results == [(200, None), (200, None)]


def raw_get(url: str, host: bytes) -> tuple[int, dict]:
    address, port = url.removeprefix("http://").split(":")
    with socket.create_connection((address, int(port)), timeout=10) as conn:
        conn.sendall(b"GET /api/models HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_a_foreign_host_header_is_refused_and_loopback_names_are_served(open_server):
    url = open_server(Limits())
    port = url.rsplit(":", 1)[1].encode()
    for host in (
        b"evil.example:" + port,
        b"evil.example",
        b"127.0.0.1.evil.example",
        b"192.168.1.20:" + port,
    ):
        status, body = raw_get(url, host)
        assert status == 403 and "--allow-host" in body["error"], (host, body)
    for host in (b"127.0.0.1:" + port, b"localhost:" + port, b"[::1]:" + port, b"LOCALHOST", b"127.0.0.2"):
        status, body = raw_get(url, host)
        assert status == 200 and body["models"], (host, body)


def test_allow_host_adds_names_and_the_page_is_checked_too(open_server, catalog):
    url = open_server(Limits(), allow_hosts=("studio.lan",))
    assert raw_get(url, b"studio.lan:8000")[0] == 200
    assert raw_get(url, b"other.lan:8000")[0] == 403
    client = create_app(catalog, Limits()).test_client()
    page = client.get("/", headers={"Host": "evil.example"})
    assert page.status_code == 403 and page.is_json
    assert client.get("/", headers={"Host": "localhost:8000"}).status_code == 200


def test_an_open_server_answers_any_host_unless_names_are_given(catalog):
    """Bound to every address (--host 0.0.0.0) the server is reached by names it cannot know: no check,
    unless --allow-host lists them."""
    anyone = build_server("0.0.0.0", 0, catalog, Limits())
    listed = build_server("0.0.0.0", 0, catalog, Limits(), allow_hosts=("studio.lan",))
    try:
        assert anyone.app.test_client().get("/api/models", headers={"Host": "10.0.0.5"}).status_code == 200
        assert listed.app.test_client().get("/api/models", headers={"Host": "10.0.0.5"}).status_code == 403
        assert listed.app.test_client().get("/api/models", headers={"Host": "studio.lan"}).status_code == 200
    finally:
        anyone.server_close()
        listed.server_close()


def test_the_command_passes_its_limits_and_names_to_the_server(monkeypatch, capsys):
    import vc.serving.server
    from vc.cli import main

    seen = {}
    monkeypatch.setattr(vc.serving.server, "serve", lambda *args, **kwargs: seen.update(args=args, **kwargs))
    argv = ["serve", "--port", "0", "--max-active", "1", "--max-queue", "0"]
    assert main([*argv, "--allow-host", "studio.lan", "--allow-host", "box"]) == 0
    assert seen["args"][3] == Limits(max_active=1, max_queue=0)
    assert seen["allow_hosts"] == ("studio.lan", "box")
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--max-queue", "-1"])
    assert exit_info.value.code == 2 and "expected 0 or a positive integer" in capsys.readouterr().err
