//! What the loopback tests share: the `affine` fixture of lanes-onnx (`x` FP32
//! `[N, 4]` → `y` FP32 `[N, 3]`, `k` INT64 `[N]`, with Python onnxruntime's
//! reference outputs) and the native server built around it.

use std::path::{Path, PathBuf};

use lanes_kserve::CodecConfig;
use lanes_server::app::Limits;
use lanes_server::native::{NativeConfig, NativeModel, DEFAULT_INLINE_MAX};
use lanes_serving::Batching;

/// lanes-onnx's committed small fixtures.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lanes-onnx/tests/fixtures/small")
}

/// `affine` at max batch 4 on one CPU device under `sjf`.
pub fn affine_config(codec: CodecConfig, limits: Limits) -> NativeConfig {
    NativeConfig {
        policy: "sjf".into(),
        devices: 1,
        intra_op_threads: 1,
        models: vec![NativeModel {
            name: "affine".into(),
            path: fixtures().join("affine.onnx"),
            batching: Batching {
                max_batch_size: 4,
                ..Batching::default()
            },
            timeout_ms: None,
        }],
        codec,
        limits,
        inline_max: DEFAULT_INLINE_MAX,
    }
}

/// Counts the park/unpark transitions of a server runtime's workers.
pub struct Transitions(pub tokio::runtime::RuntimeMetrics);

impl Transitions {
    fn now(&self) -> Vec<u64> {
        (0..self.0.num_workers())
            .map(|w| self.0.worker_park_unpark_count(w))
            .collect()
    }

    /// Each worker's transitions while `call` runs on an idle server: both
    /// workers parked first (5 ms of quiet), and parked again after.
    pub async fn idle<F: std::future::Future<Output = ()>>(&self, call: F) -> Vec<u64> {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let before = self.now();
        call.await;
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        self.now().iter().zip(&before).map(|(a, b)| a - b).collect()
    }
}

/// Whether an idle worker was woken, from each worker's transitions in each
/// call on an idle server. The worker that read the call has the most: its
/// unpark and park, twice where it parked again while the batch ran (a host
/// where the batch outlasts the worker's spin: this session's 2026-12-02
/// machine parks it on 57 calls of 60, the earlier host never). What the
/// *other* workers made is a sibling woken: 2 transitions, its unpark and
/// park. The rule reads the lower quartile of the calls, not the mean: a
/// wake-up in the request's path adds a sibling's transitions to every call,
/// while a shared host (a late park, a timer, a preempted worker, the test
/// binary's other tests) adds them to some, in CI once to half of them.
/// Returns the message to fail with, naming the counts, or `None`.
pub fn woken(counts: &[Vec<u64>], what: &str) -> Option<String> {
    let others: Vec<u64> = counts
        .iter()
        .map(|c| c.iter().sum::<u64>() - c.iter().max().copied().unwrap_or(0))
        .collect();
    let mut sorted = others.clone();
    sorted.sort_unstable();
    let quartile = sorted[sorted.len() / 4];
    let mean = others.iter().sum::<u64>() as f64 / others.len() as f64;
    (quartile >= 2).then(|| {
        format!(
            "lower quartile {quartile} (mean {mean:.2}) park/unpark transitions per {what} \
             on the workers that did not read it: an idle worker was woken on 3 calls in 4 \
             or more; each worker's counts {counts:?}"
        )
    })
}
