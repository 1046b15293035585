//! lanes-onnx against real ONNX Runtime and real models: outputs equal Python
//! onnxruntime's (computed by tests/fixtures/make_fixtures.py, one request at
//! a time) at batch 1 and in batches assembled and split, and the refusals.
//!
//! The library is found by the rule of `lanes_onnx::library` (`make test`
//! sets ORT_DYLIB_PATH); without it every test here fails, saying so.
//! `tests/fixtures/small` is committed; `tests/fixtures/generated` (char_cnn,
//! 6 MB) is written by `make onnx-fixtures`, which `make test` runs first.

use std::fs;
use std::path::{Path, PathBuf};

use half::f16;
use lanes_onnx::{
    Datatype, Dim, InputTensor, OnnxSession, OutputTensor, Provider, Runtime, SessionConfig,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    model: String,
    requests: Vec<Request>,
}

#[derive(Debug, Deserialize)]
struct Request {
    inputs: Vec<TensorFile>,
    outputs: Vec<TensorFile>,
}

#[derive(Debug, Deserialize)]
struct TensorFile {
    name: String,
    datatype: String,
    shape: Vec<usize>,
    file: String,
}

/// A tensor read from a fixture file.
#[derive(Debug)]
struct Loaded {
    name: String,
    datatype: Datatype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl Loaded {
    fn read(dir: &Path, t: &TensorFile) -> Self {
        Self {
            name: t.name.clone(),
            datatype: Datatype::from_name(&t.datatype).expect("a datatype"),
            shape: t.shape.clone(),
            data: fs::read(dir.join(&t.file)).expect("a fixture file"),
        }
    }

    fn input(&self) -> InputTensor<'_> {
        InputTensor {
            name: &self.name,
            datatype: self.datatype,
            shape: &self.shape,
            data: &self.data,
        }
    }
}

fn fixtures(kind: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(kind);
    assert!(
        dir.join("cases.json").is_file(),
        "no fixtures in {}: run `make onnx-fixtures` (it runs crates/lanes-onnx/tests/fixtures/make_fixtures.py)",
        dir.display()
    );
    dir
}

fn cases(dir: &Path) -> Vec<Case> {
    serde_json::from_slice(&fs::read(dir.join("cases.json")).unwrap()).unwrap()
}

fn load(path: &Path, config: &SessionConfig) -> OnnxSession {
    OnnxSession::load(path, config)
        .unwrap_or_else(|e| panic!("loading {}: [{}] {e}", path.display(), e.code()))
}

/// Little-endian elements as f64, for comparing floats within a tolerance.
fn floats(datatype: Datatype, data: &[u8]) -> Vec<f64> {
    match datatype {
        Datatype::Fp16 => data
            .chunks(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
        Datatype::Fp32 => data
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        Datatype::Fp64 => data
            .chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        _ => unreachable!("{datatype} is not a float"),
    }
}

/// Equal to the reference: integers and BOOL exactly, floats within
/// `1e-4 * |reference| + 1e-5` (batched GEMMs may sum in another order).
fn assert_matches(what: &str, got: &OutputTensor, want: &Loaded) {
    assert_eq!(
        (got.datatype, &got.shape),
        (want.datatype, &want.shape),
        "{what}"
    );
    if matches!(
        want.datatype,
        Datatype::Fp16 | Datatype::Fp32 | Datatype::Fp64
    ) {
        let (g, w) = (
            floats(got.datatype, &got.data),
            floats(want.datatype, &want.data),
        );
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            assert!(
                (a - b).abs() <= 1e-4 * b.abs() + 1e-5,
                "{what}: element {i} is {a}, Python onnxruntime gave {b}"
            );
        }
    } else {
        assert_eq!(&got.data[..], &want.data[..], "{what}");
    }
}

/// Every case of `dir`: all its requests as one batch, then each request
/// alone (`run_batch` of one, and `run`).
fn check_cases(dir: &Path) {
    let cases = cases(dir);
    assert!(!cases.is_empty());
    let config = SessionConfig::default();
    for case in &cases {
        let mut session = load(&dir.join(&case.model), &config);
        let inputs: Vec<Vec<Loaded>> = case
            .requests
            .iter()
            .map(|r| r.inputs.iter().map(|t| Loaded::read(dir, t)).collect())
            .collect();
        let wants: Vec<Vec<Loaded>> = case
            .requests
            .iter()
            .map(|r| r.outputs.iter().map(|t| Loaded::read(dir, t)).collect())
            .collect();
        let views: Vec<Vec<InputTensor>> = inputs
            .iter()
            .map(|r| r.iter().map(Loaded::input).collect())
            .collect();
        let requests: Vec<&[InputTensor]> = views.iter().map(Vec::as_slice).collect();
        let order: Vec<String> = session.outputs().iter().map(|s| s.name.clone()).collect();

        let batched = session
            .run_batch(&requests)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(batched.len(), requests.len(), "{}", case.name);
        for (r, (got, want)) in batched.iter().zip(&wants).enumerate() {
            assert_eq!(got.len(), order.len(), "{}", case.name);
            for w in want {
                let at = order.iter().position(|n| *n == w.name).expect("an output");
                assert_matches(
                    &format!("{} request {r} of the batch, output {}", case.name, w.name),
                    &got[at],
                    w,
                );
            }
        }
        for (r, (request, want)) in requests.iter().zip(&wants).enumerate() {
            let alone = session.run_batch(&[request]).unwrap().remove(0);
            let unbatched = session.run(request).unwrap();
            for w in want {
                let at = order.iter().position(|n| *n == w.name).expect("an output");
                assert_matches(
                    &format!("{} request {r} alone, output {}", case.name, w.name),
                    &alone[at],
                    w,
                );
                assert_matches(
                    &format!("{} request {r} run, output {}", case.name, w.name),
                    &unbatched[at],
                    w,
                );
            }
        }
    }
}

