"""The `vc serve` web app: one page, and the HTTP API under it.

    GET  /               the page: record or drop a file, pick a model, convert, compare
    GET  /api/models     {"models": [{"name", "description", "bundled", "default"}, ...]}
    POST /api/convert    multipart form: audio (the recording), model (a name from /api/models; default:
                         the bundled model), speed, vocoder (a name of vc.vocoders.VOCODERS; default the model's),
                         griffin_lim_iters, postfilter (on/off) -> audio/wav,
                         with X-Conversion-Seconds and X-Model headers

Every error is a 4xx (or 500, 503) with a JSON body {"error": "..."}: bad audio, an empty upload, a wrong
content type, a file over the size or duration limit, an unknown model, a Host the server is not known
by (vc/serving/hosts.py), a full queue (vc/serving/admission.py). Uploads are read and decoded in memory
and nothing is written to disk; the duration is checked from the header before decoding, and decoding
stops at the limit whatever the header says (vc/audio/reading.py). At most Limits.max_active requests
hold their upload at once, and one thread decodes and converts them one at a time.
"""

from __future__ import annotations

import html
import io
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources

import numpy as np
from flask import Flask, Request, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from vc.audio import encode_audio
from vc.audio.reading import read_bounded
from vc.errors import AudioError, AudioTooLong, MissingPackageError, VcError
from vc.serving.admission import Admission, Busy
from vc.serving.catalog import ModelCatalog
from vc.serving.hosts import HostCheck
from vc.vocoders import VOCODERS, built_in

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    max_upload_mb: float = 20.0  # the request body; more is refused before it is read
    max_seconds: float = 120.0  # the recording's duration; longer ones are cut at pauses when converted
    max_griffin_lim_iters: int = 128
    max_active: int = 2  # requests holding their upload at once (one of them decoding or converting)
    max_queue: int = 16  # requests waiting for a turn, holding only their connection; more get a 503


