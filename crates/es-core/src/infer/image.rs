//! Inference of the ge-rs operator ImageDecoder (ONNX's), and its `pixel_format` attribute,
//! shared with the kernel and the ONNX translator.

use super::common::{check_rank, opt_str, single};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "ImageDecoder" => image_decoder,
        _ => return None,
    })
}

/// The channel layout ImageDecoder writes (its `pixel_format` attribute).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PixelFormat {
    Rgb,
    Bgr,
    Grayscale,
}

impl PixelFormat {
    /// The attribute's values, as ONNX spells them.
    pub const NAMES: [&'static str; 3] = ["RGB", "BGR", "Grayscale"];

    /// The format named `s` (ONNX's spelling, case-sensitive); `None` for any other text.
    pub fn parse(s: &str) -> Option<PixelFormat> {
        match s {
            "RGB" => Some(PixelFormat::Rgb),
            "BGR" => Some(PixelFormat::Bgr),
            "Grayscale" => Some(PixelFormat::Grayscale),
            _ => None,
        }
    }

    /// The channels of a decoded image (its last dim).
    pub fn channels(self) -> usize {
        match self {
            PixelFormat::Grayscale => 1,
            PixelFormat::Rgb | PixelFormat::Bgr => 3,
        }
    }

    /// The error words for a `pixel_format` that is none of [`PixelFormat::NAMES`].
    pub fn bad(s: &str) -> String {
        format!("pixel_format must be RGB, BGR or Grayscale, got {s:?}")
    }
}

/// ImageDecoder: a 1-D uint8 stream in; [H, W, C] uint8 out, H and W known only once the
/// bytes are decoded, C from `pixel_format`.
fn image_decoder(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let name = ctx.input_name(0, "encoded_stream");
    let x = ctx.req(name)?;
    check_rank(ctx, name, &x.shape, 1)?;
    let f = opt_str(ctx, "pixel_format", "RGB")?;
    let pf = PixelFormat::parse(f).ok_or_else(|| ctx.err(PixelFormat::bad(f)))?;
    let c = pf.channels() as i64;
    Ok(single(
        DataType::UINT8,
        Shape::new(vec![UNKNOWN_DIM, UNKNOWN_DIM, c]),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::{AttrMap, AttrValue};
    use crate::infer::infer;
    use crate::ops::global_registry;

    fn run(x: &TensorDesc, pixel_format: Option<&str>) -> Result<Vec<TensorDesc>> {
        let reg = global_registry();
        let proto = reg.get("ImageDecoder").unwrap().clone();
        let attrs: AttrMap = pixel_format
            .map(|f| ("pixel_format".to_string(), AttrValue::String(f.into())))
            .into_iter()
            .collect();
        let ctx = InferCtx {
            proto: &proto,
            node_name: "dec",
            attrs: &attrs,
            inputs: &[Some(x)],
            input_ir: &[0],
            consts: &[None],
            output_ir: &[0],
            bound: &[],
            subgraph_outputs: Vec::new(),
        };
        infer(&ctx)
    }

    fn bytes(dims: Vec<i64>) -> TensorDesc {
        TensorDesc::new(DataType::UINT8, Shape::new(dims))
    }

    #[test]
    fn channels_follow_pixel_format() {
        for (f, c) in [
            (None, 3),
            (Some("RGB"), 3),
            (Some("BGR"), 3),
            (Some("Grayscale"), 1),
        ] {
            let out = run(&bytes(vec![100]), f).unwrap();
            assert_eq!(out.len(), 1);
            assert_eq!(out[0].dtype, DataType::UINT8);
            assert_eq!(out[0].shape.dims(), &[UNKNOWN_DIM, UNKNOWN_DIM, c], "{f:?}");
        }
        // An unknown stream length and an unknown rank are accepted.
        assert!(run(&bytes(vec![UNKNOWN_DIM]), None).is_ok());
        let any = TensorDesc::new(DataType::UINT8, Shape::unknown_rank());
        assert!(run(&any, Some("Grayscale")).is_ok());
    }

    #[test]
    fn refuses_other_formats_and_ranks() {
        let e = run(&bytes(vec![10]), Some("rgb")).unwrap_err().to_string();
        assert!(e.contains("pixel_format") && e.contains("\"rgb\""), "{e}");
        let e = run(&bytes(vec![2, 5]), None).unwrap_err().to_string();
        assert!(e.contains("encoded_stream") && e.contains("1-D"), "{e}");
        for (s, c) in PixelFormat::NAMES.iter().zip([3, 3, 1]) {
            assert_eq!(PixelFormat::parse(s).map(PixelFormat::channels), Some(c));
        }
        assert_eq!(PixelFormat::parse("GRAYSCALE"), None);
    }
}
