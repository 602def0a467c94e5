"""docs/scenario-reference.md: generated from the schema, complete, and
committed as generated (``alphaqos reference --out docs/scenario-reference.md``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from alphaqos import cli
from alphaqos.cc import CC_PARAMS
from alphaqos.reference import generate, models, section_example
from alphaqos.scenario import Scenario

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "scenario-reference.md"


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (\w+)$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_committed_reference_is_what_the_schema_generates():
    assert REFERENCE.read_text(encoding="utf-8") == generate(), (
        "docs/scenario-reference.md is stale: run `alphaqos reference --out docs/scenario-reference.md`"
    )


def test_every_key_of_every_model_has_a_row_with_type_default_and_example():
    """The models and keys come from pydantic's JSON schema here, not from
    the generator's own walk, so a model that walk missed fails too."""
    schema = Scenario.model_json_schema(mode="validation", by_alias=True)
    expected = {name: list(d.get("properties", {})) for name, d in schema["$defs"].items()}
    expected["Scenario"] = list(schema["properties"])
    for model in CC_PARAMS.values():
        expected[model.__name__] = list(model.model_json_schema(by_alias=True).get("properties", {}))
    sections = _sections(REFERENCE.read_text(encoding="utf-8"))
    for name, keys in expected.items():
        if not keys:
            continue
        assert name in sections, f"no section for {name}"
        for key in keys:
            row = re.search(rf"^\| `{re.escape(key)}` \| (.*)$", sections[name], flags=re.MULTILINE)
            assert row, f"{name}.{key} is missing"
            kind, default, example, _description = [c.strip() for c in row.group(1).rstrip("|").split(" | ")][:4]
            assert kind and default and example, f"{name}.{key}: {row.group(0)}"
    # Units are named where a key takes one.
    assert "| `rate` | rate (bit/s" in sections["Link"] and "| `delay` | time (" in sections["Link"]
    assert "| `buffer` | queue limit" in sections["Policy"]


def test_the_mechanisms_users_ask_about_are_all_there():
    sections = _sections(REFERENCE.read_text(encoding="utf-8"))
    for name in ("Htb", "HtbClass", "Wred", "Rio", "Gred", "RedCurve", "Policer", "Srtcm", "Trtcm", "Impair",
                 "Reorder", "ForwardingClass"):  # fmt: skip
        assert "Example:" in sections[name], name
    assert "`mdrr`" in sections["Policy"] and "`low_latency`" in sections["ForwardingClass"]


@pytest.mark.parametrize("model", [m for m, _ in models()], ids=lambda m: m.__name__)
def test_every_section_example_is_valid(model):
    example = section_example(model)
    if example is not None:
        model.model_validate(example)


def test_alphaqos_reference_writes_the_file_or_prints_it(tmp_path, capsys):
    out = tmp_path / "ref.md"
    assert cli.main(["reference", "--out", str(out)]) == cli.EXIT_OK
    assert out.read_text(encoding="utf-8") == generate()
    assert [p.name for p in tmp_path.iterdir()] == ["ref.md"]
    assert cli.main(["reference"]) == cli.EXIT_OK
    assert capsys.readouterr().out == generate()
    assert cli.main(["reference", "--out", str(tmp_path / "no" / "dir.md")]) == cli.EXIT_USAGE
    assert "cannot write" in capsys.readouterr().err


# --- descriptions and examples, key by key ----------------------------------------

from typing import Annotated  # noqa: E402

from pydantic import TypeAdapter  # noqa: E402

from alphaqos.reference import _example, _field_notes, _fields, _nested, _note  # noqa: E402


def _rows():
    """(model, key, field info, description) of every row of the reference."""
    for model, _paths in models():
        notes = _field_notes(model)
        for key, info in _fields(model):
            yield model, key, info, _note(model, key, notes)


def _declared_by(model, key):
    """The class whose body declares the field (a field inherited from a
    common base, such as TcpOptions' or _Endpoints', is one field)."""
    attribute = next(name for name, info in model.model_fields.items() if (info.alias or name) == key)
    return next(c for c in model.__mro__ if attribute in c.__dict__.get("__annotations__", {})), attribute


def test_every_key_has_its_own_description():
    missing = [f"{model.__name__}.{key}" for model, key, _info, text in _rows() if not text.strip()]
    assert not missing, f"keys without a description: {', '.join(missing)}"


