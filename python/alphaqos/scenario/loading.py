"""Loading a scenario: reading and validating it, the checks across fields,
the engine's own checks, and every problem mapped to the user's file line
and field path."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import difflib
import warnings
from pathlib import Path
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from .. import units
from ..policy import Policy, check_policy
from ..cc import validate_cc_params
from ..deadline import check_deadline_edges, check_deadline_transfers
from ..errors import FieldError, Issue, ScenarioError, ScenarioNote, format_path
from ..source import Source, read_source

from .models import Red, Htb, Link, Tcp, Flow, LinkShare, Scenario


# --- loading and validation -------------------------------------------------


def load_scenario(
    path_or_dict: str | Path | dict, *, seed: int | None = None, duration: str | None = None,
    host_profile: str | None = None,
) -> Scenario:
    """Read and validate a scenario (a YAML file's path, or a dict).

    ``seed`` overrides the scenario's seed. ``host_profile`` (one of
    :data:`HOST_PROFILES`) is the host profile of every TCP connection
    (flow, workload, deadline transfer) whose ``tcp`` names none, in place
    of the default ``linux-6``; one that names its own keeps it. ``duration`` (a time string such
    as ``"10s"``) runs the scenario's timeline for that long instead: flow
    stops and UDP schedule steps past the new end are cut, flows that stop
    at the end of the run follow it, and flows that start at or after the
    new end are left out, each with a :class:`~alphaqos.errors.ScenarioNote`
    warning. Nothing is rescaled.
    Raises :class:`~alphaqos.errors.ScenarioError` with every problem found
    (the structure's, or if the structure is sound, the cross-field checks').
    """
    if host_profile is not None and host_profile not in HOST_PROFILES:
        raise ValueError(f"host profile {host_profile!r}: expected one of {', '.join(HOST_PROFILES)}")
    with _collector_paused():
        return _load_scenario(path_or_dict, seed=seed, duration=duration, host_profile=host_profile)


#: The host profiles a TCP connection may name (``tcp.host_profile``).
HOST_PROFILES: tuple[str, ...] = get_args(Tcp.model_fields["host_profile"].annotation)


def _with_host_profile(data: dict, profile: str) -> dict:
    """``data`` with ``host_profile: profile`` in every TCP connection's
    options that name none (what is not a mapping is left to validation)."""

    def pinned(tcp: Any) -> Any:
        return {**tcp, "host_profile": profile} if isinstance(tcp, dict) and "host_profile" not in tcp else tcp

    def each(items: Any, always: bool) -> Any:
        if not isinstance(items, list):
            return items
        return [{**item, "tcp": pinned(item.get("tcp", {}))} if isinstance(item, dict) and (always or "tcp" in item) else item
                for item in items]  # fmt: skip

    # Every workload and deadline transfer is TCP (options or not); a flow is when it has `tcp`.
    kinds = {"flows": False, "workloads": True, "deadline_transfers": True}
    return {**data, **{key: each(data[key], always) for key, always in kinds.items() if key in data}}


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a scenario is loaded:
    validation makes 10^5 objects for 10^4 items, none of them in a cycle
    worth collecting, and each full collection walks them all (a fifth of
    the time of loading 10^4 workloads, issue 20). Reference counting
    still frees what is dropped; the collector's state is restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _load_scenario(path_or_dict: str | Path | dict, *, seed: int | None, duration: str | None,
                   host_profile: str | None) -> Scenario:  # fmt: skip
    source = read_source(path_or_dict)
    if not isinstance(source.data, dict):
        raise ScenarioError([source.issue((), "expected a mapping with name, duration, nodes, links and flows")])
    data, issues = _with_policy_files(source)
    data = data if seed is None else {**data, "seed": seed}
    data = data if host_profile is None else _with_host_profile(data, host_profile)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        issues += _pydantic_issues(exc, source, seed, data=data)
    if issues:
        raise ScenarioError(_sorted(issues))
    problems = _cross_checks(scenario) or _engine_checks(scenario) or _deadline_checks(scenario)
    if problems:
        raise ScenarioError(_sorted([source.issue(loc, message) for loc, message in problems]))
    if duration is None:
        return scenario
    shortened, left_out = _with_duration(scenario, _duration_override(duration, source))
    note = f" (the duration override ends the run at {_t(shortened.duration)})"
    problems = _cross_checks(shortened)
    if problems:
        raise ScenarioError(_sorted([source.issue(loc, message + note) for loc, message in problems]))
    for loc, what, name, start in left_out:
        issue = source.issue(loc, (
            f"{what} {name!r} starts at {_t(start)}, not before the end of the shortened run "
            f"({_t(shortened.duration)}): left out"
        ))  # fmt: skip
        warnings.warn(ScenarioNote(str(issue)), stacklevel=3)
    return shortened


def _engine_checks(scenario: Scenario) -> list[tuple[tuple, str]]:
    """What the engine itself refuses in the resolved configuration (paths,
    MTUs, size distributions...), every problem at the user's field path
    (:func:`alphaqos.engine.engine_loc`), and the deadline transfers' edge
    routers off the engine's own routes. The engine is the one source of
    truth for what it checks; without a built engine this step is left to
    the run."""
    from ..engine import EngineMissingError, check

    pairs = [(t.src, t.dst) for t in scenario.deadline_transfers]
    try:
        problems, applied = check(scenario, pairs)
    except EngineMissingError:
        return []
    return problems or list(check_deadline_edges(scenario, applied["paths"]))


# --- the engine's errors at the user's fields -------------------------------

#: The engine's field names carry their base unit; the user's do not.
_UNIT_SUFFIXES = ("_bytes", "_bps", "_ns", "_pkts")
#: A flow's and a transfer's ends, as the engine and as the user name them.
_ENDS = {"src": "from", "dst": "to"}
#: A link's per-direction keys of the engine: the user's (for both
#: directions, then per sender).
_DIRECTIONS = {"queue": "queues", "impair": "impairs", "tap": "taps", "monitor": "monitors"}


def engine_issue(error: Any, scenario: Scenario) -> Issue:
    """The engine's refusal (``_core.ConfigError``, with ``loc`` and ``msg``)
    as an issue at the user's field (:func:`user_loc`)."""
    loc, message = user_loc(error.loc, error.msg, scenario)
    return Issue(loc=loc, message=message)


