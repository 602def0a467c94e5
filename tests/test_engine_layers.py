"""The engine's layering (issue 24's done-test): the module graph drawn from
the `use` lines of `crates/alphaqos-sim/src` has no circle, and the control
plane (`control/`) imports nothing of the components it drives (`qos/`,
`tcp/`, `apps/`): it sees the engine only through its `World` trait.

The graph is per file (a `mod.rs` is its directory's module); items under
`#[cfg(test)]` are left out (a unit test may reach anywhere), and only they:
code after a file's test module counts.
"""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "crates" / "alphaqos-sim" / "src"

USE = re.compile(r"\buse\s+(crate|super|self)((?:::\w+)*)(?:::\{([^;]*)\})?", re.S)
PATH = re.compile(r"\bcrate((?:::\w+)+)")


def without_tests(text: str) -> str:
    """`text` without its `#[cfg(test)]` items (a module's braces matched)."""
    out, pos = [], 0
    while (at := text.find("#[cfg(test)]", pos)) >= 0:
        out.append(text[pos:at])
        i = at + len("#[cfg(test)]")
        while i < len(text) and text[i] not in "{;":
            i += 1
        if i < len(text) and text[i] == "{":
            depth = 0
            while i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
                if depth == 0:
                    break
        pos = i + 1 if i < len(text) and text[i - 1] != "}" else i
    out.append(text[pos:])
    return "".join(out)


def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return "::".join(parts)


def module_graph(root: Path = SRC) -> dict[str, set[str]]:
    """module -> the modules it imports (by `use` or a `crate::` path)."""
    modules = {_module(p, root): p for p in sorted(root.rglob("*.rs"))}

    def resolve(parts: list[str]) -> str | None:
        for n in range(len(parts), 0, -1):
            name = "::".join(parts[:n])
            if name in modules:
                return name
        return None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        text = re.sub(r"//[^\n]*", "", without_tests(path.read_text()))
        here = name.split("::") if name else []
        targets: set[str] = set()
        for m in USE.finditer(text):
            base, rest, group = m.groups()
            prefix = [] if base == "crate" else here[:-1] if base == "super" else here
            parts = [x for x in rest.split("::") if x]
            while parts and parts[0] == "super":
                prefix, parts = prefix[:-1], parts[1:]
            items = [g.strip().split("::")[0].split(" ")[0] for g in group.split(",") if g.strip()] if group else [""]
            for item in items:
                t = resolve(prefix + parts + ([item] if item and item != "self" else []))
                if t is not None and t != name:
                    targets.add(t)
        for m in PATH.finditer(text):
            t = resolve([x for x in m.group(1).split("::") if x])
            if t is not None and t != name:
                targets.add(t)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_engines_modules_import_in_no_circle():
    assert circles(module_graph()) == []


def test_the_control_plane_imports_none_of_the_components_it_drives():
    graph = module_graph()
    upward = sorted(
        (a, b) for a, targets in graph.items() if a.split("::")[0] == "control" for b in targets if b.split("::")[0] in ("qos", "tcp", "apps", "sim", "network")
    )
    assert upward == []


def test_the_analysis_finds_a_circle_and_an_upward_import(tmp_path):
    # A small crate with a -> b -> a and control -> qos: both are found.
    (tmp_path / "control").mkdir()
    (tmp_path / "qos").mkdir()
    (tmp_path / "lib.rs").write_text("pub mod a; pub mod b; pub mod control; pub mod qos;\n")
    (tmp_path / "a.rs").write_text("use crate::b::Thing;\n")
    (tmp_path / "b.rs").write_text("use crate::{a, qos::Q};\n#[cfg(test)]\nmod tests { fn f() { use crate::control::X; } }\n#[cfg(test)]\nuse crate::control::Y;\n")
    # Code after a test module counts: c -> d -> c.
    (tmp_path / "c.rs").write_text("#[cfg(test)]\nmod tests {}\npub fn f() { crate::d::g() }\n")
    (tmp_path / "d.rs").write_text("pub fn g() { crate::c::f() }\n")
    (tmp_path / "control" / "mod.rs").write_text("use super::qos::Q;\n")
    (tmp_path / "qos" / "mod.rs").write_text("pub struct Q;\n")
    graph = module_graph(tmp_path)
    assert circles(graph) == [["a", "b"], ["c", "d"]]
    assert graph["control"] == {"qos"} and "control" not in graph["b"]


