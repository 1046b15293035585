//! Encoding a REST infer response: the JSON header, and the binary outputs
//! appended after it.
//!
//! An output goes out in binary form when the request asked for it (see
//! [`InferResponse::chosen`]); binary outputs are listed with `"parameters":
//! {"binary_data_size": N}` and no `"data"`, their bytes appended in order, and
//! the response carries `Inference-Header-Content-Length` and
//! `application/octet-stream`; an all-JSON response is `application/json`.
//! JSON `data` is a flat row-major list: floats in the shortest form that
//! round-trips at the tensor's own precision, non-finite ones as `NaN`,
//! `Infinity`, `-Infinity` (as Triton writes them; tritonclient's rapidjson
//! and Python's json read them, strict parsers do not); `BYTES` elements as
//! strings, decoded as UTF-8 with invalid sequences replaced by U+FFFD.

use bytes::Bytes;
use half::f16;
use serde::Serialize;

use super::{BINARY_CONTENT_TYPE, JSON_CONTENT_TYPE};
use crate::error::KserveError;
use crate::response::{InferResponse, OutputChoice};
use crate::tensor::{Datatype, Element, Tensor, TensorData};

/// A response body as chunks (the JSON header, then each binary output's
/// buffer without a copy) and the headers it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedResponse {
    /// The body, in order; write them out back to back.
    pub chunks: Vec<Bytes>,
    /// `application/json` or `application/octet-stream`.
    pub content_type: &'static str,
    /// The `Inference-Header-Content-Length` value, when any output is binary.
    pub header_length: Option<usize>,
}

impl EncodedResponse {
    /// The body length in bytes.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Bytes::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body as one buffer (a copy; for tests and small responses).
    pub fn to_vec(&self) -> Vec<u8> {
        self.chunks.concat()
    }
}

/// Encodes `response` with the outputs and forms `choice` selects.
pub fn encode_response(
    response: &InferResponse,
    choice: &OutputChoice,
) -> Result<EncodedResponse, KserveError> {
    let chosen = response.chosen(choice)?;
    let mut head = Vec::with_capacity(128);
    head.extend_from_slice(b"{\"model_name\":");
    json(&mut head, &response.model_name);
    head.extend_from_slice(b",\"model_version\":");
    json(&mut head, &response.model_version);
    if let Some(id) = &response.id {
        head.extend_from_slice(b",\"id\":");
        json(&mut head, id);
    }
    head.extend_from_slice(b",\"outputs\":[");
    let mut buffers = Vec::new();
    for (i, (output, binary)) in chosen.iter().enumerate() {
        if i > 0 {
            head.push(b',');
        }
        let tensor = &output.tensor;
        head.extend_from_slice(b"{\"name\":");
        json(&mut head, &output.name);
        head.extend_from_slice(b",\"datatype\":");
        json(&mut head, tensor.datatype().name());
        head.extend_from_slice(b",\"shape\":");
        json(&mut head, tensor.shape());
        if *binary {
            let raw = tensor.raw();
            head.extend_from_slice(b",\"parameters\":{\"binary_data_size\":");
            json(&mut head, &raw.len());
            head.push(b'}');
            buffers.push(raw);
        } else {
            head.extend_from_slice(b",\"data\":");
            json_data(&mut head, tensor);
        }
        head.push(b'}');
    }
    head.extend_from_slice(b"]}");
    let any_binary = !buffers.is_empty() || chosen.iter().any(|(_, b)| *b);
    let header_length = any_binary.then_some(head.len());
    let mut chunks = Vec::with_capacity(1 + buffers.len());
    chunks.push(Bytes::from(head));
    chunks.extend(buffers);
    Ok(EncodedResponse {
        chunks,
        content_type: if any_binary {
            BINARY_CONTENT_TYPE
        } else {
            JSON_CONTENT_TYPE
        },
        header_length,
    })
}

/// Appends one serialisable value (strings escaped by serde_json).
fn json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    serde_json::to_writer(&mut *out, value).expect("strings and integers serialise");
}

/// Appends a tensor's flat `data` array.
fn json_data(out: &mut Vec<u8>, tensor: &Tensor) {
    out.push(b'[');
    match tensor.data() {
        TensorData::Bytes(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json(out, &String::from_utf8_lossy(item));
            }
        }
        TensorData::Fixed(_) => match tensor.datatype() {
            Datatype::Bool => numbers::<bool>(out, tensor, |out, v| json(out, &v)),
            Datatype::Uint8 => numbers::<u8>(out, tensor, |out, v| json(out, &v)),
            Datatype::Uint16 => numbers::<u16>(out, tensor, |out, v| json(out, &v)),
            Datatype::Uint32 => numbers::<u32>(out, tensor, |out, v| json(out, &v)),
            Datatype::Uint64 => numbers::<u64>(out, tensor, |out, v| json(out, &v)),
            Datatype::Int8 => numbers::<i8>(out, tensor, |out, v| json(out, &v)),
            Datatype::Int16 => numbers::<i16>(out, tensor, |out, v| json(out, &v)),
            Datatype::Int32 => numbers::<i32>(out, tensor, |out, v| json(out, &v)),
            Datatype::Int64 => numbers::<i64>(out, tensor, |out, v| json(out, &v)),
            Datatype::Fp16 => numbers::<f16>(out, tensor, |out, v| float(out, v.to_f32())),
            Datatype::Fp32 => numbers::<f32>(out, tensor, float),
            Datatype::Fp64 => numbers::<f64>(out, tensor, float),
            Datatype::Bytes => unreachable!("BYTES data are elements"),
        },
    }
    out.push(b']');
}

fn numbers<T: Element>(out: &mut Vec<u8>, tensor: &Tensor, write: impl Fn(&mut Vec<u8>, T)) {
    for (i, v) in tensor
        .values::<T>()
        .expect("the tensor's own type")
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            out.push(b',');
        }
        write(out, v);
    }
}

/// A float in its shortest round-trip form, or `NaN`/`Infinity`/`-Infinity`.
fn float<F: Into<f64> + Serialize + Copy>(out: &mut Vec<u8>, v: F) {
    let wide: f64 = v.into();
    if wide.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if wide.is_infinite() {
        out.extend_from_slice(if wide > 0.0 {
            b"Infinity"
        } else {
            b"-Infinity"
        });
    } else {
        json(out, &v);
    }
}
