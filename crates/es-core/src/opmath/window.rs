//! Output sizes of sliding windows (convolution and pooling) and padding modes.
//!
//! One dim of size `size` read by a window of `k` taps dilated by `d` (spanning
//! `d * (k - 1) + 1` elements), moved by stride `s` over the input padded by `p0` before and
//! `p1` after, gives `(size + p0 + p1 - span) / s + 1` outputs in floor mode. Ceil mode rounds
//! the division up, then drops a last window that would start in the trailing pad (the rule of
//! PyTorch, ONNX and Caffe). SAME padding (TensorFlow) gives `ceil(size / s)` outputs whatever
//! the window, with the pads that make the last window fit (the odd one at the end:
//! SAME_UPPER); VALID is explicit zero pads.
//!
//! Arithmetic is in i128 so that no attribute value overflows; results that do not fit i64 are
//! [`SizeError::TooLarge`].

/// Why a window output size cannot be computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeError {
    /// The (dilated) window is larger than the padded input: no output.
    Empty {
        /// The input size plus both pads.
        padded: i128,
        /// The dilated window span `d * (k - 1) + 1`.
        span: i128,
    },
    /// The output size does not fit i64.
    TooLarge(i128),
    /// A window, stride or dilation below 1.
    NotPositive,
}

/// How the pads of a windowed op are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    /// The pads given (before, after).
    Explicit(i64, i64),
    /// TensorFlow's SAME: `ceil(size / s)` outputs.
    Same,
    /// No pads.
    Valid,
}

/// The span of `k` taps dilated by `d`.
fn span(k: i128, d: i128) -> i128 {
    d * (k - 1) + 1
}

/// The number of outputs along one dim (see the module docs); `ceil` selects ceil mode.
pub fn window_out(
    size: i64,
    k: i64,
    s: i64,
    d: i64,
    (p0, p1): (i64, i64),
    ceil: bool,
) -> Result<i64, SizeError> {
    if k < 1 || s < 1 || d < 1 {
        return Err(SizeError::NotPositive);
    }
    let (size, k, s, d, p0, p1) = (
        i128::from(size),
        i128::from(k),
        i128::from(s),
        i128::from(d),
        i128::from(p0),
        i128::from(p1),
    );
    let eff = span(k, d);
    let padded = size + p0 + p1;
    if padded < eff {
        return Err(SizeError::Empty { padded, span: eff });
    }
    let o = if ceil {
        let o = (padded - eff + s - 1) / s + 1;
        if (o - 1) * s >= size + p0 {
            o - 1
        } else {
            o
        }
    } else {
        (padded - eff) / s + 1
    };
    i64::try_from(o).map_err(|_| SizeError::TooLarge(o))
}

/// The number of outputs of SAME padding: `ceil(size / s)` (`s` >= 1).
pub fn same_out(size: i64, s: i64) -> i64 {
    let (size, s) = (i128::from(size), i128::from(s.max(1)));
    ((size + s - 1) / s) as i64
}

/// The pads (before, after) of SAME padding along one dim: the total makes the last of
/// `ceil(size / s)` windows fit, its odd element at the end; never negative.
pub fn same_pads(size: i64, k: i64, s: i64, d: i64) -> (i64, i64) {
    let out = i128::from(same_out(size, s));
    let need = (out - 1).max(0) * i128::from(s.max(1)) + span(i128::from(k), i128::from(d));
    let total = (need - i128::from(size)).max(0);
    let total = i64::try_from(total).unwrap_or(i64::MAX);
    split_pads(total, true)
}

/// A total pad split into (before, after) halves: floor halves, the odd element after when
/// `upper` (SAME_UPPER), before otherwise (SAME_LOWER); a negative total splits the same way.
pub fn split_pads(total: i64, upper: bool) -> (i64, i64) {
    let half = total.div_euclid(2);
    if upper {
        (half, total - half)
    } else {
        (total - half, half)
    }
}

