//! `lanes._core.NativeServer`: `lanes serve`'s data plane (lanes-server) run
//! from Python, and Python models run by it through PyO3.
//!
//! **Rule.** Python hands over one config dict (listeners, policy, devices,
//! models) and keeps the lifecycle: it loads and warms the models, then sets
//! the phase; [`NativeServer::drain`] and [`NativeServer::stop`] release the
//! GIL while they wait, so the executors can finish Python batches.
//!
//! A Python model runs through `lanes.serving.bridge`: [`PyRunner`] takes
//! the GIL once per batch and calls `bridge.run_batch(replica, items, wires,
//! postprocess)`; [`PyHooks`] take it once per request for the model's own
//! `preprocess` and `postprocess` (on the front end's bounded pool). A
//! request reaches Python as `(name, datatype, shape, data)` tuples — `data`
//! the raw little-endian bytes, or a list of `bytes` for BYTES — and
//! outputs come back in the same form.
//!
//! A demo zoo model that runs its network in Python (on `cuda:N`, or on the
//! `torch` backend) keeps the zoo's pre- and post-processing in Rust
//! (`lanes_server::zoo`'s hooks, no GIL): [`PyZooRunner`] takes the GIL once
//! per batch for `bridge.zoo_logits(replica, x, shape)` on the stacked
//! float32 input, and splits the logits back per request.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use lanes_kserve::{CodecConfig, Datatype, InferRequest, OutputTensor, Tensor, TensorData};
use lanes_onnx::SessionConfig;
use lanes_server::app::{DeviceEntry, Limits, ModelEntry, Phase};
use lanes_server::arbiter::{ArbiterConfig, Fallback};
use lanes_server::onnx_backend::OnnxModel;
use lanes_server::runner::{Admitted, HookError, Hooks, Item, ModelRunner, Produced, SimCost};
use lanes_server::server::{Listen, Running, ServedModel, ServerSpec};
use lanes_server::signature::{Signature, Spec};
use lanes_server::zoo::{collate, split_logits, zoo, zoo_hooks, Stacked, Task};
use lanes_server::BatchInfo;
use lanes_serving::{Batching, DeadlineRule};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::{detached, CoreError};

fn bad(message: impl Into<String>) -> CoreError {
    CoreError {
        code: "bad_argument",
        message: message.into(),
    }
}

/// A request's tensors as Python `(name, datatype, shape, data)` tuples.
fn wire_inputs<'py>(py: Python<'py>, request: &InferRequest) -> PyResult<Bound<'py, PyList>> {
    let tuples = request
        .inputs
        .iter()
        .map(|input| {
            let tensor = &input.tensor;
            let data: Bound<'py, PyAny> = match tensor.data() {
                TensorData::Fixed(bytes) => PyBytes::new(py, bytes).into_any(),
                TensorData::Bytes(items) => {
                    PyList::new(py, items.iter().map(|b| PyBytes::new(py, b)))?.into_any()
                }
            };
            PyTuple::new(
                py,
                [
                    input.name.as_str().into_pyobject(py)?.into_any(),
                    tensor.datatype().name().into_pyobject(py)?.into_any(),
                    PyList::new(py, tensor.shape())?.into_any(),
                    data,
                ],
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, tuples)
}

