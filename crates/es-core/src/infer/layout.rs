//! Layouts of the layout-sensitive operators (convolutions, poolings), decided once for the
//! shape rules and the CPU kernels.
//!
//! GE's infer functions (Conv2D, Conv3D, DepthwiseConv2D, Conv2DTranspose, AvgPool, ...) read
//! where N, C, (D,) H and W sit from each input's *origin format*, not from the `data_format`
//! attribute: Conv2D's infer function even overwrites `data_format` with x's format, so when the
//! two disagree x's format wins. Here:
//!
//! - a description states the format of its origin format, else of its format (GE's format
//!   refiner copies the format into an unset origin format);
//! - x's layout is the format x states when it is one the operator takes (NCHW or NHWC; NCDHW or
//!   NDHWC for 3-D ops), an error naming it when it is another, and, when x states none
//!   (FORMAT_ND), the `data_format` attribute's: GE's format inference gives an unformatted
//!   graph input the graph's data format before inference, and the attribute is where a graph
//!   built here states it;
//! - a filter stating a format the operator takes is read in it (NCHW, NHWC, HWCN; NCDHW, NDHWC,
//!   DHWCN), one stating none (a plain Const) takes the layout x states, as GE's format inference
//!   gives it, and any other format is an error. When neither x nor the filter states a format
//!   (a graph GE's inference refuses), the filter is read as NCHW (NCDHW): [out, in, (kd,) kh,
//!   kw], whatever `data_format` says, ge-rs's rule for unformatted graphs.

use crate::types::{Format, TensorDesc};

/// The format a description states: its origin format, else its format; ND when neither is set.
pub fn stated(d: &TensorDesc) -> Format {
    match d.origin_format {
        Format::ND | Format::RESERVED => d.format,
        f => f,
    }
}

/// A format's name as GE's messages print it (`NCHW`, not `FORMAT_NCHW`).
fn short(f: Format) -> &'static str {
    let n = f.name();
    n.strip_prefix("FORMAT_").unwrap_or(n)
}

/// "A or B", "A, B or C".
fn either(fs: &[Format]) -> String {
    let names: Vec<&str> = fs.iter().map(|&f| short(f)).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_string(),
        None => String::new(),
    }
}

/// The feature-map layouts of a 2-D operator.
pub const DATA_2D: &[Format] = &[Format::NCHW, Format::NHWC];
/// The feature-map layouts of a 3-D operator.
pub const DATA_3D: &[Format] = &[Format::NCDHW, Format::NDHWC];
/// The filter layouts of a 2-D convolution.
pub const FILTER_2D: &[Format] = &[Format::NCHW, Format::NHWC, Format::HWCN];
/// The filter layouts of a 3-D convolution.
pub const FILTER_3D: &[Format] = &[Format::NCDHW, Format::NDHWC, Format::DHWCN];

/// The layout of feature map `x` (see the module doc): `data_format` is the attribute's value
/// (its default filled in) and `allowed` the layouts the operator takes ([`DATA_2D`] or
/// [`DATA_3D`]). The error is a message without the operator's name.
pub fn data_layout(
    x: Option<&TensorDesc>,
    data_format: &str,
    allowed: &[Format],
) -> Result<Format, String> {
    match x.map_or(Format::ND, stated) {
        Format::ND => allowed
            .iter()
            .copied()
            .find(|&f| short(f) == data_format)
            .ok_or_else(|| {
                let list: Vec<String> =
                    allowed.iter().map(|&f| format!("{:?}", short(f))).collect();
                format!(
                    "attribute 'data_format' must be {}, got {data_format:?}",
                    list.join(" or ")
                )
            }),
        f if allowed.contains(&f) => Ok(f),
        f => Err(format!(
            "input x format should be {}. actual is: {}",
            either(allowed),
            short(f)
        )),
    }
}

/// The layout of a convolution filter (see the module doc): the format it states when one of
/// `allowed` ([`FILTER_2D`] or [`FILTER_3D`]); when it states none, the format `x` states, else
/// the first of `allowed` (NCHW, NCDHW).
pub fn filter_layout(
    filter: Option<&TensorDesc>,
    x: Option<&TensorDesc>,
    allowed: &[Format],
) -> Result<Format, String> {
    match filter.map_or(Format::ND, stated) {
        Format::ND => match x.map_or(Format::ND, stated) {
            f if DATA_2D.contains(&f) || DATA_3D.contains(&f) => Ok(f),
            _ => Ok(allowed.first().copied().unwrap_or(Format::NCHW)),
        },
        f if allowed.contains(&f) => Ok(f),
        f => Err(format!(
            "input filter format should be {}. actual is: {}",
            either(allowed),
            short(f)
        )),
    }
}

