//! Stages 1 and 2 of bench/calibrate/measure.py: what `lanes serve` runs
//! natively for the demo zoo, timed step by step on the calling thread (one
//! core, one intra-op thread), for `lanes sim`'s scenario of this host.
//!
//! ```text
//! cargo run --release -p lanes-server --example zoo_cost -- SPEC.json > SAMPLES.json
//! ```
//!
//! SPEC (written by measure.py): `{"rounds": R, "seed": S, "models": [{"name",
//! "path" (the ONNX file), "task" ("char" | "line"), "labels", "max_batch_size",
//! "requests": [{"body": FILE, "header_length": N | null}]}]}` — the requests
//! are the lab's corpus bodies, as the load generator sends them.
//!
//! **Steps**, each the code the server runs for it:
//! - *batch n*: a device thread's work for one batch of n requests
//!   ([`ZooRunner::run`]: collate, the ONNX Runtime call, split);
//! - *wire*: the front end's `decode_request` of the REST body (an I/O thread);
//! - *pre* / *post*: [`ZooHooks::preprocess`] / [`ZooHooks::postprocess`] (the
//!   hook pool, `spawn_blocking`);
//! - *encode*: `encode_response` (an I/O thread).
//!
//! **Rule.** After a warm-up (every batch size 5 times, every request's steps
//! twice), every round runs every (model, n) batch once and every corpus
//! request's wire/pre/post/encode once, in an order shuffled per round, so
//! every figure sees the same drift of the machine. Each sample is `[wall_ms,
//! cpu_ms]`: the wall time, and the wall time less what the thread spent
//! waiting for its core meanwhile (`run_delay` in `/proc/thread-self/schedstat`)
//! — measure.py drops samples where the two differ (the step was preempted). Prints `{"batch": {model: {n: [samples]}},
//! "wire" | "pre" | "post" | "encode": {model: [samples]}}`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use bytes::Bytes;
use lanes_kserve::rest::{decode_request, encode_response};
use lanes_kserve::{CodecConfig, InferRequest, InferResponse, ModelRef, OutputChoice};
use lanes_onnx::SessionConfig;
use lanes_server::backend::BatchInfo;
use lanes_server::onnx_backend::OnnxModel;
use lanes_server::runner::{Admitted, Hooks, ModelRunner, Produced};
use lanes_server::thread_clocks::run_delay;
use lanes_server::zoo::{zoo, Task, ZooHooks, ZooRunner};
use serde_json::{json, Value};

/// One sample: wall and thread CPU milliseconds.
type Sample = [f64; 2];

/// Times steps on the calling thread by its wait for a core: `run_delay` in
/// its schedstat ([`lanes_server::thread_clocks::run_delay`]), brought up to
/// date whenever the thread is switched back in — so a step during which it
/// was preempted ends with it grown.
struct RunDelay;

impl RunDelay {
    fn open() -> Self {
        run_delay().expect("/proc/thread-self/schedstat");
        Self
    }

    /// Runs `f`, returning its value and its `[wall_ms, cpu_ms]`, where the
    /// CPU time is the wall time less the time spent waiting for the core.
    fn time<T>(&self, f: impl FnOnce() -> T) -> (T, Sample) {
        let d0 = run_delay().unwrap_or(0);
        let t0 = Instant::now();
        let out = f();
        let wall = t0.elapsed().as_nanos() as f64 / 1e6;
        let waited = run_delay().unwrap_or(0).saturating_sub(d0) as f64 / 1e6;
        (out, [wall, (wall - waited).max(0.0)])
    }
}

/// A small deterministic shuffle (xorshift64*), so a seed repeats a run's order.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            xs.swap(i, (self.next() % (i as u64 + 1)) as usize);
        }
    }
}

struct Model {
    name: String,
    runner: std::sync::Arc<ZooRunner>,
    hooks: std::sync::Arc<ZooHooks>,
    sizes: Vec<u32>,
    /// Each corpus request: its body, header length and decoded form.
    requests: Vec<(Bytes, Option<i128>, InferRequest)>,
}

#[derive(Default)]
struct Samples {
    batch: BTreeMap<String, BTreeMap<u32, Vec<Sample>>>,
    steps: BTreeMap<&'static str, BTreeMap<String, Vec<Sample>>>,
}

fn load(spec: &Value, codec: &CodecConfig) -> Model {
    let s = |k: &str| {
        spec[k]
            .as_str()
            .unwrap_or_else(|| panic!("model.{k}"))
            .to_owned()
    };
    let name = s("name");
    let task = Task::parse(&s("task")).expect("task: char or line");
    let labels = spec["labels"]
        .as_array()
        .expect("labels")
        .iter()
        .map(|l| l.as_str().expect("label").to_owned())
        .collect();
    let configs = [Some(SessionConfig::default())]; // one device, one intra-op thread
    let onnx = OnnxModel::load(&name, &PathBuf::from(s("path")), &configs, 1, true)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let (runner, hooks) = zoo(onnx, &name, task, labels);
    let max = spec["max_batch_size"]
        .as_u64()
        .expect("max_batch_size")
        .max(1) as u32;
    let sizes = [1, 2, 4, 8, 16, 32]
        .into_iter()
        .filter(|&n| n <= max)
        .collect();
    let requests = spec["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .map(|r| {
            let body = Bytes::from(std::fs::read(r["body"].as_str().expect("body")).expect("read"));
            let length = r["header_length"].as_i64().map(i128::from);
            let model = ModelRef {
                name: name.clone(),
                version: None,
            };
            let decoded = decode_request(model, body.clone(), length, codec).expect("decode");
            (body, length, decoded)
        })
        .collect();
    Model {
        name,
        runner,
        hooks,
        sizes,
        requests,
    }
}