#[test]
fn small_models_match_python_onnxruntime() {
    check_cases(&fixtures("small"));
}

#[test]
fn char_cnn_matches_python_onnxruntime() {
    check_cases(&fixtures("generated"));
}

#[test]
fn reports_inputs_and_outputs() {
    let small = fixtures("small");
    let n = || Dim::Symbolic("N".into());
    let signature = |s: &OnnxSession| {
        let text = |specs: &[lanes_onnx::TensorSpec]| {
            specs.iter().map(ToString::to_string).collect::<Vec<_>>()
        };
        (text(s.inputs()), text(s.outputs()))
    };
    let config = SessionConfig::default();
    let affine = load(&small.join("affine.onnx"), &config);
    assert_eq!(
        signature(&affine),
        (
            vec!["x FP32 [N, 4]".to_owned()],
            vec!["y FP32 [N, 3]".to_owned(), "k INT64 [N]".to_owned()]
        )
    );
    assert_eq!(affine.inputs()[0].dims, [n(), Dim::Fixed(4)]);

    let identity = load(&small.join("identity.onnx"), &config);
    let datatypes: Vec<Datatype> = identity.inputs().iter().map(|s| s.datatype).collect();
    let mut sorted = datatypes.clone();
    sorted.sort_by_key(|d| Datatype::ALL.iter().position(|a| a == d));
    assert_eq!(sorted, Datatype::ALL, "one input per datatype");
    for (input, output) in identity.inputs().iter().zip(identity.outputs()) {
        assert_eq!(input.dims, [n(), Dim::Fixed(2), Dim::Fixed(3)]);
        assert_eq!(
            (output.datatype, &output.dims),
            (input.datatype, &input.dims)
        );
    }

    let char_cnn = load(&fixtures("generated").join("char_cnn/model.onnx"), &config);
    assert_eq!(
        signature(&char_cnn),
        (
            vec!["x FP32 [batch, 1, 32, 32]".to_owned()],
            vec!["logits FP32 [batch, 3755]".to_owned()]
        )
    );
}

/// The first affine request of the reference cases.
fn affine_input(dir: &Path) -> Loaded {
    let case = cases(dir)
        .into_iter()
        .find(|c| c.name == "affine_batch")
        .unwrap();
    Loaded::read(dir, &case.requests[0].inputs[0])
}

#[test]
fn unaligned_data_is_copied_and_gives_the_same_outputs() {
    let small = fixtures("small");
    let x = affine_input(&small);
    let mut session = load(&small.join("affine.onnx"), &SessionConfig::default());
    // the same bytes at an address aligned for f32 (passed by reference) and
    // at one that is not (copied)
    let mut aligned: Vec<f32> = vec![0.0; x.data.len() / 4];
    bytemuck::cast_slice_mut::<f32, u8>(&mut aligned).copy_from_slice(&x.data);
    let mut skewed: Vec<f32> = vec![0.0; x.data.len() / 4 + 1];
    bytemuck::cast_slice_mut::<f32, u8>(&mut skewed)[1..=x.data.len()].copy_from_slice(&x.data);
    let by_reference = InputTensor {
        data: bytemuck::cast_slice(&aligned),
        ..x.input()
    };
    let copied = InputTensor {
        data: &bytemuck::cast_slice::<f32, u8>(&skewed)[1..=x.data.len()],
        ..x.input()
    };
    assert_eq!(
        session.run(&[by_reference]).unwrap(),
        session.run(&[copied]).unwrap()
    );
}

