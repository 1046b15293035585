//! What a model takes and gives: [`TensorSpec`] per input and output, read
//! from ONNX Runtime's session metadata, so a server can check requests
//! before they reach a batch.
//!
//! A dimension is [`Dim::Fixed`] (the graph gives its size),
//! [`Dim::Symbolic`] (dynamic, with the graph's name for it, such as `N` or
//! `batch`) or [`Dim::Dynamic`] (dynamic, unnamed). A model whose input or
//! output is not a tensor of a [`Datatype`] is refused at load.

use std::fmt;

use ort::value::{Outlet, ValueType};

use crate::{Datatype, OnnxError};

/// One dimension of a model's tensor.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A size the graph fixes.
    Fixed(usize),
    /// A dynamic size the graph names.
    Symbolic(String),
    /// A dynamic size without a name.
    Dynamic,
}

impl Dim {
    /// The fixed size, if any.
    pub fn fixed(&self) -> Option<usize> {
        match self {
            Self::Fixed(n) => Some(*n),
            _ => None,
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(n) => write!(f, "{n}"),
            Self::Symbolic(name) => f.write_str(name),
            Self::Dynamic => f.write_str("?"),
        }
    }
}

/// An input or output of a model, as its graph declares it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorSpec {
    pub name: String,
    pub datatype: Datatype,
    pub dims: Vec<Dim>,
}

impl TensorSpec {
    /// The spec of a session's outlet; `role` ("input" or "output") words the
    /// refusal of a tensor native execution does not run.
    pub(crate) fn from_outlet(outlet: &Outlet, role: &str) -> Result<Self, OnnxError> {
        let unsupported = |what: String| {
            OnnxError::UnsupportedModel(format!(
                "{role} '{}' is {what}; native ONNX execution runs tensors of {} (BYTES/strings \
                 are out of scope)",
                outlet.name(),
                Datatype::ALL.map(Datatype::name).join(", ")
            ))
        };
        let ValueType::Tensor {
            ty,
            shape,
            dimension_symbols,
        } = outlet.dtype()
        else {
            return Err(unsupported(format!("a {} (not a tensor)", outlet.dtype())));
        };
        let datatype =
            Datatype::from_ort(*ty).ok_or_else(|| unsupported(format!("a tensor of {ty}")))?;
        let dims = shape
            .iter()
            .enumerate()
            .map(|(i, &d)| match usize::try_from(d) {
                Ok(n) => Dim::Fixed(n),
                Err(_) => match dimension_symbols.get(i) {
                    Some(s) if !s.is_empty() => Dim::Symbolic(s.clone()),
                    _ => Dim::Dynamic,
                },
            })
            .collect();
        Ok(Self {
            name: outlet.name().to_owned(),
            datatype,
            dims,
        })
    }

    /// The shape as text: `[N, 4]`, `[?, 3, 32, 32]`.
    pub fn shape_text(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(Dim::to_string).collect();
        format!("[{}]", dims.join(", "))
    }
}

impl fmt::Display for TensorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.name, self.datatype, self.shape_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_text() {
        let spec = TensorSpec {
            name: "x".into(),
            datatype: Datatype::Fp32,
            dims: vec![Dim::Symbolic("N".into()), Dim::Dynamic, Dim::Fixed(4)],
        };
        assert_eq!(spec.to_string(), "x FP32 [N, ?, 4]");
        assert_eq!(
            spec.dims.iter().map(Dim::fixed).collect::<Vec<_>>(),
            [None, None, Some(4)]
        );
    }
}
