"""The circuits web page (issue 22) in a real headless browser (Debian's
chromium and chromium-driver, through Selenium): a reservation made
through the form shows in the table, in the plot's data and in a
screenshot (pixels of the plotted step where the booking is, and none
where it is not).

The page talks to the HTTP API of the contract (docs/circuits-southbound.md).
``circuits_service`` starts ``alphaqos circuits serve`` when the service
is there; until then (the service is built on another branch) it starts
:class:`StandIn`, a small in-memory server of the same endpoints, so that
the page and this test are written against the contract."""

from __future__ import annotations

import io
import json
import math
import re
import shutil
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from _system import ensure_debian_package

WEB = Path(__file__).resolve().parents[1] / "python" / "alphaqos" / "circuits" / "web"
TOKEN = "t-web-user"
GBPS = 10**9
BOOKED_RGB = (31, 119, 180)  # style.css: svg.bookings .booked


# --- a stand-in of the service's HTTP API (the contract's endpoints) ------------------


def _rate(value) -> int:
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?)bps\s*", str(value))
    if not m:
        raise ValueError(f"expected a rate like 2Gbps, got {value!r}")
    return round(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)])


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StandIn(BaseHTTPRequestHandler):
    links = [{"id": "H1-R1", "a": "H1", "b": "R1", "capacity_bps": 10 * GBPS, "reservable_bps": 8 * GBPS},
             {"id": "R1-H2", "a": "R1", "b": "H2", "capacity_bps": 10 * GBPS, "reservable_bps": 8 * GBPS}]  # fmt: skip
    reservations: list[dict] = []

    def _send(self, code: int, doc, kind: str = "application/json") -> None:
        data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _problem(self, code: int, title: str, detail: str, **extra) -> None:
        self._send(code, {"type": "about:blank", "title": title, "status": code, "detail": detail, **extra},
                   "application/problem+json")  # fmt: skip

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._problem(401, "Unauthorized", "a bearer token is needed")
            return False
        return True

    @classmethod
    def steps(cls, link: str) -> list[list]:
        changes: dict[datetime, int] = {}
        for r in cls.reservations:
            if link in r["path"] and r["state"] in ("held", "committed"):
                changes[_t(r["start"])] = changes.get(_t(r["start"]), 0) + r["rate_bps"]
                changes[_t(r["end"])] = changes.get(_t(r["end"]), 0) - r["rate_bps"]
        level, out = 0, []
        for t in sorted(changes):
            level += changes[t]
            out.append([_iso(t), level])
        return out

    def do_GET(self):
        url = urlparse(self.path)
        if url.path in ("/", "/index.html") or url.path.startswith("/static/"):
            name = "index.html" if not url.path.startswith("/static/") else url.path.removeprefix("/static/")
            kinds = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
            path = WEB / name
            if "/" in name or not path.is_file():
                return self._problem(404, "Not Found", url.path)
            return self._send(200, path.read_bytes(), kinds[path.suffix] + "; charset=utf-8")
        if not self._authorized():
            return None
        if url.path == "/api/v1/reservations":
            return self._send(200, self.reservations)
        if url.path == "/api/v1/links":
            return self._send(200, self.links)
        m = re.fullmatch(r"/api/v1/links/([^/]+)/bookings", url.path)
        if m:
            link = next(x for x in self.links if x["id"] == m.group(1))
            parse_qs(url.query)  # from/to accepted; the stand-in returns every step
            return self._send(200, {"id": link["id"], "reservable_bps": link["reservable_bps"], "steps": self.steps(link["id"])})
        return self._problem(404, "Not Found", url.path)

    def do_POST(self):
        if not self._authorized():
            return None
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        m = re.fullmatch(r"/api/v1/reservations/(\d+)/(commit|abort)", self.path)
        if m:
            r = self.reservations[int(m.group(1)) - 1]
            r["state"] = "committed" if m.group(2) == "commit" else "aborted"
            return self._send(200, r)
        try:
            start = _t(body["start"])
            if "bytes" in body:
                deadline = _t(body["deadline"])
                rate = math.ceil(int(body["bytes"]) * 8 / (deadline - start).total_seconds() * float(body.get("margin", 1.1)))
                end = deadline
            else:
                rate, end = _rate(body["rate"]), _t(body["end"])
        except (KeyError, ValueError) as exc:
            return self._problem(422, "Unprocessable Content", str(exc), errors=[{"loc": ["body", "rate"], "msg": str(exc)}])
        path = ["H1-R1", "R1-H2"]
        for link in path:
            steps = self.steps(link)
            at_start = ([0] + [bps for t, bps in steps if _t(t) <= start])[-1]
            peak = max([at_start] + [bps for t, bps in steps if start <= _t(t) < end])
            if peak + rate > 8 * GBPS:
                extra = {}
                if "bytes" in body:
                    most = 8 * GBPS - peak
                    finish = start + timedelta(seconds=int(body["bytes"]) * 8 * float(body.get("margin", 1.1)) / most)
                    extra = {"max_bookable_bps": most, "earliest_finish": _iso(finish)}
                return self._problem(409, "Conflict", f"{link}: {rate} bit/s does not fit", **extra)
        r = {"id": len(self.reservations) + 1, "version": 1, "owner": "web", "state": "held", "src": body["src"],
             "dst": body["dst"], "path": path, "start": _iso(start), "end": _iso(end), "rate_bps": rate,
             "profile": [[_iso(start), rate]], "policing": body.get("policing", "soft")}  # fmt: skip
        self.reservations.append(r)
        return self._send(201, r)

    def log_message(self, *args):
        pass


