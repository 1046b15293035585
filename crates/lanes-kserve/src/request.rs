//! The validated inference request that leaves the edge, and the checks the REST
//! and gRPC decoders share.
//!
//! Parse, don't validate: [`InferRequest`] holds only what was checked (unique
//! non-empty names, known datatypes, shapes of at most [`MAX_DIMS`] dimensions
//! whose element count the data matches, request parameters of the right
//! types), so the server never looks at raw input. The rules and messages are
//! those of `python/lanes/serving/codec.py`.

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::error::KserveError;
use crate::tensor::{Datatype, Tensor, TensorData};

/// The most dimensions a request tensor may have.
pub const MAX_DIMS: usize = 32;

/// The default largest request body (64 MiB); a larger one is a 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// The limits of decoding, one typed object for both protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecConfig {
    /// The largest request body (REST) or message (gRPC) accepted, in bytes;
    /// it also bounds every tensor's element count (each element takes at
    /// least one byte on the wire).
    pub max_body_bytes: usize,
}

impl Default for CodecConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: MAX_BODY_BYTES,
        }
    }
}

/// The model a request is for: the REST path's `<model>[/versions/<v>]`, or
/// the gRPC `model_name` and `model_version` (empty is no version).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelRef {
    pub name: String,
    pub version: Option<String>,
}

/// Request parameters as sent (`timeout`, `binary_data_output`, `priority`,
/// custom keys); gRPC `InferParameter`s are carried as the JSON values they
/// stand for.
pub type Parameters = Map<String, Value>;

/// One input: a unique non-empty name and a validated tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct InputTensor {
    pub name: String,
    pub tensor: Tensor,
}

/// An output the request names, and whether it goes out in binary form (its
/// `binary_data` parameter, else the request's `binary_data_output`).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestedOutput {
    pub name: String,
    pub binary_data: bool,
    pub parameters: Parameters,
}

/// A decoded, validated inference request.
#[derive(Debug, Clone, PartialEq)]
pub struct InferRequest {
    pub model: ModelRef,
    /// The request id, echoed in the response.
    pub id: Option<String>,
    /// The inputs in the order sent; names are unique.
    pub inputs: Vec<InputTensor>,
    /// The outputs named, in order; None when the request names none (every
    /// output is returned).
    pub outputs: Option<Vec<RequestedOutput>>,
    /// The request parameters as sent.
    pub parameters: Parameters,
    /// The `binary_data_output` parameter (false when absent).
    pub binary_data_output: bool,
    /// The `timeout` parameter in microseconds, an integer >= 0 (lanes'
    /// deadline); an integer past 64 bits is cut to `u64::MAX`.
    pub timeout_us: Option<u64>,
}

impl InferRequest {
    /// The input named `name`.
    pub fn input(&self, name: &str) -> Option<&Tensor> {
        self.inputs
            .iter()
            .find(|i| i.name == name)
            .map(|i| &i.tensor)
    }
}

pub(crate) fn bad(message: impl Into<String>) -> KserveError {
    KserveError::bad(message)
}

/// The JSON name of a value's type, for messages ("a number", "null").
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON value as a Python `int` would read it (not a bool, not a float).
pub(crate) fn json_int(value: &Value) -> Option<i128> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        _ => None,
    }
}

/// Python truthiness of a JSON value.
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// The request-level parameters' `binary_data_output` and `timeout`: a
/// boolean, and an integer >= 0 (an integral float of 2**63 or more, which is
/// how JSON parsers read an integer past 64 bits, counts as the longest
/// deadline).
pub(crate) fn request_parameters(
    parameters: &Parameters,
) -> Result<(bool, Option<u64>), KserveError> {
    let binary = match parameters.get("binary_data_output") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(bad(format!(
                "request parameter 'binary_data_output' must be true or false, got {}",
                json_type(other)
            )))
        }
    };
    let timeout = match parameters.get("timeout") {
        None | Some(Value::Null) => None,
        Some(value) => match (json_int(value), value.as_f64()) {
            (Some(t), _) if t >= 0 => Some(u64::try_from(t).unwrap_or(u64::MAX)),
            (None, Some(f)) if f >= 2f64.powi(63) && f.fract() == 0.0 => Some(u64::MAX),
            _ => {
                return Err(bad(format!(
                    "request parameter 'timeout' {}: must be an integer >= 0 (µs)",
                    crate::pyrepr::repr(value)
                )))
            }
        },
    };
    Ok((binary, timeout))
}

