"""Congestion controllers' parameters (alphaqos.cc): validation, messages
that name the parameter and the controller, resolution to the engine's base
units, and agreement with the Rust side (names, fields, defaults) read from
its source. None of these tests needs the engine."""

from __future__ import annotations

import json


import pytest

from alphaqos.cc import CC_PARAMS, BaseFlowParams, CubicParams, resolve_cc_params, validate_cc_params


CUBIC_DEFAULTS = {"beta": 0.7, "c": 0.4, "fast_convergence": True, "tcp_friendliness": True, "hystart": True}
HTCP_DEFAULTS = {"use_rtt_scaling": True, "use_bandwidth_switch": True}
BIC_DEFAULTS = {"max_increment": 16, "low_window": 14, "beta": 0.8, "fast_convergence": True, "smooth_part": 20}
HIGHSPEED_DEFAULTS = {"low_window": 38, "high_window": 83000, "high_decrease": 0.1}
BASE_FLOW_DEFAULTS = {
    "rtt_filter": "latest",
    "rtt_samples": 8,
    "min_increment_segments": 1,
    "max_increment_segments": 64,
    "alpha_segments": 2,
}


# --- valid parameters, resolved -------------------------------------------------


@pytest.mark.parametrize(
    ("cc", "params", "resolved"),
    [
        ("newreno", {}, {}),
        ("reno", None, {}),
        ("cubic", {}, CUBIC_DEFAULTS),
        ("cubic", {"beta": 0.8, "c": 1, "hystart": False}, {**CUBIC_DEFAULTS, "beta": 0.8, "c": 1.0, "hystart": False}),
        ("htcp", {"use_rtt_scaling": False}, {**HTCP_DEFAULTS, "use_rtt_scaling": False}),
        ("bic", {}, BIC_DEFAULTS),
        ("bic", {"max_increment": 32, "low_window": 0}, {**BIC_DEFAULTS, "max_increment": 32, "low_window": 0}),
        ("highspeed", {}, HIGHSPEED_DEFAULTS),
        ("highspeed", {"low_window": 100, "high_window": 10000, "high_decrease": 0.2},
         {"low_window": 100, "high_window": 10000, "high_decrease": 0.2}),
        ("base_flow", {"ctr": "500Mbps"}, {"ctr_bps": 500_000_000, **BASE_FLOW_DEFAULTS}),
        ("base_flow", {"ctr": "2.5 Gbit/s", "rtt_filter": "min", "rtt_samples": 16, "alpha_segments": 0},
         {**BASE_FLOW_DEFAULTS, "ctr_bps": 2_500_000_000, "rtt_filter": "min", "rtt_samples": 16, "alpha_segments": 0}),
    ],
)
def test_valid_params_resolve_to_base_units(cc, params, resolved):
    model = validate_cc_params(cc, params)
    assert isinstance(model, CC_PARAMS[cc])
    assert resolve_cc_params(model) == resolved


def test_rates_dump_back_in_user_units():
    model = validate_cc_params("base_flow", {"ctr": "250Mbps"})
    assert isinstance(model, BaseFlowParams)
    assert model.ctr == 250_000_000
    assert model.model_dump(mode="json")["ctr"] == "250Mbps"
    assert validate_cc_params("base_flow", model.model_dump(mode="json")) == model


# --- invalid parameters: the message names both ---------------------------------


def test_unknown_parameter_names_it_and_the_controller():
    with pytest.raises(ValueError) as info:
        validate_cc_params("cubic", {"c_f": 0.4})
    assert str(info.value) == (
        "'c_f' is not a parameter of cubic (expected: beta, c, fast_convergence, hystart, tcp_friendliness)"
    )


