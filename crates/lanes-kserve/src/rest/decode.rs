//! Decoding a REST infer body: the JSON header, then each input from its JSON
//! `data` or, with `Inference-Header-Content-Length: H`, from the binary data
//! after the first H bytes.
//!
//! Binary tensor data extension: each input whose `parameters` carry
//! `"binary_data_size": N` takes the next N bytes, in input order, and has no
//! `"data"`; the sizes must add up to the bytes after the header exactly. The
//! checks run in the Python codec's order, so the first problem reported is
//! the same.

use bytes::Bytes;
use serde_json::{Map, Value};

use super::data::tensor_from_json;
use super::HEADER_LENGTH;
use crate::error::KserveError;
use crate::pyrepr;
use crate::request::{
    bad, check_shape, json_int, json_type, request_parameters, requested_output, tensor_from_raw,
    CodecConfig, InferRequest, InputTensor, ModelRef, Parameters, RequestedOutput,
};
use crate::tensor::Datatype;

/// The `Inference-Header-Content-Length` header value as an integer (None when
/// absent). Rule: after trimming ASCII whitespace, an optional sign and ASCII
/// digits, at most 20 characters (no `1_0`, no `0x10`, no non-ASCII digits);
/// anything else is a 400. A negative value parses and is refused by
/// [`decode_request`].
pub fn parse_header_length(value: Option<&[u8]>) -> Result<Option<i128>, KserveError> {
    let Some(raw) = value else { return Ok(None) };
    let refuse = || {
        let shown = pyrepr::surrogateescaped(raw);
        bad(format!("{HEADER_LENGTH} {shown}: must be an integer"))
    };
    let text = std::str::from_utf8(raw).map_err(|_| refuse())?;
    let text = text.trim_matches(|c: char| c.is_whitespace());
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if !text.is_ascii()
        || text.len() > 20
        || digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(refuse());
    }
    text.parse::<i128>().map(Some).map_err(|_| refuse())
}

/// Decodes an infer request body for `model`. `header_length` is the parsed
/// `Inference-Header-Content-Length` (None: the whole body is JSON). A body
/// over `config.max_body_bytes` is a 413; every other problem is a 400 naming
/// it.
pub fn decode_request(
    model: ModelRef,
    body: Bytes,
    header_length: Option<i128>,
    config: &CodecConfig,
) -> Result<InferRequest, KserveError> {
    let max = config.max_body_bytes;
    if body.len() > max {
        return Err(KserveError::BodyTooLarge(format!(
            "request body is {} bytes; the limit is {max}",
            body.len()
        )));
    }
    let json_end = match header_length {
        None => body.len(),
        Some(h) if h < 0 || h > body.len() as i128 => {
            return Err(bad(format!(
                "{HEADER_LENGTH} {h}: must be between 0 and the body length ({} bytes)",
                body.len()
            )))
        }
        Some(h) => h as usize,
    };
    let header: Value = serde_json::from_slice(&body[..json_end])
        .map_err(|e| bad(format!("request body is not valid JSON: {e}")))?;
    let binary = body.slice(json_end..);

    let Value::Object(mut header) = header else {
        return Err(bad("request body must be a JSON object"));
    };
    let id = match header.remove("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err(bad(format!(
                "'id' must be a string, got {}",
                json_type(&other)
            )))
        }
    };
    let parameters = parameters_of(header.remove("parameters"), "request")?;
    let (binary_data_output, timeout_us) = request_parameters(&parameters)?;

    let raw_inputs = match header.remove("inputs") {
        None => return Err(bad("request has no 'inputs'")),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(bad(format!(
                "'inputs' must be a JSON array, got {}",
                json_type(&other)
            )))
        }
    };
    let mut inputs: Vec<InputTensor> = Vec::with_capacity(raw_inputs.len());
    let mut offset = 0usize;
    for (index, tensor) in raw_inputs.into_iter().enumerate() {
        let Value::Object(mut tensor) = tensor else {
            return Err(bad(format!(
                "inputs[{index}] must be a JSON object, got {}",
                json_type(&tensor)
            )));
        };
        let name = match tensor.remove("name") {
            Some(Value::String(s)) if !s.is_empty() => s,
            _ => {
                return Err(bad(format!(
                    "inputs[{index}]: 'name' must be a non-empty string"
                )))
            }
        };
        if inputs.iter().any(|i| i.name == name) {
            return Err(bad(format!("input '{name}' appears more than once")));
        }
        let datatype = datatype(&name, tensor.get("datatype"))?;
        let shape = shape(&name, tensor.get("shape"), max)?;
        let params = parameters_of(tensor.remove("parameters"), &format!("input '{name}'"))?;
        if params.contains_key("shared_memory_region") {
            return Err(bad(format!(
                "input '{name}': shared memory is not supported"
            )));
        }
        let tensor = match params.get("binary_data_size").filter(|v| !v.is_null()) {
            Some(size) => {
                if tensor.contains_key("data") {
                    return Err(bad(format!(
                        "input '{name}' has both 'data' and a binary_data_size parameter"
                    )));
                }
                let size = json_int(size).filter(|&s| s >= 0).ok_or_else(|| {
                    bad(format!(
                        "input '{name}': binary_data_size {} must be an integer >= 0",
                        pyrepr::repr(size)
                    ))
                })?;
                if header_length.is_none() {
                    return Err(bad(format!(
                        "input '{name}' has binary_data_size {size} but the request has no \
                         {HEADER_LENGTH} header"
                    )));
                }
                let left = binary.len() - offset;
                if size > left as i128 {
                    return Err(bad(format!(
                        "input '{name}': binary_data_size {size} runs past the end of the body \
                         ({left} bytes left)"
                    )));
                }
                let size = size as usize;
                let chunk = binary.slice(offset..offset + size);
                offset += size;
                tensor_from_raw(
                    &name,
                    datatype,
                    shape,
                    chunk,
                    &format!("binary_data_size {size}"),
                )?
            }
            None => match tensor.get("data") {
                None => {
                    return Err(bad(format!(
                        "input '{name}' has neither 'data' nor a binary_data_size parameter"
                    )))
                }
                Some(data) => tensor_from_json(&name, datatype, shape, data)?,
            },
        };
        inputs.push(InputTensor { name, tensor });
    }
    if offset != binary.len() {
        return Err(bad(format!(
            "the body has {} bytes of binary data after the JSON header but the inputs' \
             binary_data_size add up to {offset}",
            binary.len()
        )));
    }
    let outputs = requested_outputs(header.remove("outputs"), binary_data_output)?;
    Ok(InferRequest {
        model,
        id,
        inputs,
        outputs,
        parameters,
        binary_data_output,
        timeout_us,
    })
}

