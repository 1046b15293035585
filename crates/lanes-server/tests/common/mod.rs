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
    fn now(&self) -> u64 {
        (0..self.0.num_workers())
            .map(|w| self.0.worker_park_unpark_count(w))
            .sum()
    }

    /// The transitions while `call` runs on an idle server: both workers
    /// parked first (5 ms of quiet), and parked again after.
    pub async fn idle<F: std::future::Future<Output = ()>>(&self, call: F) -> u64 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let before = self.now();
        call.await;
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        self.now() - before
    }
}

/// Whether an idle worker was woken, from the transitions of each call on an
/// idle server: the reading worker's unpark and park are 2, the sibling's
/// would be 2 more. The rule reads the lower quartile of the calls, not the
/// mean: a wake-up in the request's path adds its transitions to every call,
/// while a shared host (a late park, a timer, a preempted worker, the test
/// binary's other tests) adds them to some, in CI once to half of them.
/// Returns the message to fail with, naming the counts, or `None`.
pub fn woken(counts: &[u64], what: &str) -> Option<String> {
    let mut sorted = counts.to_vec();
    sorted.sort_unstable();
    let quartile = sorted[sorted.len() / 4];
    let mean = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
    (quartile > 2).then(|| {
        format!(
            "lower quartile {quartile} (mean {mean:.2}) park/unpark transitions per {what}: \
             an idle worker was woken on 3 calls in 4 or more; counts {counts:?}"
        )
    })
}
