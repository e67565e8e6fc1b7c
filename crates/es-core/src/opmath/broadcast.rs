//! Numpy broadcasting of two shapes: dims aligned at the end, a missing dim or a 1 takes the
//! other's size. Inference dims may be unknown (`UNKNOWN_DIM`, -1): an unknown dim against a
//! known one takes the known one (the known one is what a valid graph must have, or 1).

use crate::types::UNKNOWN_DIM;

/// A dim type that broadcasts: `usize` (runtime sizes, all known) or `i64` (inference dims,
/// [`UNKNOWN_DIM`] unknown).
pub trait BroadcastDim: Copy + PartialEq + std::fmt::Debug {
    const ONE: Self;
    /// Whether the dim is unknown (it broadcasts against anything).
    fn is_unknown(self) -> bool;
}

impl BroadcastDim for usize {
    const ONE: usize = 1;
    fn is_unknown(self) -> bool {
        false
    }
}

impl BroadcastDim for i64 {
    const ONE: i64 = 1;
    fn is_unknown(self) -> bool {
        self == UNKNOWN_DIM
    }
}

/// Two dims that do not broadcast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch<D>(pub D, pub D);

/// The broadcast of `a` and `b`, or the first pair of dims (from the front) that differ with
/// neither 1 nor unknown.
pub fn broadcast_dims<D: BroadcastDim>(a: &[D], b: &[D]) -> Result<Vec<D>, Mismatch<D>> {
    let n = a.len().max(b.len());
    let at = |v: &[D], i: usize| {
        if i + v.len() >= n {
            v[i + v.len() - n]
        } else {
            D::ONE
        }
    };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Ok(x),
            (x, y) if x == D::ONE => Ok(y),
            (x, y) if y == D::ONE => Ok(x),
            (x, y) if x.is_unknown() => Ok(y),
            (x, y) if y.is_unknown() => Ok(x),
            (x, y) => Err(Mismatch(x, y)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn numpy_rules() {
        assert_eq!(
            broadcast_dims::<usize>(&[2, 1, 4], &[3, 1]),
            Ok(vec![2, 3, 4])
        );
        assert_eq!(broadcast_dims::<usize>(&[], &[5]), Ok(vec![5]));
        assert_eq!(
            broadcast_dims::<usize>(&[2, 3], &[4, 3]),
            Err(Mismatch(2, 4))
        );
        assert_eq!(broadcast_dims::<i64>(&[-1, 3], &[5, 1]), Ok(vec![5, 3]));
        assert_eq!(broadcast_dims::<i64>(&[1, 3], &[-1, 3]), Ok(vec![-1, 3]));
        assert_eq!(broadcast_dims::<i64>(&[-1], &[-1]), Ok(vec![-1]));
        assert_eq!(broadcast_dims::<i64>(&[2], &[3]), Err(Mismatch(2, 3)));
    }

    /// Shapes drawn so that most pairs broadcast: dims from {1, 2, 3}.
    fn shape() -> impl Strategy<Value = Vec<usize>> {
        proptest::collection::vec(1usize..4, 0..4)
    }

    proptest! {
        #[test]
        fn symmetric(a in shape(), b in shape()) {
            prop_assert_eq!(broadcast_dims(&a, &b).is_ok(), broadcast_dims(&b, &a).is_ok());
            if let (Ok(x), Ok(y)) = (broadcast_dims(&a, &b), broadcast_dims(&b, &a)) {
                prop_assert_eq!(x, y);
            }
        }

        #[test]
        fn associative(a in shape(), b in shape(), c in shape()) {
            let ab_c = broadcast_dims(&a, &b).ok().and_then(|ab| broadcast_dims(&ab, &c).ok());
            let a_bc = broadcast_dims(&b, &c).ok().and_then(|bc| broadcast_dims(&a, &bc).ok());
            prop_assert_eq!(ab_c, a_bc);
        }

        #[test]
        fn ones_are_neutral(a in shape(), k in 0usize..4) {
            prop_assert_eq!(broadcast_dims(&a, &vec![1; k]).unwrap().len(), a.len().max(k));
            prop_assert_eq!(&broadcast_dims(&vec![1; a.len()], &a).unwrap(), &a);
        }
    }
}