/// The outputs along one dim for a padding mode (ceil mode applies to explicit pads).
impl Padding {
    pub fn out(self, size: i64, k: i64, s: i64, d: i64, ceil: bool) -> Result<i64, SizeError> {
        match self {
            Padding::Same if s >= 1 => Ok(same_out(size, s)),
            Padding::Same => Err(SizeError::NotPositive),
            Padding::Valid => window_out(size, k, s, d, (0, 0), false),
            Padding::Explicit(p0, p1) => window_out(size, k, s, d, (p0, p1), ceil),
        }
    }

    /// The mode named by a `padding` attribute: "SAME", "VALID", or `explicit` for the name
    /// of the explicit mode (`""` for the convolutions, "CALCULATED" for the V2 poolings).
    pub fn parse(name: &str, explicit: &str, pads: (i64, i64)) -> Option<Padding> {
        match name {
            "SAME" => Some(Padding::Same),
            "VALID" => Some(Padding::Valid),
            n if n == explicit => Some(Padding::Explicit(pads.0, pads.1)),
            _ => None,
        }
    }
}

fn to_i64(v: usize) -> Option<i64> {
    i64::try_from(v).ok()
}

/// [`window_out`] of sizes known to be non-negative; `None` for every error.
pub fn window_out_usize(
    size: usize,
    k: usize,
    s: usize,
    d: usize,
    (p0, p1): (usize, usize),
    ceil: bool,
) -> Option<usize> {
    let o = window_out(
        to_i64(size)?,
        to_i64(k)?,
        to_i64(s)?,
        to_i64(d)?,
        (to_i64(p0)?, to_i64(p1)?),
        ceil,
    )
    .ok()?;
    usize::try_from(o).ok()
}

/// One output dim of a convolution (floor mode); `None` when the dilated kernel does not fit
/// the padded input, a window/stride/dilation is 0 or a size does not fit i64.
pub fn conv_out_size(
    size: usize,
    k: usize,
    s: usize,
    d: usize,
    p0: usize,
    p1: usize,
) -> Option<usize> {
    let padded = size.checked_add(p0)?.checked_add(p1)?;
    if padded > i64::MAX as usize {
        return None;
    }
    window_out_usize(size, k, s, d, (p0, p1), false)
}

