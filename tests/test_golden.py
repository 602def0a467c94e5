"""Golden summaries: every bundled scenario and bench case, bit for bit.

Each case's short run (see `alphaqos.golden`) must reproduce the stored
headline and summary tables exactly. A deliberate model change is accepted
with `make golden-accept` after reviewing `make golden`'s differences.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")

from alphaqos import golden  # noqa: E402

CASES = golden.cases()


def test_every_case_has_a_golden_file_and_every_file_a_case():
    stored = {p.stem for p in golden.GOLDEN_DIR.glob("*.json")}
    assert stored == set(CASES), "run `make golden-accept` for new cases; delete files of removed ones"


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    _record, found = golden.check(name)
    assert not found, (
        f"{name}: the results moved ({len(found)} differences; `make golden` to review, "
        "`make golden-accept` to accept a deliberate change):\n  " + "\n  ".join(found[:15])
    )


def test_differences_name_the_field_path_and_both_values():
    old = {"flow_summary": [{"flow": "c1", "drop_pkts": 3}], "summary": {"events": 10}}
    new = json.loads(json.dumps(old))
    new["flow_summary"][0]["drop_pkts"] = 4
    new["summary"]["events"] = 11
    assert golden.differences(old, new) == ["flow_summary[0 c1].drop_pkts: 3 -> 4", "summary.events: 10 -> 11"]
    assert golden.differences(old, old) == []


def test_the_text_form_keeps_every_bit_of_a_float():
    # 0.1 + 0.2 differs from 0.3 in the last bit: the stored text must tell them apart.
    a = golden.dumps({"summary": {"x": 0.1 + 0.2}})
    b = golden.dumps({"summary": {"x": 0.3}})
    assert a != b and json.loads(a)["summary"]["x"] == 0.1 + 0.2
