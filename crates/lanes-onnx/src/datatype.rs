//! The tensor datatypes native execution runs: the KServe v2 datatypes that
//! ONNX Runtime also has.
//!
//! A tensor's data is its elements as little-endian bytes in row-major order,
//! as the KServe binary tensor extension carries them: FP16 as IEEE 754 half
//! precision (two bytes), BOOL as one byte that is 0 or 1. BYTES (strings) is
//! out of scope: ONNX Runtime keeps strings as C++ objects, not as a byte
//! buffer, so they cannot be assembled without a conversion per element; a
//! model with a string input or output is refused at load
//! ([`OnnxError::UnsupportedModel`](crate::OnnxError::UnsupportedModel)), as
//! are bfloat16, the float8s and complex numbers, which KServe has no name for.

use std::fmt;

use ort::value::TensorElementType;

/// A tensor datatype, named as KServe v2 names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Datatype {
    Bool,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Int8,
    Int16,
    Int32,
    Int64,
    Fp16,
    Fp32,
    Fp64,
}

impl Datatype {
    /// Every datatype, in KServe's order.
    pub const ALL: [Datatype; 12] = [
        Self::Bool,
        Self::Uint8,
        Self::Uint16,
        Self::Uint32,
        Self::Uint64,
        Self::Int8,
        Self::Int16,
        Self::Int32,
        Self::Int64,
        Self::Fp16,
        Self::Fp32,
        Self::Fp64,
    ];

    /// The KServe name (`FP32`, `INT64`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Bool => "BOOL",
            Self::Uint8 => "UINT8",
            Self::Uint16 => "UINT16",
            Self::Uint32 => "UINT32",
            Self::Uint64 => "UINT64",
            Self::Int8 => "INT8",
            Self::Int16 => "INT16",
            Self::Int32 => "INT32",
            Self::Int64 => "INT64",
            Self::Fp16 => "FP16",
            Self::Fp32 => "FP32",
            Self::Fp64 => "FP64",
        }
    }

    /// The datatype of KServe name `name`; `None` for BYTES and unknown names.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::Bool | Self::Uint8 | Self::Int8 => 1,
            Self::Uint16 | Self::Int16 | Self::Fp16 => 2,
            Self::Uint32 | Self::Int32 | Self::Fp32 => 4,
            Self::Uint64 | Self::Int64 | Self::Fp64 => 8,
        }
    }

    /// The datatype of an ONNX Runtime element type; `None` for the types
    /// native execution does not run (see the module overview).
    pub fn from_ort(ty: TensorElementType) -> Option<Self> {
        Some(match ty {
            TensorElementType::Bool => Self::Bool,
            TensorElementType::Uint8 => Self::Uint8,
            TensorElementType::Uint16 => Self::Uint16,
            TensorElementType::Uint32 => Self::Uint32,
            TensorElementType::Uint64 => Self::Uint64,
            TensorElementType::Int8 => Self::Int8,
            TensorElementType::Int16 => Self::Int16,
            TensorElementType::Int32 => Self::Int32,
            TensorElementType::Int64 => Self::Int64,
            TensorElementType::Float16 => Self::Fp16,
            TensorElementType::Float32 => Self::Fp32,
            TensorElementType::Float64 => Self::Fp64,
            _ => return None,
        })
    }
}

impl fmt::Display for Datatype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sizes_and_ort_types_agree() {
        let cases = [
            (TensorElementType::Bool, "BOOL", 1),
            (TensorElementType::Uint8, "UINT8", 1),
            (TensorElementType::Uint16, "UINT16", 2),
            (TensorElementType::Uint32, "UINT32", 4),
            (TensorElementType::Uint64, "UINT64", 8),
            (TensorElementType::Int8, "INT8", 1),
            (TensorElementType::Int16, "INT16", 2),
            (TensorElementType::Int32, "INT32", 4),
            (TensorElementType::Int64, "INT64", 8),
            (TensorElementType::Float16, "FP16", 2),
            (TensorElementType::Float32, "FP32", 4),
            (TensorElementType::Float64, "FP64", 8),
        ];
        assert_eq!(cases.len(), Datatype::ALL.len());
        for (ty, name, size) in cases {
            let d = Datatype::from_ort(ty).expect(name);
            assert_eq!((d.name(), d.size()), (name, size));
            assert_eq!(Datatype::from_name(name), Some(d));
        }
    }

    #[test]
    fn out_of_scope_types_have_no_datatype() {
        for ty in [
            TensorElementType::String,
            TensorElementType::Bfloat16,
            TensorElementType::Complex64,
            TensorElementType::Float8E5M2,
        ] {
            assert_eq!(Datatype::from_ort(ty), None, "{ty:?}");
        }
        assert_eq!(Datatype::from_name("BYTES"), None);
        assert_eq!(Datatype::from_name("fp32"), None);
    }
}
