"""Quantities with units: parsed once, at the edge, into integers in base units.

Users write quantities as strings (``"10Gbps"``, ``"125MB"``, ``"0.05ms"``);
everything past the scenario loader works on integers in base units:

==========  ================  ==========================================
quantity    base unit         accepted units
==========  ================  ==========================================
rate        bit/s             ``bps Kbps Mbps Gbps Tbps`` (or ``bit/s``,
                              ``Kbit/s``, ...; the prefix letter in either
                              case, powers of 1000)
size        bytes             ``B KB MB GB TB`` (powers of 1000) and
                              ``KiB MiB GiB TiB`` (powers of 1024)
time        nanoseconds       ``ns us µs ms s min``
queue limit packets or bytes  ``1000p``, ``1000pkts``, a bare integer
                              (packets), a size, or ``unlimited``
==========  ================  ==========================================

Numbers are read as :class:`decimal.Decimal`, so ``"0.05ms"`` is exactly
50 000 ns and no binary floating-point rounding can creep in. A value that
is not a whole number of the base unit (``"0.5ns"``) is rejected rather than
rounded. The ``fmt_*`` helpers go the other way: for people by default
(``fmt_rate(3e9) == "3 Gbps"``), or, with ``exact=True``, as the shortest
string that parses back to the same integer (used for the resolved
``scenario.yaml`` of a run).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, localcontext
from typing import NamedTuple

__all__ = [
    "QueueLimit",
    "fmt_queue_limit",
    "fmt_rate",
    "fmt_size",
    "fmt_time_ns",
    "parse_queue_limit",
    "parse_rate",
    "parse_size",
    "parse_time",
]

# Unit tables, smallest first. Keys are matched exactly after the prefix
# letter of rates and sizes has been normalised (see _canonical_*).
_RATE_UNITS = {"bps": 1, "Kbps": 10**3, "Mbps": 10**6, "Gbps": 10**9, "Tbps": 10**12}
_SIZE_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_BINARY_SIZE_UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_TIME_UNITS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9, "d": 86_400 * 10**9}
_TIME_ALIASES = {"µs": "us", "μs": "us"}  # micro sign and Greek mu
_PACKET_SUFFIXES = ("pkts", "p")

_RATE_EXAMPLE = "a rate like '10Gbps' (units: bps, Kbps, Mbps, Gbps, Tbps)"
_SIZE_EXAMPLE = "a size like '1500B' (units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
_TIME_EXAMPLE = "a time like '200ms' (units: ns, us, ms, s, min, h, d)"
_LIMIT_EXAMPLE = "a queue limit like '1000p' (packets), '125MB' (bytes) or 'unlimited'"

# A non-negative decimal number (exponent of at most two digits) followed
# by a unit. Numbers are capped in length so that the Decimal arithmetic
# below (100 digits of precision) is always exact.
_QUANTITY = re.compile(
    r"^\s*(?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,2})?)\s*(?P<unit>[A-Za-zµμ/]+)?\s*$"
)
_MAX_NUMBER_CHARS = 40
_PRECISION = 100
#: Every parsed quantity must fit the engine's unsigned 64-bit integers.
LIMIT = 2**64


class QueueLimit(NamedTuple):
    """A queue's capacity: in packets, in bytes, or unlimited (both ``None``)."""

    pkts: int | None = None
    bytes: int | None = None


def parse_rate(value: object) -> int:
    """Parse a rate such as ``"10Gbps"`` or ``"2.5 Gbit/s"`` into bit/s."""
    number, unit = _split(value, _RATE_EXAMPLE)
    scale = _RATE_UNITS.get(_canonical_rate_unit(unit))
    if scale is None:
        raise ValueError(f"unknown rate unit {unit!r}: expected {_RATE_EXAMPLE}")
    return _whole(number, scale, "bit/s", value)


def parse_size(value: object) -> int:
    """Parse a size such as ``"125MB"`` or ``"48MiB"`` into bytes."""
    number, unit = _split(value, _SIZE_EXAMPLE)
    scale = _size_scale(unit)
    if scale is None:
        raise ValueError(f"unknown size unit {unit!r}: expected {_SIZE_EXAMPLE}")
    return _whole(number, scale, "byte", value)


def parse_time(value: object) -> int:
    """Parse a time such as ``"0.05ms"`` or ``"200s"`` into nanoseconds."""
    number, unit = _split(value, _TIME_EXAMPLE)
    scale = _TIME_UNITS.get(_TIME_ALIASES.get(unit, unit))
    if scale is None:
        raise ValueError(f"unknown time unit {unit!r}: expected {_TIME_EXAMPLE}")
    return _whole(number, scale, "nanosecond", value)


def parse_queue_limit(value: object) -> QueueLimit:
    """Parse a queue limit: ``1000``, ``"1000p"``, ``"1000pkts"``, ``"125MB"``
    or ``"unlimited"``. A limit must be positive."""
    if isinstance(value, int) and not isinstance(value, bool):
        return QueueLimit(pkts=_positive_limit(value, value))
    if isinstance(value, str) and value.strip() == "unlimited":
        return QueueLimit()
    number, unit = _split(value, _LIMIT_EXAMPLE, unit_required=False)
    if unit is None or unit in _PACKET_SUFFIXES:
        return QueueLimit(pkts=_positive_limit(_whole(number, 1, "packet", value), value))
    scale = _size_scale(unit)
    if scale is None:
        raise ValueError(f"unknown queue limit unit {unit!r}: expected {_LIMIT_EXAMPLE}")
    return QueueLimit(bytes=_positive_limit(_whole(number, scale, "byte", value), value))