@pytest.mark.parametrize("model", [m for m, _ in models()], ids=lambda m: m.__name__)
def test_every_example_in_the_table_is_valid_where_it_stands(model):
    """Each key's example is validated as that key's value (its type,
    unit and bounds), and the section's example with that key set to it
    as a whole model where the section example leaves room for it."""
    for key, info in _fields(model):
        if any(True for _ in _nested(info.annotation)):
            continue  # a nested model's example is its own section's
        example = _example(info, model, key)
        adapter = TypeAdapter(Annotated[info.annotation, *info.metadata]) if info.metadata else TypeAdapter(info.annotation)
        try:
            adapter.validate_python(example)
        except Exception as exc:  # noqa: BLE001 - the message names the key
            pytest.fail(f"{model.__name__}.{key}: the example {example!r} is not valid: {exc}")
        section = section_example(model)
        if isinstance(section, dict) and key in section:
            model.model_validate({**section, key: example})


#: Descriptions that fields of different declarations share on purpose:
#: the same thing in each place (each set is every field that has it).
SHARED = [
    {"Red.min_th", "RedCurve.min_th", "CiscoThreshold.min_th"},
    {"Red.max_th", "RedCurve.max_th", "CiscoThreshold.max_th"},
    {"Red.max_p", "RedCurve.max_p", "CiscoThreshold.max_p"},
    {"Red.w_q", "RedCurve.w_q"},
    {"Red.gentle", "RedCurve.gentle"},
    {"Red.byte_mode", "RedCurve.byte_mode"},
    {"Red.mean_pkt_size", "RedCurve.mean_pkt_size"},
    {"Srtcm.cir", "Trtcm.cir"},
    {"Srtcm.cbs", "Trtcm.cbs"},
    {"Match.protocol", "HtbFilter.protocol"},
    {"Then.class", "ClassRef.class"},
    {"Child.fifo", "Queue.fifo"},
    {"Child.fq_codel", "Queue.fq_codel"},
    {"Child.sfq", "Queue.sfq"},
    {"Child.yaqs", "Queue.yaqs"},
    {"FqCodel.buckets", "Sfq.buckets"},
    {"FqCodel.quantum", "Sfq.quantum"},
    {"Fifo.limit", "Red.limit"},
    {"Wred.green", "Gred.green"},
    {"Wred.yellow", "Gred.yellow"},
    {"Wred.red", "Gred.red"},
    {"Tcp.cc", "WorkloadTcp.cc", "StreamOptions.cc", "AdditionalConnection.cc"},
    {"Tcp.cc_params", "WorkloadTcp.cc_params", "StreamOptions.cc_params", "AdditionalConnection.cc_params"},
    {"Tcp.rwnd", "WorkloadTcp.rwnd", "DeadlineTransfer.rwnd"},
    {"Tcp.mss", "WorkloadTcp.mss", "DeadlineTransfer.mss"},
    {"Tcp.max_pacing_rate", "WorkloadTcp.max_pacing_rate", "StreamOptions.max_pacing_rate"},
    {"Flow.stop", "Workload.stop"},
    {"Flow.dst_port", "Workload.dst_port"},
    {"Flow.dscp", "Workload.dscp"},
    {"Udp.size", "Ping.size", "Poisson.size", "OnOffUdp.size", "Video.size"},
    {"CubicParams.fast_convergence", "BicParams.fast_convergence"},
    {"Transfer.from", "DeadlineTransfer.from", "Tcp.from", "Udp.from", "Ping.from", "Poisson.from", "OnOffUdp.from", "Video.from"},
    {"Transfer.to", "DeadlineTransfer.to", "Tcp.to", "Udp.to", "Ping.to", "Poisson.to", "OnOffUdp.to", "Video.to"},
    {"DeadlineReservation.margin", "CallAdmission.margin", "Reservation.margin"},
    {"Transfer.size", "DeadlineTransfer.size"},
    {"OnOff.size", "PoissonArrivals.size"},
    {"Exponential.mean", "Lognormal.mean", "Pareto.mean"},
    {"CallAdmission.name", "DeadlineReservation.name", "WredRttTuning.name"},
]


def test_no_description_is_reused_across_unrelated_fields():
    """A description taken by key name alone lands on every field of that
    name (fq_codel's interval read "Time between echo requests"): a text
    shared by fields of different declarations must be one of SHARED."""
    by_text: dict[str, dict] = {}
    for model, key, _info, text in _rows():
        if text:
            by_text.setdefault(text, {}).setdefault(_declared_by(model, key), set()).add(f"{model.__name__}.{key}")
    unrelated = []
    for text, owners in by_text.items():
        names = set().union(*owners.values())
        if len(owners) > 1 and not any(names <= shared for shared in SHARED):
            unrelated.append(f"{sorted(names)} share {text!r}")
    assert not unrelated, "give each its own description or add them to SHARED: " + "; ".join(unrelated)
