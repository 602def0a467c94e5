"""Congestion controllers' parameters: what users write under ``cc_params``.

A TCP flow names its controller and, optionally, that controller's own
parameters::

    tcp: {from: A, to: B, cc: cubic, cc_params: {beta: 0.7, hystart: false}}
    tcp: {from: A, to: B, cc: base_flow, cc_params: {ctr: 500Mbps}}

Each controller has one pydantic model here (``extra='forbid'``: an unknown
key is an error naming the controller and the keys it accepts), registered
in :data:`CC_PARAMS` under the name the engine knows it by. Quantities with
units are written as unit strings (``ctr: 500Mbps``, parsed by
:func:`alphaqos.units.parse_rate`); :func:`resolve_cc_params` turns a
validated model into the engine's dict in base units, with every default
filled in and the keys exactly the fields of the Rust ``Params`` struct of
``crates/alphaqos-sim/src/tcp/cc/<name>.rs`` (whose module docs describe the
algorithms and cite their sources).

==========  =================================================================
controller  parameters (default)
==========  =================================================================
newreno     none (RFC 5681 / RFC 6582)
reno        none (NewReno's window arithmetic; the sender's recovery differs)
cubic       beta (0.7), c (0.4, segments/s^3), fast_convergence (true),
            tcp_friendliness (true), hystart (true) -- RFC 9438, Linux
htcp        use_rtt_scaling (true), use_bandwidth_switch (true) -- Leith &
            Shorten 2004, Linux
bic         max_increment (16 segments), low_window (14 segments), beta (0.8),
            fast_convergence (true), smooth_part (20) -- Xu, Harfoush & Rhee
            2004, Linux
highspeed   low_window (38 segments), high_window (83000 segments),
            high_decrease (0.1) -- RFC 3649
base_flow   ctr (required, a rate), rtt_filter ("latest", "min", "base"),
            rtt_samples (8), min_increment_segments (1),
            max_increment_segments (64), alpha_segments (2) -- source
            document 003 (deadline-driven transfer over DiffServ AF)
==========  =================================================================
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
)

from .fields import Flag, PositiveRate

__all__ = [
    "CC_PARAMS",
    "BaseFlowParams",
    "BicParams",
    "CubicParams",
    "HighSpeedParams",
    "HtcpParams",
    "NewRenoParams",
    "RenoParams",
    "resolve_cc_params",
    "validate_cc_params",
]

U64_MAX = 2**64 - 1
#: RFC 3649: Standard TCP's loss rate at Low_Window, 1.5 / Low_Window^2, must
#: stay above High_P = 1e-7.
HIGHSPEED_MAX_LOW_WINDOW = 3872
MAX_RTT_SAMPLES = 65536

Segments = Annotated[int, Strict(), Field(ge=0, le=U64_MAX)]
PositiveSegments = Annotated[int, Strict(), Field(ge=1, le=U64_MAX)]


#: A multiplicative-decrease factor, 0 < beta < 1. The engine keeps it as
#: parts of 1024 and refuses one that rounds to 0 or 1024 (its ConfigError
#: arrives at the parameter: ``flows[i].tcp.cc_params.beta``).
Beta = Annotated[float, Strict(), Field(gt=0, lt=1, allow_inf_nan=False)]
PositiveFloat = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]


class _Params(BaseModel):
    """A controller's parameters. ``resolve`` gives the engine's dict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The name the engine knows the controller by.
    cc: ClassVar[str]

    def resolve(self) -> dict[str, Any]:
        """The engine's parameters: base units, keys as the Rust ``Params``."""
        return self.model_dump()


class NewRenoParams(_Params):
    """NewReno (RFC 5681 window arithmetic, RFC 6582 recovery): no parameters."""

    cc = "newreno"


class RenoParams(_Params):
    """Reno: NewReno's window arithmetic, Reno's recovery; no parameters."""

    cc = "reno"


class CubicParams(_Params):
    """CUBIC (RFC 9438) as Linux's tcp_cubic.c, with HyStart."""

    cc = "cubic"

    beta: Beta = 0.7
    """Multiplicative decrease: ssthresh = beta x cwnd on a loss (as parts of 1024: 1/1024 to 1023/1024)."""
    c: PositiveFloat = 0.4
    """The cubic's constant C, segments per second cubed."""
    fast_convergence: Flag = True
    tcp_friendliness: Flag = True
    """The Reno-friendly region (RFC 9438, Section 4.3)."""
    hystart: Flag = True
    """HyStart in slow start (ACK-train and delay-increase detection; on `linux-6` hosts the ACK train reads the socket's pacing as Linux 5.7+ does)."""


