//! Fuzz target: arbitrary bytes decoded as a `ModelInferRequest` (prost), then
//! mapped by `lanes_kserve::grpc::decode_request`.
//!
//! Properties: never panics; refusals are 400 (INVALID_ARGUMENT); accepted
//! requests hold consistent tensors that encode back, and the gRPC response
//! carries each tensor's raw bytes (kserve_common.rs).
#![no_main]

use bytes::Bytes;
use lanes_kserve::proto::ModelInferRequest;
use lanes_kserve::{grpc, CodecConfig};
use libfuzzer_sys::fuzz_target;
use prost::Message;

#[path = "kserve_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(message) = ModelInferRequest::decode(Bytes::copy_from_slice(data)) else {
        return;
    };
    common::check(grpc::decode_request(message, &CodecConfig::default()));
});