/// Validates a shape. `dims` are the dimensions as Python ints (None for a
/// value that is not an integer) and `shown` the shape as Python prints it.
/// Rule: at most [`MAX_DIMS`] integers, each in `0..=max`, whose product is at
/// most `max` (every element takes at least one byte of a body of at most
/// `max` bytes).
pub(crate) fn check_shape(
    name: &str,
    dims: &[Option<i128>],
    shown: &str,
    max: usize,
) -> Result<Vec<u64>, KserveError> {
    if dims.len() > MAX_DIMS {
        return Err(bad(format!(
            "input '{name}': shape has {} dimensions; at most {MAX_DIMS}",
            dims.len()
        )));
    }
    let mut shape = Vec::with_capacity(dims.len());
    for d in dims {
        let Some(d) = *d else {
            return Err(bad(format!(
                "input '{name}': shape {shown}: dimensions must be integers"
            )));
        };
        if d < 0 || d > max as i128 {
            return Err(bad(format!(
                "input '{name}': shape {shown}: dimensions must be between 0 and {max}"
            )));
        }
        shape.push(d as u64);
    }
    let fits = crate::tensor::element_count(&shape).is_some_and(|n| n <= max as u64);
    if !fits {
        return Err(bad(format!(
            "input '{name}': shape {shown} has {} elements, more than a body of at most {max} \
             bytes can carry",
            decimal_product(&shape)
        )));
    }
    Ok(shape)
}

/// The exact decimal product of `dims` (Python ints do not overflow): a
/// base-10^18 little-endian big number multiplied one dimension at a time.
fn decimal_product(dims: &[u64]) -> String {
    const BASE: u128 = 1_000_000_000_000_000_000;
    let mut limbs: Vec<u128> = vec![1];
    for &d in dims {
        let mut carry = 0u128;
        for limb in &mut limbs {
            // limb < 10^18 and d < 2^64: the product and carry fit in u128.
            let value = *limb * u128::from(d) + carry;
            *limb = value % BASE;
            carry = value / BASE;
        }
        while carry > 0 {
            limbs.push(carry % BASE);
            carry /= BASE;
        }
    }
    while limbs.len() > 1 && limbs.last() == Some(&0) {
        limbs.pop();
    }
    let mut out = limbs.last().expect("at least one limb").to_string();
    for limb in limbs.iter().rev().skip(1) {
        out.push_str(&format!("{limb:018}"));
    }
    out
}

