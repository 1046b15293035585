//! Tensors on the wire: a KServe datatype, a shape and the data, as one type the
//! REST and gRPC codecs both produce and consume.
//!
//! Fixed-size datatypes hold one little-endian, row-major buffer
//! ([`TensorData::Fixed`]); a binary request's tensor is a zero-copy
//! [`Bytes`] slice of the request body, a JSON or typed-contents tensor a
//! buffer packed once. `BOOL` elements are one byte, 0 or 1. `BYTES` tensors
//! are a list of byte strings ([`TensorData::Bytes`]), each a slice of the body
//! where the wire form allows it. A [`Tensor`] always holds exactly the element
//! count of its shape: decoders check this at the edge, and the constructors
//! refuse anything else.

use std::fmt;

use bytes::Bytes;
use half::f16;

use crate::error::KserveError;

/// The KServe v2 tensor datatypes.
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
    Bytes,
}

impl Datatype {
    /// Every datatype, in the order the protocol lists them.
    pub const ALL: [Datatype; 13] = [
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
        Self::Bytes,
    ];

    /// The wire name (`"FP32"`).
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
            Self::Bytes => "BYTES",
        }
    }

    /// The datatype of a wire name (exact, upper case), None for any other.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Bytes per element of a fixed-size datatype; None for `BYTES`.
    pub fn item_size(self) -> Option<usize> {
        match self {
            Self::Bool | Self::Uint8 | Self::Int8 => Some(1),
            Self::Uint16 | Self::Int16 | Self::Fp16 => Some(2),
            Self::Uint32 | Self::Int32 | Self::Fp32 => Some(4),
            Self::Uint64 | Self::Int64 | Self::Fp64 => Some(8),
            Self::Bytes => None,
        }
    }

    /// The inclusive range of an integer datatype, None for the others.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            Self::Uint8 => (0, u8::MAX.into()),
            Self::Uint16 => (0, u16::MAX.into()),
            Self::Uint32 => (0, u32::MAX.into()),
            Self::Uint64 => (0, u64::MAX.into()),
            Self::Int8 => (i8::MIN.into(), i8::MAX.into()),
            Self::Int16 => (i16::MIN.into(), i16::MAX.into()),
            Self::Int32 => (i32::MIN.into(), i32::MAX.into()),
            Self::Int64 => (i64::MIN.into(), i64::MAX.into()),
            _ => return None,
        })
    }

    /// True for `FP16`, `FP32` and `FP64`.
    pub fn is_float(self) -> bool {
        matches!(self, Self::Fp16 | Self::Fp32 | Self::Fp64)
    }
}

impl fmt::Display for Datatype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A tensor's elements.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    /// Fixed-size elements: little-endian, row-major, `count * item_size` bytes.
    Fixed(Bytes),
    /// `BYTES` elements, row-major.
    Bytes(Vec<Bytes>),
}

/// A validated tensor: its data holds exactly the elements its shape needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    datatype: Datatype,
    shape: Vec<u64>,
    data: TensorData,
}

/// The element count of a shape, None when it does not fit in `u64`.
pub fn element_count(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
}

impl Tensor {
    /// A tensor from its parts; an `Internal` error when the data's kind or
    /// length does not match the datatype and shape (a server bug, not a
    /// client's).
    pub fn new(datatype: Datatype, shape: Vec<u64>, data: TensorData) -> Result<Self, KserveError> {
        let count = element_count(&shape);
        let fits = match (&data, datatype.item_size()) {
            (TensorData::Fixed(buf), Some(size)) => {
                count.and_then(|n| n.checked_mul(size as u64)) == Some(buf.len() as u64)
            }
            (TensorData::Bytes(items), None) => count == Some(items.len() as u64),
            _ => false,
        };
        if !fits {
            return Err(KserveError::Internal(format!(
                "a {datatype} tensor of shape {shape:?} cannot hold {}",
                match &data {
                    TensorData::Fixed(buf) => format!("{} bytes of fixed-size data", buf.len()),
                    TensorData::Bytes(items) => format!("{} BYTES elements", items.len()),
                }
            )));
        }
        Ok(Self {
            datatype,
            shape,
            data,
        })
    }

    /// A tensor of typed values, packed little-endian.
    pub fn from_values<T: Element>(shape: Vec<u64>, values: &[T]) -> Result<Self, KserveError> {
        let mut buf = Vec::with_capacity(values.len() * T::DATATYPE.item_size().unwrap_or(1));
        for v in values {
            v.put_le(&mut buf);
        }
        Self::new(T::DATATYPE, shape, TensorData::Fixed(buf.into()))
    }

    /// A `BYTES` tensor.
    pub fn from_bytes_elements(shape: Vec<u64>, items: Vec<Bytes>) -> Result<Self, KserveError> {
        Self::new(Datatype::Bytes, shape, TensorData::Bytes(items))
    }

