//! How long the REST codec takes to decode one JSON infer body, and how much of
//! that a typed decode could save: the race's `char_cnn_top1` request (one FP32
//! `[1,1,32,32]` item, 1,024 numbers written as Python writes a float32
//! array's `tolist()`: up to 17 significant digits).
//!
//! Prints, per round, microseconds per body for
//! - `decode_request`: what the server runs (JSON to a validated request);
//! - `Value`: `serde_json` parsing the whole body into a `Value` tree alone;
//! - `data as Vec<f64>`: the `data` array alone, parsed straight into floats
//!   (the floor of any decode that still parses numbers with `serde_json`);
//! - `data as Value`: the same array into a `Value` tree.
//!
//! The rounds interleave the four so that a noisy host moves all of them.
//!
//! ```text
//! cargo run --release -p lanes-kserve --example decode_time [ROUNDS] [BODIES]
//! ```

use std::hint::black_box;
use std::time::Instant;

use bytes::Bytes;
use lanes_kserve::rest::decode_request;
use lanes_kserve::{CodecConfig, ModelRef};
use serde_json::Value;

/// The body's 1,024 values: float32 numbers in [0, 1) from a fixed linear
/// congruential sequence, each written as the shortest decimal of its f64
/// widening (Python's `repr` of `float(np.float32(x))`).
fn data_text() -> String {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let values: Vec<String> = (0..1024)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let x = (state >> 40) as f32 / (1u64 << 24) as f32;
            format!("{:?}", f64::from(x))
        })
        .collect();
    format!("[{}]", values.join(", "))
}

/// Mean microseconds per call of `f` over `n` calls.
fn per_call(n: u32, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(n)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: u32 = args.next().map_or(5, |a| a.parse().expect("ROUNDS"));
    let n: u32 = args.next().map_or(5_000, |a| a.parse().expect("BODIES"));
    let data = data_text();
    let body = Bytes::from(format!(
        r#"{{"inputs": [{{"name": "x", "shape": [1, 1, 32, 32], "datatype": "FP32", "data": {data}}}]}}"#
    ));
    let config = CodecConfig::default();
    println!("body: {} bytes; microseconds per body", body.len());
    println!("round\tdecode_request\tValue\tdata as Vec<f64>\tdata as Value");
    for round in 0..rounds {
        let decode = per_call(n, || {
            let model = ModelRef {
                name: "char_cnn_top1".into(),
                version: None,
            };
            black_box(decode_request(model, body.clone(), None, &config).expect("a valid body"));
        });
        let value = per_call(n, || {
            black_box(serde_json::from_slice::<Value>(&body).expect("JSON"));
        });
        let typed = per_call(n, || {
            black_box(serde_json::from_str::<Vec<f64>>(&data).expect("numbers"));
        });
        let tree = per_call(n, || {
            black_box(serde_json::from_str::<Value>(&data).expect("JSON"));
        });
        println!("{round}\t{decode:.1}\t{value:.1}\t{typed:.1}\t{tree:.1}");
    }
}