def user_loc(loc: Sequence[str | int], message: str, scenario: Scenario) -> tuple[tuple, str]:
    """An engine location (``ConfigError.loc``: ``("flows", 3, "tcp",
    "mss_bytes")``) as the path of the user's field (``("flows", 3, "tcp",
    "mss")``) and the message, followed down the user's own models: a node's
    index becomes its name, a link's direction (``queue_ab``) the queue the
    user gave for it (``queues.A`` or ``queue``), a flow's ``src``/``dst``
    its kind's ``from``/``to``, a unit suffix goes, and an item the deadline
    transfers added is their transfer (a workload's streams its ``base`` and
    ``additional`` connection). The part of the location that names
    no field of the user's is kept in front of the message."""
    loc = list(loc)
    if len(loc) >= 2 and isinstance(loc[1], int) and (item := _user_item(scenario, loc[0], loc[1])) is not None:
        out, model = item
        rest = loc[2:]
        if loc[0] == "flows" and rest and rest[0] in _ENDS:
            out, model, rest = (*out, model.kind), model.spec, rest
        elif out[0] == "deadline_transfers" and rest[:1] == ["stream_options"] and len(rest) >= 2:
            # deadline.expand: the workload's first stream is the base connection, the second the additional one
            transfer = scenario.deadline_transfers[out[1]]
            side = "base" if rest[1] == 0 else "additional"
            out, model, rest = (*out, side), getattr(transfer, side), rest[2:]
        elif loc[0] == "links" and rest and isinstance(rest[0], str) and rest[0][-3:] in ("_ab", "_ba"):
            out, rest = _direction(out, model, rest[0]), rest[1:]
            model = _at(scenario, out)
        while rest and (step := _step(model, rest[0])) is not None:
            key, model = step
            out, rest = (*out, key), rest[1:]
        where = format_path(tuple(rest))
        return out, f"{where}: {message}" if where else message
    path = format_path(tuple(loc))
    return (), f"the engine rejected the scenario: {path + ': ' if path else ''}{message}"


