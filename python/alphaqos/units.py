"""Quantities with units: parsed once, at the edge, into integers in base units.

Users write quantities as strings (``"10Gbps"``, ``"125MB"``, ``"0.05ms"``);
everything past the scenario loader works on integers in base units:

==========  ================  ==========================================
quantity    base unit         accepted units
==========  ================  ==========================================
rate        bit/s             ``bps kbps Kbps Mbps Gbps Tbps`` (bits),
                              tc's ``bit kbit mbit gbit tbit`` and
                              ``Kibit Mibit Gibit Tibit`` (any case, the
                              ``i`` forms powers of 1024), ``Kbit/s``...,
                              and bytes per second with a capital ``B``:
                              ``Bps KBps MBps GBps TBps KiBps ... TiBps``
size        bytes             ``B KB MB GB TB`` (powers of 1000) and
                              ``KiB MiB GiB TiB`` (powers of 1024)
time        nanoseconds       ``ns us µs ms s min`` (or ``m``) ``h d``
queue limit packets or bytes  ``1000p``, ``1000pkts``, a bare integer
                              (packets), a size, or ``unlimited``
==========  ================  ==========================================

Rates: bits or bytes
    tc (iproute2 ``tc/tc_util.c``, ``get_rate``) compares rate units
    without regard to case and reads every ``bps`` spelling as *bytes* per
    second (``10gbps`` and ``10Gbps`` are 80 Gbit/s to tc), while
    alphaqos's scenarios, like most network documents, write ``10Gbps`` for
    bits. The rule here: ``bit`` spellings (tc's, in any case) are bits;
    a capital ``B`` before ``ps`` (``GBps``, ``MiBps``) is bytes, 8 bits
    each, as in tc; the SI spellings ``bps kbps Kbps Mbps Gbps Tbps`` are
    bits, as the scenarios always wrote them. The all-lowercase ``mbps``,
    ``gbps`` and ``tbps``, which a tc script means as bytes and a person
    often as bits, are refused with an error naming both spellings
    (``10Gbps`` or ``10gbit`` for bits, ``10GBps`` for bytes). ``kbps`` is
    SI's kilobit (``80kbps``, the fifth document's voice rate) and stays
    bits: a tc ``kbps`` (kilobytes) must be written ``KBps`` here.

Numbers are read as :class:`decimal.Decimal`, so ``"0.05ms"`` is exactly
50 000 ns and no binary floating-point rounding can creep in. A value that
is not a whole number of the base unit (``"0.5ns"``) is rejected rather than
rounded. The ``fmt_*`` helpers go the other way: for people by default
(``fmt_rate(3e9) == "3 Gbps"``), or, with ``exact=True``, as the shortest
string that parses back to the same integer (used for the resolved
``scenario.yaml`` of a run).
"""

from __future__ import annotations

import functools
import re
from decimal import Context, Decimal, InvalidOperation
from typing import NamedTuple