    pub(crate) fn trusted(datatype: Datatype, shape: Vec<u64>, data: TensorData) -> Self {
        debug_assert!(Self::new(datatype, shape.clone(), data.clone()).is_ok());
        Self {
            datatype,
            shape,
            data,
        }
    }

    pub fn datatype(&self) -> Datatype {
        self.datatype
    }

    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    pub fn data(&self) -> &TensorData {
        &self.data
    }

    /// The number of elements (the product of the shape).
    pub fn len(&self) -> usize {
        match &self.data {
            TensorData::Fixed(buf) => buf.len() / self.datatype.item_size().unwrap_or(1),
            TensorData::Bytes(items) => items.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as `T`, row-major; None when `T` is not this tensor's datatype.
    pub fn values<T: Element>(&self) -> Option<Vec<T>> {
        match &self.data {
            TensorData::Fixed(buf) if T::DATATYPE == self.datatype => {
                let size = self.datatype.item_size().expect("fixed-size datatype");
                Some(buf.chunks_exact(size).map(T::from_le).collect())
            }
            _ => None,
        }
    }

    /// The elements of a `BYTES` tensor; None for any other datatype.
    pub fn bytes_elements(&self) -> Option<&[Bytes]> {
        match &self.data {
            TensorData::Bytes(items) => Some(items),
            TensorData::Fixed(_) => None,
        }
    }

    /// The binary wire form: the fixed-size buffer as it is (no copy), or each
    /// `BYTES` element as a 4-byte little-endian length and its bytes.
    pub fn raw(&self) -> Bytes {
        match &self.data {
            TensorData::Fixed(buf) => buf.clone(),
            TensorData::Bytes(items) => {
                let mut out = Vec::with_capacity(items.iter().map(|b| b.len() + 4).sum());
                for item in items {
                    // Elements come from bodies within the body limit.
                    let len = u32::try_from(item.len()).unwrap_or(u32::MAX);
                    out.extend_from_slice(&len.to_le_bytes());
                    out.extend_from_slice(item);
                }
                out.into()
            }
        }
    }
}

/// A Rust type that is the element type of one fixed-size datatype.
pub trait Element: Copy + fmt::Debug {
    const DATATYPE: Datatype;
    /// The value of one little-endian element (`bytes` is exactly its size).
    fn from_le(bytes: &[u8]) -> Self;
    /// Appends the little-endian bytes of the value.
    fn put_le(&self, out: &mut Vec<u8>);
}

macro_rules! element {
    ($t:ty, $dt:expr) => {
        impl Element for $t {
            const DATATYPE: Datatype = $dt;
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("one element"))
            }
            fn put_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}

element!(u8, Datatype::Uint8);
element!(u16, Datatype::Uint16);
element!(u32, Datatype::Uint32);
element!(u64, Datatype::Uint64);
element!(i8, Datatype::Int8);
element!(i16, Datatype::Int16);
element!(i32, Datatype::Int32);
element!(i64, Datatype::Int64);
element!(f16, Datatype::Fp16);
element!(f32, Datatype::Fp32);
element!(f64, Datatype::Fp64);

impl Element for bool {
    const DATATYPE: Datatype = Datatype::Bool;
    fn from_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
    fn put_le(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datatype_names_round_trip_and_sizes() {
        for d in Datatype::ALL {
            assert_eq!(Datatype::from_name(d.name()), Some(d));
        }
        assert_eq!(Datatype::from_name("fp32"), None);
        assert_eq!(Datatype::Fp16.item_size(), Some(2));
        assert_eq!(Datatype::Bytes.item_size(), None);
    }

    #[test]
    fn constructors_refuse_data_that_does_not_fit_the_shape() {
        assert!(Tensor::from_values(vec![2, 2], &[1.0f32, 2.0, 3.0, 4.0]).is_ok());
        let err = Tensor::from_values(vec![3], &[1.0f32, 2.0]).unwrap_err();
        assert_eq!(err.http_status(), 500);
        let raw = TensorData::Fixed(Bytes::from_static(&[0; 4]));
        assert!(Tensor::new(Datatype::Bytes, vec![1], raw).is_err());
        assert!(Tensor::from_bytes_elements(vec![2], vec![Bytes::new()]).is_err());
        assert!(Tensor::new(
            Datatype::Int8,
            vec![u64::MAX, 2],
            TensorData::Fixed(Bytes::new())
        )
        .is_err());
    }

    #[test]
    fn values_and_raw_forms() {
        let t = Tensor::from_values(vec![3], &[-1i16, 0, 300]).unwrap();
        assert_eq!(t.values::<i16>(), Some(vec![-1, 0, 300]));
        assert_eq!(t.values::<u16>(), None);
        assert_eq!(&t.raw()[..], &[0xff, 0xff, 0, 0, 0x2c, 0x01]);
        let s = Tensor::from_bytes_elements(vec![2], vec![Bytes::from_static(b"ab"), Bytes::new()])
            .unwrap();
        assert_eq!(&s.raw()[..], b"\x02\0\0\0ab\0\0\0\0");
        assert_eq!(s.len(), 2);
    }
}
