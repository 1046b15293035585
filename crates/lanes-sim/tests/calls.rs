//! The runtime calls' wall time and cost (`call_ms`, `call_cost_ms`): a call
//! that never shares takes its cost; one that shares the cores takes longer;
//! with a lag among the calls, the short model's calls wait less per ms of
//! cost under `independent`, against the long model's as well (the
//! seventeenth calibration round's reading of the lab).

mod common;

use lanes_sim::config::{Cost, Dist};
use lanes_sim::simulate;

use common::{cpu_like, mode, single_server};

/// Waited per ms of cost: `call / cost - 1`.
fn waited(call_ms: f64, cost_ms: f64) -> f64 {
    call_ms / cost_ms - 1.0
}

#[test]
fn a_call_that_never_shares_takes_its_cost() {
    let sc = single_server(Cost {
        dist: Dist::Exponential,
        mean_ms: 4.0,
        cv: 0.0,
    });
    let r = simulate(&sc, &mode("fifo"), 0.7, 1, 20_000).unwrap();
    let s = &r.services["only"];
    assert!(
        s.call_cost_ms > 3.5 && s.call_cost_ms < 4.5,
        "{}",
        s.call_cost_ms
    );
    assert!(
        (s.call_ms - s.call_cost_ms).abs() < 1e-6,
        "{} vs {}",
        s.call_ms,
        s.call_cost_ms
    );
    assert_eq!((r.call_ms, r.call_cost_ms), (s.call_ms, s.call_cost_ms));
}

#[test]
fn calls_on_shared_cores_take_longer_with_load() {
    let light = simulate(&cpu_like(), &mode("independent"), 0.1, 3, 20_000).unwrap();
    let heavy = simulate(&cpu_like(), &mode("independent"), 0.7, 3, 20_000).unwrap();
    let (l, h) = (
        waited(light.call_ms, light.call_cost_ms),
        waited(heavy.call_ms, heavy.call_cost_ms),
    );
    assert!(l >= 0.0 && h > l + 0.05, "light {l}, heavy {h}");
}

#[test]
fn among_calls_the_short_model_waits_less_per_ms() {
    let per_ms = |r: &lanes_sim::PointResult, s: &str| {
        waited(r.services[s].call_ms, r.services[s].call_cost_ms)
    };
    let load = 0.7;
    let base = simulate(&cpu_like(), &mode("independent"), load, 3, 40_000).unwrap();
    let mut sc = cpu_like();
    sc.host.lag_ms = 0.2;
    sc.host.lag_among_calls = true;
    let got = simulate(&sc, &mode("independent"), load, 3, 40_000).unwrap();
    // The short model's calls wait less per ms, absolutely and against the
    // long model's (here 1.66 -> 1.33 ms per ms, rnn_zh's 1.09 -> 1.12).
    let (b_cnn, b_zh) = (per_ms(&base, "cnn"), per_ms(&base, "rnn_zh"));
    let (cnn, zh) = (per_ms(&got, "cnn"), per_ms(&got, "rnn_zh"));
    assert!(cnn < 0.9 * b_cnn, "cnn {b_cnn} -> {cnn}");
    assert!(
        cnn / zh < 0.85 * (b_cnn / b_zh),
        "cnn / rnn_zh {} -> {}",
        b_cnn / b_zh,
        cnn / zh
    );
}

