"""`vc serve` in a real browser: the page loads, takes a file, converts it with the bundled model and plays it."""

from __future__ import annotations

import base64
import threading

import pytest

from tests.browser import Browser
from tests.test_serve import wav_bytes

pytest.importorskip("flask", reason="vc serve needs the serve extra: pip install -e '.[serve]'")

from vc.serving.catalog import ModelCatalog  # noqa: E402
from vc.serving.server import build_server  # noqa: E402

WAIT_FOR = """
new Promise((resolve, reject) => {{
  const started = Date.now();
  const poll = () => {{
    if ({condition}) resolve(true);
    else if (Date.now() - started > {ms}) reject(new Error("timed out: " + document.getElementById("status").textContent));
    else setTimeout(poll, 100);
  }};
  poll();
}})
"""

DROP_FILE = """
(() => {{
  const bytes = Uint8Array.from(atob("{data}"), (c) => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], "input.wav", {{ type: "audio/wav" }}));
  const input = document.getElementById("file");
  input.files = transfer.files;
  input.dispatchEvent(new Event("change"));
  return input.files.length;
}})()
"""

PLAYED = """
(async () => {
  const audio = document.getElementById("result");
  await audio.play();
  await new Promise((resolve) => setTimeout(resolve, 300));
  audio.pause();
  return [audio.duration, audio.currentTime];
})()
"""


def wait_for(page, condition: str, seconds: float = 60) -> None:
    page.evaluate(WAIT_FOR.format(condition=condition, ms=int(seconds * 1000)), timeout=seconds + 10)


def test_the_page_converts_a_dropped_file_with_the_bundled_model_and_plays_it(chromium):
    server = build_server("127.0.0.1", 0, ModelCatalog())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with Browser(chromium, timeout=60) as browser:
            page = browser.open(f"http://127.0.0.1:{server.port}/")
            assert page.evaluate("document.title") == "vc serve"
            wait_for(page, 'document.getElementById("model").options.length > 0', 20)
            assert page.evaluate('document.getElementById("model").value') == "arctic-bdl-slt"
            data = base64.b64encode(wav_bytes(2.0)).decode()
            assert page.evaluate(DROP_FILE.format(data=data)) == 1
            wait_for(page, 'document.getElementById("status").textContent.includes("ready")', 20)
            page.evaluate('document.getElementById("convert").click()')
            wait_for(page, 'document.getElementById("status").textContent === "done"', 90)
            duration, position = page.evaluate(PLAYED, timeout=30)
            assert duration > 1.0 and position > 0, (duration, position)
            took = page.evaluate('document.getElementById("took").textContent')
            assert "arctic-bdl-slt" in took and " s)" in took
            assert not page.evaluate('document.getElementById("download").hidden')
            assert page.errors == []
            # a file the server cannot read: one clear message on the page, no console error
            page.evaluate(DROP_FILE.format(data=base64.b64encode(b"not audio at all" * 64).decode()))
            wait_for(page, 'document.getElementById("status").textContent.includes("cannot decode")', 20)
            page.evaluate('document.getElementById("convert").click()')
            wait_for(page, 'document.getElementById("status").className === "error"', 30)
            assert "not a readable audio file" in page.evaluate(
                'document.getElementById("status").textContent'
            )
    finally:
        server.shutdown()
        server.server_close()