__all__ = [
    "QueueLimit",
    "fmt_queue_limit",
    "fmt_rate",
    "fmt_rate_tc",
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
# Micro sign and Greek mu; "m" for minutes as in `timeout 20m` and Go's
# durations (a time has no metres, and milliseconds are "ms").
_TIME_ALIASES = {"µs": "us", "μs": "us", "m": "min"}
_PACKET_SUFFIXES = ("pkts", "p")

_RATE_EXAMPLE = "a rate like '10Gbps' or '10gbit' (bits: bps, kbps, Mbps, Gbps, Tbps, kbit..tbit, Kibit..Tibit; bytes: Bps, KBps..TBps, KiBps..TiBps)"
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
_EXACT = Context(prec=_PRECISION)
#: Parsed strings remembered: the parsers are pure, and a scenario of 10^4
#: workloads repeats its sizes and rates (issue 20: 10^4 items validated in
#: under a second). Bounded, so that a long-lived process cannot grow it
#: without end; what fails to parse is never remembered (it raises).
_CACHE_SIZE = 2**16
#: Every parsed quantity must fit the engine's unsigned 64-bit integers.
LIMIT = 2**64


class QueueLimit(NamedTuple):
    """A queue's capacity: in packets, in bytes, or unlimited (both ``None``)."""

    pkts: int | None = None
    bytes: int | None = None


def _remembered(parse):
    """``parse`` with its results for strings cached (other values, which
    it refuses, are passed through: a cache would not keep them apart from
    equal strings, nor hash every one)."""
    cached = functools.lru_cache(maxsize=_CACHE_SIZE)(parse)

    @functools.wraps(parse)
    def parse_value(value: object):
        return cached(value) if type(value) is str else parse(value)

    parse_value.cache_info = cached.cache_info  # type: ignore[attr-defined]
    parse_value.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return parse_value


@_remembered
def parse_rate(value: object) -> int:
    """Parse a rate such as ``"10Gbps"``, ``"2.5 Gbit/s"``, ``"10gbit"`` or
    ``"1.25GBps"`` (bytes) into bit/s; see "Rates: bits or bytes" above."""
    number, unit = _split(value, _RATE_EXAMPLE)
    scale = _rate_scale(unit, value)
    return _whole(number, scale, "bit/s", value)


@_remembered
def parse_size(value: object) -> int:
    """Parse a size such as ``"125MB"`` or ``"48MiB"`` into bytes."""
    number, unit = _split(value, _SIZE_EXAMPLE)
    scale = _size_scale(unit)
    if scale is None:
        raise ValueError(f"unknown size unit {unit!r}: expected {_SIZE_EXAMPLE}")
    return _whole(number, scale, "byte", value)


@_remembered
def parse_time(value: object) -> int:
    """Parse a time such as ``"0.05ms"`` or ``"200s"`` into nanoseconds."""
    number, unit = _split(value, _TIME_EXAMPLE)
    scale = _TIME_UNITS.get(_TIME_ALIASES.get(unit, unit))
    if scale is None:
        raise ValueError(f"unknown time unit {unit!r}: expected {_TIME_EXAMPLE}")
    return _whole(number, scale, "nanosecond", value)


@_remembered
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


def fmt_rate_tc(bps: int) -> str:
    """A rate in tc's spelling, exact: the largest of ``tbit gbit mbit
    kbit`` that divides it (``6gbit``, ``1500kbit``), else ``bit``;
    :func:`parse_rate` reads it back to ``bps``."""
    for unit, size in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps and bps % size == 0:
            return f"{bps // size}{unit}"
    return f"{int(bps)}bit"


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


def _split(value: object, expected: str, *, unit_required: bool = True) -> tuple[str, str | None]:
    """Split ``"2.5 Gbps"`` into ``("2.5", "Gbps")``, rejecting anything
    that is not a non-negative finite number with a unit."""
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
    return match["number"], unit


def _whole(number: str, scale: int, base_unit: str, original: object) -> int:
    """``number`` (the text of a non-negative decimal number) times
    ``scale`` as an int, refusing fractions of the base unit and values that
    do not fit in 64 bits."""
    if number.isdecimal():  # digits only: integer arithmetic is exact
        amount: int | Decimal = int(number) * scale
    else:
        try:
            amount = _EXACT.multiply(Decimal(number), scale)
        except InvalidOperation:  # pragma: no cover - the pattern only admits valid numbers
            raise ValueError(f"{original!r} is not a number") from None
        if amount != amount.to_integral_value():
            raise ValueError(f"{original!r} is not a whole number of {_plural(base_unit)}")
    if amount >= LIMIT:
        raise ValueError(f"{original!r} is too large (the limit is 2^64 - 1 {_plural(base_unit)})")
    return int(amount)


def _plural(unit: str) -> str:
    return unit if unit.endswith("/s") else f"{unit}s"


def _positive_limit(count: int, original: object) -> int:
    if count <= 0:
        raise ValueError(f"queue limit {original!r} must be positive (or 'unlimited')")
    return count


#: SI prefixes of rates, powers of 1000, and their binary (IEC) forms.
_RATE_PREFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_RATE_BINARY = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
#: The SI ``bps`` spellings, bits per second (the scenarios').
_SI_BPS = {"bps": 1, "kbps": 10**3, "Kbps": 10**3, "Mbps": 10**6, "Gbps": 10**9, "Tbps": 10**12}
_TC_BYTES = re.compile(r"^(?P<prefix>[KMGT]i?|k)?Bps$")
_TC_BITS = re.compile(r"^(?P<prefix>[kmgt]i?)?bit(?:/s)?$", re.IGNORECASE)


def _rate_scale(unit: str, original: object) -> int:
    """bit/s per ``unit`` (see "Rates: bits or bytes" in the module doc)."""
    if unit in _SI_BPS:
        return _SI_BPS[unit]
    if (m := _TC_BITS.match(unit)) is not None:
        return _prefix_scale(m["prefix"])
    if (m := _TC_BYTES.match(unit)) is not None:
        return 8 * _prefix_scale(m["prefix"])
    if unit.lower() in ("mbps", "gbps", "tbps"):
        prefix, number = unit[0].upper(), str(original).strip()[: -len(unit)].strip()
        raise ValueError(
            f"{original!r} is ambiguous: tc reads {unit!r} as bytes per second, alphaqos's scenarios "
            f"as bits; write '{number}{prefix}bps' or '{number}{prefix.lower()}bit' for bits, '{number}{prefix}Bps' for bytes"
        )
    raise ValueError(f"unknown rate unit {unit!r}: expected {_RATE_EXAMPLE}")


def _prefix_scale(prefix: str | None) -> int:
    prefix = (prefix or "").lower()
    return _RATE_BINARY[prefix] if prefix in _RATE_BINARY else _RATE_PREFIX[prefix]


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
