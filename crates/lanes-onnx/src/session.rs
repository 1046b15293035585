//! [`OnnxSession`]: one model loaded on one device.
//!
//! A server makes one session per model per device (per replica) and runs one
//! batch at a time on it (`run` takes `&mut self`: ONNX Runtime's run is not
//! safe to call concurrently on one session for every provider). The session
//! reports the model's inputs and outputs ([`TensorSpec`]) so requests can be
//! checked at the edge; [`OnnxSession::run_batch`] assembles requests into one
//! run and splits the outputs back (the rule: [`crate::batch`]).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use ort::ep;
use ort::session::builder::SessionBuilder;
use ort::session::{Session, SessionInputValue};

use crate::batch::{self, Assembled};
use crate::config::{Provider, SessionConfig};
use crate::tensor::{input_value, output_data};
use crate::{InputTensor, OnnxError, OutputTensor, Runtime, TensorSpec};

/// A model loaded in ONNX Runtime with one [`SessionConfig`].
#[derive(Debug)]
pub struct OnnxSession {
    session: Session,
    path: PathBuf,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
}

impl OnnxSession {
    /// Loads the ONNX model at `path` with the process's runtime
    /// ([`Runtime::global`]).
    pub fn load(path: impl AsRef<Path>, config: &SessionConfig) -> Result<Self, OnnxError> {
        Self::load_with(Runtime::global()?, path, config)
    }

    /// Loads the ONNX model at `path` with `runtime`.
    pub fn load_with(
        runtime: &Runtime,
        path: impl AsRef<Path>,
        config: &SessionConfig,
    ) -> Result<Self, OnnxError> {
        let path = path.as_ref();
        config.validate()?;
        if !path.is_file() {
            return Err(OnnxError::ModelNotFound(path.to_path_buf()));
        }
        let session = builder(runtime, config)?
            .commit_from_file(path)
            .map_err(|e| OnnxError::ModelInvalid {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
        let specs = |outlets: &[ort::value::Outlet], role| {
            outlets
                .iter()
                .map(|o| TensorSpec::from_outlet(o, role))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| OnnxError::UnsupportedModel(format!("{}: {e}", path.display())))
        };
        let inputs = specs(session.inputs(), "input")?;
        let outputs = specs(session.outputs(), "output")?;
        Ok(Self {
            inputs,
            outputs,
            path: path.to_path_buf(),
            session,
        })
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The model's inputs, in the graph's order.
    pub fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    /// The model's outputs, in the graph's order (the order of every run's
    /// results).
    pub fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    /// Runs one request as it is: its tensors checked against the model
    /// (names, datatypes, ranks, fixed sizes, data lengths) and every output
    /// returned whole, in [`Self::outputs`]' order. For models that do not
    /// batch; outputs need no batch dimension.
    pub fn run(&mut self, inputs: &[InputTensor<'_>]) -> Result<Vec<OutputTensor>, OnnxError> {
        let assembled = batch::assemble(&self.inputs, &[inputs], false)?;
        let mut results = self.execute(assembled, false)?;
        Ok(results.pop().unwrap_or_default())
    }

    /// Runs `requests` as one batch (the rule: [`crate::batch`]): their
    /// tensors concatenated along dimension 0, one run, every output split
    /// back; `result[i]` holds request `i`'s outputs in [`Self::outputs`]'
    /// order. No requests, no run: an empty result.
    pub fn run_batch(
        &mut self,
        requests: &[&[InputTensor<'_>]],
    ) -> Result<Vec<Vec<OutputTensor>>, OnnxError> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let assembled = batch::assemble(&self.inputs, requests, true)?;
        self.execute(assembled, true)
    }

    /// One run of `assembled`; the outputs split among its requests when
    /// `batched`, else whole (one request).
    fn execute(
        &mut self,
        assembled: Assembled<'_>,
        batched: bool,
    ) -> Result<Vec<Vec<OutputTensor>>, OnnxError> {
        let Assembled { inputs, rows } = assembled;
        let mut values: Vec<(Cow<'_, str>, SessionInputValue<'_>)> =
            Vec::with_capacity(inputs.len());
        for (spec, input) in self.inputs.iter().zip(inputs) {
            let value = input_value(&spec.name, spec.datatype, input.shape, &input.parts)?;
            values.push((Cow::Borrowed(spec.name.as_str()), value));
        }
        let results = self
            .session
            .run(values)
            .map_err(|e| OnnxError::RunFailed(e.to_string()))?;
        let mut out: Vec<Vec<OutputTensor>> = (0..rows.len())
            .map(|_| Vec::with_capacity(self.outputs.len()))
            .collect();
        for spec in &self.outputs {
            let value = results.get(&spec.name).ok_or_else(|| {
                OnnxError::RunFailed(format!("no output '{}' in the results", spec.name))
            })?;
            let (shape, data) = output_data(&spec.name, spec.datatype, value)?;
            let output = OutputTensor {
                datatype: spec.datatype,
                shape,
                data,
            };
            if batched {
                batch::split(&spec.name, output, &rows, &mut out)?;
            } else {
                out[0].push(output);
            }
        }
        Ok(out)
    }
}

/// The session options of `config` (see [`crate::config`]).
fn builder(runtime: &Runtime, config: &SessionConfig) -> Result<SessionBuilder, OnnxError> {
    let options = |e: ort::Error<SessionBuilder>| {
        OnnxError::BadConfig(format!("ONNX Runtime refused the session options: {e}"))
    };
    let mut builder = Session::builder(runtime.environment())
        .map_err(|e| OnnxError::BadConfig(format!("ONNX Runtime cannot make a session: {e}")))?
        .with_optimization_level(config.optimization.to_ort())
        .map_err(options)?
        .with_intra_threads(config.intra_op_threads)
        .map_err(options)?
        .with_inter_threads(1)
        .map_err(options)?
        .with_parallel_execution(false)
        .map_err(options)?
        .with_intra_op_spinning(false)
        .map_err(options)?;
    if let Provider::Cuda { device } = config.provider {
        if !runtime.has_cuda() {
            return Err(OnnxError::ProviderUnavailable(format!(
                "cuda:{device}: the ONNX Runtime library {} has no CUDA execution provider: point \
                 ORT_DYLIB_PATH at the onnxruntime-gpu wheel's libonnxruntime.so (docs/onnx.md)",
                runtime.library().display()
            )));
        }
        let cuda = ep::CUDA::default()
            .with_device_id(device as i32)
            .build()
            .error_on_failure();
        builder = builder.with_execution_providers([cuda]).map_err(|e| {
            OnnxError::ProviderUnavailable(format!(
                "cuda:{device}: the CUDA execution provider of {} did not start (no such GPU, or \
                 its CUDA and cuDNN libraries are missing): {e}",
                runtime.library().display()
            ))
        })?;
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    /// A server hands each session to the thread of its device.
    #[test]
    fn sessions_move_between_threads() {
        fn send<T: Send>() {}
        send::<super::OnnxSession>();
    }
}
