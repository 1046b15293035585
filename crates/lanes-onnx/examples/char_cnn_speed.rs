//! Speed check of native execution (not a test): char_cnn at batch 16 on one
//! intra-op thread, the batch assembled from 16 requests of one row each.
//!
//! `char_cnn_speed MODEL INPUT ITERS` reads INPUT (16 rows of FP32
//! `[1, 32, 32]`, little-endian), runs 20 warm-up batches, then ITERS timed
//! ones of each kind, and prints one JSON line of medians in µs, wall-clock
//! and CPU time of the calling thread (with one intra-op thread ONNX Runtime
//! computes on the caller, so the CPU time is the run's work, less disturbed
//! than the wall clock by other processes on a shared host): `run_batch` (16
//! requests assembled, run, split) and `run` (the same rows already one
//! `[16, 1, 32, 32]` tensor). bench/onnx_native.py runs it
//! interleaved with Python onnxruntime; the figures are in
//! docs/results/serving.md.

use std::time::Instant;

use lanes_onnx::{Datatype, InputTensor, OnnxSession, SessionConfig};
use nix::time::{clock_gettime, ClockId};

const ROWS: usize = 16;
const ROW: [usize; 4] = [1, 1, 32, 32];

fn median_us(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn thread_cpu_us() -> f64 {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("a thread CPU clock");
    t.tv_sec() as f64 * 1e6 + t.tv_nsec() as f64 / 1e3
}

/// Medians of `iters` calls of `run`: (wall µs, thread CPU µs).
fn time(iters: usize, mut run: impl FnMut()) -> (f64, f64) {
    let (wall, cpu): (Vec<f64>, Vec<f64>) = (0..iters)
        .map(|_| {
            let (start, cpu) = (Instant::now(), thread_cpu_us());
            run();
            (start.elapsed().as_secs_f64() * 1e6, thread_cpu_us() - cpu)
        })
        .unzip();
    (median_us(wall), median_us(cpu))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, model, input, iters] = args.as_slice() else {
        return Err("usage: char_cnn_speed MODEL INPUT ITERS".into());
    };
    let iters: usize = iters.parse()?;
    let data = std::fs::read(input)?;
    let row_bytes = ROW.iter().product::<usize>() * 4;
    if data.len() != ROWS * row_bytes {
        return Err(format!("{input}: {} bytes, want {}", data.len(), ROWS * row_bytes).into());
    }
    let mut session = OnnxSession::load(model, &SessionConfig::default())?;
    let requests: Vec<[InputTensor; 1]> = data
        .chunks(row_bytes)
        .map(|row| {
            [InputTensor {
                name: "x",
                datatype: Datatype::Fp32,
                shape: &ROW,
                data: row,
            }]
        })
        .collect();
    let batch: Vec<&[InputTensor]> = requests.iter().map(|r| r.as_slice()).collect();
    let whole = [InputTensor {
        name: "x",
        datatype: Datatype::Fp32,
        shape: &[ROWS, 1, 32, 32],
        data: &data,
    }];
    for _ in 0..20 {
        session.run_batch(&batch)?;
        session.run(&whole)?;
    }
    let run_batch = time(iters, || {
        session.run_batch(&batch).expect("a run");
    });
    let run = time(iters, || {
        session.run(&whole).expect("a run");
    });
    println!(
        "{{\"run_batch_us\": {:.1}, \"run_batch_cpu_us\": {:.1}, \"run_us\": {:.1}, \"run_cpu_us\": {:.1}}}",
        run_batch.0, run_batch.1, run.0, run.1
    );
    Ok(())
}
