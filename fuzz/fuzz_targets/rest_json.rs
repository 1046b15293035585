//! Fuzz target: `lanes_kserve::rest::decode_request` on arbitrary bodies with no
//! `Inference-Header-Content-Length` (the all-JSON form).
//!
//! Properties: never panics; refusals are 400/413; accepted requests hold
//! consistent tensors that encode back (kserve_common.rs).
#![no_main]

use bytes::Bytes;
use lanes_kserve::rest::decode_request;
use lanes_kserve::{CodecConfig, ModelRef};
use libfuzzer_sys::fuzz_target;

#[path = "kserve_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let body = Bytes::copy_from_slice(data);
    let result = decode_request(ModelRef::default(), body, None, &CodecConfig::default());
    common::check(result);
});
