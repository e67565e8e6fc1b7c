//! OpCompatInfo: ONNX opset differences, resolved before a translator runs. Attributes that
//! later opsets turned into inputs (Split's `split`, Squeeze's `axes`, Clip's `min`/`max`,
//! Pad's `pads`, Slice's `starts`/`ends`/`axes`, ...) become literal inputs, and inputs that
//! moved are put in their newest position, so each translator handles one form: the newest.

use crate::attrs::{self, OnnxAttr};
use crate::error::{Error, Result};
use crate::proto::NodeProto;
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

/// `(attribute, input position, form)`.
type AttrInput = (&'static str, usize, Lit);

/// The reductions whose `axes` attribute became an input in opset 18 (ReduceSum: 13).
const AXES_INPUT_SINCE_18: &[&str] = &[
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
];

/// `(op type, first opset where the attributes are inputs, [(attribute, input position,
/// form)])`, one row per operator; with [`AXES_INPUT_SINCE_18`]. Only the default domain.
const ATTRS_TO_INPUTS: &[(&str, i64, &[AttrInput])] = &[
    ("Split", 13, &[("split", 1, Lit::Ints)]),
    ("Squeeze", 13, &[("axes", 1, Lit::Ints)]),
    ("Unsqueeze", 13, &[("axes", 1, Lit::Ints)]),
    ("ReduceSum", 13, &[("axes", 1, Lit::Ints)]),
    (
        "Clip",
        11,
        &[("min", 1, Lit::FloatLike(0)), ("max", 2, Lit::FloatLike(0))],
    ),
    (
        "Pad",
        11,
        &[
            ("pads", 1, Lit::Ints),
            ("paddings", 1, Lit::Ints),
            ("value", 2, Lit::FloatLike(0)),
        ],
    ),
    (
        "Slice",
        10,
        &[
            ("starts", 1, Lit::Ints),
            ("ends", 2, Lit::Ints),
            ("axes", 3, Lit::Ints),
        ],
    ),
    ("TopK", 10, &[("k", 1, Lit::IntAs1D)]),
    ("Reshape", 5, &[("shape", 1, Lit::Ints)]),
    ("Upsample", 9, &[("scales", 1, Lit::Floats)]),
    ("Dropout", 12, &[("ratio", 1, Lit::FloatLike(0))]),
];

/// The attributes of `op` that are inputs from some opset on: `(since, attribute, input
/// position, form)`, in table order.
fn attrs_to_inputs(op: &str) -> impl Iterator<Item = (i64, &'static str, usize, Lit)> + '_ {
    let reduce: &'static [AttrInput] = &[("axes", 1, Lit::Ints)];
    let rows = ATTRS_TO_INPUTS
        .iter()
        .map(|&(ty, since, attrs)| (ty, since, attrs))
        .chain(AXES_INPUT_SINCE_18.iter().map(move |&ty| (ty, 18, reduce)));
    rows.filter(move |&(ty, _, _)| ty == op)
        .flat_map(|(_, since, attrs)| attrs.iter().map(move |&(a, pos, lit)| (since, a, pos, lit)))
}

/// Whether the compatibility layer turns attribute `attr` of node `n` into an input at `opset`
/// (the translator of the newest form reads the input).
pub(crate) fn attr_becomes_input(n: &NodeProto, attr: &str, opset: i64) -> bool {
    n.onnx_domain().is_empty()
        && attrs_to_inputs(n.op_type()).any(|(since, a, _, _)| a == attr && opset < since)
}

/// A literal input made from an attribute: the tensor, and `like`, the input whose dtype it
/// takes when it is materialised.
#[derive(Debug, Clone)]
pub(crate) struct Literal {
    pub tensor: Tensor,
    pub like: Option<usize>,
}

/// A node in the newest form, with the literal inputs made from attributes.
pub(crate) struct Normalized<'n> {
    pub node: Cow<'n, NodeProto>,
    pub literals: Vec<(usize, Literal)>,
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
    for (since, attr, pos, lit) in attrs_to_inputs(op) {
        if opset >= since {
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
        out.literals.push((pos, Literal { tensor: t, like }));
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
            (1, Literal { tensor, like: None }) => {
                assert_eq!(tensor.to_i64_vec().unwrap(), vec![0, 2])
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
