//! Checking a decoded request against the model's declared inputs and outputs
//! (`check_inputs`/`check_outputs` of `python/lanes/serving/codec.py`), so a
//! mismatched request is a 400 before the model runs.

use crate::error::KserveError;
use crate::request::{bad, InferRequest};
use crate::tensor::Datatype;

/// A declared input or output: name, datatype and shape, `-1` marking a
/// dimension of any size (the batch dimension first when the model batches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    pub name: String,
    pub datatype: Datatype,
    pub shape: Vec<i64>,
}

/// Checks the request's inputs against `specs`. Rules, in order: every input
/// is declared; every declared input is present; per declared input, the
/// datatype matches and the shape matches dimension by dimension (`-1` any);
/// with `batching`, the first dimension of every input that has one is at
/// least 1 and the same in all.
pub fn check_inputs(
    request: &InferRequest,
    specs: &[TensorSpec],
    batching: bool,
) -> Result<(), KserveError> {
    let names = || {
        specs
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(unknown) = request
        .inputs
        .iter()
        .find(|i| !specs.iter().any(|s| s.name == i.name))
    {
        return Err(bad(format!(
            "unknown input '{}'; the model's inputs are: {}",
            unknown.name,
            names()
        )));
    }
    let missing: Vec<&str> = specs
        .iter()
        .filter(|s| request.input(&s.name).is_none())
        .map(|s| s.name.as_str())
        .collect();
    if !missing.is_empty() {
        let plural = if missing.len() > 1 { "s" } else { "" };
        return Err(bad(format!("missing input{plural} {}", missing.join(", "))));
    }
    let mut batch: Option<(&str, u64)> = None;
    for spec in specs {
        let tensor = request.input(&spec.name).expect("checked present");
        if tensor.datatype() != spec.datatype {
            return Err(bad(format!(
                "input '{}': datatype {}, expected {}",
                spec.name,
                tensor.datatype(),
                spec.datatype
            )));
        }
        let shape = tensor.shape();
        let fits = shape.len() == spec.shape.len()
            && spec
                .shape
                .iter()
                .zip(shape)
                .all(|(&d, &n)| d == -1 || u64::try_from(d) == Ok(n));
        if !fits {
            return Err(bad(format!(
                "input '{}': shape {} does not match the declared shape [{}]",
                spec.name,
                crate::request::shape_list(shape),
                spec.shape
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if let (true, Some(&rows)) = (batching, shape.first()) {
            if rows < 1 {
                return Err(bad(format!(
                    "input '{}': the batch dimension is 0; it must be >= 1",
                    spec.name
                )));
            }
            match batch {
                None => batch = Some((&spec.name, rows)),
                Some((first, n)) if n != rows => {
                    return Err(bad(format!(
                    "inputs disagree on the batch size: '{first}' has {n} rows, '{}' has {rows}",
                    spec.name
                )))
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// Checks the request's named outputs against the declared ones: an unknown
/// name is a 400 naming the outputs there are.
pub fn check_outputs(request: &InferRequest, specs: &[TensorSpec]) -> Result<(), KserveError> {
    let Some(outputs) = &request.outputs else {
        return Ok(());
    };
    if let Some(unknown) = outputs
        .iter()
        .find(|o| !specs.iter().any(|s| s.name == o.name))
    {
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        return Err(bad(format!(
            "unknown output '{}'; the model's outputs are: {}",
            unknown.name,
            names.join(", ")
        )));
    }
    Ok(())
}
