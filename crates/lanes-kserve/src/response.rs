//! The inference response a model's outputs become, and the rule choosing which
//! outputs go out and in which form.

use crate::error::KserveError;
use crate::request::{InferRequest, RequestedOutput};
use crate::tensor::Tensor;

/// One output of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputTensor {
    pub name: String,
    pub tensor: Tensor,
}

/// What the model returned, with the names the response echoes.
#[derive(Debug, Clone, PartialEq)]
pub struct InferResponse {
    pub model_name: String,
    pub model_version: String,
    /// The request's id, echoed (omitted when the request had none).
    pub id: Option<String>,
    /// Every output the model produced, in the model's order.
    pub outputs: Vec<OutputTensor>,
}

/// Which outputs a response carries and whether each is binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChoice {
    /// None: every output, each binary when `binary_default`.
    pub requested: Option<Vec<(String, bool)>>,
    /// The request's `binary_data_output`.
    pub binary_default: bool,
}

impl OutputChoice {
    /// The choice a decoded request makes.
    pub fn of(request: &InferRequest) -> Self {
        Self::new(request.outputs.as_deref(), request.binary_data_output)
    }

    pub fn new(requested: Option<&[RequestedOutput]>, binary_default: bool) -> Self {
        Self {
            requested: requested
                .map(|r| r.iter().map(|o| (o.name.clone(), o.binary_data)).collect()),
            binary_default,
        }
    }
}

impl InferResponse {
    /// The outputs to send, each with its binary flag. Rule: no requested
    /// outputs sends every output in the model's order, binary when
    /// `binary_default`; else the named outputs in the order named, each as
    /// its flag says. A requested name the model did not produce is a 400
    /// naming the outputs there are.
    pub fn chosen(&self, choice: &OutputChoice) -> Result<Vec<(&OutputTensor, bool)>, KserveError> {
        let Some(requested) = &choice.requested else {
            return Ok(self
                .outputs
                .iter()
                .map(|o| (o, choice.binary_default))
                .collect());
        };
        requested
            .iter()
            .map(|(name, binary)| {
                let output = self
                    .outputs
                    .iter()
                    .find(|o| &o.name == name)
                    .ok_or_else(|| {
                        let names: Vec<&str> =
                            self.outputs.iter().map(|o| o.name.as_str()).collect();
                        KserveError::bad(format!(
                            "unknown output '{name}'; the outputs of model '{}' are: {}",
                            self.model_name,
                            names.join(", ")
                        ))
                    })?;
                Ok((output, *binary))
            })
            .collect()
    }
}