/// [`same_pads`] of sizes known to be non-negative; `None` for a window/stride/dilation of 0 or
/// a size that does not fit i64.
pub fn same_pads_usize(size: usize, k: usize, s: usize, d: usize) -> Option<(usize, usize)> {
    if k == 0 || s == 0 || d == 0 {
        return None;
    }
    let (a, b) = same_pads(to_i64(size)?, to_i64(k)?, to_i64(s)?, to_i64(d)?);
    Some((usize::try_from(a).ok()?, usize::try_from(b).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The windows of one dim counted by sliding: start positions `j * s - p0` whose window
    /// ends inside the padded input; in ceil mode also a last partial window that a rounded-up
    /// division reaches (it starts less than a stride past the last full one's place), and
    /// then the last window dropped when it starts in the trailing pad.
    fn brute(size: i64, k: i64, s: i64, d: i64, p0: i64, p1: i64, ceil: bool) -> i64 {
        let eff = d * (k - 1) + 1;
        let mut starts = Vec::new();
        let mut start = -p0;
        while start + eff <= size + p1 {
            starts.push(start);
            start += s;
        }
        if ceil {
            if start + p0 < size + p0 + p1 - eff + s && !starts.is_empty() {
                starts.push(start);
            }
            if starts.last().is_some_and(|&l| l >= size) {
                starts.pop();
            }
        }
        starts.len() as i64
    }

    #[test]
    fn floor_and_ceil_sizes() {
        assert_eq!(window_out(5, 3, 1, 1, (0, 0), false), Ok(3));
        assert_eq!(window_out(5, 3, 2, 1, (1, 1), false), Ok(3));
        assert_eq!(window_out(7, 3, 1, 2, (0, 0), false), Ok(3));
        // ceil: 6 with window 3 stride 2 gives 2.5 windows -> 3 in ceil mode.
        assert_eq!(window_out(6, 3, 2, 1, (0, 0), false), Ok(2));
        assert_eq!(window_out(6, 3, 2, 1, (0, 0), true), Ok(3));
        // ceil: a last window starting in the trailing pad is dropped.
        assert_eq!(window_out(4, 2, 2, 1, (0, 1), true), Ok(2));
        assert_eq!(
            window_out(2, 3, 1, 1, (0, 0), false),
            Err(SizeError::Empty { padded: 2, span: 3 })
        );
        assert_eq!(
            window_out(2, 0, 1, 1, (0, 0), false),
            Err(SizeError::NotPositive)
        );
        assert_eq!(
            window_out(i64::MAX, 1, 1, 1, (i64::MAX, 0), false),
            Err(SizeError::TooLarge(i128::from(i64::MAX) * 2))
        );
    }

    #[test]
    fn same_and_valid_padding() {
        assert_eq!(same_out(7, 2), 4);
        assert_eq!(same_pads(7, 3, 2, 1), (1, 1));
        assert_eq!(same_pads(6, 3, 2, 1), (0, 1));
        assert_eq!(same_pads(5, 1, 2, 1), (0, 0));
        assert_eq!(same_pads(5, 3, 1, 2), (2, 2));
        assert_eq!(split_pads(3, true), (1, 2));
        assert_eq!(split_pads(3, false), (2, 1));
        assert_eq!(split_pads(-3, true), (-2, -1));
        assert_eq!(Padding::Same.out(7, 100, 2, 1, false), Ok(4));
        assert_eq!(Padding::Valid.out(7, 3, 2, 1, true), Ok(3));
        assert_eq!(
            Padding::parse("CALCULATED", "CALCULATED", (1, 2)),
            Some(Padding::Explicit(1, 2))
        );
        assert_eq!(Padding::parse("FULL", "", (0, 0)), None);
        assert_eq!(conv_out_size(4, 3, 1, 1, 0, 0), Some(2));
        assert_eq!(conv_out_size(2, 3, 1, 1, 0, 0), None);
        assert_eq!(conv_out_size(4, 0, 1, 1, 0, 0), None);
        assert_eq!(conv_out_size(usize::MAX, 1, 1, 1, 0, 0), None);
        assert_eq!(same_pads_usize(6, 3, 2, 1), Some((0, 1)));
        assert_eq!(same_pads_usize(6, 3, 0, 1), None);
    }

    proptest! {
        #[test]
        fn sizes_match_a_sliding_count(
            size in 0i64..40, k in 1i64..6, s in 1i64..5, d in 1i64..4,
            p0 in 0i64..4, p1 in 0i64..4, ceil in any::<bool>(),
        ) {
            let want = brute(size, k, s, d, p0, p1, ceil);
            match window_out(size, k, s, d, (p0, p1), ceil) {
                Ok(o) => prop_assert_eq!(o, want),
                Err(SizeError::Empty { .. }) => prop_assert_eq!(want, 0),
                Err(e) => prop_assert!(false, "{e:?}"),
            }
        }

        #[test]
        fn same_pads_give_the_same_output(size in 1i64..60, k in 1i64..7, s in 1i64..5, d in 1i64..3) {
            let (p0, p1) = same_pads(size, k, s, d);
            prop_assert!(p0 >= 0 && p1 >= p0 && p1 - p0 <= 1);
            // With those pads a floor-mode window count gives at least SAME's output; exactly
            // SAME's when the pads were needed.
            let o = window_out(size, k, s, d, (p0, p1), false).unwrap();
            prop_assert!(o >= same_out(size, s));
            if p0 + p1 > 0 {
                prop_assert_eq!(o, same_out(size, s));
            }
        }
    }
}