#[test]
fn refusals() {
    let small = fixtures("small");
    let config = SessionConfig::default();
    let x = affine_input(&small);
    let mut affine = load(&small.join("affine.onnx"), &config);
    let as_fp64 = InputTensor {
        datatype: Datatype::Fp64,
        ..x.input()
    };
    let wrong_shape = InputTensor {
        shape: &[2, 2],
        ..x.input()
    };
    let five: Vec<u8> = vec![0; 20];
    let five_wide = InputTensor {
        shape: &[1, 5],
        data: &five,
        ..x.input()
    };
    let extra = InputTensor {
        name: "z",
        ..x.input()
    };
    let ok = [x.input()];
    // (requests, code, words of the message)
    let table: Vec<(Vec<Vec<InputTensor>>, &str, &str)> = vec![
        (vec![vec![]], "missing_input", "missing input 'x'"),
        (
            vec![vec![x.input(), extra]],
            "unknown_input",
            "input 'z' is not an input of the model; its inputs are x",
        ),
        (
            vec![vec![as_fp64]],
            "wrong_datatype",
            "input 'x': datatype FP64, the model takes FP32",
        ),
        (
            vec![vec![wrong_shape]],
            "bad_shape",
            "dimension 1 must be 4",
        ),
        (
            vec![ok.to_vec(), vec![five_wide]],
            "bad_shape",
            "request 1: input 'x' has shape [1, 5] but the model takes [N, 4]",
        ),
    ];
    for (requests, code, words) in table {
        let requests: Vec<&[InputTensor]> = requests.iter().map(Vec::as_slice).collect();
        let err = affine.run_batch(&requests).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
        assert!(err.is_request_error());
        assert!(err.to_string().contains(words), "{err}");
    }

    // a BOOL byte other than 0 or 1
    let identity_case = cases(&small)
        .into_iter()
        .find(|c| c.name == "identity_batch1")
        .unwrap();
    let mut inputs: Vec<Loaded> = identity_case.requests[0]
        .inputs
        .iter()
        .map(|t| Loaded::read(&small, t))
        .collect();
    let flag = inputs
        .iter_mut()
        .find(|t| t.datatype == Datatype::Bool)
        .unwrap();
    flag.data[4] = 2;
    let views: Vec<InputTensor> = inputs.iter().map(Loaded::input).collect();
    let mut identity = load(&small.join("identity.onnx"), &config);
    let err = identity.run(&views).unwrap_err();
    assert_eq!(
        (err.code(), err.to_string().as_str()),
        (
            "bad_data",
            "input 'x_bool': BOOL element 4 is byte 2, must be 0 or 1"
        )
    );

    // an output without a batch dimension: fine run as is, not in a batch
    let mut scalar_out = load(&small.join("scalar_out.onnx"), &config);
    let whole = scalar_out.run(&[x.input()]).unwrap();
    assert_eq!(whole[0].shape, Vec::<usize>::new());
    let err = scalar_out.run_batch(&[&ok, &ok]).unwrap_err();
    assert_eq!(err.code(), "not_batched");
    assert!(
        err.to_string()
            .contains("output 's' has shape [], not a first dimension of the batch's 2 rows"),
        "{err}"
    );
}

#[test]
fn load_refusals() {
    let small = fixtures("small");
    let config = SessionConfig::default();
    let not_onnx = small.join("cases.json");
    let cases: [(PathBuf, SessionConfig, &str, &str); 4] = [
        (
            small.join("absent.onnx"),
            config.clone(),
            "model_not_found",
            "absent.onnx does not exist",
        ),
        (
            not_onnx,
            config.clone(),
            "model_invalid",
            "ONNX Runtime cannot load",
        ),
        (
            small.join("strings.onnx"),
            config.clone(),
            "model_unsupported",
            "input 'x' is a tensor of String",
        ),
        (
            small.join("affine.onnx"),
            SessionConfig {
                intra_op_threads: 0,
                ..config
            },
            "bad_config",
            "intra_op_threads = 0",
        ),
    ];
    for (path, config, code, words) in cases {
        let err = OnnxSession::load(&path, &config).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
        assert!(!err.is_request_error());
        assert!(err.to_string().contains(words), "{err}");
    }
}

/// CUDA: with a library that has the provider and a GPU, outputs equal the
/// CPU reference; with a CPU-only library, the coded refusal.
#[test]
fn cuda_provider() {
    let runtime = Runtime::global().unwrap_or_else(|e| panic!("[{}] {e}", e.code()));
    let small = fixtures("small");
    let cuda = SessionConfig {
        provider: Provider::Cuda { device: 0 },
        ..SessionConfig::default()
    };
    if !runtime.has_cuda() {
        let err = OnnxSession::load(small.join("affine.onnx"), &cuda).unwrap_err();
        assert_eq!(err.code(), "device_unavailable");
        assert!(
            err.to_string().contains("has no CUDA execution provider"),
            "{err}"
        );
        eprintln!(
            "cuda_provider: skipped the GPU run: {} has no CUDA execution provider",
            runtime.library().display()
        );
        return;
    }
    let mut session = match OnnxSession::load(small.join("affine.onnx"), &cuda) {
        Ok(session) => session,
        Err(e) => {
            eprintln!("cuda_provider: skipped the GPU run: no usable GPU: {e}");
            return;
        }
    };
    let case = cases(&small)
        .into_iter()
        .find(|c| c.name == "affine_batch1")
        .unwrap();
    let x = Loaded::read(&small, &case.requests[0].inputs[0]);
    let got = session.run_batch(&[&[x.input()]]).unwrap().remove(0);
    for (g, w) in got.iter().zip(&case.requests[0].outputs) {
        assert_matches("affine on cuda:0", g, &Loaded::read(&small, w));
    }
}
