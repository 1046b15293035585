//! How a GPU serves overlapping jobs (`host.gpu_queue`): engine policies,
//! which never overlap jobs on a GPU, simulate exactly as before under
//! `fifo`; under `independent` a single-stream GPU keeps the throughput of
//! processor sharing but makes the short service wait behind the long ones'
//! batches (its tail grows, theirs shrinks); contradictory settings are
//! refused with the key named.

mod common;

use lanes_sim::config::GpuQueue;
use lanes_sim::simulate;

use common::{assert_refused, mode, ocr, Edit};

#[test]
fn engine_policies_run_alike_under_either_queue() {
    for (policy, load) in [("fifo", 0.5), ("sjf", 0.8)] {
        let share = ocr();
        let mut fifo = share.clone();
        fifo.host.gpu_queue = GpuQueue::Fifo;
        let a = simulate(&share, &mode(policy), load, 3, 20_000).unwrap();
        let b = simulate(&fifo, &mode(policy), load, 3, 20_000).unwrap();
        assert_eq!(a.latency_ms.p99, b.latency_ms.p99, "{policy}");
        assert_eq!(a.latency_ms.mean, b.latency_ms.mean, "{policy}");
        assert_eq!(a.gpu_busy, b.gpu_busy, "{policy}");
    }
}

#[test]
fn a_single_stream_makes_the_short_service_wait_behind_the_long_batches() {
    let share = ocr();
    let mut fifo = share.clone();
    fifo.host.gpu_queue = GpuQueue::Fifo;
    let a = simulate(&share, &mode("independent"), 0.6, 3, 60_000).unwrap();
    let b = simulate(&fifo, &mode("independent"), 0.6, 3, 60_000).unwrap();
    // The same work gets done: nothing overlapped is faster either way.
    let busy = (b.gpu_busy - a.gpu_busy).abs() / a.gpu_busy;
    assert!(busy < 0.05, "GPU busy {} vs {}", a.gpu_busy, b.gpu_busy);
    let short = |r: &lanes_sim::stats::PointResult| r.services["cnn"].latency_ms.p99;
    let long = |r: &lanes_sim::stats::PointResult| r.services["rnn_zh"].latency_ms.p99;
    assert!(
        short(&b) > 1.5 * short(&a),
        "cnn p99 {} vs {}",
        short(&a),
        short(&b)
    );
    assert!(long(&b) < long(&a), "rnn p99 {} vs {}", long(&a), long(&b));
}

#[test]
fn contradictory_settings_are_refused_naming_the_key() {
    let cases: [(&str, Edit); 2] = [
        // One job runs at a time: a throughput for k overlapping jobs has no meaning.
        ("host.eta", |sc| {
            sc.host.gpu_queue = GpuQueue::Fifo;
            sc.host.eta = vec![1.0, 1.2];
        }),
        // With shared cores a batch runs on the cores, not on the GPU's queue.
        ("host.gpu_queue", |sc| {
            sc.host.gpu_queue = GpuQueue::Fifo;
            sc.host.shared_cores = true;
        }),
    ];
    assert_refused("independent", &cases);
}