class RequestError(Exception):
    """A bad request: its message goes back as {"error": message} with ``status``."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class InMemoryRequest(Request):
    """Uploads stay in memory (werkzeug spools those over 500 kB to a temporary file): the body is
    already bounded by MAX_CONTENT_LENGTH and read only once the request is admitted."""

    def _get_file_stream(self, total_content_length, content_type, filename=None, content_length=None):
        return io.BytesIO()


def create_app(catalog: ModelCatalog, limits: Limits | None = None, allow_hosts: tuple | None = ()) -> Flask:
    """The app; ``allow_hosts``: names answered beside the loopback ones (None: any Host header)."""
    limits = limits or Limits()
    app = Flask(__name__)
    app.request_class = InMemoryRequest
    app.config["MAX_CONTENT_LENGTH"] = int(limits.max_upload_mb * 1024 * 1024)
    # One thread decodes and converts, one request at a time: the Converter's seeded random streams are
    # torch's global ones, so two at once would disturb each other's output; and one thread keeps the
    # large buffers in one malloc arena (on each request's own thread, the arenas of finished threads
    # held on to them, and the server's memory grew with the number of requests it had served at once).
    converting = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vc-convert")
    admission = Admission(limits.max_active, limits.max_queue)
    hosts = None if allow_hosts is None else HostCheck(allow_hosts)
    page = vocoder_options((resources.files(__package__) / "page.html").read_text(encoding="utf-8"))

    @app.before_request
    def check_host() -> None:
        refusal = hosts and hosts.refusal(request.host)
        if refusal:
            raise RequestError(refusal, 403)

    @app.get("/")
    def index() -> Response:
        return Response(page, mimetype="text/html")

    @app.get("/api/models")
    def models() -> Response:
        return jsonify(models=catalog.describe())

    @app.post("/api/convert")
    def convert() -> Response:
        if request.mimetype != "multipart/form-data":
            raise RequestError("send multipart/form-data with the recording in a field 'audio'", 415)
        try:
            with admission.admit():  # the body is read only inside: waiting requests hold no upload
                return _convert(request.form, request.files.get("audio"))
        except Busy:
            _discard_body()
            raise RequestError(
                f"the server is busy ({admission.active} requests at work and {admission.queue} waiting); "
                "try again shortly",
                503,
            ) from None

    def _convert(form, upload) -> Response:
        name = form.get("model") or catalog.default
        if name not in catalog.entries:
            raise RequestError(f"unknown model {name!r}; GET /api/models lists them", 404)
        options = _options(form, limits)
        try:
            converter = catalog.converter(name).with_options(**options)
        except MissingPackageError as exc:  # a vocoder without its weights package: this server cannot
            raise RequestError(str(exc), 501) from None
        encoded, seconds = converting.submit(_decode_and_convert, converter, upload, limits).result()
        response = Response(encoded, mimetype="audio/wav")
        response.headers["X-Conversion-Seconds"] = f"{seconds:.3f}"
        response.headers["X-Model"] = name
        return response

    @app.errorhandler(RequestError)
    def bad_request(exc: RequestError):
        return jsonify(error=str(exc)), exc.status

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        message = {
            413: f"the upload is larger than the limit of {limits.max_upload_mb:g} MB",
            404: "no such page; the API is GET /api/models and POST /api/convert",
            405: f"{request.method} is not allowed here",
        }.get(exc.code, exc.description)
        return jsonify(error=message), exc.code

    @app.errorhandler(Exception)
    def internal_error(exc: Exception):
        log.exception("conversion failed")  # the log has the traceback, the client one line
        return jsonify(error=f"internal error: {type(exc).__name__}"), 500

    return app


def _decode_and_convert(converter, upload, limits: Limits) -> tuple[bytes, float]:
    """The upload's conversion as WAV bytes, and the conversion's seconds."""
    wave, rate = _decode(upload, limits)
    started = time.perf_counter()
    try:
        out, out_rate = converter.convert(wave, rate)
    except VcError as exc:  # silence, NaNs, ...: the input's fault
        raise RequestError(str(exc)) from None
    seconds = time.perf_counter() - started
    return encode_audio(out, out_rate, ".wav"), seconds


def vocoder_options(page: str) -> str:
    """The page with its vocoder choices, one <option> per name of vc.vocoders.VOCODERS (the built-in one
    selected), where it says VOCODER_OPTIONS."""
    options = "".join(
        f'<option value="{html.escape(v.name)}"{" selected" if v.name == built_in() else ""}>'
        f"{html.escape(v.title)}</option>"
        for v in VOCODERS.values()
    )
    return page.replace("VOCODER_OPTIONS", options)


def _options(form, limits: Limits) -> dict:
    """speed, vocoder, griffin_lim_iters and postfilter from the form, checked."""
    options: dict = {"postfilter": form.get("postfilter", "on").lower() not in ("off", "false", "0")}
    if form.get("vocoder"):
        if form["vocoder"] not in VOCODERS:
            raise RequestError(f"vocoder must be one of {', '.join(VOCODERS)}, got {form['vocoder'][:20]!r}")
        options["vocoder"] = form["vocoder"]
    if form.get("speed"):
        options["speed"] = _number(form["speed"], "speed", float, 0.5, 2.0)
    if form.get("griffin_lim_iters"):
        top = limits.max_griffin_lim_iters
        options["griffin_lim_iters"] = _number(form["griffin_lim_iters"], "griffin_lim_iters", int, 1, top)
    return options


def _number(text: str, name: str, kind, low, high):
    try:
        value = kind(text)
    except ValueError:
        raise RequestError(f"{name} must be a number, got {text[:20]!r}") from None
    if not low <= value <= high:
        raise RequestError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _decode(upload, limits: Limits) -> tuple[np.ndarray, int]:
    """The uploaded file's mono samples and rate, at most limits.max_seconds of them decoded."""
    if upload is None:
        raise RequestError("no recording: send it in a form field called 'audio'")
    stream = upload.stream
    if not stream.read(1):
        raise RequestError("the upload is empty")
    stream.seek(0)
    try:
        return read_bounded(stream, limits.max_seconds, name="the recording")
    except AudioTooLong as exc:
        raise RequestError(str(exc), 413) from None
    except AudioError as exc:
        raise RequestError(str(exc)) from None


def _discard_body() -> None:
    """Read a refused request's body (bounded by MAX_CONTENT_LENGTH) so that the client, still sending
    it, gets the answer rather than a reset connection."""
    try:
        while request.stream.read(1 << 16):
            pass
    except Exception:  # the client went, or the body is over the limit: the answer goes anyway
        pass
