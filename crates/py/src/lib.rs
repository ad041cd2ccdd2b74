//! fabricsim's Python binding: a thin layer over `fabricsim-run`.
//!
//! It parses scenarios, runs them with the GIL released, reports progress on stderr,
//! honours Ctrl-C, and hands results to Python as typed column buffers (turned into
//! pandas DataFrames by `fabricsim.results`), and lists the fabric a scenario builds
//! (nodes, ports, cables) for the report's drawing. Every scenario error becomes one Python
//! exception type, `fabricsim.ScenarioError`, with the core's message unchanged; no
//! Rust panic crosses this boundary as anything but `RuntimeError`.

use fabricsim_run::{schema, Column, Ending, Progress, RunResult, Scenario, ScenarioError as CoreError, Sim, Table};
use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::io::Write;
use std::time::{Duration, Instant};

// The simulator's heap (huge pages, counted for the benchmark's memory figures).
#[global_allocator]
static ALLOC: fabricsim_alloc::Heap = fabricsim_alloc::Heap;

create_exception!(
    _core,
    ScenarioError,
    pyo3::exceptions::PyValueError,
    "A scenario that cannot be run; the message names the key and the allowed values."
);

/// Converts core errors to `ScenarioError` in one place (tokenizers' `ToPyResult`):
/// its message as the core words it, and the key at fault (`key`, empty for a whole
/// document) and what is wrong with it (`reason`) as attributes, so that no caller
/// parses the message back.
fn to_py(e: CoreError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    Python::attach(|py| {
        let value = err.value(py);
        // Setting attributes on a fresh exception instance cannot fail.
        let _ = value.setattr("key", &e.path);
        let _ = value.setattr("reason", &e.message);
    });
    err
}

/// `text` in `format`; files it names are read relative to `base` (the scenario
/// file's folder) or the current directory.
fn parse(text: &str, format: &str, seed: Option<u64>, base: Option<&str>) -> PyResult<Scenario> {
    let base = std::path::Path::new(base.unwrap_or(""));
    let sc = match format {
        "toml" => Scenario::from_toml_in(text, base),
        "json" => Scenario::from_json_in(text, base),
        other => {
            return Err(ScenarioError::new_err(format!("format: unknown value \"{other}\" (allowed: toml, json)")))
        }
    }
    .map_err(to_py)?;
    Ok(match seed {
        Some(s) => sc.with_seed(s),
        None => sc,
    })
}

/// [`parse`], then `partitions` (if given) overrides the scenario's.
fn parse_run(
    text: &str,
    format: &str,
    seed: Option<u64>,
    partitions: Option<u8>,
    base: Option<&str>,
) -> PyResult<Scenario> {
    let sc = parse(text, format, seed, base)?;
    match partitions {
        Some(n) => sc.with_partitions(n).map_err(to_py),
        None => Ok(sc),
    }
}

fn column<'py>(py: Python<'py>, col: &Column) -> PyResult<Bound<'py, PyAny>> {
    fn bytes<'p, T: Copy>(py: Python<'p>, v: &[T]) -> Bound<'p, PyBytes> {
        // Plain little-endian numbers (every supported platform); numpy reads them
        // back with `frombuffer` without a copy per element.
        let raw = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) };
        PyBytes::new(py, raw)
    }
    Ok(match col {
        Column::U32(v) => ("<u4", bytes(py, v)).into_pyobject(py)?.into_any(),
        Column::U64(v) => ("<u8", bytes(py, v)).into_pyobject(py)?.into_any(),
        Column::I64(v) => ("<i8", bytes(py, v)).into_pyobject(py)?.into_any(),
        Column::F64(v) => ("<f8", bytes(py, v)).into_pyobject(py)?.into_any(),
        Column::Str(v) => PyList::new(py, v)?.into_any(),
    })
}

fn table<'py>(py: Python<'py>, t: &Table) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (name, col) in &t.columns {
        out.append((*name, column(py, col)?))?;
    }
    Ok(out)
}

/// Heap figures of one run, bytes.
#[derive(Clone, Copy)]
struct Memory {
    /// Once the world was built, before the first event.
    built: usize,
    /// The largest total while running.
    peak: usize,
}

