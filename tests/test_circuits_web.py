"""The circuits web page (issue 22) in a real headless browser (Debian's
chromium and chromium-driver, through Selenium): a reservation made
through the form shows in the table, in the plot's data and in a
screenshot (pixels of the plotted step where the booking is, and none
where it is not).

The page talks to the service's HTTP API (docs/circuits.md):
``circuits_service`` starts ``alphaqos circuits serve`` on SQLite with a
two-link topology and a user token."""

from __future__ import annotations

import io
import re
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _system import ensure_debian_package

WEB = Path(__file__).resolve().parents[1] / "python" / "alphaqos" / "circuits" / "web"
GBPS = 10**9
BOOKED_RGB = (31, 119, 180)  # style.css: svg.bookings .booked


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


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


@pytest.fixture
def circuits_service(tmp_path):
    """``alphaqos circuits serve`` on SQLite with the two-link topology; (URL, a user token)."""
    from _circuits import Server

    server = Server(tmp_path, f"sqlite:///{tmp_path / 'circuits.db'}")
    server.topology(TOPOLOGY)
    token = server.token("user", cli=True)
    server.start()
    try:
        yield server.url, token
    finally:
        server.stop()


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