def _user_item(scenario: Scenario, top: Any, index: int) -> tuple[tuple, Any] | None:
    """The user's item (its path and model) an engine item comes from: a
    node by name; the workloads and agents deadline transfers add, their
    transfer; None if it is none of the user's."""
    if top == "nodes":
        names = list(scenario.nodes)
        return (("nodes", names[index]), scenario.nodes[names[index]]) if index < len(names) else None
    own = {"flows": scenario.flows, "links": scenario.links, "workloads": scenario.workloads, "control": scenario.control}.get(top)
    if own is None:
        return None
    if index < len(own):
        return (top, index), own[index]
    if top not in ("workloads", "control"):
        return None
    # deadline.expand appends a workload per transfer, an agent per dynamic one.
    made = [i for i, t in enumerate(scenario.deadline_transfers) if top == "workloads" or t.dynamic]
    k = index - len(own)
    return (("deadline_transfers", made[k]), None) if k < len(made) else None


def _direction(out: tuple, link: Any, key: str) -> tuple:
    """A link's per-direction engine key (``queue_ab``) as the user's
    field: the sender's entry (``queues.A``) if the user gave one, else the
    field for both directions (``queue``)."""
    base, direction = key[:-3], key[-2:]
    sender = link.between[0] if direction == "ab" else link.between[1]
    per_sender = _DIRECTIONS.get(base)
    if per_sender is not None and sender in getattr(link, per_sender, {}):
        return (*out, per_sender, sender)
    return (*out, base)


def _at(scenario: Scenario, loc: tuple) -> Any:
    """The user's value at ``loc`` (None where there is none)."""
    value: Any = scenario
    for part in loc:
        step = _step(value, part)
        value = step[1] if step is not None else None
    return value


def _step(value: Any, part: str | int) -> tuple[str | int, Any] | None:
    """One step of an engine location into the user's ``value``: a field
    of a model (the engine's name, or without its unit suffix, or a flow's
    end as the user names it), an item of a list, a named entry of a
    mapping by its position (the engine keeps the user's order); None if
    the step names nothing of the user's."""
    if isinstance(value, BaseModel) and isinstance(part, str):
        fields = type(value).model_fields
        names = [part, _ENDS.get(part, part), *(part.removesuffix(s) for s in _UNIT_SUFFIXES if part.endswith(s))]
        for name, field in fields.items():
            if name in names or field.alias in names:
                return field.alias or name, getattr(value, name)
        return None
    if isinstance(part, int) and isinstance(value, (list, tuple)) and part < len(value):
        return part, value[part]
    if isinstance(part, int) and isinstance(value, dict) and part < len(value):
        key = list(value)[part]
        return key, value[key]
    if isinstance(part, str) and isinstance(value, dict) and part in value:
        return part, value[part]
    return None


def router_addresses(scenario: Scenario) -> dict[str, str]:
    """Every node's address as the engine assigns it (a router without one
    draws from the engine's pool); empty without a built engine."""
    from ..engine import EngineMissingError, check

    try:
        return check(scenario)[1]["addresses"]
    except EngineMissingError:
        return {}


def _deadline_checks(scenario: Scenario) -> list[tuple[tuple, str]]:
    """Deadlines no path could meet (the engine estimates the earliest
    completion; without a built engine this is left to the run)."""
    try:
        from .. import _core  # noqa: F401
    except ImportError:
        return []
    from ..deadline import check_feasible

    return list(check_feasible(scenario))


def _with_policy_files(source: Source) -> tuple[dict[str, Any], list[Issue]]:
    """The scenario with every policy given as a file name (``policies:
    {two-queues: policies/two-queues.yaml}``, relative to the scenario's
    directory, or ``other-scenario.yaml#two-queues`` for a policy of another
    scenario) read in: the same policy document can then serve several
    scenarios and ``alphaqos provision``. Also the problems of those files;
    a policy whose file has problems is left out."""
    policies = source.data.get("policies")
    if not isinstance(policies, dict) or not any(isinstance(v, str) for v in policies.values()):
        return source.data, []
    base = Path(source.name).parent if source.name else Path.cwd()
    included, issues = {}, []
    for name, value in policies.items():
        if not isinstance(value, str):
            included[name] = value
            continue
        try:
            included[name] = load_policy_file(base / value, key=name)[0]
        except ScenarioError as exc:
            issues += exc.issues
    return {**source.data, "policies": included}, issues


