//! The KServe v2 gRPC mapping: a `ModelInferRequest` to the validated
//! [`InferRequest`], and an [`InferResponse`] to a `ModelInferResponse`.
//!
//! Requests are checked with the REST rules and messages where they apply
//! (names, datatypes, shapes, element counts, integer ranges, `BOOL` 0/1,
//! `BYTES` framing, unique names, refused extensions, `timeout`). Tensor data
//! comes either from `raw_input_contents` (one entry per input, in input
//! order, for every input or none: the binary form, `BYTES` elements as
//! 4-byte little-endian lengths and bytes; zero-copy slices of the message
//! when it was decoded from `Bytes`) or from each input's typed `contents`
//! (the field of its datatype only: `bool_contents`, `int_contents` for
//! INT8/16/32, `int64_contents`, `uint_contents` for UINT8/16/32,
//! `uint64_contents`, `fp32_contents`, `fp64_contents`, `bytes_contents`;
//! `FP16` has no typed field). A tensor of no elements may carry no data.
//! Request parameters become the JSON values they stand for (a non-finite
//! double becomes null). Responses carry every output in
//! `raw_output_contents`, which is what `tritonclient.grpc` reads; the REST
//! `binary_data` flags do not apply.
//!
//! The other way, for clients (`lanes bench` sending a REST body over gRPC):
//! [`encode_request`] writes a validated request as the `ModelInferRequest`
//! that [`decode_request`] maps back to it — every input in
//! `raw_input_contents`, parameters as the `InferParameter` of their JSON type.

use bytes::Bytes;
use serde_json::{Map, Number, Value};

use crate::error::KserveError;
use crate::proto::infer_parameter::ParameterChoice;
use crate::proto::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use crate::proto::model_infer_response::InferOutputTensor;
use crate::proto::{InferParameter, InferTensorContents, ModelInferRequest, ModelInferResponse};
use crate::request::{
    bad, check_shape, request_parameters, requested_output, shape_list, tensor_from_raw,
    CodecConfig, InferRequest, InputTensor, ModelRef, Parameters,
};
use crate::response::{InferResponse, OutputChoice};
use crate::tensor::{Datatype, Element, Tensor, TensorData};