/// A `parameters` object (empty when absent or null).
fn parameters_of(value: Option<Value>, place: &str) -> Result<Parameters, KserveError> {
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(other) => Err(bad(format!(
            "{place}: 'parameters' must be a JSON object, got {}",
            json_type(&other)
        ))),
    }
}

fn datatype(name: &str, value: Option<&Value>) -> Result<Datatype, KserveError> {
    value
        .and_then(Value::as_str)
        .and_then(Datatype::from_name)
        .ok_or_else(|| {
            let allowed: Vec<&str> = Datatype::ALL.iter().map(|d| d.name()).collect();
            bad(format!(
                "input '{name}': datatype {} is not a KServe datatype; allowed are {}",
                pyrepr::repr_opt(value),
                allowed.join(", ")
            ))
        })
}

fn shape(name: &str, value: Option<&Value>, max: usize) -> Result<Vec<u64>, KserveError> {
    let Some(Value::Array(dims)) = value else {
        return Err(bad(format!(
            "input '{name}': 'shape' must be an array of integers"
        )));
    };
    let ints: Vec<Option<i128>> = dims.iter().map(json_int).collect();
    let shown = if dims.len() > crate::request::MAX_DIMS {
        String::new() // not shown: the dimension count is refused first
    } else {
        pyrepr::repr(value.expect("an array"))
    };
    check_shape(name, &ints, &shown, max)
}

/// The request's `outputs` (None when absent, null or empty: all outputs).
fn requested_outputs(
    value: Option<Value>,
    binary_default: bool,
) -> Result<Option<Vec<RequestedOutput>>, KserveError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) if items.is_empty() => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(bad(format!(
                "'outputs' must be a JSON array, got {}",
                json_type(&other)
            )))
        }
    };
    let mut seen = Vec::with_capacity(items.len());
    let mut outputs = Vec::with_capacity(items.len());
    for (index, tensor) in items.into_iter().enumerate() {
        let Value::Object(mut tensor) = tensor else {
            return Err(bad(format!(
                "outputs[{index}] must be a JSON object, got {}",
                json_type(&tensor)
            )));
        };
        let name = match tensor.get("name") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        };
        // The name is checked before the parameters, as in the Python codec.
        if name.is_none() {
            return Err(bad(format!(
                "outputs[{index}]: 'name' must be a non-empty string"
            )));
        }
        let place = format!("output '{}'", name.as_deref().unwrap_or_default());
        if seen.iter().any(|s: &String| Some(s) == name.as_ref()) {
            return Err(bad(format!(
                "output '{}' is requested more than once",
                name.as_deref().unwrap_or_default()
            )));
        }
        let params = parameters_of(tensor.remove("parameters"), &place)?;
        outputs.push(requested_output(
            index,
            name.as_deref(),
            params,
            &mut seen,
            binary_default,
        )?);
    }
    Ok(Some(outputs))
}
