"""The `vc serve` web app: one page, and the HTTP API under it.

    GET  /               the page: record or drop a file, pick a model, convert, compare
    GET  /api/models     {"models": [{"name", "description", "bundled", "default"}, ...]}
    POST /api/convert    multipart form: audio (the recording), model (a name from /api/models; default:
                         the bundled model), speed, griffin_lim_iters, postfilter (on/off) -> audio/wav,
                         with X-Conversion-Seconds and X-Model headers

Every error is a 4xx (or 500) with a JSON body {"error": "..."}: bad audio, an empty upload, a wrong
content type, a file over the size or duration limit, an unknown model. Uploads are decoded in memory
and nothing is written to disk. Conversions run one at a time under one lock: the Converter's seeded
random streams are torch's global ones, so two at once would disturb each other's output.
"""

from __future__ import annotations

import io
import logging
import threading
import time
from dataclasses import dataclass
from importlib import resources

import numpy as np
import soundfile as sf
from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from vc.audio import encode_audio
from vc.errors import VcError
from vc.serving.catalog import ModelCatalog

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    max_upload_mb: float = 20.0  # the request body; more is refused before it is read
    max_seconds: float = 120.0  # the recording's duration; longer ones are cut at pauses when converted
    max_griffin_lim_iters: int = 128


class RequestError(Exception):
    """A bad request: its message goes back as {"error": message} with ``status``."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def create_app(catalog: ModelCatalog, limits: Limits | None = None) -> Flask:
    limits = limits or Limits()
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = int(limits.max_upload_mb * 1024 * 1024)
    convert_lock = threading.Lock()
    page = (resources.files(__package__) / "page.html").read_text(encoding="utf-8")

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
        name = request.form.get("model") or catalog.default
        if name not in catalog.entries:
            raise RequestError(f"unknown model {name!r}; GET /api/models lists them", 404)
        options = _options(request.form, limits)
        wave, rate = _decode(request.files.get("audio"), limits)
        converter = catalog.converter(name).with_options(**options)
        with convert_lock:
            started = time.perf_counter()
            try:
                out, out_rate = converter.convert(wave, rate)
            except VcError as exc:  # silence, NaNs, ...: the input's fault
                raise RequestError(str(exc)) from None
            seconds = time.perf_counter() - started
        response = Response(encode_audio(out, out_rate, ".wav"), mimetype="audio/wav")
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


def _options(form, limits: Limits) -> dict:
    """speed, griffin_lim_iters and postfilter from the form, checked."""
    options: dict = {"postfilter": form.get("postfilter", "on").lower() not in ("off", "false", "0")}
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
    """The uploaded file's samples and rate, decoded in memory."""
    if upload is None:
        raise RequestError("no recording: send it in a form field called 'audio'")
    data = upload.read()
    if not data:
        raise RequestError("the upload is empty")
    try:
        wave, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=False)
    except Exception:  # soundfile raises several types for what it cannot decode
        raise RequestError("not a readable audio file: send wav, flac or ogg") from None
    if len(wave) / rate > limits.max_seconds:
        raise RequestError(
            f"the recording is {len(wave) / rate:.0f} s long; the limit is {limits.max_seconds:g} s", 413
        )
    return wave, rate
