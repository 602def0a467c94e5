//! PyO3 bindings of the alphaqos engine: the private module `alphaqos._core`.
//! Thin by design: configuration crosses as JSON text, results as plain
//! dicts of lists; a configuration the engine refuses raises
//! [`ConfigError`] (a `ValueError` carrying `loc` and `msg`), other engine
//! errors `ValueError`. No logic here.

use alphaqos_sim::error::{ConfigError as EngineConfigError, Loc};
use alphaqos_sim::{trace, Column, SimTime, Simulation as Engine, Table};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

mod flows;

pyo3::create_exception!(
    _core,
    ConfigError,
    PyValueError,
    "A configuration the engine refuses: `loc`, the path into the configuration \
     (a tuple of field names and list indices, outermost first; empty for the \
     whole configuration), and `msg`, what is wrong. str() is `path: msg`."
);

/// A location as a tuple of str (fields) and int (indices).
fn loc_tuple<'py>(py: Python<'py>, loc: &[Loc]) -> PyResult<Bound<'py, PyTuple>> {
    let items: Vec<Bound<'py, PyAny>> = loc
        .iter()
        .map(|l| match l {
            Loc::Field(f) => pyo3::types::PyString::new(py, f).into_any(),
            Loc::Index(i) => pyo3::types::PyInt::new(py, *i).into_any(),
        })
        .collect();
    PyTuple::new(py, items)
}

/// The one converter of engine configuration errors to Python.
fn config_error(py: Python<'_>, e: EngineConfigError) -> PyErr {
    let err = ConfigError::new_err(e.to_string());
    let value = err.value(py);
    let set = loc_tuple(py, &e.loc).and_then(|loc| value.setattr("loc", loc)).and_then(|_| value.setattr("msg", &e.msg));
    match set {
        Ok(()) => err,
        Err(other) => other,
    }
}

#[pyclass(unsendable, module = "alphaqos._core")]
struct Simulation {
    inner: Engine,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        Engine::from_json(config_json).map(|inner| Simulation { inner }).map_err(|e| config_error(py, e))
    }

    #[getter]
    fn duration_ns(&self) -> u64 {
        self.inner.duration().as_nanos()
    }

    #[getter]
    fn now_ns(&self) -> u64 {
        self.inner.now().as_nanos()
    }

    #[getter]
    fn events(&self) -> u64 {
        self.inner.events()
    }

    /// Run the event loop up to `until_ns` (capped at the duration).
    /// Raises what a Python signal handler raises (Ctrl-C: KeyboardInterrupt).
    fn advance(&mut self, py: Python<'_>, until_ns: u64) -> PyResult<()> {
        self.run(py, until_ns, true)
    }

    /// Run every event before `until_ns` (capped at the duration); a
    /// caller acting then acts as an agent woken at `until_ns` would.
    fn advance_before(&mut self, py: Python<'_>, until_ns: u64) -> PyResult<()> {
        self.run(py, until_ns, false)
    }
    /// A measurement or knob of the component `handle` names (base units).
    fn get(&mut self, handle: &str, what: &str) -> PyResult<f64> {
        self.inner.get_by_name(handle, what).map_err(PyValueError::new_err)
    }

    /// Change a knob as `agent`; logged in the control table. The old value.
    fn set(&mut self, agent: &str, handle: &str, knob: &str, value: f64) -> PyResult<f64> {
        self.inner.set_by_name(agent, handle, knob, value).map_err(PyValueError::new_err)
    }

    /// The results tables: {table: {column: list}}.
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        tables_dict(py, self.inner.results())
    }
}

/// Events run between two looks at Python's signal handlers: some
/// hundredths of a second at the engine's speed (a few million events/s),
/// so Ctrl-C is honoured well within a second whatever the simulated
/// duration (a chunk of simulated time may hold any number of events);
/// taking the GIL back costs microseconds.
const EVENTS_PER_SIGNAL_CHECK: u64 = 1 << 18;

