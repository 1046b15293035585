//! The bare model at a request cadence (not a test): how long one batch-1
//! `Run` takes when calls come back to back and when they come at a rate.
//!
//! `cadence MODEL RATE CALLS` loads MODEL (one intra-op thread), feeds every
//! input zeros (dynamic dimensions 1), runs 50 warm-up calls, then CALLS
//! timed calls back to back and CALLS timed calls at RATE per second (the
//! thread sleeps out each gap, as a server's executor between requests), and
//! prints one JSON line of p50 / p99 in µs, wall-clock and CPU time of the
//! calling thread, for each.
//!
//! Why: a server's "added latency" at a low rate is its latency minus the
//! bare model's. On a VM whose idle core halts between requests, a call after
//! a gap finds its caches cold and can take many times a back-to-back call
//! (identity on this host: 5–8 µs back to back, ~100–200 µs at 100 req/s), so
//! the like-for-like baseline is the bare model at the same cadence.
//! bench/serve/peers/latency_floor.py runs it beside the server.

use std::time::{Duration, Instant};

use lanes_onnx::{InputTensor, OnnxSession, SessionConfig};
use nix::time::{clock_gettime, ClockId};

fn thread_cpu_us() -> f64 {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("a thread CPU clock");
    t.tv_sec() as f64 * 1e6 + t.tv_nsec() as f64 / 1e3
}

/// `q` (0..=1) of `times`, nearest rank.
fn quantile(times: &mut [f64], q: f64) -> f64 {
    times.sort_by(f64::total_cmp);
    let at = ((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1;
    times[at]
}

/// `{"wall_p50": .., "wall_p99": .., "cpu_p50": .., "cpu_p99": ..}` of `calls` calls,
/// `gap` apart (zero: back to back).
fn timed(calls: usize, gap: Duration, mut run: impl FnMut()) -> serde_json::Value {
    let (mut wall, mut cpu): (Vec<f64>, Vec<f64>) = (0..calls)
        .map(|_| {
            std::thread::sleep(gap);
            let (start, cpu) = (Instant::now(), thread_cpu_us());
            run();
            (start.elapsed().as_secs_f64() * 1e6, thread_cpu_us() - cpu)
        })
        .unzip();
    serde_json::json!({
        "wall_p50_us": quantile(&mut wall, 0.5),
        "wall_p99_us": quantile(&mut wall, 0.99),
        "cpu_p50_us": quantile(&mut cpu, 0.5),
        "cpu_p99_us": quantile(&mut cpu, 0.99),
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, model, rate, calls] = args.as_slice() else {
        return Err("usage: cadence MODEL RATE CALLS".into());
    };
    let rate: f64 = rate.parse()?;
    let calls: usize = calls.parse()?;
    if !(rate > 0.0 && rate <= 1e5) || calls == 0 {
        return Err("RATE must be in (0, 100000] calls/s and CALLS at least 1".into());
    }
    let mut session = OnnxSession::load(model, &SessionConfig::default())?;
    let specs = session.inputs().to_vec();
    let shapes: Vec<Vec<usize>> = specs
        .iter()
        .map(|s| s.dims.iter().map(|d| d.fixed().unwrap_or(1)).collect())
        .collect();
    let datas: Vec<Vec<u8>> = specs
        .iter()
        .zip(&shapes)
        .map(|(s, shape)| vec![0u8; shape.iter().product::<usize>() * s.datatype.size()])
        .collect();
    let inputs: Vec<InputTensor<'_>> = specs
        .iter()
        .zip(&shapes)
        .zip(&datas)
        .map(|((s, shape), data)| InputTensor {
            name: &s.name,
            datatype: s.datatype,
            shape,
            data,
        })
        .collect();
    let mut run = || {
        session.run(&inputs).expect("a run");
    };
    for _ in 0..50 {
        run();
    }
    let hot = timed(calls, Duration::ZERO, &mut run);
    let paced = timed(calls, Duration::from_secs_f64(1.0 / rate), &mut run);
    println!(
        "{}",
        serde_json::json!({"model": model, "rate": rate, "calls": calls,
            "back_to_back": hot, "at_rate": paced})
    );
    Ok(())
}
