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
