"""Value types shared by the scenario schema and the controllers'
parameters: integers parsed from unit strings once, at the edge, and
written back exactly (``"0.05ms"`` stays ``"0.05ms"`` in a resolved file).
"""

from __future__ import annotations

from functools import partial
import math
import re
from typing import Annotated, NamedTuple

from pydantic import AfterValidator, BaseModel, ConfigDict, PlainSerializer, PlainValidator, Strict

from . import units

__all__ = ["Dscp", "Flag", "Model", "Name", "Port", "PortRange", "PositiveRate", "QueueLimit", "PositiveSize", "PositiveTime", "Rate", "Size", "Threshold", "ThresholdField", "Time", "fmt_threshold"]


def _unit_type(parse, fmt):
    """An int parsed from a unit string, written back exactly in JSON dumps."""
    return Annotated[int, PlainValidator(parse), PlainSerializer(partial(fmt, exact=True), when_used="json")]


Rate = _unit_type(units.parse_rate, units.fmt_rate)
Size = _unit_type(units.parse_size, units.fmt_size)
Time = _unit_type(units.parse_time, units.fmt_time_ns)


def _positive(fmt):
    def check(value: int) -> int:
        if value <= 0:
            raise ValueError(f"must be greater than {fmt(0, exact=True)}, got {fmt(value, exact=True)}")
        return value

    return AfterValidator(check)


PositiveRate = Annotated[Rate, _positive(units.fmt_rate)]
PositiveSize = Annotated[Size, _positive(units.fmt_size)]
PositiveTime = Annotated[Time, _positive(units.fmt_time_ns)]


#: A queue or buffer limit: ``"125MB"``, ``"1000p"``, ``1000``, ``"unlimited"``.
QueueLimit = Annotated[
    units.QueueLimit,
    PlainValidator(units.parse_queue_limit),
    PlainSerializer(units.fmt_queue_limit, when_used="json"),
]

#: A strict boolean: ``yes``/``1`` are not accepted for ``true``.
Flag = Annotated[bool, Strict()]


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit"


def _parse_name(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"a name must be a string, got {value!r} (quote it in YAML)")
    if not _NAME.match(value):
        raise ValueError(f"invalid name {value!r}: use {_NAME_RULE}")
    return value


Name = Annotated[str, PlainValidator(_parse_name)]


#: DiffServ code points by name (RFC 2474 class selectors, RFC 2597 assured
#: forwarding, RFC 3246 expedited forwarding, RFC 8622 lower effort).
DSCP_NAMES = {
    "be": 0, "default": 0, "ef": 46, "le": 1, "va": 44,
    **{f"cs{i}": 8 * i for i in range(8)},
    **{f"af{c}{d}": 8 * c + 2 * d for c in range(1, 5) for d in range(1, 4)},
}  # fmt: skip


def _dscp(value: object) -> int:
    if isinstance(value, str) and value.lower() in DSCP_NAMES:
        return DSCP_NAMES[value.lower()]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 63:
        return value
    raise ValueError(f"expected a DSCP value 0..63 or a name like ef, af11, cs1, be; got {value!r}")


def _fmt_dscp(value: int) -> int | str:
    names = {v: k for k, v in reversed(DSCP_NAMES.items())}
    return names.get(value, value)


Dscp = Annotated[int, PlainValidator(_dscp), PlainSerializer(_fmt_dscp, when_used="json")]


def _port(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return value
    raise ValueError(f"expected a port number 1..65535, got {value!r}")


Port = Annotated[int, PlainValidator(_port)]


def _port_range(value: object) -> tuple[int, int]:
    """``5001`` -> (5001, 5001); ``"5000-5010"`` -> (5000, 5010)."""
    if isinstance(value, str) and "-" in value:
        low, _, high = value.partition("-")
        try:
            lo, hi = _port(int(low)), _port(int(high))
        except ValueError:
            raise ValueError(f"expected a port or a range like '5000-5010', got {value!r}") from None
        if lo > hi:
            raise ValueError(f"the range {value!r} is empty (low end above high end)")
        return lo, hi
    try:
        port = _port(value)
    except ValueError:
        raise ValueError(f"expected a port or a range like '5000-5010', got {value!r}") from None
    return port, port


def _fmt_port_range(r: tuple[int, int]) -> int | str:
    return r[0] if r[0] == r[1] else f"{r[0]}-{r[1]}"


PortRange = Annotated[tuple[int, int], PlainValidator(_port_range), PlainSerializer(_fmt_port_range, when_used="json")]


class Model(BaseModel):
    """A strict, immutable schema model: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Threshold(NamedTuple):
    """A RED threshold: a packet count, or a size in bytes."""

    value: float
    in_bytes: bool


def _parse_threshold(value: object) -> Threshold:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"expected a non-negative packet count, got {value!r}")
        return Threshold(float(value), in_bytes=False)
    if isinstance(value, str):
        return Threshold(float(units.parse_size(value)), in_bytes=True)
    raise ValueError(f"expected a packet count like 5 or a size like '30KB', got {value!r}")


def fmt_threshold(threshold: Threshold) -> float | int | str:
    if threshold.in_bytes:
        return units.fmt_size(int(threshold.value), exact=True)
    return int(threshold.value) if threshold.value.is_integer() else threshold.value


ThresholdField = Annotated[
    Threshold, PlainValidator(_parse_threshold), PlainSerializer(fmt_threshold, when_used="json")
]