def _code(path: Path) -> str:
    """A source file without its unit tests and comments."""
    return re.sub(r"//[^\n]*", "", without_tests(path.read_text()))


def _engine_files(root: Path = SRC) -> dict[str, str]:
    return {str(p.relative_to(root)): _code(p) for p in sorted(root.rglob("*.rs"))}


def downcasts(files: dict[str, str]) -> list[str]:
    """Files outside `tcp/` and `apps/` that reach into a connection's TCP
    (`.tcp()`, `.tcp_mut()`, a `.sender.`/`.receiver.` of an application)."""
    reach = re.compile(r"\.tcp(_mut)?\(\)|\bapp\.(sender|receiver)\b|\bBulkTcp\b.*\.(sender|receiver)\b")
    return sorted(f for f, text in files.items() if not f.startswith(("tcp/", "apps/")) and reach.search(text))


def test_no_one_outside_tcp_and_apps_reaches_into_a_connection():
    # The event loop and the control plane learn what happened from the
    # application's Report and read its TcpCounters; the App trait has no
    # downcast to the TCP connection any more.
    files = _engine_files()
    assert downcasts(files) == []
    assert not re.search(r"fn tcp(_mut)?\(", files["apps/mod.rs"])


def test_a_packets_direction_is_stamped_by_its_sender_not_read_from_its_payload():
    files = _engine_files()
    assert [f for f, text in files.items() if "is_forward" in text] == []
    net = files["network.rs"]
    # Only DirWire sets it: FlowIo::fwd stamps true, FlowIo::rev false.
    assert re.findall(r"fwd: (true|false) \}", net) == ["true", "false"]


def test_tcp_small_queues_accounting_lives_in_one_shim():
    # The bytes a connection has queued at its sending host change in the
    # Tsq type and in Net::tsq alone, not across the transmit path.
    net = _engine_files()["network.rs"]
    changes = [m.start() for m in re.finditer(r"\bqueued\s*[-+]?=", net)]
    impl_tsq = re.search(r"impl Tsq \{.*?\n\}", net, re.S).span()
    fn_tsq = re.search(r"fn tsq\(.*?\n    \}", net, re.S).span()
    assert changes and all(impl_tsq[0] <= c < impl_tsq[1] or fn_tsq[0] <= c < fn_tsq[1] for c in changes)


def test_the_reach_check_finds_a_downcast(tmp_path):
    (tmp_path / "apps").mkdir()
    (tmp_path / "sim.rs").write_text("fn f(c: &Conn) { let t = c.app.tcp().unwrap(); }\n")
    (tmp_path / "world.rs").write_text("// c.app.tcp() in a comment\nfn g() {}\n#[cfg(test)]\nmod t { fn h(c: &C) { c.app.tcp_mut(); } }\n")
    (tmp_path / "apps" / "mod.rs").write_text("fn tcp(&self) -> Option<&BulkTcp> { None }\nfn f(a: &A) { a.tcp(); }\n")
    assert downcasts(_engine_files(tmp_path)) == ["sim.rs"]


def knob_name_matches(files: dict[str, str]) -> list[str]:
    """Files outside `control/` that match a knob name (`knob.rs`'s
    catalogue, colour suffix allowed) as a string: a match arm or a
    comparison. The registry in `control/knobs.rs` is the one place that
    turns names into typed `Knob`s; components see only those."""
    names = re.findall(r'\bk\("(\w+)"', files["knob.rs"])
    lit = rf'"(?:{"|".join(names)})(?:\.\w+)?"'
    match = re.compile(rf"{lit}\s*(?:=>|\||[!=]=)|(?:\||[!=]=)\s*{lit}")
    return sorted(f for f, text in files.items() if not f.startswith("control/") and match.search(text))


def test_no_component_outside_the_control_plane_matches_knob_names_as_strings():
    files = _engine_files()
    assert len(re.findall(r'\bk\("(\w+)"', files["knob.rs"])) == 18, "the catalogue as knob.rs writes it"
    assert knob_name_matches(files) == []


