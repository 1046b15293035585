//! Benchmark: simulated requests per second on one core.
//!
//! Simulates the built-in `ocr` scenario (and `ocr` without batching, one GPU
//! job per request) at load 0.8 on the calling thread (no parallelism) for
//! each mode, `REPEATS` times, and prints the median rate. Run: `cargo bench -p lanes-sim --bench speed`.

#[path = "../tests/common.rs"]
mod common;

use std::time::Instant;

use lanes_sim::simulate;

const REQUESTS: u64 = 1_000_000;
const REPEATS: usize = 5;

fn main() {
    // LANES_SIM_BENCH_REQUESTS: fewer requests per run (e.g. under a profiler).
    let requests: u64 = std::env::var("LANES_SIM_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(REQUESTS);
    println!("load 0.8, {requests} requests per run, median of {REPEATS} runs, one thread\n");
    println!("| scenario | mode | simulated requests/s (median) | min | max |");
    println!("|---|---|---|---|---|");
    // An argument filters the modes by name (e.g. `-- sjf`).
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    // `ocr` batches as the server does; `ocr-unbatched` runs one GPU job per
    // request, the simulator's worst case.
    for (scenario, sc) in [
        ("ocr", common::ocr()),
        ("ocr-unbatched", common::ocr_unbatched()),
    ] {
        for name in ["independent", "semaphore", "fifo", "limit:2", "sjf", "edf"] {
            if !only.is_empty() && !only.iter().any(|o| o == name) {
                continue;
            }
            let mode = name.parse().expect("mode");
            let mut rates: Vec<f64> = (0..REPEATS)
                .map(|seed| {
                    let t = Instant::now();
                    let r = simulate(&sc, &mode, 0.8, seed as u64 + 1, requests).expect("simulate");
                    std::hint::black_box(r);
                    requests as f64 / t.elapsed().as_secs_f64()
                })
                .collect();
            rates.sort_by(f64::total_cmp);
            println!(
                "| {scenario} | {name} | {:.2} M | {:.2} M | {:.2} M |",
                rates[REPEATS / 2] / 1e6,
                rates[0] / 1e6,
                rates[REPEATS - 1] / 1e6
            );
        }
    }
}