/// Maps a decoded `ModelInferRequest` to the validated request; a problem is a
/// 400 / `INVALID_ARGUMENT` naming it. `config.max_body_bytes` bounds each
/// tensor's element count as on REST (the message size limit itself is the
/// server's).
pub fn decode_request(
    message: ModelInferRequest,
    config: &CodecConfig,
) -> Result<InferRequest, KserveError> {
    let max = config.max_body_bytes;
    let parameters = parameters_of(message.parameters);
    let (binary_data_output, timeout_us) = request_parameters(&parameters)?;
    let raw = message.raw_input_contents;
    if !raw.is_empty() && raw.len() != message.inputs.len() {
        return Err(bad(format!(
            "raw_input_contents has {} entries but the request has {} inputs; it must have \
             one per input or none",
            raw.len(),
            message.inputs.len()
        )));
    }
    let mut raw = raw.into_iter();
    let mut inputs: Vec<InputTensor> = Vec::with_capacity(message.inputs.len());
    for (index, input) in message.inputs.into_iter().enumerate() {
        let chunk = raw.next();
        let tensor = input_tensor(index, input, chunk, &inputs, max)?;
        inputs.push(tensor);
    }
    let outputs = if message.outputs.is_empty() {
        None
    } else {
        let mut seen = Vec::with_capacity(message.outputs.len());
        let outputs = message
            .outputs
            .into_iter()
            .enumerate()
            .map(|(index, o)| {
                let name = (!o.name.is_empty()).then_some(o.name.as_str());
                requested_output(
                    index,
                    name,
                    parameters_of(o.parameters),
                    &mut seen,
                    binary_data_output,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        Some(outputs)
    };
    Ok(InferRequest {
        model: ModelRef {
            name: message.model_name,
            version: (!message.model_version.is_empty()).then_some(message.model_version),
        },
        id: (!message.id.is_empty()).then_some(message.id),
        inputs,
        outputs,
        parameters,
        binary_data_output,
        timeout_us,
    })
}

fn input_tensor(
    index: usize,
    input: InferInputTensor,
    chunk: Option<Bytes>,
    earlier: &[InputTensor],
    max: usize,
) -> Result<InputTensor, KserveError> {
    let name = input.name;
    if name.is_empty() {
        return Err(bad(format!(
            "inputs[{index}]: 'name' must be a non-empty string"
        )));
    }
    if earlier.iter().any(|i| i.name == name) {
        return Err(bad(format!("input '{name}' appears more than once")));
    }
    let datatype = Datatype::from_name(&input.datatype).ok_or_else(|| {
        let allowed: Vec<&str> = Datatype::ALL.iter().map(|d| d.name()).collect();
        bad(format!(
            "input '{name}': datatype {} is not a KServe datatype; allowed are {}",
            crate::pyrepr::string(&input.datatype),
            allowed.join(", ")
        ))
    })?;
    let dims: Vec<Option<i128>> = input.shape.iter().map(|&d| Some(i128::from(d))).collect();
    let shown = format!("{:?}", input.shape); // "[1, 2]", as Python prints a list
    let shape = check_shape(&name, &dims, &shown, max)?;
    if input.parameters.contains_key("shared_memory_region") {
        return Err(bad(format!(
            "input '{name}': shared memory is not supported"
        )));
    }
    let tensor = match (chunk, input.contents) {
        (Some(chunk), contents) => {
            if contents.is_some_and(|c| c != InferTensorContents::default()) {
                return Err(bad(format!(
                    "input '{name}' has both contents and raw_input_contents"
                )));
            }
            let label = format!("raw_input_contents[{index}] of {} bytes", chunk.len());
            tensor_from_raw(&name, datatype, shape, chunk, &label)?
        }
        (None, contents) => from_contents(&name, datatype, shape, contents.unwrap_or_default())?,
    };
    Ok(InputTensor { name, tensor })
}

/// A tensor from typed contents: only the datatype's own field may hold data,
/// exactly the shape's element count, integers within the datatype's range.
fn from_contents(
    name: &str,
    datatype: Datatype,
    shape: Vec<u64>,
    c: InferTensorContents,
) -> Result<Tensor, KserveError> {
    let count = crate::tensor::element_count(&shape).expect("checked shape");
    let lengths = [
        ("bool_contents", c.bool_contents.len()),
        ("int_contents", c.int_contents.len()),
        ("int64_contents", c.int64_contents.len()),
        ("uint_contents", c.uint_contents.len()),
        ("uint64_contents", c.uint64_contents.len()),
        ("fp32_contents", c.fp32_contents.len()),
        ("fp64_contents", c.fp64_contents.len()),
        ("bytes_contents", c.bytes_contents.len()),
    ];
    let field = match datatype {
        Datatype::Bool => Some("bool_contents"),
        Datatype::Int8 | Datatype::Int16 | Datatype::Int32 => Some("int_contents"),
        Datatype::Int64 => Some("int64_contents"),
        Datatype::Uint8 | Datatype::Uint16 | Datatype::Uint32 => Some("uint_contents"),
        Datatype::Uint64 => Some("uint64_contents"),
        Datatype::Fp32 => Some("fp32_contents"),
        Datatype::Fp64 => Some("fp64_contents"),
        Datatype::Bytes => Some("bytes_contents"),
        Datatype::Fp16 => None,
    };
    if let Some((other, _)) = lengths.iter().find(|(f, n)| *n > 0 && Some(*f) != field) {
        return Err(bad(match field {
            Some(field) => {
                format!("input '{name}': {datatype} contents go in {field}, not {other}")
            }
            None => format!(
                "input '{name}': {datatype} has no typed contents; send it in raw_input_contents"
            ),
        }));
    }
    let got = field.map_or(0, |f| {
        lengths.iter().find(|(n, _)| *n == f).expect("a field").1
    });
    if got as u64 != count {
        if got == 0 {
            return Err(bad(format!(
                "input '{name}' has neither contents nor raw_input_contents"
            )));
        }
        return Err(bad(format!(
            "input '{name}': contents has {got} elements; shape {} needs {count}",
            shape_list(&shape)
        )));
    }
    let ranged = |values: &mut dyn Iterator<Item = i128>, buf: &mut Vec<u8>| {
        let (min, max) = datatype.int_range().expect("an integer datatype");
        for v in values {
            if v < min || v > max {
                return Err(bad(format!(
                    "input '{name}': {datatype} data must be integers between {min} and {max}"
                )));
            }
            match datatype {
                Datatype::Int8 => (v as i8).put_le(buf),
                Datatype::Int16 => (v as i16).put_le(buf),
                Datatype::Uint8 => (v as u8).put_le(buf),
                Datatype::Uint16 => (v as u16).put_le(buf),
                _ => unreachable!("a narrow integer datatype"),
            }
        }
        Ok(())
    };
    let data = match datatype {
        Datatype::Bytes => TensorData::Bytes(c.bytes_contents),
        Datatype::Bool => TensorData::Fixed(pack(&c.bool_contents)),
        Datatype::Int32 => TensorData::Fixed(pack(&c.int_contents)),
        Datatype::Int64 => TensorData::Fixed(pack(&c.int64_contents)),
        Datatype::Uint32 => TensorData::Fixed(pack(&c.uint_contents)),
        Datatype::Uint64 => TensorData::Fixed(pack(&c.uint64_contents)),
        Datatype::Fp32 => TensorData::Fixed(pack(&c.fp32_contents)),
        Datatype::Fp64 => TensorData::Fixed(pack(&c.fp64_contents)),
        Datatype::Int8 | Datatype::Int16 => {
            let mut buf = Vec::new();
            ranged(&mut c.int_contents.iter().map(|&v| i128::from(v)), &mut buf)?;
            TensorData::Fixed(buf.into())
        }
        Datatype::Uint8 | Datatype::Uint16 => {
            let mut buf = Vec::new();
            ranged(
                &mut c.uint_contents.iter().map(|&v| i128::from(v)),
                &mut buf,
            )?;
            TensorData::Fixed(buf.into())
        }
        Datatype::Fp16 => TensorData::Fixed(Bytes::new()), // count is 0 here
    };
    Ok(Tensor::trusted(datatype, shape, data))
}

fn pack<T: Element>(values: &[T]) -> Bytes {
    let mut buf = Vec::with_capacity(values.len() * T::DATATYPE.item_size().unwrap_or(1));
    for v in values {
        v.put_le(&mut buf);
    }
    buf.into()
}

/// gRPC parameters as the JSON values they stand for (an unset one is null).
fn parameters_of(map: std::collections::HashMap<String, InferParameter>) -> Parameters {
    let mut out = Map::new();
    for (key, p) in map {
        let value = match p.parameter_choice {
            None => Value::Null,
            Some(ParameterChoice::BoolParam(b)) => Value::Bool(b),
            Some(ParameterChoice::Int64Param(i)) => Value::from(i),
            Some(ParameterChoice::Uint64Param(u)) => Value::from(u),
            Some(ParameterChoice::StringParam(s)) => Value::String(s),
            Some(ParameterChoice::DoubleParam(d)) => {
                Number::from_f64(d).map_or(Value::Null, Value::Number)
            }
        };
        out.insert(key, value);
    }
    out
}

/// The `ModelInferRequest` of `request`, which [`decode_request`] maps back to
/// it: inputs in order with their data in `raw_input_contents`, the named
/// outputs with their parameters, request parameters by JSON type (a boolean,
/// an integer as `int64` or, past it, `uint64`, another number as `double`, a
/// string). A parameter that is null, an array or an object has no gRPC form:
/// a 400 naming it. proto3 has no "absent" for a string or a list, so an empty
/// `id` and an empty list of outputs read back as none.
pub fn encode_request(request: &InferRequest) -> Result<ModelInferRequest, KserveError> {
    let inputs = request
        .inputs
        .iter()
        .map(|input| InferInputTensor {
            name: input.name.clone(),
            datatype: input.tensor.datatype().name().to_owned(),
            shape: dims(input.tensor.shape()),
            parameters: Default::default(),
            contents: None,
        })
        .collect();
    let raw_input_contents = request.inputs.iter().map(|i| i.tensor.raw()).collect();
    let outputs = match &request.outputs {
        None => Vec::new(),
        Some(outputs) => outputs
            .iter()
            .map(|o| {
                Ok(InferRequestedOutputTensor {
                    name: o.name.clone(),
                    parameters: infer_parameters(&o.parameters, &format!("output '{}'", o.name))?,
                })
            })
            .collect::<Result<_, KserveError>>()?,
    };
    Ok(ModelInferRequest {
        model_name: request.model.name.clone(),
        model_version: request.model.version.clone().unwrap_or_default(),
        id: request.id.clone().unwrap_or_default(),
        parameters: infer_parameters(&request.parameters, "the request")?,
        inputs,
        outputs,
        raw_input_contents,
    })
}

/// A validated shape as gRPC dims (validated tensors hold at most the body
/// limit's elements, so every dim fits).
fn dims(shape: &[u64]) -> Vec<i64> {
    shape
        .iter()
        .map(|&d| i64::try_from(d).unwrap_or(i64::MAX))
        .collect()
}

fn infer_parameters(
    parameters: &Parameters,
    owner: &str,
) -> Result<std::collections::HashMap<String, InferParameter>, KserveError> {
    parameters
        .iter()
        .map(|(key, value)| {
            let choice = match value {
                Value::Bool(b) => ParameterChoice::BoolParam(*b),
                Value::String(s) => ParameterChoice::StringParam(s.clone()),
                Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                    (Some(i), _) => ParameterChoice::Int64Param(i),
                    (None, Some(u)) => ParameterChoice::Uint64Param(u),
                    // Without serde_json's arbitrary precision, every other number is an f64.
                    (None, None) => ParameterChoice::DoubleParam(n.as_f64().unwrap_or(f64::NAN)),
                },
                other => {
                    return Err(bad(format!(
                        "{owner}: parameter '{key}' is {}; gRPC parameters are booleans, \
                         integers, numbers or strings",
                        crate::request::json_type(other)
                    )))
                }
            };
            Ok((
                key.clone(),
                InferParameter {
                    parameter_choice: Some(choice),
                },
            ))
        })
        .collect()
}

/// The `ModelInferResponse` of `response`: the outputs `choice` names (every
/// output when it names none; a name the model did not produce is a 400), each
/// in `raw_output_contents` in output order.
pub fn encode_response(
    response: &InferResponse,
    choice: &OutputChoice,
) -> Result<ModelInferResponse, KserveError> {
    let chosen = response.chosen(choice)?;
    let mut outputs = Vec::with_capacity(chosen.len());
    let mut raw = Vec::with_capacity(chosen.len());
    for (output, _) in chosen {
        let tensor = &output.tensor;
        outputs.push(InferOutputTensor {
            name: output.name.clone(),
            datatype: tensor.datatype().name().to_owned(),
            shape: dims(tensor.shape()),
            parameters: Default::default(),
            contents: None,
        });
        raw.push(tensor.raw());
    }
    Ok(ModelInferResponse {
        model_name: response.model_name.clone(),
        model_version: response.model_version.clone(),
        id: response.id.clone().unwrap_or_default(),
        parameters: Default::default(),
        outputs,
        raw_output_contents: raw,
    })
}
