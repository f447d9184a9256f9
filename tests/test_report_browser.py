"""The listening report as a person uses it: opened from disk in a real (headless) Chromium.

Skipped where chromium is not installed, except under CI=true, where .ci/run
installs it and a missing browser is a failure.
"""

from __future__ import annotations

import functools
import http.server
import threading

import pytest

from tests.browser import Browser
from tests.synthetic_exp import UTTS, make_experiment
from vc.listening import build_report

# Every <img> loaded (lazy ones made eager first), as [src, naturalWidth].
IMAGES_JS = """
Promise.all(Array.from(document.images).map(async (img) => {
  img.loading = 'eager';
  try { await img.decode(); } catch (e) {}
  return [img.getAttribute('src'), img.naturalWidth];
}))
"""
# Every <audio> element loads its metadata from disk, as [src, duration or error code].
AUDIO_ELEMENTS_JS = """
Promise.all(Array.from(document.querySelectorAll('audio')).map((audio) => new Promise((done) => {
  const src = audio.getAttribute('src');
  const timer = setTimeout(() => done([src, 'timeout']), 10000);
  audio.addEventListener('loadedmetadata', () => { clearTimeout(timer); done([src, audio.duration]); });
  audio.addEventListener('error', () => { clearTimeout(timer); done([src, 'error ' + audio.error.code]); });
  audio.preload = 'auto';
  audio.load();
})))
"""
# Every <audio> source fetched and decoded completely by Web Audio, as [src, seconds decoded].
DECODE_JS = """
(async () => {
  const context = new OfflineAudioContext(1, 1, 16000);
  const out = [];
  for (const audio of document.querySelectorAll('audio')) {
    const src = audio.getAttribute('src');
    try {
      const response = await fetch(src);
      if (!response.ok) { out.push([src, 'HTTP ' + response.status]); continue; }
      const buffer = await context.decodeAudioData(await response.arrayBuffer());
      out.push([src, buffer.duration]);
    } catch (e) { out.push([src, String(e)]); }
  }
  return out;
})()
"""
ORDER_JS = "Array.from(document.querySelectorAll('#utterances > section')).map((s) => s.id)"
SORT_BY_MCD_JS = """
(() => {
  const select = document.getElementById('sort-key');
  select.value = 'mcd';
  select.dispatchEvent(new Event('change'));
  return Array.from(document.querySelectorAll('#utterances > section')).map((s) => s.id);
})()
"""


@pytest.fixture
def served(tmp_path):
    """Serve a folder on 127.0.0.1 (fetch() is refused for file:// pages): yields a start function."""
    servers = []

    def start(folder) -> str:
        handler = functools.partial(QuietHandler, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}/index.html"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.mark.parametrize("audio_format", ["wav", "ogg"])
def test_report_in_chromium(tmp_path, chromium, served, audio_format):
    exp = make_experiment(tmp_path)
    index = build_report(exp, audio_format=audio_format, progress=False)
    with Browser(chromium) as browser:
        page = browser.open(index.resolve().as_uri())
        assert page.evaluate("document.title") == "Listening report: exp"
        images = page.evaluate(IMAGES_JS)
        assert len(images) == 1 + 1 + 2 * len(UTTS)  # evolution, curves, alignment + mel per utterance
        assert all(width > 0 for _, width in images), images
        audio = page.evaluate(AUDIO_ELEMENTS_JS, timeout=30)
        assert len(audio) == 3 * len(UTTS) + 2
        assert all(isinstance(d, float) and d > 0.2 for _, d in audio), audio
        # worst WER first as written; the inline script re-sorts by MCD
        assert page.evaluate(ORDER_JS) == ["arctic_b0002", "arctic_b0003", "arctic_b0001"]
        assert page.evaluate(SORT_BY_MCD_JS) == ["arctic_b0003", "arctic_b0002", "arctic_b0001"]
        assert page.errors == []

        over_http = browser.open(served(index.parent))
        decoded = over_http.evaluate(DECODE_JS, timeout=30)
        assert len(decoded) == len(audio)
        assert all(isinstance(d, float) and d > 0.2 for _, d in decoded), decoded
        assert over_http.errors == []

        if audio_format == "wav":  # the checks above do catch a broken report
            (index.parent / f"audio/converted/{UTTS[1]}.wav").write_bytes(b"RIFF broken")
            (index.parent / f"img/mel/{UTTS[1]}.png").unlink()
            broken = browser.open(index.resolve().as_uri())
            assert sum(width == 0 for _, width in broken.evaluate(IMAGES_JS)) == 1
            failed = [
                src for src, d in broken.evaluate(AUDIO_ELEMENTS_JS, timeout=30) if not isinstance(d, float)
            ]
            assert failed == [f"audio/converted/{UTTS[1]}.wav"]
            assert any(f"img/mel/{UTTS[1]}.png" in error for error in broken.errors), broken.errors