impl Simulation {
    /// The event loop without the GIL, in slices, running the signal
    /// handlers between them: the first to raise stops the run there.
    fn run(&mut self, py: Python<'_>, until_ns: u64, inclusive: bool) -> PyResult<()> {
        loop {
            let inner = &mut self.inner;
            // The engine is single-threaded and owns no Python objects.
            if py.detach(|| inner.advance_at_most(SimTime(until_ns), inclusive, EVENTS_PER_SIGNAL_CHECK)) {
                return Ok(());
            }
            py.check_signals()?;
        }
    }
}

/// Tables as {table: {column: list}}.
fn tables_dict<'py, K: AsRef<str>>(py: Python<'py>, tables: impl IntoIterator<Item = (K, Table)>) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (name, table) in tables {
        let t = PyDict::new(py);
        for (col, values) in table.columns {
            match values {
                Column::U64(v) => t.set_item(col, v)?,
                Column::F64(v) => t.set_item(col, v)?,
                Column::Str(v) => t.set_item(col, v)?,
                Column::OptU64(v) => t.set_item(col, v)?,
            }
        }
        out.set_item(name.as_ref(), t)?;
    }
    Ok(out)
}

/// A trace's packet count, mean rate (bit/s), span (ns), skipped frames
/// and records put back in time order; ValueError naming the file and byte
/// offset if it cannot be read.
#[pyfunction]
fn trace_info(py: Python<'_>, path: &str) -> PyResult<(u64, f64, u64, u64, u64)> {
    let t = py.detach(|| trace::read(std::path::Path::new(path))).map_err(PyValueError::new_err)?;
    let span = t.packets.last().map_or(0, |p| p.time_ns);
    Ok((t.packets.len() as u64, t.mean_rate_bps(), span, t.skipped, t.out_of_order))
}

/// Replay the trace at `path` into a link of `beta` times its mean rate
/// whose queue is `queue_json` (an engine queue configuration); the tables
/// of `trace::replay`.
#[pyfunction]
fn trace_replay<'py>(py: Python<'py>, path: &str, beta: f64, queue_json: &str, interval_ns: u64, seed: u64) -> PyResult<Bound<'py, PyDict>> {
    let queue: alphaqos_sim::config::QueueConfig = serde_json::from_str(queue_json).map_err(|e| PyValueError::new_err(format!("queue: {e}")))?;
    if !(beta > 0.0 && beta.is_finite()) {
        return Err(PyValueError::new_err(format!("beta must be positive, got {beta}")));
    }
    let tables = py
        .detach(|| {
            let t = trace::read(std::path::Path::new(path))?;
            let rate = alphaqos_sim::DataRate((t.mean_rate_bps() * beta).round() as u64);
            trace::replay(&t, rate, &queue, interval_ns.max(1), seed)
        })
        .map_err(PyValueError::new_err)?;
    tables_dict(py, tables)
}

/// Check a configuration without running it: every problem as (location
/// in the configuration, a tuple of field names and indices; message), and
/// what the engine applies on its own:
/// {"addresses": {node: dotted address}, "paths": [links from a to b, or
/// None, for each (a, b) of `pairs`]}.
#[pyfunction]
#[pyo3(signature = (config_json, pairs=Vec::new()))]
fn check<'py>(py: Python<'py>, config_json: &str, pairs: Vec<(String, String)>) -> PyResult<(Vec<(Bound<'py, PyTuple>, String)>, Bound<'py, PyDict>)> {
    let checked = py.detach(|| alphaqos_sim::check::check_json(config_json, &pairs));
    let applied = PyDict::new(py);
    let addresses = PyDict::new(py);
    for (name, addr) in checked.applied.addresses {
        addresses.set_item(name, addr)?;
    }
    applied.set_item("addresses", addresses)?;
    applied.set_item("paths", checked.applied.paths)?;
    let problems = checked.problems.into_iter().map(|p| Ok((loc_tuple(py, &p.loc)?, p.msg))).collect::<PyResult<_>>()?;
    Ok((problems, applied))
}

/// The congestion controls the engine implements.
#[pyfunction]
fn cc_names() -> Vec<&'static str> {
    alphaqos_sim::tcp::cc::NAMES.to_vec()
}