TOPOLOGY = """\
name: web-test
duration: 1s
nodes:
  H1: {address: 10.0.1.1}
  H2: {address: 10.0.2.1}
  R1: {router: true}
links:
  - between: [H1, R1]
    rate: 10Gbps
    delay: 1ms
  - between: [R1, H2]
    rate: 10Gbps
    delay: 1ms
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _real_service(tmp: Path):
    """``alphaqos circuits serve`` on SQLite with the two-link topology, and a
    user token; None when the service is not part of this tree."""
    import importlib.util
    import os
    import subprocess
    import sys
    import urllib.request

    if importlib.util.find_spec("alphaqos.circuits.cli") is None:
        return None
    (tmp / "topology.yaml").write_text(TOPOLOGY)
    env = dict(os.environ, ALPHAQOS_CIRCUITS_DB=f"sqlite:///{tmp / 'circuits.db'}",
               ALPHAQOS_CIRCUITS_TOPOLOGY=str(tmp / "topology.yaml"))  # fmt: skip
    cli = [sys.executable, "-m", "alphaqos", "circuits"]
    made = subprocess.run([*cli, "token", "create", "--role", "user"], env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    token = made.stdout.split()[-1]
    port = _free_port()
    server = subprocess.Popen([*cli, "serve", "--listen", f"127.0.0.1:{port}"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/openapi.json", timeout=2).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise AssertionError(f"alphaqos circuits serve did not come up: {server.stderr.read()[-2000:]}") from None
            time.sleep(0.2)
    return base, token, server


@pytest.fixture
def circuits_service(tmp_path):
    real = _real_service(tmp_path)
    if real is not None:
        base, token, server = real
        try:
            yield base, token
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except Exception:
                server.kill()
                server.wait()
        return
    StandIn.reservations = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", TOKEN
    finally:
        server.shutdown()
        server.server_close()


# --- the browser ---------------------------------------------------------------------------


@pytest.fixture
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is installed by make (the pip line)")
    ensure_debian_package("chromium", binary="chromium")
    ensure_debian_package("chromium-driver", binary="chromedriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="aq-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--window-size=1280,1400", "--force-device-scale-factor=1"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _wait(driver, condition: str, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(f"return {condition};")
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {condition}")


def _login(driver, base: str, token: str) -> None:
    driver.get(base + "/")
    _wait(driver, "window.alphaqos && window.alphaqos.ready")
    driver.find_element("id", "token").send_keys(token)
    driver.find_element("css selector", "#login button").click()
    _wait(driver, "window.alphaqos.ready && window.alphaqos.links.length > 0")


def _fill(driver, name: str, value: str) -> None:
    """Set a form field as a person would leave it (datetime-local takes its value by script)."""
    driver.execute_script("const e = document.querySelector(`#reserve [name=${arguments[0]}]`); e.value = arguments[1];"
                          "e.dispatchEvent(new Event('input', {bubbles: true}));", name, value)  # fmt: skip


def _reserve(driver, fields: dict[str, str], mode: str = "rate") -> dict:
    driver.find_element("css selector", f"#reserve input[name=mode][value={mode}]").click()
    for name, value in fields.items():
        _fill(driver, name, value)
    driver.execute_script("window.alphaqos.lastResult = null;")
    driver.find_element("css selector", "#reserve button[type=submit]").click()
    _wait(driver, "window.alphaqos.lastResult && window.alphaqos.ready")
    return driver.execute_script("return window.alphaqos.lastResult;")


def _pixel_at(driver, link: str, when: datetime, bps: float) -> tuple[int, int, int]:
    """The screenshot's colour at the point of the link's plot for (time, rate)."""
    from PIL import Image

    box = driver.execute_script(
        "const s = document.querySelector(`svg.bookings[data-link='${arguments[0]}']`); s.scrollIntoView({block: 'center'});"
        "const r = s.getBoundingClientRect(); return {left: r.left, top: r.top, dpr: window.devicePixelRatio};", link)  # fmt: skip
    plot = driver.execute_script("return window.alphaqos.plots[arguments[0]];", link)
    area = plot["area"]
    x = box["left"] + area["left"] + (when.timestamp() * 1000 - plot["t0"]) / (plot["t1"] - plot["t0"]) * area["width"]
    y = box["top"] + area["top"] + area["height"] - bps / plot["capacity_bps"] * area["height"]
    image = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
    return image.getpixel((round(x * box["dpr"]), round(y * box["dpr"])))


def _near(rgb, target, tolerance: int = 12) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(rgb, target))


def test_reserve_through_the_form_shows_in_table_plot_data_and_pixels(circuits_service, browser):
    base, token = circuits_service
    _login(browser, base, token)
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start, end = hour + timedelta(hours=4), hour + timedelta(hours=10)
    result = _reserve(browser, {"src": "H1", "dst": "H2", "start": start.strftime("%Y-%m-%dT%H:%M:%S"),
                                "end": end.strftime("%Y-%m-%dT%H:%M:%S"), "rate": "6Gbps", "policing": "hard"})  # fmt: skip
    assert result["status"] == 201, result
    resv = result["body"]
    assert resv["rate_bps"] == 6 * GBPS and resv["policing"] == "hard"
    assert "Reserved: " in browser.find_element("id", "reserve-result").text

    # The table.
    row = browser.find_element("css selector", f"#reservations tbody tr[data-id='{resv['id']}']")
    cells = [c.text for c in row.find_elements("css selector", "td")]
    assert cells[1:4] == ["held", "H1", "H2"] and cells[6] == "6 Gbps"

    # The plot's data: the step up at the start and down at the end, on every link of the path.
    for link in resv["path"]:
        plot = browser.execute_script("return window.alphaqos.plots[arguments[0]];", link)
        steps = [(_t(t), bps) for t, bps in plot["steps"]]
        assert (start, 6 * GBPS) in steps and (end, 0) in steps
        assert plot["reservable_bps"] == 8 * GBPS

    # The screenshot: the step is filled where the booking is (half its height,
    # in the middle of its window), and not before it or above its level.
    middle = start + (end - start) / 2
    link = resv["path"][0]
    assert _near(_pixel_at(browser, link, middle, 3 * GBPS), BOOKED_RGB)
    assert _near(_pixel_at(browser, link, middle, 0.3 * GBPS), BOOKED_RGB)
    assert _near(_pixel_at(browser, link, start - timedelta(hours=1), 3 * GBPS), (255, 255, 255))
    assert _near(_pixel_at(browser, link, middle, 7 * GBPS), (255, 255, 255))
    assert _near(_pixel_at(browser, link, end + timedelta(hours=1), 3 * GBPS), (255, 255, 255))


def test_reserve_by_bytes_and_deadline_and_a_refusal(circuits_service, browser):
    base, token = circuits_service
    _login(browser, base, token)
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start, deadline = hour + timedelta(hours=2), hour + timedelta(hours=4)
    fmt = "%Y-%m-%dT%H:%M:%S"
    # 900 GB in 2 h at margin 1.1: 1.1 Gbit/s.
    result = _reserve(browser, {"src": "H1", "dst": "H2", "start": start.strftime(fmt), "deadline": deadline.strftime(fmt),
                                "bytes": "900000000000", "margin": "1.1"}, mode="bytes")  # fmt: skip
    assert result["status"] == 201, result
    rate = result["body"]["rate_bps"]
    assert 1_100_000_000 <= rate <= 1_101_000_000  # the smallest rate that meets the deadline, times the margin
    link = result["body"]["path"][0]
    steps = [(_t(t), bps) for t, bps in browser.execute_script("return window.alphaqos.plots[arguments[0]].steps;", link)]
    assert (start, rate) in steps and (_t(result["body"]["end"]), 0) in steps
    middle = start + (deadline - start) / 2
    assert _near(_pixel_at(browser, link, middle, 0.5 * GBPS), BOOKED_RGB)
    assert _near(_pixel_at(browser, link, middle, 2 * GBPS), (255, 255, 255))

    # 6.3 TB more by the same deadline needs 7.7 Gbit/s: over the 8 Gbit/s reservable share with the first.
    # The problem is shown with the earliest finish and the most bookable rate; nothing is booked.
    result = _reserve(browser, {"start": start.strftime(fmt), "deadline": deadline.strftime(fmt), "bytes": "6300000000000"},
                      mode="bytes")  # fmt: skip
    assert result["status"] == 409, result
    text = browser.find_element("id", "reserve-result").text
    assert "earliest finish: " in text and "most bookable: " in text
    assert result["body"]["max_bookable_bps"] <= 8 * GBPS - rate
    after = [(_t(t), bps) for t, bps in browser.execute_script("return window.alphaqos.plots[arguments[0]].steps;", link)]
    assert after == steps


def test_page_is_offline_no_external_references():
    for name in ("index.html", "app.js", "style.css"):
        text = (WEB / name).read_text()
        assert not re.search(r"(src|href)=\"(https?:)?//", text), name
        assert "cdn" not in text.lower() and "@import" not in text