def test_the_knob_name_check_finds_a_string_match(tmp_path):
    (tmp_path / "control").mkdir()
    (tmp_path / "knob.rs").write_text('const KNOBS: &[KnobSpec] = &[k("rate_bps", Unit::Rate, ""), k("max_th", Unit::Packets, "")];\n')
    (tmp_path / "control" / "knobs.rs").write_text('fn parse(s: &str) { match s { "rate_bps" => 1, _ => 0 }; }\n')
    (tmp_path / "meter.rs").write_text('fn knob(name: &str) { match name { "rate_bps" => 1, _ => 0 }; }\n')
    (tmp_path / "red.rs").write_text('fn f(name: &str) -> bool { name == "max_th.green" }\n')
    (tmp_path / "world.rs").write_text('// "rate_bps" => in a comment\nfn g(m: &str) -> bool { m == "tokens" }\n')
    assert knob_name_matches(_engine_files(tmp_path)) == ["meter.rs", "red.rs"]


def test_the_simulation_file_keeps_the_event_loop():
    # Transfers and streams live in workload/, the samples and result
    # tables in summary.rs; sim.rs builds the world and runs the loop,
    # knowing neither TCP's state nor the disciplines (building a workload
    # still checks its TCP configuration by making one connection).
    files = _engine_files()
    sim = files["sim.rs"]
    assert not re.search(r"crate::(tcp|qos|summary)\b", sim)
    assert not re.search(r"fn (start_transfer|close_stream|feed|on_workload|sample|results|flow_summary)\b", sim)
    assert re.search(r"fn start_transfer\b", files["workload/transfers.rs"])
    assert re.search(r"pub fn results\b", files["summary.rs"])
    # YAQS's Count-Sketch has a file of its own.
    assert "pub struct CountSketch" in files["qos/sketch.rs"] and "struct CountSketch" not in files["qos/yaqs.rs"]


def string_errors(root: Path = SRC) -> list[str]:
    """Functions of the engine (unit tests left out) whose error is text:
    `-> Result<_, String>` without a `// why` comment on the line above."""
    out = []
    for p in sorted(root.rglob("*.rs")):
        lines = without_tests(p.read_text()).splitlines()
        for i, line in enumerate(lines):
            if re.search(r"->\s*Result<.*,\s*String>\s*(\{|where|$)", line) and not (i and "// why" in lines[i - 1]):
                out.append(f"{p.relative_to(root)}:{i + 1}")
    return out


def test_the_engines_errors_are_structured():
    # Configuration problems are ConfigError{loc, msg}, the control plane's
    # run-time refusals ControlError, a knob's KnobError; text only where a
    # comment says why (a trace file's reader: its path and byte offset).
    assert string_errors() == []


def test_the_string_error_check_finds_one(tmp_path):
    (tmp_path / "a.rs").write_text("pub fn f() -> Result<u32, String> {\n    Ok(1)\n}\n")
    (tmp_path / "b.rs").write_text("// why: a file's problem\npub fn g() -> Result<(u32, u64), String> {\n    Ok((1, 2))\n}\n")
    (tmp_path / "c.rs").write_text("#[cfg(test)]\nmod tests {\n    fn h() -> Result<(), String> { Ok(()) }\n}\n")
    assert string_errors(tmp_path) == ["a.rs:1"]


