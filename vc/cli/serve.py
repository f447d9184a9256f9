"""`vc serve`: a local page to record, convert and compare, and the HTTP API under it."""

from __future__ import annotations

from vc.cli.common import add_command, non_negative_int, positive_int

EXAMPLE = "vc serve --models egs/arctic/vc1/exp   # then open http://127.0.0.1:8000/"
DESCRIPTION = (
    """A local page to record or drop a recording, convert it with a bundled model or any model
file under --models, and hear source and conversion side by side; the HTTP API under it:
  GET /api/models                      the models, by name
  POST /api/convert (multipart form)   audio=@in.wav [model=NAME] -> audio/wav
Bound to 127.0.0.1 (the default), it answers only requests addressed to localhost, 127.0.0.1 or [::1]
(and the names given with --allow-host): a web page cannot reach it through another name (DNS rebinding).
At most --max-active requests hold their upload (one converts at a time) and --max-queue more wait; the
rest get a 503. Memory at the defaults: about 600 MB (the README's `vc serve` section).
Needs the serve extra: pip install 'vc-tacotron[serve]'.

example:
  """
    + EXAMPLE
)


def add_parser(commands) -> None:
    sub = add_command(
        commands, "serve", "serve a page and an HTTP API that convert recordings", description=DESCRIPTION
    )
    sub.add_argument("--port", type=int, default=8000, help="port (0: any free one)")
    sub.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on; another than 127.0.0.1 opens it to the network",
    )
    sub.add_argument(
        "--models", metavar="DIR", help="also offer every vc model file under DIR, by its path there"
    )
    sub.add_argument("--device", help="cpu, cuda or cuda:N (default: cpu)")
    sub.add_argument("--max-upload-mb", type=float, default=20.0, help="largest request body")
    sub.add_argument("--max-seconds", type=float, default=120.0, help="longest recording")
    sub.add_argument(
        "--max-active",
        type=positive_int,
        default=2,
        help="requests holding their upload at once (one converts at a time)",
    )
    sub.add_argument(
        "--max-queue", type=non_negative_int, default=16, help="requests waiting for a turn; more get a 503"
    )
    sub.add_argument(
        "--allow-host",
        action="append",
        default=[],
        dest="allow_hosts",
        metavar="NAME",
        help="also answer requests addressed to NAME (repeatable); on a non-loopback --host, only these",
    )
    sub.add_argument("--threads", type=positive_int, help="CPU threads for torch (default: as vc convert)")
    sub.set_defaults(func=run)


def run(args) -> None:
    from vc.serving import require_flask

    require_flask()
    import torch

    from vc.inference.files import convert_threads
    from vc.serving.app import Limits
    from vc.serving.catalog import ModelCatalog
    from vc.serving.server import serve

    torch.set_num_threads(convert_threads(args.threads))
    catalog = ModelCatalog(args.models, device=args.device or "cpu")
    catalog.converter(catalog.default)  # the default model loads before the first request
    limits = Limits(
        args.max_upload_mb, args.max_seconds, max_active=args.max_active, max_queue=args.max_queue
    )
    serve(args.host, args.port, catalog, limits, allow_hosts=tuple(args.allow_hosts))