def load_policy_file(path: str | Path, *, key: str | None = None) -> tuple[dict[str, Any], Source]:
    """Read a file holding one policy document and check it against the
    policy schema; return its data and source (whose lines are the policy's,
    keyed by paths within it). ``FILE#NAME`` reads the policy ``NAME`` out
    of a scenario file's ``policies`` (itself a policy, or a reference to a
    policy file relative to that scenario). Errors name the file and line,
    and the field as ``policies.<key>.<path>`` (a scenario's entry), or
    without ``key`` as the path within the file."""
    path, name = _split_policy_reference(path)
    document = read_source(path, what="scenario" if name else "policy file")
    prefix: tuple[str, ...] = ("policies", key or "_")
    data, lines = document.data, document.lines
    if name is not None:
        policies = data.get("policies") if isinstance(data, dict) else None
        if not isinstance(policies, dict) or name not in policies:
            known = ", ".join(map(str, policies)) if isinstance(policies, dict) and policies else "none"
            raise ScenarioError([document.issue(("policies",), f"no policy {name!r} in this scenario (policies: {known})")])
        if isinstance(policies[name], str):
            return load_policy_file(Path(path).parent / policies[name], key=key)
        data = policies[name]
        lines = {loc[2:]: line for loc, line in lines.items() if loc[:2] == ("policies", name)}
        prefix = ("policies", key or name)
    if not isinstance(data, dict):
        raise ScenarioError([Source(data, document.name, lines).issue((), "a policy is a mapping with classes")])
    # Word pydantic's errors as a scenario's (the allowed keys below
    # policies.<name> are known), at the line in the policy file.
    scoped = Source(data=data, name=document.name, lines={(*prefix, *loc): line for loc, line in lines.items()})
    try:
        Policy.model_validate(data)
    except ValidationError as exc:
        issues = _pydantic_issues(exc, scoped, None, prefix=prefix, data=data)
        if key is None and name is None:
            issues = [dataclasses.replace(issue, loc=issue.loc[2:]) for issue in issues]
        raise ScenarioError(_sorted(issues)) from None
    return data, Source(data=data, name=document.name, lines=lines)


def _split_policy_reference(path: str | Path) -> tuple[Path, str | None]:
    """``scenario.yaml#two-queues`` -> (``scenario.yaml``, ``two-queues``);
    a file whose own name holds a ``#`` is taken as it is."""
    text = str(path)
    if "#" not in text or Path(text).exists():
        return Path(text), None
    file, _, name = text.rpartition("#")
    return Path(file), name


def _duration_override(duration: str, source: Source) -> int:
    try:
        value = units.parse_time(duration)
        if value <= 0:
            raise ValueError(f"must be greater than 0s, got {duration!r}")
    except ValueError as exc:
        raise ScenarioError([Issue(loc=("duration",), message=f"{exc} (duration override)", source=source.name)]) from None
    return value


def _with_duration(scenario: Scenario, duration: int) -> tuple[Scenario, list[tuple[tuple, str, str, int]]]:
    """``scenario`` run for ``duration``, and what is left out of it (field
    path, "flow" or "workload", name, start): flows and workloads that start
    at or after the new end are left out, explicit stops and schedule steps
    past it are cut, default stops follow it."""
    flows, workloads, left_out = [], [], []
    for index, workload in enumerate(scenario.workloads):
        if workload.start >= duration:
            left_out.append((("workloads", index), "workload", workload.name, workload.start))
        elif workload.stop is not None and workload.stop > duration:
            workloads.append(workload.model_copy(update={"stop": duration}))
        else:
            workloads.append(workload)
    for index, flow in enumerate(scenario.flows):
        if flow.start >= duration:
            left_out.append((("flows", index), "flow", flow.name, flow.start))
            continue
        update: dict[str, Any] = {}
        if flow.stop is not None:
            update["stop"] = min(flow.stop, duration)
        if flow.udp is not None and flow.udp.schedule is not None:
            steps = [(time, rate) for time, rate in flow.udp.schedule if time < duration]
            # Every step past the end: the flow stays silent, at 0 bit/s.
            update["udp"] = flow.udp.model_copy(update={"schedule": steps or [(0, 0)]})
        flows.append(flow.model_copy(update=update))
    return scenario.model_copy(update={"duration": duration, "flows": flows, "workloads": workloads}), left_out