fn admitted(m: &Model, at: usize) -> Admitted {
    let request = m.requests[at % m.requests.len()].2.clone();
    let item = m.hooks.preprocess(&request).expect("preprocess");
    Admitted {
        request,
        item: Some(item),
    }
}

fn info(rows: u32) -> BatchInfo {
    BatchInfo {
        job: 0,
        model: 0,
        device: 0,
        rows,
    }
}

/// One batch of `n` requests, starting at corpus request `at`.
fn batch(m: &Model, n: u32, at: usize, cpu: &RunDelay, out: Option<&mut Samples>) {
    let inputs: Vec<Admitted> = (0..n as usize).map(|i| admitted(m, at + i)).collect();
    let (produced, sample) = cpu.time(|| m.runner.run(&info(n), inputs).expect("run"));
    drop(produced);
    if let Some(out) = out {
        let per = out.batch.entry(m.name.clone()).or_default();
        per.entry(n).or_default().push(sample);
    }
}

/// Every corpus request's wire, pre, post and encode steps once.
fn prepost(m: &Model, codec: &CodecConfig, cpu: &RunDelay, mut out: Option<&mut Samples>) {
    for (body, length, _) in &m.requests {
        let model = ModelRef {
            name: m.name.clone(),
            version: None,
        };
        let (request, wire) =
            cpu.time(|| decode_request(model, body.clone(), *length, codec).expect("decode"));
        let (item, pre) = cpu.time(|| m.hooks.preprocess(&request).expect("preprocess"));
        let choice = OutputChoice::of(&request);
        let id = request.id.clone();
        let input = Admitted {
            request,
            item: Some(item),
        };
        let mut produced = m.runner.run(&info(1), vec![input]).expect("run");
        let Some(Produced::Item(item)) = produced.pop() else {
            panic!("{}: the runner returned no item", m.name)
        };
        let (outputs, post) = cpu.time(|| m.hooks.postprocess(item).expect("postprocess"));
        let response = InferResponse {
            model_name: m.name.clone(),
            model_version: "1".into(),
            id,
            outputs,
        };
        let (_, encode) = cpu.time(|| encode_response(&response, &choice).expect("encode"));
        if let Some(out) = out.as_deref_mut() {
            for (key, sample) in [
                ("wire", wire),
                ("pre", pre),
                ("post", post),
                ("encode", encode),
            ] {
                let per = out.steps.entry(key).or_default();
                per.entry(m.name.clone()).or_default().push(sample);
            }
        }
    }
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| panic!("usage: zoo_cost SPEC.json"));
    let spec: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read SPEC")).expect("SPEC");
    let codec = CodecConfig::default();
    let models: Vec<Model> = spec["models"]
        .as_array()
        .expect("models")
        .iter()
        .map(|m| load(m, &codec))
        .collect();
    let rounds = spec["rounds"].as_u64().unwrap_or(151) as usize;
    let mut rng = Rng(spec["seed"].as_u64().unwrap_or(1).max(1));
    let cpu = RunDelay::open();
    for m in &models {
        for &n in &m.sizes {
            for _ in 0..5 {
                batch(m, n, 0, &cpu, None);
            }
        }
        for _ in 0..2 {
            prepost(m, &codec, &cpu, None);
        }
    }
    // n = 0: the model's wire/pre/post/encode steps.
    let mut steps: Vec<(usize, u32)> = Vec::new();
    for (i, m) in models.iter().enumerate() {
        steps.extend(m.sizes.iter().map(|&n| (i, n)));
        steps.push((i, 0));
    }
    let mut out = Samples::default();
    for k in 0..rounds {
        rng.shuffle(&mut steps);
        for &(i, n) in &steps {
            match n {
                0 => prepost(&models[i], &codec, &cpu, Some(&mut out)),
                n => batch(&models[i], n, k, &cpu, Some(&mut out)),
            }
        }
    }
    let batches: BTreeMap<&String, BTreeMap<String, &Vec<Sample>>> = out
        .batch
        .iter()
        .map(|(name, per)| (name, per.iter().map(|(n, v)| (n.to_string(), v)).collect()))
        .collect();
    let mut doc = json!({ "batch": batches });
    for (key, per) in &out.steps {
        doc[*key] = json!(per);
    }
    println!("{doc}");
}