fn result_dict<'py>(py: Python<'py>, r: &RunResult, wall: f64, mem: Memory) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, t) in r.tables() {
        d.set_item(name, table(py, t)?)?;
    }
    d.set_item("port_names", PyList::new(py, &r.port_names)?)?;
    d.set_item("summary", serde_json::to_string(&r.summary).map_err(|e| PyRuntimeError::new_err(e.to_string()))?)?;
    d.set_item("wall_seconds", wall)?;
    d.set_item("heap_built_bytes", mem.built)?;
    d.set_item("heap_peak_bytes", mem.peak)?;
    Ok(d)
}

/// Draws the progress line on stderr: simulated time, wall time, events per second.
fn draw(p: &Progress, wall: f64, done: bool) {
    let rate = if wall > 0.0 { p.events as f64 / wall / 1e6 } else { 0.0 };
    let line = format!(
        "\r  sim {:>10.3} ms | wall {:>7.1} s | {:>6.2} M events/s | {:>6.2} M hops/s | flows {}/{}{}",
        p.sim_time.ps() as f64 * 1e-9,
        wall,
        rate,
        if wall > 0.0 { p.packet_hops as f64 / wall / 1e6 } else { 0.0 },
        p.flows_done,
        p.flows_total,
        if done { "\n" } else { "   " }
    );
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.flush();
}

/// Runs a scenario and returns its result tables.
///
/// `text` is the scenario in `format` ("toml" or "json"); `seed` and `partitions`
/// override its own; `progress` draws a progress line on stderr. `pcap` (comma-separated port, host or
/// switch names) captures the frames crossing those cables into the file `pcap_path`,
/// payloads cut to `pcap_snap` bytes. Trace files the scenario names are read relative
/// to `base` (the scenario file's folder), else the current directory.
#[pyfunction]
#[pyo3(signature = (text, format = "toml", seed = None, progress = false, pcap = None, pcap_path = None, pcap_snap = 65535, partitions = None, base = None))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    format: &str,
    seed: Option<u64>,
    progress: bool,
    pcap: Option<String>,
    pcap_path: Option<std::path::PathBuf>,
    pcap_snap: u32,
    partitions: Option<u8>,
    base: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse_run(text, format, seed, partitions, base.as_deref())?;
    if pcap.is_some() != pcap_path.is_some() {
        return Err(ScenarioError::new_err("pcap: give both the capture spec and the file to write"));
    }
    let t0 = Instant::now();
    let (result, interrupted) = py.detach(move || {
        let mut last_draw = Instant::now();
        let mut last_signal = Instant::now();
        let mut interrupted: Option<PyErr> = None;
        let mut tick = |p: &Progress| {
            let now = Instant::now();
            if now.duration_since(last_signal) > Duration::from_millis(100) {
                last_signal = now;
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    interrupted = Some(e);
                    return false;
                }
            }
            if progress && now.duration_since(last_draw) > Duration::from_millis(250) {
                last_draw = now;
                draw(p, t0.elapsed().as_secs_f64(), false);
            }
            true
        };
        let r = Sim::new(sc).and_then(|mut sim| {
            if let (Some(spec), Some(path)) = (&pcap, &pcap_path) {
                sim.capture(spec, path, pcap_snap)?;
            }
            fabricsim_alloc::reset_peak();
            let built = fabricsim_alloc::current();
            let ending = sim.run(&mut tick);
            let mem = Memory { built, peak: fabricsim_alloc::peak() };
            let captured = sim.finish_capture();
            Ok((fabricsim_run::results(&mut sim, ending), mem, captured))
        });
        (r, interrupted)
    });
    if let Some(e) = interrupted {
        if progress {
            eprintln!();
        }
        return Err(e);
    }
    let (r, mem, captured) = result.map_err(to_py)?;
    let wall = t0.elapsed().as_secs_f64();
    let pcap_frames = match captured {
        Some(Err(e)) => return Err(pyo3::exceptions::PyOSError::new_err(format!("writing the pcap file failed: {e}"))),
        Some(Ok(n)) => Some(n),
        None => None,
    };
    if progress {
        let s = &r.summary;
        let p = Progress {
            sim_time: fabricsim_engine::Time(s["sim_time_ns"].as_u64().unwrap_or(0) * 1000),
            events: s["events"].as_u64().unwrap_or(0),
            packet_hops: s["packet_hops"].as_u64().unwrap_or(0),
            flows_done: s["flows"]["finished"].as_u64().unwrap_or(0) as usize,
            flows_total: s["flows"]["total"].as_u64().unwrap_or(0) as usize,
        };
        draw(&p, wall, true);
    }
    debug_assert!(r.ending != Ending::Cancelled);
    let d = result_dict(py, &r, wall, mem)?;
    d.set_item("pcap_frames", pcap_frames)?;
    Ok(d)
}