#[test]
fn each_batch_size_reports_its_batches_and_calls() {
    let r = simulate(&cpu_like(), &mode("fifo"), 0.8, 1, 40_000).unwrap();
    for (name, s) in &r.services {
        let sizes = &s.batches;
        assert!(!sizes.is_empty(), "{name}: no batch sizes");
        // The sizes' batches add up to the service's mean batch size.
        let (batches, requests) = sizes.iter().fold((0u64, 0u64), |(b, q), (n, t)| {
            (b + t.batches, q + t.batches * n.parse::<u64>().unwrap())
        });
        let mean = requests as f64 / batches as f64;
        assert!(
            (mean - s.mean_batch_size).abs() < 1e-9,
            "{name}: {mean} vs {}",
            s.mean_batch_size
        );
        // Each size's calls are weighted into the service's mean call.
        let (wall, cost) = sizes.values().fold((0.0, 0.0), |(w, c), t| {
            (
                w + t.call_ms * t.batches as f64,
                c + t.call_cost_ms * t.batches as f64,
            )
        });
        assert!(
            (wall / batches as f64 - s.call_ms).abs() < 0.02 * s.call_ms,
            "{name}: {} vs {}",
            wall / batches as f64,
            s.call_ms
        );
        assert!(
            (cost / batches as f64 - s.call_cost_ms).abs() < 0.02 * s.call_cost_ms,
            "{name}"
        );
        // Batches form at this load, and the largest costs more than one.
        let largest = sizes
            .iter()
            .max_by_key(|(n, _)| n.parse::<u32>().unwrap())
            .map(|(_, t)| t)
            .unwrap();
        let one = &sizes["1"];
        assert!(sizes.len() > 1, "{name}: {sizes:?}");
        assert!(largest.call_cost_ms > one.call_cost_ms, "{name}: {sizes:?}");
    }
}

#[test]
fn the_timeline_holds_every_batch_as_the_result_counts_it() {
    let sc = cpu_like();
    let (r, timeline) = lanes_sim::simulate_timeline(&sc, &mode("fifo"), 0.8, 2, 20_000).unwrap();
    // The same run as simulate's.
    assert_eq!(r, simulate(&sc, &mode("fifo"), 0.8, 2, 20_000).unwrap());
    for (name, s) in &r.services {
        let measured: Vec<_> = timeline
            .iter()
            .filter(|b| &b.service == name && b.measured)
            .collect();
        let counted: u64 = s.batches.values().map(|t| t.batches).sum();
        // Batches that started but had not ended by the end are counted, not in the timeline.
        assert!(measured.len() as u64 <= counted && counted - measured.len() as u64 <= 4);
        // A lane takes its oldest requests first: by dispatch, its batches' oldest
        // requests entered in order; and at this load some batches waited.
        let mut by_start = measured.clone();
        by_start.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
        for w in by_start.windows(2) {
            assert!(
                w[0].oldest_ms <= w[1].oldest_ms,
                "{:?} then {:?}",
                w[0],
                w[1]
            );
        }
        assert!(
            measured.iter().any(|b| b.start_ms - b.oldest_ms > 0.1),
            "{name}"
        );
        for b in &measured {
            assert!(b.start_ms <= b.called_ms && b.called_ms < b.end_ms, "{b:?}");
            assert!(0.0 <= b.oldest_ms && b.oldest_ms <= b.start_ms, "{b:?}");
            assert!(b.end_ms - b.called_ms >= b.cost_ms - 1e-6, "{b:?}");
            assert!((b.device as usize) < sc.host.gpus && b.size >= 1);
        }
    }
    // Each request's wait from its pre's end to its batch's dispatch is at most its
    // batch's oldest's, and the lab's rebuild (bench/calibrate/tails.py: the batch's
    // requests spread evenly from its oldest to its dispatch) comes close to the total.
    let waits = |rebuild: bool| -> f64 {
        let spans = timeline.iter().filter(|b| b.measured);
        spans
            .map(|b| {
                let n = f64::from(b.size);
                let share = if rebuild { (n + 1.0) / 2.0 } else { n };
                (b.start_ms - b.oldest_ms) * share / 1e3
            })
            .sum()
    };
    let queue = r.gpu_time_s.queue;
    assert!(
        queue > 0.0 && waits(false) >= queue,
        "{queue} {}",
        waits(false)
    );
    assert!(
        (waits(true) / queue - 1.0).abs() < 0.1,
        "{queue} {}",
        waits(true)
    );
    // One device runs one batch at a time (gpu_capacity 1): its spans do not overlap.
    for g in 0..sc.host.gpus as u32 {
        let mut spans: Vec<_> = timeline.iter().filter(|b| b.device == g).collect();
        spans.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
        for w in spans.windows(2) {
            assert!(
                w[1].start_ms >= w[0].end_ms - 1e-9,
                "{:?} then {:?}",
                w[0],
                w[1]
            );
        }
    }
}
