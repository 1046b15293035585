//! The native ONNX backend: each model's ONNX Runtime sessions (lanes-onnx),
//! run by the device executors with no Python on the path.
//!
//! **Rule.** A model holds, on every device it serves, as many sessions as
//! batches of it may run there at once (`num_batch_threads`); an executor
//! takes the first free one. A batching model runs its batch as one call
//! (tensors concatenated along dimension 0, outputs split back per request);
//! a model that does not batch runs its one request as it is. Outputs come
//! back in the model's order and the front end picks what the request asked
//! for.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use lanes_kserve::{Datatype, InferRequest, OutputTensor, Tensor, TensorData};
use lanes_onnx::{Dim, InputTensor, OnnxError, OnnxSession, Provider, SessionConfig};

use crate::backend::BatchInfo;
use crate::runner::{Admitted, ModelRunner, Produced};
use crate::signature::{Signature, Spec};

/// One model's sessions, per device (None where it has no replica).
#[derive(Debug)]
pub struct OnnxModel {
    name: String,
    batching: bool,
    sessions: Vec<Option<Vec<Mutex<OnnxSession>>>>,
    /// Per device, whether its sessions run on the CPU provider.
    on_cpu: Vec<bool>,
}

impl OnnxModel {
    /// Loads `path` on every device `configs[d]` names (`None`: no replica
    /// there), `slots` sessions each.
    pub fn load(
        name: &str,
        path: &Path,
        configs: &[Option<SessionConfig>],
        slots: u32,
        batching: bool,
    ) -> Result<Self, OnnxError> {
        let sessions = configs
            .iter()
            .map(|config| {
                config
                    .as_ref()
                    .map(|c| {
                        (0..slots.max(1))
                            .map(|_| OnnxSession::load(path, c).map(Mutex::new))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let on_cpu = configs
            .iter()
            .map(|c| c.as_ref().is_some_and(|c| c.provider == Provider::Cpu))
            .collect();
        Ok(Self {
            name: name.to_owned(),
            batching,
            sessions,
            on_cpu,
        })
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model's signature as its graph declares it (a symbolic or dynamic
    /// dimension is `-1`).
    pub fn signature(&self) -> Option<Signature> {
        let session = self.sessions.iter().flatten().flatten().next()?;
        let session = session.lock().unwrap_or_else(|p| p.into_inner());
        let specs = |specs: &[lanes_onnx::TensorSpec]| {
            specs
                .iter()
                .map(|s| Spec {
                    name: s.name.clone(),
                    datatype: Datatype::from_name(s.datatype.name()).expect("a KServe datatype"),
                    shape: s
                        .dims
                        .iter()
                        .map(|d| match d {
                            Dim::Fixed(n) => *n as i64,
                            _ => -1,
                        })
                        .collect(),
                })
                .collect()
        };
        Some(Signature {
            inputs: specs(session.inputs()),
            outputs: specs(session.outputs()),
            forms: Vec::new(),
        })
    }

    fn session(&self, device: usize) -> Result<MutexGuard<'_, OnnxSession>, String> {
        let pool = self
            .sessions
            .get(device)
            .and_then(Option::as_ref)
            .ok_or_else(|| format!("no replica on device {device}"))?;
        for s in pool {
            if let Ok(guard) = s.try_lock() {
                return Ok(guard);
            }
        }
        Ok(pool[0].lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl ModelRunner for OnnxModel {
    /// Zeros of every input (a dynamic dimension 1, the first `rows` when
    /// the model batches), run on the first session of `device`.
    fn warm(&self, device: usize, rows: u32) -> Result<Option<std::time::Duration>, String> {
        let mut session = self.session(device)?;
        let mut shapes = Vec::new();
        let mut datas = Vec::new();
        for spec in session.inputs() {
            let shape: Vec<usize> = spec
                .dims
                .iter()
                .enumerate()
                .map(|(i, d)| match d {
                    _ if i == 0 && self.batching => rows as usize,
                    Dim::Fixed(n) => *n,
                    _ => 1,
                })
                .collect();
            let len = shape.iter().product::<usize>() * spec.datatype.size();
            datas.push(vec![0u8; len]);
            shapes.push(shape);
        }
        let specs: Vec<lanes_onnx::TensorSpec> = session.inputs().to_vec();
        let inputs: Vec<InputTensor<'_>> = specs
            .iter()
            .zip(&shapes)
            .zip(&datas)
            .map(|((spec, shape), data)| InputTensor {
                name: &spec.name,
                datatype: spec.datatype,
                shape,
                data,
            })
            .collect();
        let t0 = std::time::Instant::now();
        session.run(&inputs).map_err(|e| e.to_string())?;
        Ok(Some(t0.elapsed()))
    }

    /// On the CPU provider only: ONNX Runtime's `Run` there takes no lock a
    /// batch elsewhere waits on and keeps no per-thread state, where the CUDA
    /// provider keeps per-thread handles (cuBLAS, cuDNN) that each new
    /// thread would create on its first batch.
    fn inline(&self, device: usize) -> bool {
        self.on_cpu.get(device).copied().unwrap_or(false)
    }

    fn run(&self, batch: &BatchInfo, inputs: Vec<Admitted>) -> Result<Vec<Produced>, String> {
        let inputs: Vec<InferRequest> = inputs.into_iter().map(|a| a.request).collect();
        let order = self.input_names(batch.device)?;
        // Owned shapes for the borrowed views, in the session's input order.
        let shapes: Vec<Vec<Vec<usize>>> = inputs
            .iter()
            .map(|r| {
                order
                    .iter()
                    .map(|n| r.input(n).map_or_else(Vec::new, |t| dims(t.shape())))
                    .collect()
            })
            .collect();
        let views: Vec<Vec<InputTensor<'_>>> = inputs
            .iter()
            .zip(&shapes)
            .map(|(r, shapes)| view(r, &order, shapes))
            .collect::<Result<_, _>>()?;
        let requests: Vec<&[InputTensor<'_>]> = views.iter().map(Vec::as_slice).collect();
        let (names, results) = self.run_inputs(batch.device, &requests)?;
        results
            .into_iter()
            .map(|outputs| {
                outputs
                    .into_iter()
                    .zip(&names)
                    .map(|(o, name)| output(name, o))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Produced::Tensors)
            })
            .collect()
    }
}

impl OnnxModel {
    /// The session's input names on `device`, in its order.
    pub fn input_names(&self, device: usize) -> Result<Vec<String>, String> {
        let session = self.session(device)?;
        Ok(session.inputs().iter().map(|s| s.name.clone()).collect())
    }

    /// Runs one batch of built inputs (one slice per request, in the
    /// session's input order) on `device`: one call when the model batches,
    /// else one per request. The output names, and each request's outputs.
    #[allow(clippy::type_complexity)]
    pub fn run_inputs(
        &self,
        device: usize,
        requests: &[&[InputTensor<'_>]],
    ) -> Result<(Vec<String>, Vec<Vec<lanes_onnx::OutputTensor>>), String> {
        let mut session = self.session(device)?;
        let results = if self.batching {
            session.run_batch(requests)
        } else {
            requests.iter().map(|v| session.run(v)).collect()
        }
        .map_err(|e| e.to_string())?;
        let names = session.outputs().iter().map(|s| s.name.clone()).collect();
        Ok((names, results))
    }
}

fn dims(shape: &[u64]) -> Vec<usize> {
    shape.iter().map(|&d| d as usize).collect()
}

/// A request's tensors as borrowed views, in the session's input order.
fn view<'a>(
    request: &'a InferRequest,
    order: &'a [String],
    shapes: &'a [Vec<usize>],
) -> Result<Vec<InputTensor<'a>>, String> {
    order
        .iter()
        .zip(shapes)
        .map(|(name, shape)| {
            let tensor = request
                .input(name)
                .ok_or_else(|| format!("input '{name}' missing"))?;
            let TensorData::Fixed(data) = tensor.data() else {
                return Err(format!(
                    "input '{name}': BYTES tensors are not run natively"
                ));
            };
            let datatype =
                lanes_onnx::Datatype::from_name(tensor.datatype().name()).ok_or_else(|| {
                    format!("input '{name}': {} is not run natively", tensor.datatype())
                })?;
            Ok(InputTensor {
                name,
                datatype,
                shape,
                data,
            })
        })
        .collect()
}

fn output(name: &str, o: lanes_onnx::OutputTensor) -> Result<OutputTensor, String> {
    let datatype = Datatype::from_name(o.datatype.name()).expect("a KServe datatype");
    let shape = o.shape.iter().map(|&d| d as u64).collect();
    let tensor =
        Tensor::new(datatype, shape, TensorData::Fixed(o.data)).map_err(|e| e.to_string())?;
    Ok(OutputTensor {
        name: name.to_owned(),
        tensor,
    })
}