/// Output tensors from Python `(name, datatype, shape, data)` tuples.
fn wire_outputs(outputs: &Bound<'_, PyAny>) -> Result<Vec<OutputTensor>, String> {
    let tuples: Vec<(String, String, Vec<u64>, Bound<'_, PyAny>)> =
        outputs.extract().map_err(|e| format!("outputs: {e}"))?;
    tuples
        .into_iter()
        .map(|(name, datatype, shape, data)| {
            let dt = Datatype::from_name(&datatype)
                .ok_or_else(|| format!("output '{name}': datatype {datatype} unknown"))?;
            let data = if dt == Datatype::Bytes {
                let items: Vec<Bound<'_, PyBytes>> = data
                    .extract()
                    .map_err(|e| format!("output '{name}': {e}"))?;
                TensorData::Bytes(
                    items
                        .iter()
                        .map(|b| Bytes::copy_from_slice(b.as_bytes()))
                        .collect(),
                )
            } else {
                // One copy of each buffer: extracting a Vec<u8> would read
                // the bytes one Python int at a time.
                let raw = data
                    .cast::<PyBytes>()
                    .map_err(|e| format!("output '{name}': {e}"))?;
                TensorData::Fixed(Bytes::copy_from_slice(raw.as_bytes()))
            };
            let tensor =
                Tensor::new(dt, shape, data).map_err(|e| format!("output '{name}': {e}"))?;
            Ok(OutputTensor { name, tensor })
        })
        .collect()
}

fn item_object(item: Item) -> Py<PyAny> {
    *item
        .downcast::<Py<PyAny>>()
        .expect("a Python model's item is a Python object")
}

/// A Python model's batches: one bridge call per batch, under the GIL.
///
/// **Stacked rule.** For a model with no hooks and `Model`'s own `collate`,
/// `split` and `rows` (`stacked`), a batch of two or more requests whose
/// inputs agree in names, datatypes (none `BYTES`) and trailing dimensions
/// is stacked here: each input's bytes concatenated along dimension 0, one
/// `bridge.run_stacked` call (`predict` on the stacked arrays, its outputs as
/// wire tensors), and each output cut back into the requests' rows here,
/// without copying — what `collate` → `predict` → `split` does, with no
/// per-request Python. Anything else takes `bridge.run_batch`.
struct PyRunner {
    /// Python's list of the model's replicas by device (None: none there),
    /// read at each batch: Python fills it while loading.
    replicas: Py<PyList>,
    bridge: Py<PyAny>,
    postprocess: bool,
    /// The stacked rule applies to this model.
    stacked: bool,
}

/// One input of a stacked batch: name, datatype, shape, little-endian bytes.
type StackedInput = (String, Datatype, Vec<u64>, Vec<u8>);

/// A batch's inputs stacked along dimension 0 (the stacked rule), and each
/// request's rows; None when the requests do not stack.
fn stack(inputs: &[Admitted]) -> Option<(Vec<StackedInput>, Vec<u64>)> {
    let first = &inputs.first()?.request.inputs;
    let mut stacked: Vec<StackedInput> = Vec::with_capacity(first.len());
    for input in first {
        let t = &input.tensor;
        t.datatype().item_size()?;
        let shape = t.shape().to_vec();
        shape.first()?;
        stacked.push((input.name.clone(), t.datatype(), shape, Vec::new()));
    }
    let mut rows = Vec::with_capacity(inputs.len());
    for (i, admitted) in inputs.iter().enumerate() {
        let request = &admitted.request;
        if admitted.item.is_some() || request.inputs.len() != stacked.len() {
            return None;
        }
        let lead = request.inputs.first()?.tensor.shape()[0];
        for (input, (name, datatype, shape, data)) in request.inputs.iter().zip(&mut stacked) {
            let t = &input.tensor;
            let same = &input.name == name
                && t.datatype() == *datatype
                && t.shape().first() == Some(&lead)
                && t.shape()[1..] == shape[1..];
            let TensorData::Fixed(bytes) = t.data() else {
                return None;
            };
            if !same {
                return None;
            }
            if i > 0 {
                shape[0] += lead;
            }
            data.extend_from_slice(bytes);
        }
        rows.push(lead);
    }
    Some((stacked, rows))
}

/// A stacked batch's output tensors cut into each request's `rows` along
/// dimension 0 (slices of the same buffers).
fn unstack(outputs: Vec<OutputTensor>, rows: &[u64]) -> Result<Vec<Produced>, String> {
    let total: u64 = rows.iter().sum();
    let mut parts: Vec<Vec<OutputTensor>> = rows.iter().map(|_| Vec::new()).collect();
    for OutputTensor { name, tensor } in outputs {
        let shape = tensor.shape();
        if shape.first() != Some(&total) {
            return Err(format!(
                "output '{name}' has shape {shape:?}: its first dimension must be the batch's {total} rows"
            ));
        }
        let per_row: u64 = shape[1..].iter().product();
        let mut start = 0u64;
        for (part, &n) in parts.iter_mut().zip(rows) {
            let mut part_shape = shape.to_vec();
            part_shape[0] = n;
            let (a, b) = ((start * per_row) as usize, ((start + n) * per_row) as usize);
            let data = match tensor.data() {
                TensorData::Fixed(bytes) => {
                    let size = tensor.datatype().item_size().unwrap_or(1);
                    TensorData::Fixed(bytes.slice(a * size..b * size))
                }
                TensorData::Bytes(items) => TensorData::Bytes(items[a..b].to_vec()),
            };
            let t = Tensor::new(tensor.datatype(), part_shape, data)
                .map_err(|e| format!("output '{name}': {e}"))?;
            part.push(OutputTensor {
                name: name.clone(),
                tensor: t,
            });
            start += n;
        }
    }
    Ok(parts.into_iter().map(Produced::Tensors).collect())
}

impl PyRunner {
    /// The stacked rule's batch (see [`PyRunner`]).
    fn run_stacked(
        &self,
        batch: &BatchInfo,
        stacked: Vec<StackedInput>,
        rows: &[u64],
    ) -> Result<Vec<Produced>, String> {
        let outputs = Python::attach(|py| -> Result<Vec<OutputTensor>, String> {
            let replica = replica_on(py, &self.replicas, batch.device)?;
            let wire = stacked
                .iter()
                .map(|(name, datatype, shape, data)| {
                    PyTuple::new(
                        py,
                        [
                            name.as_str().into_pyobject(py)?.into_any(),
                            datatype.name().into_pyobject(py)?.into_any(),
                            PyList::new(py, shape)?.into_any(),
                            PyBytes::new(py, data).into_any(),
                        ],
                    )
                })
                .collect::<PyResult<Vec<_>>>()
                .map_err(|e| message(py, &e))?;
            let wire = PyList::new(py, wire).map_err(|e| message(py, &e))?;
            let out = self
                .bridge
                .bind(py)
                .call_method1("run_stacked", (replica, wire))
                .map_err(|e| message(py, &e))?;
            let (ok, value): (bool, Bound<'_, PyAny>) =
                out.extract().map_err(|e| format!("bridge: {e}"))?;
            if !ok {
                return Err(value.extract::<String>().unwrap_or_default());
            }
            wire_outputs(&value)
        })?;
        unstack(outputs, rows)
    }
}

/// The replica on `device` of a model's list of replicas by device.
fn replica_on<'py>(
    py: Python<'py>,
    replicas: &Py<PyList>,
    device: usize,
) -> Result<Bound<'py, PyAny>, String> {
    replicas
        .bind(py)
        .get_item(device)
        .ok()
        .filter(|r| !r.is_none())
        .ok_or_else(|| format!("no replica on device {device}"))
}

