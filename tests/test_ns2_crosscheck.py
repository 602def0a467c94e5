"""The ns-2 cross-check (benches/ns2_crosscheck.py, issue 21) at one small
case: the web-like mix through RED (a 4 MB transfer and Pareto-sized
short ones for 5 s; 10 s in all), run in ns-2.35 itself (``wait_`` on, as
ns-2 comes) and in alphaqos with ``host_profile: ns2`` (RED ``wait:
true``), and with the RFC hosts (``host_profile: default``) for contrast: the case where
drops differed by 1.5x before the profile. Skipped when ns-2's ``ns`` is
not installed (Debian's ``ns2``; ``make test-deps`` installs it). ``make
bench``-style runs of every case: ``benches/ns2_crosscheck.py``."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    shutil.which("ns") is None, reason="ns-2's `ns` is not installed (Debian's ns2; `make test-deps` installs it)"
)


def _module():
    spec = importlib.util.spec_from_file_location("ns2_crosscheck", ROOT / "benches" / "ns2_crosscheck.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def web_red():
    x = _module()
    case = dataclasses.replace(x.CASES["web-red"], duration_s=10.0, transfers=x.web_transfers(until=5.0))
    ns = shutil.which("ns")
    return x, case, {
        "ns2": x.run_ns2(ns, case, None, "web-red-10s", wait=True),
        "profile": x.run_alphaqos(case, ns2=True),
        # The RFC hosts (host_profile default), named: the front's default
        # is linux-6 now, whose Linux rules drop less (88 against ns-2's 70
        # in this case, session 14) and would not show the RFC hosts' gap.
        "default": x.run_alphaqos(case, profile="default"),
    }


def test_the_ns2_profile_drops_what_ns2_drops(web_red):
    x, case, r = web_red
    ns2, profile, default = r["ns2"]["drops"], r["profile"]["drops"], r["default"]["drops"]
    assert ns2 > 20, f"the case must drop to test anything: ns-2 dropped {ns2}"
    assert abs(profile / ns2 - 1) <= 0.25, f"ns2 profile {profile} drops against ns-2's {ns2}"
    # The gap the profile closes (the RFC hosts: RFC 3465 growth, RFC 6675 recovery, RED without wait_).
    assert default / ns2 >= 1.3, f"default hosts {default} drops against ns-2's {ns2}"


def test_the_ns2_profile_completes_transfers_as_ns2_does(web_red):
    x, case, r = web_red
    short = [j for j, (_, size) in enumerate(case.transfers) if size != 4_000_000]
    f2 = [r["ns2"]["fct_s"][j] for j in short]
    fp = [r["profile"]["fct_s"][j] for j in short]
    assert None not in f2 and None not in fp, "every short transfer completes in both"
    assert abs(x.mean(fp) / x.mean(f2) - 1) <= 0.05, (x.mean(fp), x.mean(f2))
