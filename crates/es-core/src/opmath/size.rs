//! Checked size arithmetic: the element count and the byte size of a shape. Every product of
//! dims in es-core goes through [`checked_product`] (or the two functions over it), so an
//! oversized shape (a `Fill` of `[2**31, 2**31]`) is an error naming the op and the shape, never
//! an overflow or a panic.

use crate::error::{Error, Result};
use crate::types::{DataType, Shape};

/// The most bytes one buffer may have: Rust's allocation limit (`isize::MAX`).
pub const MAX_BYTES: u64 = isize::MAX as u64;

/// The product of `dims`; None when a dim is unknown (negative) or the product overflows i64.
pub fn checked_product(dims: &[i64]) -> Option<i64> {
    dims.iter().try_fold(
        1i64,
        |acc, &d| if d < 0 { None } else { acc.checked_mul(d) },
    )
}

/// The element count of `shape`, for `op` (what the error names: an operator, a node, a
/// tensor): `Ok(None)` when a dim is unknown, an error when the count overflows i64.
pub fn element_count(op: &str, shape: &Shape) -> Result<Option<i64>> {
    if !shape.is_static() {
        return Ok(None);
    }
    checked_product(shape.dims()).map(Some).ok_or_else(|| {
        Error::value(format!(
            "{op}: shape {shape} has more elements than can be stored (the count overflows 64 bits)"
        ))
    })
}

/// The byte size of a `dtype` tensor of `shape`, for `op`: `Ok(None)` when a dim is unknown or
/// the dtype has no fixed element size; an error when it exceeds [`MAX_BYTES`].
pub fn byte_size(op: &str, dtype: DataType, shape: &Shape) -> Result<Option<usize>> {
    // Sub-byte types are packed: ceil(n * bits / 8) bytes.
    let (Some(n), Some(bits)) = (element_count(op, shape)?, dtype.bits()) else {
        return Ok(None);
    };
    let bytes = ((n as u128) * (bits as u128)).div_ceil(8);
    match u64::try_from(bytes) {
        Ok(b) if b <= MAX_BYTES => Ok(Some(b as usize)),
        _ => Err(Error::value(format!(
            "{op}: a {} tensor of shape {shape} needs {bytes} bytes, more than one buffer may \
             hold ({MAX_BYTES})",
            dtype.name(),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_known_unknown_and_overflowing() {
        assert_eq!(checked_product(&[]), Some(1));
        assert_eq!(checked_product(&[2, 3, 4]), Some(24));
        assert_eq!(checked_product(&[2, 0, 1 << 62]), Some(0));
        assert_eq!(checked_product(&[2, -1]), None);
        assert_eq!(checked_product(&[1 << 31, 1 << 31, 4]), None);
    }

    #[test]
    fn element_count_names_the_op_and_the_shape() {
        let big = Shape::new(vec![1 << 62, 4]);
        let e = element_count("Fill 'Fill_0'", &big)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Fill 'Fill_0'") && e.contains("[4611686018427387904, 4]"),
            "{e}"
        );
        assert_eq!(element_count("x", &Shape::new(vec![-1, 4])).unwrap(), None);
        assert_eq!(
            element_count("x", &Shape::new(vec![2, 4])).unwrap(),
            Some(8)
        );
        assert_eq!(element_count("x", &Shape::unknown_rank()).unwrap(), None);
    }

    #[test]
    fn byte_size_is_bounded_by_one_buffer() {
        let f = DataType::FLOAT;
        assert_eq!(
            byte_size("x", f, &Shape::new(vec![2, 3])).unwrap(),
            Some(24)
        );
        // 2**62 elements fit an i64 count but not a buffer of float32.
        let e = byte_size("Fill 'f'", f, &Shape::new(vec![1 << 31, 1 << 31]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Fill 'f'") && e.contains("DT_FLOAT") && e.contains("bytes"),
            "{e}"
        );
        assert_eq!(
            byte_size("x", DataType::UNDEFINED, &Shape::new(vec![2])).unwrap(),
            None
        );
        assert_eq!(byte_size("x", f, &Shape::new(vec![-1])).unwrap(), None);
    }
}
