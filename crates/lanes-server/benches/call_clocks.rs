//! Benchmark: what reading a call's clocks costs the executor thread.
//!
//! An executor reads its thread's clocks around every batch
//! (`lanes_server::thread_clocks`): [`Mark::now`] before the call and
//! [`Mark::since`] after it, each one read of the CPU clock and one `pread`
//! of the thread's schedstat. Each round times, in a shuffled order, one
//! `now` + `since` pair, one CPU-clock read alone and one schedstat read
//! alone, `ROUNDS` times, into an HdrHistogram each (ns), after a warm-up;
//! prints p50 / p90 / p99 of each. Run: `cargo bench -p lanes-server --bench
//! call_clocks`.

use std::hint::black_box;
use std::time::Instant;

use hdrhistogram::Histogram;
use lanes_server::thread_clocks::{run_delay, thread_cpu, Mark};

const ROUNDS: u64 = 200_000;
const WARM_UP: u64 = 10_000;

fn time(f: &dyn Fn()) -> u64 {
    let t0 = Instant::now();
    f();
    t0.elapsed().as_nanos() as u64
}

fn main() {
    let steps: [(&str, &dyn Fn()); 3] = [
        ("a call's clocks (now + since)", &|| {
            black_box(black_box(Mark::now()).since());
        }),
        ("the CPU clock alone", &|| {
            black_box(thread_cpu());
        }),
        ("the schedstat read alone", &|| {
            black_box(run_delay());
        }),
    ];
    let mut hists: Vec<Histogram<u64>> = (0..steps.len())
        .map(|_| Histogram::new_with_bounds(1, 10_000_000, 3).expect("histogram"))
        .collect();
    // A fixed order rotated per round: each step sees the same drift.
    for round in 0..WARM_UP + ROUNDS {
        for k in 0..steps.len() {
            let i = (k + round as usize) % steps.len();
            let ns = time(steps[i].1);
            if round >= WARM_UP {
                hists[i].saturating_record(ns.max(1));
            }
        }
    }
    println!("{ROUNDS} rounds, ns: p50 / p90 / p99");
    for ((name, _), h) in steps.iter().zip(&hists) {
        println!(
            "{name:32} {:>6} / {:>6} / {:>6}",
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.9),
            h.value_at_quantile(0.99)
        );
    }
}
