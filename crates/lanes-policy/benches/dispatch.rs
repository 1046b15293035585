//! Benchmark: submit + dispatch latency with a deep queue.
//!
//! Steady state with `QUEUED` jobs waiting: each iteration completes the job
//! on a device, submits one new job and dispatches (which starts one job). The
//! pair `submit + dispatch` is timed per iteration and recorded in an
//! HdrHistogram; the figure is its p99. Run: `cargo bench -p lanes-policy --bench dispatch`.

use std::time::Instant;

use hdrhistogram::Histogram;
use lanes_policy::{Decision, DeviceSet, DeviceSpec, Job, Policy, Scheduler};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

const QUEUED: u64 = 10_000;
const ITERATIONS: u64 = 300_000;

fn job(rng: &mut Pcg64Mcg, id: u64, now: u64, devices: usize, mixed: bool) -> Job {
    let set = if mixed && rng.random_bool(0.5) {
        DeviceSet::only(rng.random_range(0..devices))
    } else {
        DeviceSet::all(devices)
    };
    let cost = rng.random_range(1_000_000..30_000_000);
    Job::new(id, (id % 4) as u32, cost, now, set)
        .with_target(now + 150_000_000)
        .with_deadline(now + 3_600_000_000_000)
}

fn bench(policy: &str, devices: usize, mixed: bool) -> Histogram<u64> {
    let policy: Policy = policy.parse().expect("policy");
    let mut s = Scheduler::new(policy, &vec![DeviceSpec::default(); devices]).expect("scheduler");
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let mut out = Vec::with_capacity(16);
    let mut running = std::collections::VecDeque::new();
    let mut now = 0;
    // Enough to fill every slot and leave QUEUED waiting (limit:K has K slots).
    let slots = devices as u64 * u64::from(policy.slots(1));
    for id in 0..QUEUED + slots {
        s.submit(job(&mut rng, id, now, devices, mixed))
            .expect("submit");
    }
    s.dispatch(now, &mut out);
    running.extend(out.iter().map(|d| match d {
        Decision::Run { job, .. } => job.id,
        Decision::Drop { .. } => unreachable!("no deadline passes"),
    }));
    let steady = s.queued() as u64;
    let mut hist = Histogram::<u64>::new(3).expect("histogram");
    for next_id in QUEUED + slots..QUEUED + slots + ITERATIONS {
        now += 1_000_000;
        let done = running.pop_front().expect("a running job");
        s.complete(done, now).expect("complete");
        let new = job(&mut rng, next_id, now, devices, mixed);
        out.clear();
        let t = Instant::now();
        s.submit(new).expect("submit");
        s.dispatch(now, &mut out);
        let ns = t.elapsed().as_nanos() as u64;
        hist.record(ns.max(1)).expect("record");
        for d in &out {
            if let Decision::Run { job, .. } = d {
                running.push_back(job.id);
            }
        }
        assert_eq!(s.queued() as u64, steady, "the queue stays {steady} deep");
    }
    hist
}

fn main() {
    println!("submit+dispatch with {QUEUED} queued jobs, {ITERATIONS} iterations each (ns)\n");
    println!("| policy | devices | eligibility | p50 | p99 | p99.9 | max |");
    println!("|---|---|---|---|---|---|---|");
    for (policy, devices, mixed) in [
        ("fifo", 1, false),
        ("sjf", 1, false),
        ("edf", 1, false),
        ("sjf", 8, false),
        ("sjf", 8, true),
        ("limit:2", 8, true),
        ("fair", 1, false),
        ("fair", 8, true),
        ("sjf:starve=300", 1, false),
        ("sjf:starve=300", 8, true),
    ] {
        let h = bench(policy, devices, mixed);
        println!(
            "| {policy} | {devices} | {} | {} | {} | {} | {} |",
            if mixed {
                "half pinned to one device"
            } else {
                "any device"
            },
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max()
        );
    }
}
