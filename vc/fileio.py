"""Atomic file writes: nothing is ever half-written.

Every output goes to a temp file in the target's folder, is flushed to disk,
then renamed over the target, so a crash at any moment leaves the old file or
the new one. The temp file gets the permissions a plain open() would have given
(mkstemp's 0600 would otherwise survive the rename). The commands check first that
they replace no existing output the user did not ask them to (``refuse_overwrite``).
A write that fails (a full disk, a read-only file system, no permission) is one
WriteError naming the output and the reason, and leaves no temp file behind.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from vc.errors import OutputExistsError, WriteError

# How many existing outputs a refusal names before it counts the rest.
NAMED_OUTPUTS = 3


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Turn an OSError raised in the block into one WriteError naming ``path`` and the reason."""
    try:
        yield
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "wb") -> Iterator[IO]:
    """Open a temp file beside ``path``; on a clean exit it replaces ``path``, on an error it vanishes.

    A failing write (the block's writes too) raises WriteError naming ``path``.
    """
    path = Path(path)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            os.fchmod(handle, 0o666 & ~_umask())
            with os.fdopen(handle, mode) as out:
                yield out
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def load_marked(path: str | Path, marker: str, what: str, error: type[Exception], **load_options) -> dict:
    """torch.load of a file vc wrote with a "format" ``marker``: its dict, or one-line ``error``s naming the
    file (missing, a folder, unreadable: corrupt, truncated or foreign, or without the marker); ``what``
    names the kind of file. ``load_options``: torch.load's (map_location, mmap); tensors only, always."""
    import torch

    path = Path(path)
    if not path.exists():
        raise error(f"{what} not found: {path}")
    if path.is_dir():
        raise error(f"{path} is a folder, expected a {what} file")
    try:
        payload = torch.load(path, weights_only=True, **load_options)
    except Exception:
        raise error(f"{path} is not a readable {what} (corrupt, truncated or foreign)") from None
    if not isinstance(payload, dict) or payload.get("format") != marker:
        raise error(f"{path} is not a {what} (no '{marker}' marker)")
    return payload


def atomic_save(path: str | Path, obj) -> None:
    """torch.save ``obj`` to ``path`` atomically.

    Serialised in memory first, then written as plain bytes: torch.save streaming
    into a file that hits a full disk fails with a RuntimeError about stream
    positions ("unexpected pos ..."), where plain bytes fail with ENOSPC.
    """
    import torch  # here, not at the top: the commands that never save a tensor start faster

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    with atomic_open(path) as out:
        out.write(buffer.getbuffer())


def refuse_overwrite(paths: Iterable[str | Path], overwrite: bool = False) -> None:
    """Refuse, before any work, outputs that already exist, unless ``overwrite`` (the CLI's --overwrite).

    A link counts even when it dangles (the rename would replace it). One line names
    every existing output (the first few, then a count), so one retry fixes them all.
    """
    if overwrite:
        return
    existing = [str(path) for path in paths if os.path.lexists(path)]
    if len(existing) == 1:
        raise OutputExistsError(f"{existing[0]} already exists; add --overwrite to replace it")
    if existing:
        named = ", ".join(existing[:NAMED_OUTPUTS])
        more = f" and {len(existing) - NAMED_OUTPUTS} more" if len(existing) > NAMED_OUTPUTS else ""
        raise OutputExistsError(
            f"{len(existing)} outputs already exist: {named}{more}; add --overwrite to replace them"
        )


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_open(path, "w") as out:
        out.write(text)
