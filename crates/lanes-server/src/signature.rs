//! A model's declared inputs and outputs, and the edge's check of a decoded
//! request against them: lanes-kserve's `check_inputs` / `check_outputs`
//! (codec.py's rules), plus the request's rows.
//!
//! **Rule.** The request passes both checks (every declared input present and
//! no other, datatypes equal, shapes matching with `-1` as any size, one batch
//! size across inputs when the model batches, only declared outputs named);
//! a request that fails the declared inputs passes if it matches one of the
//! model's other input forms (e.g. raw arrays beside encoded images), and is
//! refused with the declared inputs' error otherwise. Its rows are then the
//! first input's batch dimension when the model batches, else 1. A bad
//! request is a 400 before it queues, never a failed batch.

use lanes_kserve::{check_inputs, check_outputs, InferRequest, KserveError};
use serde_json::{json, Value};

/// One declared tensor: `-1` in `shape` is any size.
pub type Spec = lanes_kserve::TensorSpec;

/// KServe's tensor metadata: `{"name", "datatype", "shape"}`.
pub fn metadata(spec: &Spec) -> Value {
    json!({"name": spec.name, "datatype": spec.datatype.name(), "shape": spec.shape})
}

/// A model's inputs and outputs, in declaration order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub inputs: Vec<Spec>,
    pub outputs: Vec<Spec>,
    /// Other accepted forms of the inputs.
    pub forms: Vec<Vec<Spec>>,
}

impl Signature {
    /// Checks `request` against the declaration (the module's rule) and
    /// returns its rows.
    pub fn check(&self, request: &InferRequest, batching: bool) -> Result<u32, KserveError> {
        let inputs = match check_inputs(request, &self.inputs, batching) {
            Ok(()) => &self.inputs,
            Err(declared) => self
                .forms
                .iter()
                .find(|form| check_inputs(request, form, batching).is_ok())
                .ok_or(declared)?,
        };
        check_outputs(request, &self.outputs)?;
        let rows = match (batching, inputs.first()) {
            (true, Some(spec)) => request
                .input(&spec.name)
                .and_then(|t| t.shape().first().copied())
                .unwrap_or(1),
            _ => 1,
        };
        u32::try_from(rows)
            .map_err(|_| KserveError::BadRequest(format!("a batch of {rows} rows is too large")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lanes_kserve::rest::decode_request;
    use lanes_kserve::{CodecConfig, Datatype, ModelRef};

    fn signature() -> Signature {
        let spec = |name: &str, datatype, shape: &[i64]| Spec {
            name: name.into(),
            datatype,
            shape: shape.to_vec(),
        };
        Signature {
            inputs: vec![
                spec("x", Datatype::Fp32, &[-1, 2]),
                spec("k", Datatype::Int64, &[-1]),
            ],
            outputs: vec![spec("y", Datatype::Fp32, &[-1, 2])],
            forms: vec![vec![spec("img", Datatype::Uint8, &[-1, 3])]],
        }
    }

    fn request(json: &str) -> InferRequest {
        let body = bytes::Bytes::copy_from_slice(json.as_bytes());
        decode_request(ModelRef::default(), body, None, &CodecConfig::default()).unwrap()
    }

    const X1: &str = r#"{"name":"x","shape":[1,2],"datatype":"FP32","data":[1,2]}"#;
    const K1: &str = r#"{"name":"k","shape":[1],"datatype":"INT64","data":[3]}"#;

    #[test]
    fn requests_are_checked_against_the_declaration() {
        let x2 = r#"{"name":"x","shape":[2,2],"datatype":"FP32","data":[1,2,3,4]}"#;
        let k2 = r#"{"name":"k","shape":[2],"datatype":"INT64","data":[3,4]}"#;
        let table: &[(String, bool, Result<u32, &str>)] = &[
            (format!(r#"{{"inputs":[{X1},{K1}]}}"#), true, Ok(1)),
            (format!(r#"{{"inputs":[{x2},{k2}]}}"#), true, Ok(2)),
            (format!(r#"{{"inputs":[{x2},{k2}]}}"#), false, Ok(1)),
            (
                format!(r#"{{"inputs":[{X1}]}}"#),
                true,
                Err("missing input k"),
            ),
            (
                format!(
                    r#"{{"inputs":[{X1},{K1},{{"name":"z","shape":[1],"datatype":"FP32","data":[1]}}]}}"#
                ),
                true,
                Err("unknown input 'z'; the model's inputs are: x, k"),
            ),
            (
                format!(
                    r#"{{"inputs":[{K1},{{"name":"x","shape":[1,2],"datatype":"FP64","data":[1,2]}}]}}"#
                ),
                true,
                Err("input 'x': datatype FP64, expected FP32"),
            ),
            (
                format!(
                    r#"{{"inputs":[{K1},{{"name":"x","shape":[2],"datatype":"FP32","data":[1,2]}}]}}"#
                ),
                true,
                Err("input 'x': shape [2] does not match the declared shape [-1, 2]"),
            ),
            (
                format!(r#"{{"inputs":[{X1},{k2}]}}"#),
                true,
                Err("inputs disagree on the batch size: 'x' has 1 rows, 'k' has 2"),
            ),
            (
                format!(r#"{{"inputs":[{X1},{K1}],"outputs":[{{"name":"q"}}]}}"#),
                true,
                Err("unknown output 'q'; the model's outputs are: y"),
            ),
            // The other input form, its rows; a request matching no form gets the declared error.
            (
                r#"{"inputs":[{"name":"img","shape":[2,3],"datatype":"UINT8","data":[1,2,3,4,5,6]}]}"#.into(),
                true,
                Ok(2),
            ),
            (
                r#"{"inputs":[{"name":"img","shape":[2,3],"datatype":"INT8","data":[1,2,3,4,5,6]}]}"#.into(),
                true,
                Err("unknown input 'img'; the model's inputs are: x, k"),
            ),
        ];
        for (body, batching, expected) in table {
            let got = signature().check(&request(body), *batching);
            match (got, expected) {
                (Ok(rows), Ok(want)) => assert_eq!(rows, *want, "{body}"),
                (Err(e), Err(want)) => {
                    assert_eq!((e.http_status(), e.to_string().as_str()), (400, *want))
                }
                (got, want) => panic!("{body}: got {got:?}, want {want:?}"),
            }
        }
    }
}