def _sorted(issues: list[Issue]) -> list[Issue]:
    """Issues in file order, so the first one reported is the topmost (a
    missing key after the other problems of its mapping)."""
    return sorted(issues, key=lambda issue: issue.sort_key)


def _pydantic_issues(
    exc: ValidationError, source: Source, seed: int | None, prefix: tuple = (), data: Any = None
) -> list[Issue]:
    """Every pydantic error of validating ``data`` (default: the source's) as
    an issue. A misspelt key is reported once, as an unknown key with its
    likely spelling: the "required key is missing" its misspelling caused is
    folded into it. Where a value may take one of several forms (``discard``
    or ``{class: X}``), only the errors of the form written are kept, at the
    value's own path."""
    data = source.data if data is None else data
    errors = []
    for error in exc.errors():
        loc, node, branch = _without_union_tags(tuple(error["loc"]), data, error["type"])
        if branch and _other_branch(error["type"], node):
            continue
        errors.append({**error, "loc": (*prefix, *loc)})
    missing = {tuple(e["loc"]) for e in errors if e["type"] == "missing"}
    folded = set()
    for error in errors:
        if error["type"] == "extra_forbidden":
            loc = tuple(error["loc"])
            guess = _did_you_mean(loc)
            if guess is not None and (*loc[:-1], guess) in missing:
                folded.add((*loc[:-1], guess))
    return [
        _issue_from_pydantic(error, source, seed)
        for error in errors
        if not (error["type"] == "missing" and tuple(error["loc"]) in folded)
    ]


def _without_union_tags(loc: tuple, data: Any, kind: str) -> tuple[tuple, Any, bool]:
    """``loc`` without pydantic's union-member tags (``ClassRef``,
    ``literal[...]``): parts that name nothing in ``data`` (but the last
    one of a missing or unknown key). Also the value at the tagged position
    and whether there was a tag."""
    kept, node, tagged, at = [], data, False, data
    for index, part in enumerate(loc):
        last_key = index == len(loc) - 1 and kind in ("missing", "extra_forbidden")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif not last_key and not tagged:
            tagged, at = True, node
            continue
        kept.append(part)
    return tuple(kept), at, tagged


def _other_branch(kind: str, value: Any) -> bool:
    """Whether an error of a union member is about a form other than the one
    written: a choice of words for a mapping, a mapping for a word."""
    if isinstance(value, dict):
        return kind in ("literal_error", "string_type", "enum")
    return kind in ("model_type", "model_attributes_type", "dict_type")