def test_the_engines_errors_cross_into_python_with_their_location():
    """What the engine refuses reaches Python as a location (a tuple of
    field names and indices) and a message, never as text to split."""
    import json

    import pytest

    core = pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")
    from alphaqos import load_scenario, resolve

    config = resolve(load_scenario(SRC.parents[2] / "scenarios" / "yan2013" / "exp1-1queue.yaml"))
    config["links"][0]["impair_ab"] = {"loss": 2.0}
    router = next(i for i, n in enumerate(config["nodes"]) if n.get("router"))
    config["nodes"][router]["filter"] = [
        {"name": "voice", "dscp": [46, 64]},
        {"name": "cap", "policer": {"trtcm": {"cir_bps": 2_000_000, "cbs_bytes": 3000, "pir_bps": 1_000_000, "pbs_bytes": 3000}}},
    ]
    problems, _ = core.check(json.dumps(config))
    assert problems[0] == (("nodes", router, "filter", 0, "dscp", 1), "64 is not a DiffServ code point (0..63)")
    config["nodes"][router]["filter"].pop(0)
    problems, _ = core.check(json.dumps(config))
    loc, msg = problems[0]
    assert loc == ("nodes", router, "filter", 0, "policer", "trtcm", "pir_bps") and msg.startswith("must be at least cir"), problems
    del config["nodes"][router]["filter"]
    problems, _ = core.check(json.dumps(config))
    assert problems[0] == (("links", 0, "impair_ab", "loss"), "must be in [0, 1], got 2")
    # The engine's defaults: a configuration it cannot read is its ConfigError too.
    with pytest.raises(core.ConfigError) as refused:
        core.applied_config("{")
    assert isinstance(refused.value, ValueError) and refused.value.loc == () and "EOF" in refused.value.msg


def _fn_body(text: str, name: str) -> str:
    """The body of `fn name` in `text` (its braces matched)."""
    at = re.search(r"\bfn\s+" + name + r"\b", text)
    assert at, f"fn {name} not found"
    i, depth = text.index("{", at.end()), 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i : j + 1]
    raise AssertionError(f"fn {name}: unbalanced braces")


def test_the_simulators_transmit_path_is_the_shared_egress_with_hooks_around_it():
    # Issue 24: the simulator's interface runs the queue-plus-transmitter
    # trace replay and the emulator run (egress.rs); YAQS's band and the link
    # taps and monitors are an observer called at one point, not named in
    # the event loop's transmit path.
    network = _code(SRC / "network.rs")
    for fn in ("start_tx", "enqueue", "enqueue_queued"):
        body = _fn_body(network, fn)
        for word in ("yaqs", "last_band", "tap", "on_send", "qdisc.dequeue(", "QueueCtx", "wire_time", "tx_pkts"):
            assert word not in body.lower(), f"Net::{fn} names {word!r}"
    # Issue 25: a packet reaching an idle plain FIFO with its link free is
    # passed straight on (Egress::pass, counted as queue-then-send at the
    # same instant); any other goes through the Egress's enqueue.
    assert "egress.pass(" in _fn_body(network, "enqueue")
    assert "egress.enqueue(" in _fn_body(network, "enqueue_queued")
    # start_tx matches the discipline's answer itself (the packet moved
    # once), through the Egress's steps: dequeue, then sent or held.
    # The packet that goes on the wire (dequeued or passed) is counted sent
    # in one place, Net::on_wire.
    start = _fn_body(network, "start_tx")
    assert "egress.dequeue(" in start and "self.on_wire(" in start and "egress.held(" in start
    # A plain FIFO's head is taken without the answer enum (Egress::dequeue_plain).
    assert "egress.dequeue_plain(" in start
    assert ".sent(" in _fn_body(network, "on_wire") and "self.on_wire(" in _fn_body(network, "enqueue")
    topology = _code(SRC / "topology.rs")
    iface = _fn_body(topology, "sent")
    assert "egress.sent(" in iface and "last_band" not in iface
    egress = _code(SRC / "egress.rs")
    sent = _fn_body(egress, "sent")
    assert "last_band()" in sent and "watch.on_tx(" in sent
    watched = _fn_body(egress, "transmit_watched")
    assert "self.dequeue(" in watched and "self.sent(" in watched and "self.held(" in watched
    assert "last_band" not in _fn_body(egress, "transmit").replace("transmit_watched", "")
    # The interface keeps no copy of the port's state beside its Egress.
    struct = re.search(r"pub struct Iface \{(.*?)\n\}", topology, re.S).group(1)
    fields = set(re.findall(r"pub (\w+):", struct))
    assert "egress" in fields and not fields & {"qdisc", "rng", "rate", "overhead", "busy_until", "tx_pkts", "tx_bytes"}, fields


def test_the_body_finder_fails_on_a_missing_function():
    try:
        _fn_body("fn a() { b() }", "c")
    except AssertionError:
        pass
    else:
        raise AssertionError("a missing fn was not reported")
    assert _fn_body("fn a() { if x { y } }\nfn b() {}", "a") == "{ if x { y } }"