/// The shape as Python prints a list of ints: `[2, 3]`.
pub(crate) fn shape_list(shape: &[u64]) -> String {
    let parts: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// One input's tensor from its binary wire form (the REST binary tensor data
/// extension, gRPC `raw_input_contents`). `size_label` names the chunk's size
/// in messages (`binary_data_size 8`). Rules: fixed-size data is exactly
/// count × item size bytes, little-endian (a zero-copy slice); `BOOL` bytes are
/// 0 or 1; `BYTES` elements are each a 4-byte little-endian length and that
/// many bytes, exactly count of them filling the chunk.
pub(crate) fn tensor_from_raw(
    name: &str,
    datatype: Datatype,
    shape: Vec<u64>,
    chunk: Bytes,
    size_label: &str,
) -> Result<Tensor, KserveError> {
    let count = crate::tensor::element_count(&shape).expect("checked shape");
    let Some(item) = datatype.item_size() else {
        let items = bytes_elements(name, &shape, count, chunk, size_label)?;
        return Ok(Tensor::trusted(datatype, shape, TensorData::Bytes(items)));
    };
    let expected = count * item as u64;
    if chunk.len() as u64 != expected {
        return Err(bad(format!(
            "input '{name}': {size_label} does not match shape {} of {datatype}, which needs \
             {expected} bytes",
            shape_list(&shape)
        )));
    }
    if datatype == Datatype::Bool && chunk.iter().any(|&b| b > 1) {
        return Err(bad(format!("input '{name}': BOOL bytes must be 0 or 1")));
    }
    Ok(Tensor::trusted(datatype, shape, TensorData::Fixed(chunk)))
}

fn bytes_elements(
    name: &str,
    shape: &[u64],
    count: u64,
    chunk: Bytes,
    size_label: &str,
) -> Result<Vec<Bytes>, KserveError> {
    let mut items = Vec::new();
    let end = chunk.len();
    let mut pos = 0usize;
    while pos < end {
        if items.len() as u64 == count {
            return Err(bad(format!(
                "input '{name}': the BYTES data holds more than the {count} elements of shape {}",
                shape_list(shape)
            )));
        }
        let Some(prefix) = chunk.get(pos..pos + 4) else {
            return Err(bad(format!(
                "input '{name}': BYTES element {} has a truncated length",
                items.len()
            )));
        };
        let length = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
        pos += 4;
        if length > end - pos {
            return Err(bad(format!(
                "input '{name}': BYTES element {} of {length} bytes runs past the tensor's \
                 {size_label}",
                items.len()
            )));
        }
        items.push(chunk.slice(pos..pos + length));
        pos += length;
    }
    if items.len() as u64 != count {
        return Err(bad(format!(
            "input '{name}': the BYTES data holds {} elements; shape {} needs {count}",
            items.len(),
            shape_list(shape)
        )));
    }
    Ok(items)
}

/// One requested output. Rules: a non-empty name not requested before; no
/// shared memory; no classification; `binary_data` a boolean, defaulting to
/// the request's `binary_data_output`.
pub(crate) fn requested_output(
    index: usize,
    name: Option<&str>,
    parameters: Parameters,
    seen: &mut Vec<String>,
    binary_default: bool,
) -> Result<RequestedOutput, KserveError> {
    let name = match name {
        Some(n) if !n.is_empty() => n,
        _ => {
            return Err(bad(format!(
                "outputs[{index}]: 'name' must be a non-empty string"
            )))
        }
    };
    if seen.iter().any(|s| s == name) {
        return Err(bad(format!("output '{name}' is requested more than once")));
    }
    seen.push(name.to_owned());
    if parameters.contains_key("shared_memory_region") {
        return Err(bad(format!(
            "output '{name}': shared memory is not supported"
        )));
    }
    if parameters.get("classification").is_some_and(truthy) {
        return Err(bad(format!(
            "output '{name}': the classification extension is not supported"
        )));
    }
    let binary_data = match parameters.get("binary_data") {
        None => binary_default,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(bad(format!(
                "output '{name}': parameter 'binary_data' must be true or false, got {}",
                json_type(other)
            )))
        }
    };
    Ok(RequestedOutput {
        name: name.to_owned(),
        binary_data,
        parameters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_product_is_exact() {
        assert_eq!(decimal_product(&[60000, 60000]), "3600000000");
        assert_eq!(decimal_product(&[]), "1");
        assert_eq!(decimal_product(&[7, 0]), "0");
        assert_eq!(
            decimal_product(&[u64::MAX, u64::MAX]),
            "340282366920938463426481119284349108225"
        );
        assert_eq!(
            decimal_product(&[1_000_000_000_000_000_000, 10]),
            "10000000000000000000"
        );
    }

    #[test]
    fn shapes() {
        let ok = check_shape("x", &[Some(2), Some(3)], "[2, 3]", 100).unwrap();
        assert_eq!(ok, vec![2, 3]);
        let cases: [(&[Option<i128>], &str); 4] = [
            (&[None], "dimensions must be integers"),
            (&[Some(-1)], "dimensions must be between 0 and 100"),
            (
                &[Some(11), Some(10)],
                "has 110 elements, more than a body of at most 100 bytes",
            ),
            (&[Some(1); 33], "shape has 33 dimensions; at most 32"),
        ];
        for (dims, needle) in cases {
            let e = check_shape("x", dims, "S", 100).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
    }
}
