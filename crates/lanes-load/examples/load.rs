//! The engine without Python, for profiling (`perf record`) beside wrk:
//! `cargo run --release -p lanes-load --example load -- URL CONNECTIONS SECONDS [RATE]`
//! prints the JSON result.

use lanes_load::{engine::Run, report::Report, RunSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args
        .first()
        .ok_or("usage: load URL CONNECTIONS SECONDS [RATE]")?;
    let arg = |i: usize, default: f64| -> Result<f64, Box<dyn std::error::Error>> {
        Ok(args
            .get(i)
            .map(|s| s.parse())
            .transpose()?
            .unwrap_or(default))
    };
    let spec = RunSpec {
        url: url.clone(),
        connections: Some(arg(1, 10.0)? as usize),
        threads: Some(1),
        duration_s: Some(arg(2, 5.0)?),
        rate: args.get(3).map(|s| s.parse()).transpose()?,
        seed: 1,
        ..RunSpec::default()
    };
    let config = spec.build()?;
    let run = Run::start(config.clone())?;
    let report = Report::new(&config, &run.join());
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
