//! OpCompatInfo: ONNX opset differences, resolved before a translator runs. Attributes that
//! later opsets turned into inputs (Split's `split`, Squeeze's `axes`, Clip's `min`/`max`,
//! Pad's `pads`, Slice's `starts`/`ends`/`axes`, ...) become literal inputs, and inputs that
//! moved are put in their newest position, so each translator handles one form: the newest.

use crate::attrs::{self, OnnxAttr};
use crate::error::{Error, Result};
use crate::proto::NodeProto;
use crate::translate::InputSrc;
use es_core::Tensor;
use std::borrow::Cow;

/// How an attribute's value becomes an input.
#[derive(Debug, Clone, Copy)]
enum Lit {
    /// A 1-D int64 tensor of the attribute's ints.
    Ints,
    /// A 1-element int64 tensor of the attribute's int.
    IntAs1D,
    /// A float scalar, cast to the dtype of input `.0` when materialised.
    FloatLike(usize),
    /// A 1-D float tensor of the attribute's floats.
    Floats,
}

/// `(op type, first opset where the attribute is an input, attribute, input position, form)`.
/// Only the default domain.
const ATTRS_TO_INPUTS: &[(&str, i64, &str, usize, Lit)] = &[
    ("Split", 13, "split", 1, Lit::Ints),
    ("Squeeze", 13, "axes", 1, Lit::Ints),
    ("Unsqueeze", 13, "axes", 1, Lit::Ints),
    ("ReduceSum", 13, "axes", 1, Lit::Ints),
    ("ReduceMean", 18, "axes", 1, Lit::Ints),
    ("ReduceMax", 18, "axes", 1, Lit::Ints),
    ("ReduceMin", 18, "axes", 1, Lit::Ints),
    ("ReduceProd", 18, "axes", 1, Lit::Ints),
    ("ReduceL1", 18, "axes", 1, Lit::Ints),
    ("ReduceL2", 18, "axes", 1, Lit::Ints),
    ("ReduceLogSum", 18, "axes", 1, Lit::Ints),
    ("ReduceLogSumExp", 18, "axes", 1, Lit::Ints),
    ("ReduceSumSquare", 18, "axes", 1, Lit::Ints),
    ("Clip", 11, "min", 1, Lit::FloatLike(0)),
    ("Clip", 11, "max", 2, Lit::FloatLike(0)),
    ("Pad", 11, "pads", 1, Lit::Ints),
    ("Pad", 11, "paddings", 1, Lit::Ints),
    ("Pad", 11, "value", 2, Lit::FloatLike(0)),
    ("Slice", 10, "starts", 1, Lit::Ints),
    ("Slice", 10, "ends", 2, Lit::Ints),
    ("Slice", 10, "axes", 3, Lit::Ints),
    ("TopK", 10, "k", 1, Lit::IntAs1D),
    ("Reshape", 5, "shape", 1, Lit::Ints),
    ("Upsample", 9, "scales", 1, Lit::Floats),
    ("Dropout", 12, "ratio", 1, Lit::FloatLike(0)),
];

/// A node in the newest form, with the literal inputs made from attributes.
pub(crate) struct Normalized<'n> {
    pub node: Cow<'n, NodeProto>,
    pub literals: Vec<(usize, InputSrc)>,
}

pub(crate) fn normalize(n: &NodeProto, opset: i64) -> Result<Normalized<'_>> {
    let mut out = Normalized {
        node: Cow::Borrowed(n),
        literals: Vec::new(),
    };
    if !n.onnx_domain().is_empty() {
        return Ok(out);
    }
    let op = n.op_type();
    for &(ty, since, attr, pos, lit) in ATTRS_TO_INPUTS {
        if ty != op || opset >= since {
            continue;
        }
        let Some(a) = n.attr(attr) else { continue };
        let v = attrs::read(a)?;
        let bad = || {
            Error::tr(format!(
                "attribute '{attr}' of {op} (opset {opset}) has the wrong kind {}",
                v.kind()
            ))
        };
        let t = match (lit, &v) {
            (Lit::Ints, OnnxAttr::Ints(x)) => Tensor::from_values(x, vec![x.len() as i64])?,
            (Lit::Ints, OnnxAttr::Int(x)) => Tensor::from_values(&[*x], vec![1])?,
            (Lit::IntAs1D, OnnxAttr::Int(x)) => Tensor::from_values(&[*x], vec![1])?,
            (Lit::FloatLike(_), OnnxAttr::Float(x)) => Tensor::scalar(*x),
            (Lit::Floats, OnnxAttr::Floats(x)) => Tensor::from_values(x, vec![x.len() as i64])?,
            _ => return Err(bad()),
        };
        let like = match lit {
            Lit::FloatLike(i) => Some(i),
            _ => None,
        };
        out.literals.push((pos, InputSrc::Literal(t, like)));
    }
    // Inputs that moved: Resize opset 10 and Upsample take (X, scales); the newest Resize
    // takes (X, roi, scales, sizes).
    if (op == "Resize" && opset < 11) || op == "Upsample" {
        let mut m = n.clone();
        if m.input.len() >= 2 {
            let scales = m.input.remove(1);
            m.input.insert(1, String::new());
            m.input.insert(2, scales);
        }
        out.node = Cow::Owned(m);
        for l in out.literals.iter_mut() {
            if l.0 == 1 {
                l.0 = 2;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::AttributeProto;

    fn node(op: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
        NodeProto {
            op_type: Some(op.into()),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec!["y".into()],
            attribute: attrs,
            ..Default::default()
        }
    }
    fn ints(name: &str, v: &[i64]) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            ints: v.to_vec(),
            r#type: Some(crate::proto::AttributeType::Ints as i32),
            ..Default::default()
        }
    }

    #[test]
    fn attributes_become_inputs_only_in_old_opsets() {
        let n = node("Squeeze", &["x"], vec![ints("axes", &[0, 2])]);
        let old = normalize(&n, 11).unwrap();
        assert_eq!(old.literals.len(), 1);
        match &old.literals[0] {
            (1, InputSrc::Literal(t, None)) => {
                assert_eq!(t.to_i64_vec().unwrap(), vec![0, 2])
            }
            other => panic!("{other:?}"),
        }
        assert!(normalize(&n, 13).unwrap().literals.is_empty());
    }

    #[test]
    fn resize_10_moves_scales_to_position_2() {
        let n = node("Resize", &["x", "s"], vec![]);
        let m = normalize(&n, 10).unwrap();
        assert_eq!(m.node.input, vec!["x", "", "s"]);
        let m = normalize(&n, 13).unwrap();
        assert_eq!(m.node.input, vec!["x", "s"]);
    }
}