impl ModelRunner for PyRunner {
    fn run(&self, batch: &BatchInfo, inputs: Vec<Admitted>) -> Result<Vec<Produced>, String> {
        if self.stacked && inputs.len() > 1 {
            if let Some((stacked, rows)) = stack(&inputs) {
                return self.run_stacked(batch, stacked, &rows);
            }
        }
        Python::attach(|py| {
            let replica = match replica_on(py, &self.replicas, batch.device) {
                Ok(replica) => replica,
                Err(e) => return Ok(Err(e)),
            };
            let n = inputs.len();
            let mut items = Vec::with_capacity(n);
            let mut wires = Vec::with_capacity(n);
            for admitted in inputs {
                match admitted.item {
                    Some(item) => {
                        items.push(item_object(item).into_bound(py));
                        wires.push(py.None().into_bound(py));
                    }
                    None => {
                        items.push(py.None().into_bound(py));
                        wires.push(wire_inputs(py, &admitted.request)?.into_any());
                    }
                }
            }
            let out = self.bridge.bind(py).call_method1(
                "run_batch",
                (
                    replica,
                    PyList::new(py, items)?,
                    PyList::new(py, wires)?,
                    self.postprocess,
                ),
            )?;
            Ok::<_, PyErr>(Ok(out.unbind()))
        })
        .map_err(|e| Python::attach(|py| message(py, &e)))
        .and_then(|out| out)
        .and_then(|out| {
            Python::attach(|py| {
                let out = out.bind(py);
                let (ok, value): (bool, Bound<'_, PyAny>) =
                    out.extract().map_err(|e| format!("bridge: {e}"))?;
                if !ok {
                    return Err(value.extract::<String>().unwrap_or_default());
                }
                let parts: Vec<Bound<'_, PyAny>> =
                    value.extract().map_err(|e| format!("bridge: {e}"))?;
                parts
                    .into_iter()
                    .map(|part| {
                        if self.postprocess {
                            Ok(Produced::Item(Box::new(part.unbind())))
                        } else {
                            wire_outputs(&part).map(Produced::Tensors)
                        }
                    })
                    .collect()
            })
        })
    }
}

/// A zoo model's network in Python, between the zoo's Rust hooks: one
/// `bridge.zoo_logits` call per batch, under the GIL.
struct PyZooRunner {
    replicas: Py<PyList>,
    bridge: Py<PyAny>,
}

impl ModelRunner for PyZooRunner {
    fn run(&self, batch: &BatchInfo, inputs: Vec<Admitted>) -> Result<Vec<Produced>, String> {
        let Stacked { x, shape, rows } = collate(inputs)?;
        Python::attach(|py| {
            let replica = replica_on(py, &self.replicas, batch.device)?;
            let out = self
                .bridge
                .bind(py)
                .call_method1(
                    "zoo_logits",
                    (replica, PyBytes::new(py, &x), shape.to_vec()),
                )
                .map_err(|e| message(py, &e))?;
            let (ok, value): (bool, Bound<'_, PyAny>) =
                out.extract().map_err(|e| format!("bridge: {e}"))?;
            if !ok {
                return Err(value.extract::<String>().unwrap_or_default());
            }
            let (data, shape): (Bound<'_, PyBytes>, Vec<usize>) =
                value.extract().map_err(|e| format!("bridge: {e}"))?;
            // Split while the buffer is borrowed: one copy, not one Python
            // int per byte (which extracting a Vec<u8> would do).
            split_logits(data.as_bytes(), &shape, &rows)
        })
    }
}

/// A native model's runner that answers its declared outputs only, in the
/// declaration's order (a graph may have more).
struct Declared {
    inner: OnnxModel,
    outputs: Vec<String>,
}

impl ModelRunner for Declared {
    fn inline(&self, device: usize) -> bool {
        self.inner.inline(device)
    }

    fn run(&self, batch: &BatchInfo, inputs: Vec<Admitted>) -> Result<Vec<Produced>, String> {
        let produced = self.inner.run(batch, inputs)?;
        Ok(produced
            .into_iter()
            .map(|p| match p {
                Produced::Tensors(mut tensors) => Produced::Tensors(
                    self.outputs
                        .iter()
                        .filter_map(|name| {
                            let at = tensors.iter().position(|t| &t.name == name)?;
                            Some(tensors.swap_remove(at))
                        })
                        .collect(),
                ),
                other => other,
            })
            .collect())
    }

    fn warm(&self, device: usize, rows: u32) -> Result<Option<Duration>, String> {
        self.inner.warm(device, rows)
    }
}

fn message(py: Python<'_>, e: &PyErr) -> String {
    let kind = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    format!("{kind}: {}", e.value(py))
}

/// A Python model's per-request hooks.
struct PyHooks {
    model: Py<PyAny>,
    bridge: Py<PyAny>,
    preprocess: bool,
}

impl PyHooks {
    /// `bridge.NAME(model, arg)`, which answers `(True, value)` or `(False, status, message)`.
    fn call(
        &self,
        name: &str,
        arg: impl FnOnce(Python<'_>) -> PyResult<Py<PyAny>>,
    ) -> Result<Py<PyAny>, HookError> {
        Python::attach(|py| {
            let failed = |e: PyErr| HookError {
                status: 500,
                message: format!("bridge.{name}: {}", message(py, &e)),
            };
            let arg = arg(py).map_err(failed)?;
            let out = self
                .bridge
                .bind(py)
                .call_method1(name, (self.model.bind(py), arg))
                .map_err(failed)?;
            let tuple: Vec<Bound<'_, PyAny>> = out.extract().map_err(failed)?;
            match tuple.as_slice() {
                [ok, value] if ok.is_truthy().unwrap_or(false) => Ok(value.clone().unbind()),
                [_, status, text] => Err(HookError {
                    status: status.extract().unwrap_or(500),
                    message: text.extract().unwrap_or_default(),
                }),
                _ => Err(HookError {
                    status: 500,
                    message: format!("bridge.{name}: a malformed answer"),
                }),
            }
        })
    }
}

impl Hooks for PyHooks {
    fn has_preprocess(&self) -> bool {
        self.preprocess
    }

    fn preprocess(&self, request: &InferRequest) -> Result<Item, HookError> {
        let item = self.call("preprocess", |py| {
            wire_inputs(py, request).map(|l| l.into_any().unbind())
        })?;
        Ok(Box::new(item))
    }

    fn postprocess(&self, item: Item) -> Result<Vec<OutputTensor>, HookError> {
        let part = item_object(item);
        let out = self.call("postprocess", move |_| Ok(part))?;
        Python::attach(|py| wire_outputs(out.bind(py))).map_err(|message| HookError {
            status: 500,
            message,
        })
    }
}

fn get<'py, T: FromPyObject<'py>>(d: &Bound<'py, PyDict>, key: &str) -> Result<T, CoreError> {
    let value = d
        .get_item(key)
        .map_err(|e| bad(format!("{key}: {e}")))?
        .ok_or_else(|| bad(format!("server config: '{key}' missing")))?;
    value.extract().map_err(|e| bad(format!("{key}: {e}")))
}

fn specs(list: Vec<(String, String, Vec<i64>)>) -> Result<Vec<Spec>, CoreError> {
    list.into_iter()
        .map(|(name, datatype, shape)| {
            Ok(Spec {
                datatype: Datatype::from_name(&datatype)
                    .ok_or_else(|| bad(format!("tensor '{name}': datatype {datatype}")))?,
                name,
                shape,
            })
        })
        .collect()
}

/// A model's native ONNX sessions: `num_batch_threads` on each of its
/// devices, with that device's intra-op threads.
fn onnx_model(
    m: &Bound<'_, PyDict>,
    name: &str,
    devices: &[usize],
    device_count: usize,
    num_batch_threads: u32,
) -> Result<OnnxModel, CoreError> {
    let path: PathBuf = get(m, "path")?;
    let threads: Vec<usize> = get(m, "threads")?;
    let batching: bool = get(m, "batches")?;
    let configs: Vec<Option<SessionConfig>> = (0..device_count)
        .map(|d| {
            devices.contains(&d).then(|| SessionConfig {
                intra_op_threads: threads.get(d).copied().unwrap_or(1),
                ..SessionConfig::default()
            })
        })
        .collect();
    OnnxModel::load(name, &path, &configs, num_batch_threads, batching).map_err(|e| CoreError {
        code: e.code(),
        message: format!("model '{name}': {e}"),
    })
}

/// One model from its config dict (see `lanes.serving.server`).
fn served_model(
    m: &Bound<'_, PyDict>,
    bridge: &Py<PyAny>,
    device_names: &[String],
) -> Result<ServedModel, CoreError> {
    let name: String = get(m, "name")?;
    let devices: Vec<usize> = get(m, "devices")?;
    let (max_batch_size, batch_timeout_micros, num_batch_threads, max_enqueued_batches): (
        u32,
        u64,
        u32,
        u32,
    ) = get(m, "batching")?;
    let batching = Batching {
        max_batch_size,
        batch_timeout: batch_timeout_micros * 1_000,
        num_batch_threads,
        max_enqueued_batches,
    };
    let (fixed_ms, per_item_ms): (f64, f64) = get(m, "cost")?;
    let engine: String = get(m, "engine")?;
    let forms: Vec<Vec<(String, String, Vec<i64>)>> = get(m, "input_forms")?;
    let mut signature = Signature {
        inputs: specs(get(m, "inputs")?)?,
        outputs: specs(get(m, "outputs")?)?,
        forms: forms.into_iter().map(specs).collect::<Result<_, _>>()?,
    };
    let (runner, hooks): (Arc<dyn ModelRunner>, Option<Arc<dyn Hooks>>) = match engine.as_str() {
        "python" if m.contains("zoo").unwrap_or(false) => {
            let (task, labels): (String, Vec<String>) = get(m, "zoo")?;
            let task = Task::parse(&task)
                .ok_or_else(|| bad(format!("model '{name}': zoo task '{task}'")))?;
            let runner = PyZooRunner {
                replicas: get(m, "replicas")?,
                bridge: Python::attach(|py| bridge.clone_ref(py)),
            };
            (
                Arc::new(runner) as Arc<dyn ModelRunner>,
                Some(zoo_hooks(&name, task, labels) as Arc<dyn Hooks>),
            )
        }
        "python" => {
            let replicas: Py<PyList> = get(m, "replicas")?;
            let (preprocess, postprocess): (bool, bool) = get(m, "hooks")?;
            let model: Py<PyAny> = get(m, "model")?;
            let hooks: Option<Arc<dyn Hooks>> = (preprocess || postprocess).then(|| {
                Arc::new(PyHooks {
                    model,
                    bridge: Python::attach(|py| bridge.clone_ref(py)),
                    preprocess,
                }) as Arc<dyn Hooks>
            });
            let runner = PyRunner {
                replicas,
                bridge: Python::attach(|py| bridge.clone_ref(py)),
                postprocess,
                stacked: get(m, "stacked")?,
            };
            (Arc::new(runner), hooks)
        }
        "onnx" => {
            let model = onnx_model(m, &name, &devices, device_names.len(), num_batch_threads)?;
            if signature.inputs.is_empty() {
                if let Some(s) = model.signature() {
                    signature = s;
                }
            }
            let outputs = signature.outputs.iter().map(|s| s.name.clone()).collect();
            (
                Arc::new(Declared {
                    inner: model,
                    outputs,
                }),
                None,
            )
        }
        "zoo" => {
            let model = onnx_model(m, &name, &devices, device_names.len(), num_batch_threads)?;
            let task: String = get(m, "task")?;
            let task = Task::parse(&task)
                .ok_or_else(|| bad(format!("model '{name}': zoo task '{task}'")))?;
            let (runner, hooks) = zoo(model, &name, task, get(m, "labels")?);
            (runner, Some(hooks))
        }
        other => return Err(bad(format!("model '{name}': engine '{other}'"))),
    };
    Ok(ServedModel {
        entry: ModelEntry {
            version: get(m, "version")?,
            platform: get(m, "platform")?,
            signature,
            batching,
            timeout_ms: get(m, "timeout_ms")?,
            devices: devices.iter().map(|&d| device_names[d].clone()).collect(),
            name,
        },
        devices,
        cost: SimCost {
            fixed_ms,
            per_item_ms,
        },
        runner,
        hooks,
    })
}

/// The connection limits: seconds as durations, each checked in range with
/// an error naming its key.
fn limits(config: &Bound<'_, PyDict>) -> Result<Limits, CoreError> {
    let seconds = |key: &str| -> Result<Duration, CoreError> {
        let s: f64 = get(config, key)?;
        match Duration::try_from_secs_f64(s) {
            Ok(d) if s > 0.0 && s <= 86_400.0 => Ok(d),
            _ => Err(bad(format!("{key} = {s}: must be in (0, 86400] seconds"))),
        }
    };
    let max_connections: usize = get(config, "max_connections")?;
    if max_connections == 0 {
        return Err(bad("max_connections = 0: must be >= 1"));
    }
    let max_header_bytes: usize = get(config, "max_header_bytes")?;
    if max_header_bytes < 8192 {
        return Err(bad(format!(
            "max_header_bytes = {max_header_bytes}: must be >= 8192"
        )));
    }
    Ok(Limits {
        header_read_timeout: seconds("header_timeout")?,
        body_read_timeout: seconds("body_timeout")?,
        max_connections,
        max_header_bytes,
        keepalive_interval: seconds("grpc_keepalive")?,
    })
}

/// The data plane of `lanes serve`, running on its own threads.
#[pyclass(module = "lanes._core")]
#[derive(Debug)]
pub struct NativeServer {
    running: Arc<Running>,
    #[pyo3(get)]
    port: u16,
    #[pyo3(get)]
    grpc_port: Option<u16>,
    #[pyo3(get)]
    metrics_port: Option<u16>,
}

fn start(py: Python<'_>, config: &Bound<'_, PyDict>) -> Result<Running, CoreError> {
    let listen = Listen {
        host: get(config, "host")?,
        port: get(config, "port")?,
        grpc_port: get(config, "grpc_port")?,
        metrics_port: get(config, "metrics_port")?,
        workers: get(config, "io_threads")?,
    };
    let devices: Vec<(String, bool)> = get(config, "devices")?;
    let device_names: Vec<String> = devices.iter().map(|d| d.0.clone()).collect();
    let bridge: Py<PyAny> = get(config, "bridge")?;
    let models: Vec<Bound<'_, PyDict>> = get(config, "models")?;
    let models = models
        .iter()
        .map(|m| served_model(m, &bridge, &device_names))
        .collect::<Result<Vec<_>, _>>()?;
    let arbiter: Option<(String, String, String)> = get(config, "arbiter")?;
    let arbiter = match arbiter {
        Some((path, fallback, service)) => Some(ArbiterConfig::new(
            path,
            &service,
            fallback.parse::<Fallback>().map_err(bad)?,
        )),
        None => None,
    };
    let spec = ServerSpec {
        policy: get(config, "policy")?,
        arbiter,
        devices: devices
            .into_iter()
            .map(|(name, simulated)| DeviceEntry { name, simulated })
            .collect(),
        models,
        codec: CodecConfig {
            max_body_bytes: get(config, "max_body_bytes")?,
        },
        limits: limits(config)?,
        trace_events: get(config, "trace_events")?,
        trace_requests: get(config, "trace_requests")?,
        inline_max: Duration::from_micros(get(config, "inline_max_us")?),
        version: get(config, "version")?,
        hook_workers: get(config, "workers")?,
        access_log: get(config, "access_log")?,
        deadline_rule: get::<String>(config, "deadline_rule")?
            .parse::<DeadlineRule>()
            .map_err(|e| bad(format!("deadline_rule: {e}")))?,
    };
    py.detach(|| Running::start(&listen, spec))
        .map_err(|e| CoreError {
            code: e.code(),
            message: e.to_string(),
        })
}

#[pymethods]
impl NativeServer {
    /// Binds the listeners and starts the data plane in phase `loading`.
    #[new]
    fn new(py: Python<'_>, config: &Bound<'_, PyDict>) -> PyResult<Self> {
        let running = start(py, config).map_err(|e| e.into_py(py))?;
        Ok(Self {
            port: running.port,
            grpc_port: running.grpc_port,
            metrics_port: running.metrics_port,
            running: Arc::new(running),
        })
    }

    /// The phase: `loading`, `warming`, `ready`, `draining` or `stopped`.
    #[getter]
    fn phase(&self) -> &'static str {
        self.running.app().phase.get().name()
    }

    /// Sets the phase (`warming`, `ready`).
    fn set_phase(&self, py: Python<'_>, phase: &str) -> PyResult<()> {
        let phase =
            Phase::from_name(phase).ok_or_else(|| bad(format!("phase '{phase}'")).into_py(py))?;
        self.running.set_phase(phase);
        Ok(())
    }

    /// Seeds the scheduler's estimate: a batch of `rows` of model `model` took `ns`.
    fn observe(&self, model: u32, rows: u32, ns: u64) {
        self.running.app().handle.observe(model, rows, ns);
    }

    /// Warm-up of a native model: one batch of `rows` zeros on `device`; its
    /// nanoseconds, or None when the model is warmed by its Python replicas.
    fn warm(
        &self,
        py: Python<'_>,
        model: usize,
        device: usize,
        rows: u32,
    ) -> PyResult<Option<u64>> {
        let running = Arc::clone(&self.running);
        detached(py, move || {
            running
                .warm(model, device, rows)
                .map(|t| t.map(|d| d.as_nanos() as u64))
                .map_err(|message| CoreError {
                    code: "warmup_failed",
                    message,
                })
        })
    }

    /// Calls `call()` once on each executor thread of device `device` (the
    /// GIL held only for the call; warm-up runs there, so that what an engine
    /// keeps per thread is made before the first request) and returns each
    /// thread's result; the first exception one raised is raised here. Empty
    /// once the server stopped. Not from an executor thread.
    fn on_executors(
        &self,
        py: Python<'_>,
        device: usize,
        call: Py<PyAny>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let running = Arc::clone(&self.running);
        let results = py.detach(move || {
            running.on_executors(device, move || Python::attach(|py| call.call0(py)))
        });
        results
            .into_iter()
            .map(|r| match r {
                Ok(result) => result,
                Err(panic) => Err(CoreError {
                    code: "internal_error",
                    message: panic,
                }
                .into_py(py)),
            })
            .collect()
    }

    /// Rows of model `model` (its index) queued, as the driver last published.
    fn queued_rows(&self, model: u32) -> u64 {
        let app = self.running.app();
        if (model as usize) < app.models.len() {
            app.handle.observer().queue_depth(model)
        } else {
            0
        }
    }

    /// Drains (see lanes-server's `Running::drain`): None when everything
    /// finished within `timeout` seconds, else how many requests were cut.
    fn drain(&self, py: Python<'_>, timeout: f64, message: String) -> PyResult<Option<usize>> {
        let running = Arc::clone(&self.running);
        detached(py, move || {
            Ok(running.drain(Duration::from_secs_f64(timeout.max(0.0)), message))
        })
    }

    /// Closes listeners and connections and stops every thread.
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let running = Arc::clone(&self.running);
        detached(py, move || {
            running.stop();
            Ok(())
        })
    }

    /// Up to `max` request log records, waiting up to `wait` seconds for the
    /// first (without the GIL): `(method, path, status, duration_ms, model,
    /// error)` tuples; then the records dropped so far.
    #[allow(clippy::type_complexity)]
    fn logs(
        &self,
        py: Python<'_>,
        max: usize,
        wait: f64,
    ) -> PyResult<(Vec<(String, String, u16, f64, Option<String>, String)>, u64)> {
        let running = Arc::clone(&self.running);
        detached(py, move || {
            let access = &running.app().access;
            let records = access
                .take(max, Duration::from_secs_f64(wait.max(0.0)))
                .into_iter()
                .map(|r| (r.method, r.path, r.status, r.duration_ms, r.model, r.error))
                .collect();
            Ok((records, access.dropped()))
        })
    }

    /// True once after the process's open connections fell sharply
    /// (lanes-server's `accept::trim_due`): time to give freed memory back.
    fn trim_due(&self) -> bool {
        lanes_server::accept::take_trim_due()
    }

    /// The server's notices for the logs since the last call (the arbiter
    /// link's: daemon unreachable, connected, back, lost; refusals):
    /// `(warning, message)` pairs, oldest first.
    fn notices(&self) -> Vec<(bool, String)> {
        self.running
            .app()
            .handle
            .observer()
            .take_notices()
            .into_iter()
            .map(|n| (n.warning, n.message))
            .collect()
    }

    /// Writes the timeline (Chrome trace-event JSON) to `path`.
    fn write_trace(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let running = Arc::clone(&self.running);
        detached(py, move || {
            running
                .app()
                .handle
                .observer()
                .write_trace(&path)
                .map_err(|e| CoreError {
                    code: e.code(),
                    message: e.to_string(),
                })
        })
    }
}