/// Whether `f` is a user-side layout GE's format inference carries through layout-agnostic
/// operators (NCHW, NHWC, HWCN, CHWN and their 3-D forms), not ND or an internal (storage)
/// format such as NC1HWC0 or FRACTAL_Z.
pub fn is_origin_layout(f: Format) -> bool {
    matches!(
        f,
        Format::NCHW
            | Format::NHWC
            | Format::HWCN
            | Format::CHWN
            | Format::NCDHW
            | Format::NDHWC
            | Format::DHWCN
    )
}

/// Whether a feature-map layout has its channels last (NHWC, NDHWC).
pub fn channel_last(layout: Format) -> bool {
    matches!(layout, Format::NHWC | Format::NDHWC)
}

/// The positions in a filter of layout `f` of its output channels, input channels and spatial
/// dims ((D,) H, W), or None for a format no convolution filter has.
pub fn filter_positions(f: Format) -> Option<&'static [usize]> {
    Some(match f {
        Format::NCHW => &[0, 1, 2, 3],
        Format::NHWC => &[0, 3, 1, 2],
        Format::HWCN => &[3, 2, 0, 1],
        Format::NCDHW => &[0, 1, 2, 3, 4],
        Format::NDHWC => &[0, 4, 1, 2, 3],
        Format::DHWCN => &[4, 3, 0, 1, 2],
        _ => return None,
    })
}

/// The positions in a 2-D convolution filter of layout `f` of (out channels, in channels, kh,
/// kw), as a kernel reads it: a filter stating no layout (ND) has its output channels leading
/// whatever x's layout.
pub fn filter_positions_2d(f: Format) -> Option<[usize; 4]> {
    match f {
        Format::ND => Some([0, 1, 2, 3]),
        f => filter_positions(f).and_then(|p| p.try_into().ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{DataType, Shape};

    fn desc(f: Format) -> TensorDesc {
        TensorDesc::new(DataType::FLOAT, Shape::from_slice(&[1, 2, 3, 4])).with_format(f)
    }

    #[test]
    fn origin_format_wins_over_format() {
        let mut d = desc(Format::NHWC);
        d.origin_format = Format::NCHW;
        assert_eq!(stated(&d), Format::NCHW);
        d.origin_format = Format::ND;
        assert_eq!(stated(&d), Format::NHWC);
    }

    #[test]
    fn an_unformatted_filter_follows_the_format_x_states() {
        let nd = desc(Format::ND);
        let x = desc(Format::NHWC);
        assert_eq!(
            filter_layout(Some(&nd), Some(&x), FILTER_2D),
            Ok(Format::NHWC)
        );
        assert_eq!(
            filter_layout(Some(&nd), Some(&nd), FILTER_2D),
            Ok(Format::NCHW)
        );
        assert_eq!(filter_layout(Some(&nd), None, FILTER_3D), Ok(Format::NCDHW));
        let hwcn = desc(Format::HWCN);
        assert_eq!(
            filter_layout(Some(&hwcn), Some(&x), FILTER_2D),
            Ok(Format::HWCN)
        );
    }

    #[test]
    fn messages_name_the_formats() {
        let e = data_layout(Some(&desc(Format::HWCN)), "NHWC", DATA_2D).unwrap_err();
        assert_eq!(e, "input x format should be NCHW or NHWC. actual is: HWCN");
        let e = filter_layout(Some(&desc(Format::NC1HWC0)), None, FILTER_2D).unwrap_err();
        assert_eq!(
            e,
            "input filter format should be NCHW, NHWC or HWCN. actual is: NC1HWC0"
        );
        let e = data_layout(None, "NDHWC", DATA_2D).unwrap_err();
        assert_eq!(
            e,
            "attribute 'data_format' must be \"NCHW\" or \"NHWC\", got \"NDHWC\""
        );
    }
}
