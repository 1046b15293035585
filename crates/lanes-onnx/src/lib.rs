//! Native ONNX execution for lanes: ONNX Runtime driven from Rust through the
//! `ort` crate, with no Python and no GIL on the path of a batch.
//!
//! - [`library`]: where the ONNX Runtime shared library is found (the rule:
//!   `ORT_DYLIB_PATH`, else the `onnxruntime` wheel in the project's `.venv`)
//!   and [`Runtime`], the library loaded once per process.
//! - [`config`]: [`SessionConfig`], the one typed configuration of a session
//!   (intra-op threads, graph optimisation, CPU or CUDA device N).
//! - [`session`]: [`OnnxSession`], one model on one device: its inputs and
//!   outputs ([`TensorSpec`]), one request run as is, or a batch of requests.
//! - [`batch`]: the batch assembly rule — requests' tensors checked,
//!   concatenated along dimension 0, outputs split back per request.
//! - [`tensor`]: [`InputTensor`] (borrowed little-endian bytes) and
//!   [`OutputTensor`] (shared [`bytes::Bytes`]), and the copies made.
//! - [`datatype`]: [`Datatype`], the KServe datatypes ONNX Runtime has
//!   (BYTES/strings are out of scope).
//! - [`error`]: [`OnnxError`], the one coded error type.
//!
//! ```no_run
//! use lanes_onnx::{Datatype, InputTensor, OnnxSession, SessionConfig};
//!
//! let mut session = OnnxSession::load("model.onnx", &SessionConfig::default())?;
//! let x = [0u8; 16]; // one row of 4 FP32
//! let request = [InputTensor { name: "x", datatype: Datatype::Fp32, shape: &[1, 4], data: &x }];
//! let outputs = session.run_batch(&[&request, &request])?; // outputs[i]: request i's
//! # Ok::<(), lanes_onnx::OnnxError>(())
//! ```

pub mod batch;
pub mod config;
pub mod datatype;
pub mod error;
pub mod library;
pub mod session;
pub mod signature;
pub mod tensor;

pub use config::{Optimization, Provider, SessionConfig};
pub use datatype::Datatype;
pub use error::OnnxError;
pub use library::{LibrarySearch, Runtime};
pub use session::OnnxSession;
pub use signature::{Dim, TensorSpec};
pub use tensor::{InputTensor, OutputTensor};
