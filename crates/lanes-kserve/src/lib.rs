//! The KServe v2 (Open Inference Protocol) wire layer of lanes, with no server
//! in it: what a REST body or a gRPC message becomes, and what a response is
//! written as.
//!
//! - [`InferRequest`] is the one validated request type out of the edge
//!   (parse, don't validate): model, id, inputs as typed little-endian
//!   [`Tensor`]s (zero-copy slices of the body where the wire form allows),
//!   requested outputs with their binary flags, parameters, `timeout`.
//! - [`rest`] decodes REST bodies (JSON and the binary tensor data extension)
//!   and encodes responses, with the semantics, limits and messages of the
//!   Python server's codec.
//! - [`grpc`] maps `ModelInferRequest` / `ModelInferResponse` of the vendored
//!   `GRPCInferenceService` proto ([`proto`]) with the same rules.
//! - [`check_inputs`] / [`check_outputs`] check a request against the model's
//!   declared [`TensorSpec`]s.
//! - [`deadline::timeout_ns`] reads the request's timeout (the `timeout`
//!   parameter or lanes' `lanes-timeout-ms` header).
//! - [`KserveError`] is the one coded error, mapped to an HTTP status and a
//!   gRPC code in one place.

pub mod deadline;
pub mod error;
pub mod grpc;
pub mod model_check;
pub mod pyrepr;
pub mod request;
pub mod response;
pub mod rest;
pub mod tensor;

pub use error::KserveError;
pub use model_check::{check_inputs, check_outputs, TensorSpec};
pub use request::{
    CodecConfig, InferRequest, InputTensor, ModelRef, Parameters, RequestedOutput, MAX_BODY_BYTES,
    MAX_DIMS,
};
pub use response::{InferResponse, OutputChoice, OutputTensor};
pub use tensor::{Datatype, Element, Tensor, TensorData};

/// The message and service types generated from `proto/grpc_predict_v2.proto`
/// (package `inference`), by `build.rs`.
#[allow(
    missing_docs,
    clippy::all,
    clippy::pedantic,
    missing_debug_implementations
)]
pub mod proto {
    tonic::include_proto!("inference");
}