class HtcpParams(_Params):
    """H-TCP (Leith & Shorten, PFLDnet 2004) as Linux's tcp_htcp.c."""

    cc = "htcp"

    use_rtt_scaling: Flag = True
    """Scale alpha by RTT_min / 100 ms (ratio within [0.1, 2])."""
    use_bandwidth_switch: Flag = True
    """Back off by 0.5 when the throughput changed by more than 20 %."""


class BicParams(_Params):
    """BIC (Xu, Harfoush & Rhee, INFOCOM 2004) as Linux's tcp_bic.c."""

    cc = "bic"

    max_increment: PositiveSegments = 16
    """S_max: the largest increase per RTT, segments."""
    low_window: Segments = 14
    """At or below this window (segments) BIC behaves as Reno."""
    beta: Beta = 0.8
    """Multiplicative decrease (819/1024 once rounded; 1/1024 to 1023/1024)."""
    fast_convergence: Flag = True
    smooth_part: PositiveSegments = 20
    """Near W_max, one segment per cwnd x smooth_part / 4 acknowledged."""


class HighSpeedParams(_Params):
    """HighSpeed TCP (RFC 3649), a(w) and b(w) from the RFC's equations."""

    cc = "highspeed"

    low_window: Annotated[int, Strict(), Field(ge=1, le=HIGHSPEED_MAX_LOW_WINDOW)] = 38
    """Segments; Standard TCP at or below it."""
    high_window: PositiveSegments = 83000
    """Segments; the window reached at a loss rate of 1e-7, above low_window
    (the engine checks the pair)."""
    high_decrease: Annotated[float, Strict(), Field(gt=0, le=0.5, allow_inf_nan=False)] = 0.1
    """b(high_window): the decrease at High_Window."""


class BaseFlowParams(_Params):
    """The base flow of the deadline-driven transfer (source document 003):
    cwnd held at CTR x RTT, binary search increase towards it."""

    cc = "base_flow"

    ctr: PositiveRate
    """The committed target rate, e.g. ``"500Mbps"`` (required)."""
    rtt_filter: Literal["latest", "min", "base"] = "latest"
    """The RTT of CTR x RTT: the latest sample, the min of the last
    rtt_samples, or the smallest since the connection began ("base": a fixed
    window, the slides' "fixed max cwnd" method)."""
    rtt_samples: Annotated[int, Strict(), Field(ge=1, le=MAX_RTT_SAMPLES)] = 8
    min_increment_segments: PositiveSegments = 1
    max_increment_segments: PositiveSegments = 64
    alpha_segments: Segments = 2
    """Snap to CTR x RTT once within this many segments."""

    def resolve(self) -> dict[str, Any]:
        resolved = self.model_dump()
        resolved["ctr_bps"] = resolved.pop("ctr")
        return resolved


#: The controllers the engine implements, by name, with their parameters.
CC_PARAMS: dict[str, type[_Params]] = {
    model.cc: model
    for model in (
        NewRenoParams,
        RenoParams,
        CubicParams,
        HtcpParams,
        BicParams,
        HighSpeedParams,
        BaseFlowParams,
    )
}


def validate_cc_params(cc: str, params: dict[str, Any] | None) -> _Params:
    """Validate ``params`` for the controller ``cc``.

    Raises :class:`ValueError` with a message that names the controller and
    the offending parameter, e.g. ``'c_f' is not a parameter of cubic
    (expected: beta, c, fast_convergence, hystart, tcp_friendliness)``.
    """
    model = CC_PARAMS.get(cc)
    if model is None:
        raise ValueError(f"unknown congestion control {cc!r} (expected one of: {', '.join(CC_PARAMS)})")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ValueError(f"cc_params of {cc} must be a mapping of parameter names to values, got {params!r}")
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise ValueError("; ".join(_describe(cc, model, error) for error in exc.errors())) from None


def resolve_cc_params(model: _Params) -> dict[str, Any]:
    """The engine's ``cc_params``: base units (``ctr`` -> ``ctr_bps`` in
    bit/s), every default filled in, keys as the Rust ``Params`` fields."""
    return model.resolve()


def _describe(cc: str, model: type[_Params], error: dict[str, Any]) -> str:
    loc = error.get("loc", ())
    name = str(loc[0]) if loc else None
    expected = ", ".join(sorted(model.model_fields))
    kind = error.get("type")
    if kind == "extra_forbidden" and name is not None:
        if not model.model_fields:
            return f"{name!r} is not a parameter of {cc} ({cc} takes no parameters)"
        return f"{name!r} is not a parameter of {cc} (expected: {expected})"
    if kind == "missing" and name is not None:
        return f"{name!r} is required by {cc}"
    message = str(error.get("msg", "invalid value"))
    message = message.removeprefix("Value error, ")
    if name is None:
        return f"invalid parameters for {cc}: {message}"
    if "got " not in message:
        message = f"{message} (got {error.get('input')!r})"
    return f"invalid {name!r} for {cc}: {message}"