/// Checks a scenario without running it; returns a short description.
#[pyfunction]
#[pyo3(signature = (text, format = "toml", base = None))]
fn validate<'py>(py: Python<'py>, text: &str, format: &str, base: Option<String>) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(text, format, None, base.as_deref())?;
    let (hosts, conns, msgs) = py.detach(|| fabricsim_run::validate(&sc)).map_err(to_py)?;
    let d = PyDict::new(py);
    d.set_item("name", &sc.name)?;
    d.set_item("hosts", hosts)?;
    d.set_item("connections", conns)?;
    d.set_item("flows", msgs)?;
    d.set_item("transport", sc.transport.name())?;
    Ok(d)
}

/// The fabric a scenario builds, read-only, for drawing it (`fabricsim report`).
///
/// Returns `{"nodes": [(name, tier, plane)], "ports": [(name, node, peer, rate_bps,
/// kind)]}`: tier 0 is a host, 1 a leaf/edge/T0, 2 a spine/aggregation/T1, 3 a core;
/// a port's position is its id, the order of `port_names` in a run's results (and of
/// the `port` categories of `ports.parquet`); `peer` is the port at the cable's other
/// end; `kind` is "nic", "up" or "down", as in port names. The world is built as a run
/// builds it, so a scenario that cannot run has no layout (`ScenarioError`); trace files
/// it names are read relative to `base`.
#[pyfunction]
#[pyo3(signature = (text, format = "toml", base = None))]
fn layout<'py>(py: Python<'py>, text: &str, format: &str, base: Option<&str>) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(text, format, None, base)?;
    let sim = py.detach(|| Sim::new(sc)).map_err(to_py)?;
    let fabric = &sim.fabric;
    let nodes = PyList::empty(py);
    for n in &fabric.nodes {
        nodes.append((n.name.as_str(), n.tier, n.plane))?;
    }
    let ports = PyList::empty(py);
    for (id, p) in fabric.ports.iter().enumerate() {
        ports.append((fabric.port_name(id as u32), p.node, p.peer, p.rate.0, p.kind.label()))?;
    }
    let d = PyDict::new(py);
    d.set_item("nodes", nodes)?;
    d.set_item("ports", ports)?;
    Ok(d)
}

/// The scenario schema (every section, kind and key) as JSON.
#[pyfunction]
fn catalog() -> PyResult<String> {
    serde_json::to_string(schema::CATALOG).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// The Rust core of fabricsim.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(catalog, m)?)?;
    m.add_function(wrap_pyfunction!(layout, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("TABLES", fabricsim_run::TABLES.to_vec())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Whether the core was compiled with profile-guided optimisation (see build.rs).
    m.add("PGO", env!("FABRICSIM_BUILD_PGO") == "1")?;
    // Facts of the core that Python computes with, so that it does not restate them: the
    // most partitions, and the bytes a packet takes on the wire besides its payload.
    m.add("MAX_PARTITIONS", fabricsim_run::parallel::MAX_PARTITIONS)?;
    m.add("HEADER_BYTES", fabricsim_wire::packet::BASE_HEADER_BYTES)?;
    m.add("PREAMBLE_IFG_BYTES", fabricsim_wire::packet::PREAMBLE_IFG_BYTES)?;
    m.add("RETH_BYTES", fabricsim_wire::packet::RETH_BYTES)?;
    m.add("EXT_BYTES", fabricsim_wire::packet::EXT_BYTES)?;
    Ok(())
}
