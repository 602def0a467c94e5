"""The command line as a package (issue 24): a module per subcommand, only
the chosen one imported; no feature module imports the command line; the
help of ``alphaqos`` lists every subcommand as its module registers it."""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from alphaqos import cli

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "alphaqos"


def _imports(path: Path, module: str) -> set[str]:
    """The absolute names of the modules ``path`` (module ``module``) imports."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    text = path.read_text(encoding="utf-8")
    if "cli" not in text:  # cannot import it: skip the parse (most files)
        return set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["alphaqos", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def test_no_feature_module_imports_the_command_line():
    modules = _modules()
    assert "alphaqos.cli.run" in modules and "alphaqos.output" in modules
    upward = {
        name: sorted(i for i in _imports(path, name) if i == "alphaqos.cli" or i.startswith("alphaqos.cli."))
        for name, path in modules.items()
        if not (name == "alphaqos.cli" or name.startswith("alphaqos.cli.")) and name != "alphaqos.__main__"
    }
    assert {name: i for name, i in upward.items() if i} == {}


def _parsed(needed) -> dict[str, ast.Module]:
    """The modules of the package whose text ``needed`` accepts, parsed
    (parsing all of them costs a second)."""
    out = {}
    for name, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        if needed(text):
            out[name] = ast.parse(text)
    return out


def test_only_the_command_line_uses_argparse():
    """The feature packages are libraries: every subcommand's parser is in
    ``alphaqos.cli`` (``alphaqos.golden``'s ``python -m`` tool aside)."""
    users = set()
    for name, tree in _parsed(lambda text: "argparse" in text).items():
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            if "argparse" in names:
                users.add(name)
    assert "alphaqos.cli._common" in users
    outside = {n for n in users if not (n == "alphaqos.cli" or n.startswith("alphaqos.cli."))}
    assert outside == {"alphaqos.golden"}


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.fail("ruff is missing from the environment: run `make setup`")
    return subprocess.run([str(ruff), "check", "--no-cache", "--output-format", "concise", *args],
                          capture_output=True, text=True, cwd=PACKAGE.parent.parent)  # fmt: skip


def test_ruff_finds_no_unused_import_nor_repeated_key(tmp_path):
    """pyproject.toml's ruff rules (unused imports and variables, repeated
    dict keys, redefinitions) hold in the package: ``reference.py`` once
    described ``Queue.red`` twice, the later silently winning."""
    done = _ruff("python/")
    assert done.returncode == 0, done.stdout
    probe = tmp_path / "probe.py"
    probe.write_text('TABLE = {\n    "Queue.red": "A",\n    "fifo": "B",\n    "Queue.red": "C",\n}\n')
    assert "F601" in _ruff("--config", str(PACKAGE.parent.parent / "pyproject.toml"), str(probe)).stdout


def test_the_import_check_sees_relative_imports(tmp_path):
    path = tmp_path / "backtest.py"
    path.write_text("from ..cli import UsageError\nfrom . import schema\nimport alphaqos.cli.run\n")
    assert {"alphaqos.cli", "alphaqos.cli.UsageError", "alphaqos.flows", "alphaqos.flows.schema",
            "alphaqos.cli.run"} <= _imports(path, "alphaqos.flows.backtest")  # fmt: skip


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_each_command_registers_the_help_line_the_list_shows():
    full = cli._parser("*")
    registered = {a.dest: a.help for a in _subparsers(full)._choices_actions}
    assert registered == {name: command.help for name, command in cli.COMMANDS.items()}
    assert list(registered) == list(cli.COMMANDS)
    assert cli._parser(None).format_help() == full.format_help()


def _every_parser(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _every_parser(sub, (*path, name))


def test_every_command_and_subcommand_builds_its_help():
    """Each parser the package defines formats its help (``alphaqos X Y
    --help``), every sub-command with a help line of its own; the commands
    whose parsers moved here from the feature packages are all present."""
    parsers = dict(_every_parser(cli._parser("*")))
    for path, parser in parsers.items():
        text = parser.format_help()
        assert text.startswith(f"usage: {' '.join(('alphaqos', *path))}"), path
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                assert all(choice.help for choice in action._choices_actions), path
    assert {("flows", "collect"), ("flows", "ingest"), ("flows", "synth"), ("flows", "identify"), ("flows", "backtest"),
            ("circuits", "plan"), ("circuits", "token", "revoke"), ("transfer", "send"), ("transfer", "serve"),
            ("provision",), ("shape",)} <= set(parsers)  # fmt: skip
    assert len(parsers) == 44


def test_only_the_chosen_command_is_built():
    chosen = _subparsers(cli._parser(cli._chosen(["validate", "x.yaml"]))).choices
    assert chosen["validate"]._actions[1:] and not chosen["run"]._actions[1:]  # beyond -h
    assert cli._chosen(["--version"]) is None and cli._chosen(["nonesuch"]) is None


def test_bad_command_and_option_are_one_line_errors(capsys):
    assert cli.main(["nonesuch"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("alphaqos: error: argument COMMAND: invalid choice: 'nonesuch'") and err.count("\n") == 1
    assert cli.main(["sweep", "x.yaml", "--seeds", "0"]) == cli.EXIT_USAGE
    assert "--seeds: expected a whole number of at least 1, got '0'" in capsys.readouterr().err


IMPORT_PROBE = """
import sys
import alphaqos.cli
heavy = [m for m in ("polars", "pydantic", "numpy", "rich", "alphaqos._core", "alphaqos.engine", "alphaqos.scenario")
         if m in sys.modules]
print(",".join(heavy))
"""


def test_import_and_help_stay_light():
    """``import alphaqos.cli`` loads none of the engine, polars, pydantic,
    numpy or rich; ``python -m alphaqos --help`` lists every command."""
    done = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
    shown = subprocess.run([sys.executable, "-m", "alphaqos", "--help"], capture_output=True, text=True, check=True)
    for name in cli.COMMANDS:
        assert f"    {name} " in shown.stdout or f"    {name}\n" in shown.stdout


@pytest.mark.parametrize("name", ["alphaqos.cli", "alphaqos.errors"])
def test_usage_error_is_one_class(name):
    import importlib

    from alphaqos import errors

    assert importlib.import_module(name).UsageError is errors.UsageError