def _did_you_mean(loc: tuple) -> str | None:
    """The key the model at ``loc[:-1]`` accepts that ``loc[-1]`` most
    likely misspells (difflib's closest match), if any."""
    if not isinstance(loc[-1], str):
        return None
    matches = difflib.get_close_matches(loc[-1], _allowed_keys(loc[:-1]), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _issue_from_pydantic(error: dict[str, Any], source: Source, seed: int | None) -> Issue:
    """Reword one pydantic error as "what was expected", at its YAML path."""
    loc = tuple(error["loc"])
    kind = error["type"]
    order = None
    if kind == "value_error":
        cause = error["ctx"]["error"]
        message = str(cause)
        if isinstance(cause, FieldError):
            loc = (*loc, *cause.loc)
    elif kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        guess = _did_you_mean(loc)
        message = f"unknown key {loc[-1]!r}" + (f": did you mean {guess!r}?" if guess else "")
        message += f" (expected one of: {', '.join(allowed)})" if allowed else ""
    elif kind == "missing":
        message = "required key is missing"
        # Shown at the mapping's line, reported after the mapping's other problems.
        within = [line for at, line in source.lines.items() if at[: len(loc) - 1] == loc[:-1]]
        order = (max(within), 1) if within else None
    else:
        message = error["msg"]
        if message.startswith("Input should be "):
            message = "expected " + message.removeprefix("Input should be ")
        if "input" in error and not isinstance(error["input"], (dict, list)) and ", got" not in message:
            message += f", got {error['input']!r}"
    if loc and loc[-1] == "[key]":
        loc, message = loc[:-1], f"invalid key: {message}"
    if seed is not None and loc == ("seed",):
        return Issue(loc=loc, message=f"{message} (seed override)", source=source.name)
    return dataclasses.replace(source.issue(loc, message), order=order)


def _allowed_keys(loc: tuple) -> list[str]:
    """The keys the model at ``loc`` (a path into a Scenario) accepts."""
    annotation: Any = Scenario
    for part in loc:
        annotation = _strip(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields = {info.alias or name: info for name, info in annotation.model_fields.items()}
            if part not in fields:
                return []
            annotation = fields[part].annotation
        elif get_origin(annotation) in (list, dict):
            annotation = get_args(annotation)[-1]
        else:
            return []
    annotation = _strip(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [info.alias or name for name, info in annotation.model_fields.items()]
    return []


def _strip(annotation: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` -> ``X``."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is Union or type(annotation).__name__ == "UnionType":
            # A model among the forms, if any: it is the one with keys.
            forms = [arg for arg in get_args(annotation) if arg is not type(None)]
            annotation = next((f for f in forms if isinstance(_strip(f), type) and issubclass(_strip(f), BaseModel)), forms[0])
        else:
            return annotation


# --- cross-field checks -----------------------------------------------------


def _cross_checks(scenario: Scenario) -> list[tuple[tuple, str]]:
    """Everything a single field cannot check alone, as (path, message)."""
    return [
        *_check_nodes(scenario),
        *_check_policies(scenario),
        *_check_links(scenario),
        *_check_flows(scenario),
        *_check_workloads(scenario),
        *check_deadline_transfers(scenario),
        *_check_run(scenario),
    ]


def _check_run(scenario: Scenario):
    if scenario.metric_interval > scenario.duration:
        yield ("metric_interval",), f"{_t(scenario.metric_interval)} is longer than the run ({_t(scenario.duration)})"


def _t(ns: int) -> str:
    return units.fmt_time_ns(ns, exact=True)


def _check_nodes(scenario: Scenario):
    owner: dict[str, str] = {}
    for name, node in scenario.nodes.items():
        if node.policy is not None:
            if not node.router:
                yield ("nodes", name, "policy"), "only routers apply a policy's filter (add 'router: true')"
            elif node.policy not in scenario.policies:
                yield ("nodes", name, "policy"), _unknown_policy(node.policy, scenario)
        if not node.router and node.address is None:
            yield ("nodes", name), "a host needs an IPv4 address (add 'address: ...', or 'router: true')"
        if node.address is None:
            continue
        # The engine does not check that addresses are unique (a router's
        # it assigns from the free ones), so only this check sees the mistake.
        if node.address in owner:
            yield ("nodes", name, "address"), f"address {node.address} is already used by node {owner[node.address]!r}"
        owner.setdefault(node.address, name)


def _check_policies(scenario: Scenario):
    for name, policy in scenario.policies.items():
        for loc, message in check_policy(policy):
            yield ("policies", name, *loc), message


def _unknown_policy(name: str, scenario: Scenario) -> str:
    known = ", ".join(scenario.policies) or "none defined under 'policies'"
    return f"unknown policy {name!r} (policies: {known})"


def _check_links(scenario: Scenario):
    joined: dict[frozenset, int] = {}
    for index, link in enumerate(scenario.links):
        a, b = link.between
        for end_index, end in enumerate(link.between):
            if end not in scenario.nodes:
                yield ("links", index, "between", end_index), _unknown_node(end, scenario)
        if a == b:
            yield ("links", index, "between"), f"a link joins two different nodes, got {a!r} twice"
        pair = frozenset(link.between)
        # The engine takes two links between one pair of nodes (it routes
        # over the first), so only this check sees the mistake.
        if pair in joined:
            yield ("links", index, "between"), f"duplicate link: links[{joined[pair]}] already joins {a!r} and {b!r}"
        joined.setdefault(pair, index)
        for key, per_sender in (("queues", link.queues), ("impairs", link.impairs), ("taps", link.taps), ("monitors", link.monitors)):
            for sender in per_sender:
                if sender not in link.between:
                    yield (
                        ("links", index, key, sender),
                        f"{sender!r} is not an end of this link (expected {a!r} or {b!r})",
                    )
        taps = [(("links", index, "tap"), link.tap)] + [(("links", index, "taps", s), t) for s, t in link.taps.items()]
        for loc, tap in taps:
            if isinstance(tap, str) and (not tap or "/" in tap or tap.startswith(".")):
                yield loc, f"a tap is true or a file name (no directory, not hidden), got {tap!r}"
        queues = [(("links", index, "queue"), link.queue)]
        queues += [(("links", index, "queues", sender), queue) for sender, queue in link.queues.items()]
        for loc, queue in queues:
            if queue.red is not None:
                yield from _check_red(queue.red, (*loc, "red"))
            if queue.policy is not None and queue.policy not in scenario.policies:
                yield (*loc, "policy"), _unknown_policy(queue.policy, scenario)
            if queue.htb is not None:
                yield from _check_htb(queue.htb, (*loc, "htb"))


def _check_htb(htb: Htb, loc: tuple):
    """The rest (parents declared first, ceil not below rate, a child on an
    inner class, filters naming leaves, their prefixes) the engine checks,
    and its errors arrive at the class's own field. The engine calls the
    default ``default_class``, a key the user's file does not have, so the
    default is checked here to point at the user's ``default``."""
    parents = {c.parent for c in htb.classes.values()}
    leaves = [name for name in htb.classes if name not in parents]
    if htb.default is not None and htb.default not in leaves:
        yield (*loc, "default"), f"{htb.default!r} is not a leaf class (leaves: {', '.join(leaves)})"


def _check_red(red: Red, loc: tuple):
    """Thresholds of one kind (the engine takes numbers of the kind the
    resolution says; their order it checks itself)."""
    if red.min_th.in_bytes != red.max_th.in_bytes:
        yield (*loc, "max_th"), "min_th and max_th must both be packet counts or both be sizes"


def _check_flows(scenario: Scenario):
    # A flow's ends (hosts of the scenario) and its name (used once) the
    # engine checks; its errors arrive at the flow's own field.
    for index, flow in enumerate(scenario.flows):
        loc = ("flows", index)
        # The engine refuses a flow from a host to itself as the whole flow
        # (``flows[0]``); this points at its ``to``.
        if flow.spec.src == flow.spec.dst:
            yield (*loc, flow.kind, "to"), f"a flow needs two different hosts, got {flow.spec.src!r} twice"
        yield from _check_times(scenario, flow, loc)
        if flow.udp is not None and flow.udp.schedule is not None:
            yield from _check_schedule(scenario, flow.udp.schedule, (*loc, "udp", "schedule"))
        if flow.tcp is not None:
            yield from _check_tcp(flow.tcp, (*loc, "tcp"))
        if flow.ping is not None:
            for key in ("src_port", "dst_port"):
                if getattr(flow, key) is not None:
                    yield (*loc, key), "a ping (ICMP) has no ports"


def _check_workloads(scenario: Scenario):
    """Names a workload uses, its times and TCP options. What needs the
    engine's arithmetic (paths and MTUs, size distributions' parameters) the
    engine checks, and its errors come back with the workload's path."""
    seen: dict[str, int] = {}
    for index, wl in enumerate(scenario.workloads):
        loc = ("workloads", index)
        if wl.name in seen:
            yield (*loc, "name"), f"duplicate workload name {wl.name!r} (also workloads[{seen[wl.name]}])"
        seen.setdefault(wl.name, index)
        for key, host in wl.hosts():
            node = scenario.nodes.get(host)
            if node is None:
                yield (*loc, *key), _unknown_node(host, scenario)
            elif node.router:
                yield (*loc, *key), f"{host!r} is a router; transfers run between hosts"
        if wl.transfer is not None and wl.transfer.src == wl.transfer.dst:
            yield (*loc, "transfer", "to"), f"a transfer needs two different hosts, got {wl.transfer.src!r} twice"
        if wl.http is not None and wl.http.server in wl.http.clients:
            i = wl.http.clients.index(wl.http.server)
            yield (*loc, "http", "clients", i), f"{wl.http.server!r} is the server; clients fetch from another host"
        load = wl.poisson.load if wl.poisson is not None else None
        if isinstance(load, LinkShare) and _link_between(scenario, *load.link) is None:
            yield (*loc, "poisson", "load", "link"), f"no link between {load.link[0]!r} and {load.link[1]!r}"
        stop = wl.stop if wl.stop is not None else scenario.duration
        if stop > scenario.duration:
            yield (*loc, "stop"), f"{_t(stop)} is after the end of the run (duration {_t(scenario.duration)})"
        elif wl.start >= stop:
            yield (*loc, "start"), f"{_t(wl.start)} is not before {_t(stop)}"
        yield from _check_tcp(wl.tcp, (*loc, "tcp"))
        for i, o in enumerate(wl.stream_options):
            if o.cc is not None or o.cc_params is not None:
                try:
                    _validated_cc_params(o.cc or wl.tcp.cc, o.cc_params or {})
                except ValueError as exc:
                    yield (*loc, "stream_options", i, "cc_params"), str(exc)




def _link_between(scenario: Scenario, a: str, b: str) -> Link | None:
    return next((link for link in scenario.links if set(link.between) == {a, b}), None)


def _check_times(scenario: Scenario, flow: Flow, loc: tuple):
    stop = scenario.stop_of(flow)
    if stop > scenario.duration:
        yield (*loc, "stop"), f"{_t(stop)} is after the end of the run (duration {_t(scenario.duration)})"
    elif flow.start >= stop:
        end = "its stop" if flow.stop is not None else "the end of the run"
        yield (*loc, "start"), f"{_t(flow.start)} is not before {end} ({_t(stop)})"


def _check_schedule(scenario: Scenario, schedule: list[tuple[int, int]], loc: tuple):
    for step, (time, _rate) in enumerate(schedule):
        if time >= scenario.duration:
            yield (*loc, step, 0), f"{_t(time)} is not before the end of the run ({_t(scenario.duration)})"
        if step and time <= schedule[step - 1][0]:
            yield (*loc, step, 0), f"schedule times must ascend: {_t(time)} follows {_t(schedule[step - 1][0])}"


def _check_tcp(tcp: Tcp, loc: tuple):
    if tcp.rwnd < tcp.mss:
        yield (*loc, "rwnd"), f"must be at least one segment (mss {units.fmt_size(tcp.mss, exact=True)})"
    if tcp.min_rto > tcp.max_rto:
        yield (*loc, "max_rto"), f"must not be less than min_rto ({_t(tcp.min_rto)})"
    elif not tcp.min_rto <= tcp.initial_rto <= tcp.max_rto:
        yield (*loc, "initial_rto"), f"must lie between min_rto ({_t(tcp.min_rto)}) and max_rto ({_t(tcp.max_rto)})"
    try:
        _validated_cc_params(tcp.cc, tcp.cc_params)
    except ValueError as exc:
        yield (*loc, "cc_params"), str(exc)


#: Controller parameters validated so far, by (controller, ``repr`` of
#: the parameters): the model, or the message of the error it raised.
_CC_VALIDATED: dict[tuple[Any, str], Any] = {}
_CC_VALIDATED_MAX = 1024


def _validated_cc_params(cc: str, params: Any) -> Any:
    """:func:`~alphaqos.cc.validate_cc_params` once per distinct value
    (10^4 workloads mostly share one), raising the same error each time.
    The model it returns is frozen. Values are told apart by ``repr``, which
    keeps what the check sees (``1`` from ``1.0`` and ``True``, the order of
    keys, which orders the errors) for the plain data a file gives; anything
    else is validated every time."""
    if not (params is None or type(params) is dict) or type(cc) is not str:
        return validate_cc_params(cc, params)
    key = (cc, repr(params))
    found = _CC_VALIDATED.get(key)
    if found is None:
        try:
            found = validate_cc_params(cc, params)
        except ValueError as exc:
            found = str(exc)
        if len(_CC_VALIDATED) < _CC_VALIDATED_MAX:
            _CC_VALIDATED[key] = found
    if isinstance(found, str):
        raise ValueError(found)
    return found


def _unknown_node(name: str, scenario: Scenario) -> str:
    return f"unknown node {name!r} (nodes: {', '.join(scenario.nodes)})"
