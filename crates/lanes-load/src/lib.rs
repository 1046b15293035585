//! lanes-load: the load engine behind `lanes bench`.
//!
//! Kept apart, as design.md asks: the [`pacer`] decides *when* (one global
//! seeded schedule), the [`sender`] decides *how* (HTTP/1.1 over TCP or Unix
//! sockets, raw frames; [`grpc`]: gRPC unary calls over HTTP/2, with
//! [`kserve`] turning KServe REST requests into gRPC ones), the [`recorder`] keeps *what happened*
//! (HdrHistograms, errors by class, a per-second series), the [`engine`]
//! wires them onto threads, and [`report`] turns a recorder into the result.
//! [`config`] is the one typed configuration; [`corpus`] the requests.
//!
//! ```no_run
//! use lanes_load::{config::RunSpec, engine::Run, report::Report};
//! let spec = RunSpec { url: "http://127.0.0.1:8080/".into(), rate: Some(1000.0),
//!                      duration_s: Some(5.0), seed: 1, ..RunSpec::default() };
//! let config = spec.build()?;
//! let run = Run::start(config.clone())?;
//! let report = Report::new(&config, &run.join());
//! println!("p99 {} ms", report.latency_ms.p99);
//! # Ok::<(), lanes_load::error::LoadError>(())
//! ```

pub mod config;
pub mod corpus;
pub mod engine;
pub mod error;
pub mod grpc;
pub mod kserve;
pub mod pacer;
pub mod recorder;
pub mod report;
pub mod sender;
pub mod spin;
pub mod target;

pub use config::{RunConfig, RunSpec};
pub use engine::{Outcome, Progress, Run};
pub use error::LoadError;
pub use report::Report;

/// Writes `contents` to `path` through a temporary file in the same folder,
/// so a reader never sees half a file.
pub fn write_atomic(path: &std::path::Path, contents: &[u8]) -> Result<(), LoadError> {
    let io = |e: std::io::Error| LoadError::Io(format!("{}: {e}", path.display()));
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| LoadError::Io(format!("{}: not a file path", path.display())))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, contents).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

/// The send log's text: a header, then `index intended_ns sent_ns` per send in index order.
pub fn send_log_text(log: &mut [[u64; 3]]) -> String {
    use std::fmt::Write as _;
    log.sort_unstable();
    let mut out = String::with_capacity(log.len() * 24 + 64);
    out.push_str("# index intended_ns sent_ns (nanoseconds from the run's start)\n");
    for [i, a, b] in log.iter() {
        let _ = writeln!(out, "{i} {a} {b}");
    }
    out
}
