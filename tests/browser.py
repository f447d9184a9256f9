"""Drive a headless Chromium over the DevTools protocol on a pipe: no driver, no Python dependency.

    with Browser() as browser:
        page = browser.open("file:///.../index.html")   # waits for the load event
        page.evaluate("document.title")
        page.errors                                      # console errors, exceptions, failed loads
        page.screenshot(path, width=1200)

Chromium is started with --remote-debugging-pipe: it reads JSON commands,
each ended by a NUL byte, on fd 3 and writes replies and events on fd 4.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
    "--autoplay-policy=no-user-gesture-required",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self, executable: str | None = None, timeout: float = 20.0):
        self.executable = executable or find_chromium()
        if self.executable is None:
            raise BrowserError("chromium not found")
        self.timeout = timeout
        self.next_id = 0
        self.events: list[dict] = []
        self.buffer = b""

    def __enter__(self) -> Browser:
        self.profile = tempfile.mkdtemp(prefix="vc-chromium-")
        commands_read, self.commands = os.pipe()
        self.replies, replies_write = os.pipe()

        def child_fds():  # the protocol's fixed descriptors in the child: 3 in, 4 out
            # Via copies above 10, so that neither end is overwritten when it already is 3 or 4;
            # dup2 leaves 3 and 4 inheritable, every other descriptor of ours closes on exec.
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (commands_read, replies_write)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.process = subprocess.Popen(
            [self.executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            close_fds=False,  # Python's descriptors are close-on-exec anyway; 3 and 4 must survive
            preexec_fn=child_fds,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(commands_read)
        os.close(replies_write)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (BrowserError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.commands)
        os.close(self.replies)
        shutil.rmtree(self.profile, ignore_errors=True)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout=None) -> dict:
        """Send one command and wait for its reply; events read meanwhile are kept in self.events."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str, timeout=None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            seen = len(self.events)
            self.events.append(self._read(deadline))

    def _read(self, deadline: float) -> dict:
        import select

        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer in time")
            ready, _, _ = select.select([self.replies], [], [], left)
            if ready:
                chunk = os.read(self.replies, 1 << 20)
                if not chunk:
                    raise BrowserError(f"chromium exited (code {self.process.poll()})")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str, width: int = 1200, height: int = 900) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired", session)
        return page


class Page:
    def __init__(self, browser: Browser, session: str):
        self.browser, self.session = browser, session

    def evaluate(self, expression: str, timeout: float | None = None):
        """The value of a JS expression (a promise is awaited); a JS exception raises BrowserError."""
        result = self.browser.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session=self.session,
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"JS exception: {result['exceptionDetails']}")
        return result["result"].get("value")

    @property
    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads (Log domain) of this page so far."""
        found = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append("console: " + " ".join(str(a.get("value", a)) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                found.append(f"exception: {params.get('exceptionDetails')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                found.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
        return found

    def screenshot(self, path: str | Path, full_page: bool = False) -> None:
        params: dict = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            size = self.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
        data = self.browser.send("Page.captureScreenshot", params, session=self.session)["data"]
        Path(path).write_bytes(base64.b64decode(data))