/// A controller's parameters (JSON text, base units) as the engine takes
/// them, every default filled in (JSON text); ValueError if it refuses them.
#[pyfunction]
fn cc_params(py: Python<'_>, name: &str, params_json: &str) -> PyResult<String> {
    let v: serde_json::Value = serde_json::from_str(params_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let out = alphaqos_sim::tcp::cc::resolved_params(name, &v).map_err(|e| config_error(py, e))?;
    Ok(out.to_string())
}

/// A configuration (JSON text) as the engine applies it, every key it
/// leaves out given the engine's default (JSON text); ValueError if the
/// engine cannot read it. The Python front takes the engine's defaults
/// from here.
#[pyfunction]
fn applied_config(config_json: &str) -> PyResult<String> {
    alphaqos_sim::check::applied(config_json).map(|v| v.to_string()).map_err(PyValueError::new_err)
}

/// Every knob: (name, unit, what it does).
#[pyfunction]
fn knobs() -> Vec<(&'static str, &'static str, &'static str)> {
    alphaqos_sim::knob::KNOBS.iter().map(|k| (k.name, k.unit.as_str(), k.doc)).collect()
}

/// Version of the engine crate.
/// Booked bandwidth per link as step functions of time (`alphaqos_sim::bookings`):
/// the admission core the circuit service shares with the engine's
/// `call_admission` agent. Links are integer indices; `links` arguments are
/// `[(link, reservable_bps), ...]`; times integer ns, rates whole bit/s.
#[pyclass(module = "alphaqos._core")]
#[derive(Default)]
struct Bookings {
    inner: alphaqos_sim::bookings::Bookings,
}

#[pymethods]
impl Bookings {
    #[new]
    fn new() -> Self {
        Bookings::default()
    }
    /// The most booked on `link` at any instant of `[start, end)`.
    fn peak(&self, link: u32, start: u64, end: u64) -> u64 {
        self.inner.peak(link, start, end)
    }
    fn fits(&self, links: Vec<(u32, u64)>, start: u64, end: u64, rate: u64) -> bool {
        self.inner.fits(&links, start, end, rate)
    }
    /// Add `delta` bit/s (negative: release) over `[start, end)` on every link.
    fn change(&mut self, links: Vec<(u32, u64)>, start: u64, end: u64, delta: i128) {
        self.inner.change(&links, start, end, delta)
    }
    /// Does a step profile `[(from_ns, bps), ...]` (ascending) ending at `end` fit?
    fn fits_profile(&self, links: Vec<(u32, u64)>, profile: Vec<(u64, u64)>, end: u64) -> bool {
        self.inner.fits_profile(&links, &profile, end)
    }
    /// Add (`sign` 1) or remove (`sign` -1) a step profile's booking.
    fn change_profile(&mut self, links: Vec<(u32, u64)>, profile: Vec<(u64, u64)>, end: u64, sign: i8) {
        self.inner.change_profile(&links, &profile, end, sign as i128)
    }
    /// `[(time_ns, booked_bps from then on), ...]` over `[from, to)`.
    fn steps(&self, link: u32, from: u64, to: u64) -> Vec<(u64, i128)> {
        self.inner.steps(link, from, to)
    }
}

#[pyfunction]
fn version() -> &'static str {
    alphaqos_sim::VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add_class::<Bookings>()?;
    m.add_class::<flows::FlowDecoder>()?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(cc_names, m)?)?;
    m.add_function(wrap_pyfunction!(cc_params, m)?)?;
    m.add_function(wrap_pyfunction!(applied_config, m)?)?;
    m.add_function(wrap_pyfunction!(knobs, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace_replay, m)?)?;
    Ok(())
}