def fmt_rate(bps: float, *, exact: bool = False) -> str:
    """Format a rate in bit/s: ``fmt_rate(3e9) == "3 Gbps"``.

    With ``exact=True`` the result has no space and parses back to the same
    integer (``fmt_rate(1_500_000, exact=True) == "1.5Mbps"``)."""
    return _format(bps, _RATE_UNITS, exact)


def fmt_size(nbytes: float, *, exact: bool = False) -> str:
    """Format a size in bytes: ``fmt_size(125e6) == "125 MB"``.

    With ``exact=True`` the size is written as a whole number of the largest
    unit that divides it, in binary units if it is a multiple of 1024 but not
    of 1000 (``1500`` -> ``"1500B"``, ``50331648`` -> ``"48MiB"``)."""
    if not exact:
        return _format(nbytes, _SIZE_UNITS, exact=False)
    units = {"B": 1, **_BINARY_SIZE_UNITS} if _is_binary_multiple(nbytes) else _SIZE_UNITS
    # Largest unit with a whole count: 1500 -> "1500B", not "1.5KB".
    name, scale = max(
        ((name, scale) for name, scale in units.items() if nbytes % scale == 0 and scale <= max(nbytes, 1)),
        key=lambda unit: unit[1],
    )
    return f"{int(nbytes) // scale}{name}"


def fmt_time_ns(ns: float, *, exact: bool = False) -> str:
    """Format a time in nanoseconds: ``fmt_time_ns(2_280_000) == "2.28 ms"``."""
    # Written in SI units only: minutes, hours and days are for reading.
    units = {name: scale for name, scale in _TIME_UNITS.items() if name not in ("min", "h", "d")}
    return _format(ns, units, exact)


def fmt_queue_limit(limit: QueueLimit) -> str:
    """Format a queue limit so that :func:`parse_queue_limit` reads it back."""
    if limit.pkts is not None:
        return f"{limit.pkts}p"
    if limit.bytes is not None:
        return fmt_size(limit.bytes, exact=True)
    return "unlimited"


def _split(value: object, expected: str, *, unit_required: bool = True) -> tuple[Decimal, str | None]:
    """Split ``"2.5 Gbps"`` into ``(Decimal("2.5"), "Gbps")``, rejecting
    anything that is not a non-negative finite number with a unit."""
    if not isinstance(value, str):
        raise ValueError(f"expected {expected}, got {value!r}")
    text = value.strip()
    if not text:
        raise ValueError(f"expected {expected}, got an empty string")
    if text.startswith("-"):
        raise ValueError(f"negative value {value!r}: expected {expected}")
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"expected {expected}, got {value!r}")
    unit = match["unit"]
    if unit is None and unit_required:
        raise ValueError(f"missing unit in {value!r}: expected {expected}")
    if len(match["number"]) > _MAX_NUMBER_CHARS:
        raise ValueError(f"too many digits in {value!r}: expected {expected}")
    try:
        number = Decimal(match["number"])
    except InvalidOperation:  # pragma: no cover - the pattern only admits valid numbers
        raise ValueError(f"expected {expected}, got {value!r}") from None
    return number, unit


def _whole(number: Decimal, scale: int, base_unit: str, original: object) -> int:
    """``number * scale`` as an int, refusing fractions of the base unit and
    values that do not fit in 64 bits."""
    with localcontext() as context:
        context.prec = _PRECISION
        amount = number * scale
    if amount != amount.to_integral_value():
        raise ValueError(f"{original!r} is not a whole number of {base_unit}s")
    if amount >= LIMIT:
        raise ValueError(f"{original!r} is too large (the limit is 2^64 - 1 {base_unit}s)")
    return int(amount)


def _positive_limit(count: int, original: object) -> int:
    if count <= 0:
        raise ValueError(f"queue limit {original!r} must be positive (or 'unlimited')")
    return count


def _canonical_rate_unit(unit: str | None) -> str | None:
    """``"gbit/s"`` -> ``"Gbps"``: the prefix letter in either case, and the
    ``bit/s`` spelling. ``"Bps"`` (bytes per second) stays unknown."""
    if unit is None:
        return None
    if unit.endswith("bit/s"):
        unit = unit[: -len("bit/s")] + "bps"
    if len(unit) == 4 and unit.endswith("bps"):
        unit = unit[0].upper() + "bps"
    return unit


def _size_scale(unit: str | None) -> int | None:
    """Bytes per ``unit``; the prefix letter in either case (``kB`` = ``KB``)."""
    if unit is None:
        return None
    if len(unit) >= 2:
        unit = unit[0].upper() + unit[1:]
    return _SIZE_UNITS.get(unit) or _BINARY_SIZE_UNITS.get(unit)


def _is_binary_multiple(nbytes: float) -> bool:
    return nbytes > 0 and nbytes % 1000 != 0 and nbytes % 1024 == 0


def _format(value: float, units: dict[str, int], exact: bool) -> str:
    """Write ``value`` in the largest unit it reaches (``units`` is ordered
    smallest first): exactly with ``exact``, else to 4 significant digits."""
    if exact:
        if value != int(value):
            raise ValueError(f"{value!r} is not a whole number of the base unit")
        amount = Decimal(int(value))
    else:
        amount = Decimal(repr(float(value)))
    name, scale = next(iter(units.items()))
    for candidate, candidate_scale in units.items():
        if abs(amount) >= candidate_scale:
            name, scale = candidate, candidate_scale
    scaled = amount / scale
    if exact:
        # normalize() drops trailing zeros; "f" avoids exponents ("2E+2").
        return f"{format(scaled.normalize(), 'f')}{name}"
    magnitude = float(scaled)
    digits = f"{magnitude:.4g}" if abs(magnitude) < 1000 else f"{magnitude:.0f}"
    return f"{digits} {name}"
