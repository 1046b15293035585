//! What the loopback tests share: the `affine` fixture of lanes-onnx (`x` FP32
//! `[N, 4]` → `y` FP32 `[N, 3]`, `k` INT64 `[N]`, with Python onnxruntime's
//! reference outputs) and the native server built around it.

use std::path::{Path, PathBuf};

use lanes_kserve::CodecConfig;
use lanes_server::app::Limits;
use lanes_server::native::{NativeConfig, NativeModel};
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
    }
}