@pytest.mark.parametrize(
    ("cc", "params", "fragments"),
    [
        ("newreno", {"beta": 0.5}, ["'beta'", "newreno", "takes no parameters"]),
        ("reno", {"x": 1}, ["'x'", "reno"]),
        ("htcp", {"alpha": 1}, ["'alpha'", "htcp", "use_bandwidth_switch, use_rtt_scaling"]),
        ("base_flow", {"ctr_bps": 500_000_000}, ["'ctr_bps'", "base_flow", "expected:", "ctr"]),
        ("cubic", {"beta": 1.5}, ["'beta'", "cubic", "less than 1", "1.5"]),
        ("cubic", {"beta": 0}, ["'beta'", "cubic", "greater than 0"]),
        ("cubic", {"beta": 0.0001}, ["'beta'", "cubic", "1/1024"]),
        ("cubic", {"c": -1}, ["'c'", "cubic", "greater than 0"]),
        ("cubic", {"c": float("nan")}, ["'c'", "cubic"]),
        ("cubic", {"hystart": "yes"}, ["'hystart'", "cubic", "boolean"]),
        ("cubic", {"beta": True}, ["'beta'", "cubic"]),
        ("htcp", {"use_rtt_scaling": 1}, ["'use_rtt_scaling'", "htcp", "boolean"]),
        ("bic", {"max_increment": 0}, ["'max_increment'", "bic", "greater than or equal to 1"]),
        ("bic", {"max_increment": 16.0}, ["'max_increment'", "bic", "integer"]),
        ("bic", {"smooth_part": 0}, ["'smooth_part'", "bic"]),
        ("bic", {"low_window": -1}, ["'low_window'", "bic"]),
        ("bic", {"beta": 1}, ["'beta'", "bic"]),
        ("highspeed", {"high_window": 38}, ["highspeed", "high_window (38)", "low_window (38)"]),
        ("highspeed", {"low_window": 5000}, ["'low_window'", "highspeed", "3872"]),
        ("highspeed", {"high_decrease": 0.6}, ["'high_decrease'", "highspeed", "0.5"]),
        ("base_flow", {}, ["'ctr'", "required", "base_flow"]),
        ("base_flow", {"ctr": 500_000_000}, ["'ctr'", "base_flow", "a rate like '10Gbps'"]),
        ("base_flow", {"ctr": "500MB"}, ["'ctr'", "base_flow", "unknown rate unit"]),
        ("base_flow", {"ctr": "0Mbps"}, ["'ctr'", "base_flow", "greater than 0"]),
        ("base_flow", {"ctr": "1Gbps", "rtt_filter": "mean"}, ["'rtt_filter'", "base_flow", "'latest', 'min' or 'base'"]),
        ("base_flow", {"ctr": "1Gbps", "rtt_samples": 0}, ["'rtt_samples'", "base_flow"]),
        ("base_flow", {"ctr": "1Gbps", "min_increment_segments": 0}, ["'min_increment_segments'", "base_flow"]),
        ("base_flow", {"ctr": "1Gbps", "min_increment_segments": 8, "max_increment_segments": 4},
         ["base_flow", "max_increment_segments (4)", "min_increment_segments (8)"]),
    ],
)
def test_invalid_params_name_the_parameter_and_the_controller(cc, params, fragments):
    with pytest.raises(ValueError) as info:
        validate_cc_params(cc, params)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_every_error_is_reported():
    with pytest.raises(ValueError) as info:
        validate_cc_params("cubic", {"beta": 2, "hystart": "no", "x": 1})
    message = str(info.value)
    assert "'beta'" in message and "'hystart'" in message and "'x'" in message


def test_unknown_controller_and_non_mapping():
    with pytest.raises(ValueError, match=r"unknown congestion control 'vegas' \(expected one of: newreno, reno"):
        validate_cc_params("vegas", {})
    with pytest.raises(ValueError, match="cc_params of cubic must be a mapping"):
        validate_cc_params("cubic", [0.7])  # type: ignore[arg-type]


def test_models_are_frozen():
    model = validate_cc_params("cubic", {})
    assert isinstance(model, CubicParams)
    with pytest.raises(Exception):
        model.beta = 0.5  # type: ignore[misc]


# --- agreement with the engine -------------------------------------------------
# The engine answers for itself (alphaqos._core.cc_names / cc_params): the
# Python schema's defaults must be the ones the engine applies.


def _engine():
    return pytest.importorskip("alphaqos._core", reason="the engine is not built (make build)")


def test_names_match_the_engine():
    assert _engine().cc_names() == list(CC_PARAMS)


@pytest.mark.parametrize("cc", ["cubic", "htcp", "bic", "highspeed", "base_flow", "newreno"])
def test_resolved_keys_and_defaults_match_the_engine(cc):
    required = {"base_flow": {"ctr": "1Gbps"}}.get(cc, {})
    resolved = resolve_cc_params(validate_cc_params(cc, required))
    engine = json.loads(_engine().cc_params(cc, json.dumps({k: v for k, v in resolved.items() if k in ("ctr_bps",)})))
    assert resolved == engine, f"{cc}: Python {resolved}, engine {engine}"


def test_the_engine_refuses_what_the_schema_refuses():
    with pytest.raises(ValueError, match="invalid parameters for cubic: unknown field `bogus`"):
        _engine().cc_params("cubic", json.dumps({"bogus": 1}))
    with pytest.raises(ValueError, match="unknown congestion control"):
        _engine().cc_params("vegas", "{}")


def test_the_engines_refusal_names_the_parameter():
    """The engine's check of a value arrives located at the parameter."""
    with pytest.raises(ValueError) as refused:
        _engine().cc_params("cubic", json.dumps({"beta": 1.5}))
    assert (refused.value.loc, refused.value.msg) == (("beta",), "must be between 0 and 1 (exclusive) for cubic, got 1.5")
