//! Sequences and optionals: SequenceEmpty/Construct/At/Insert/Erase/Length, SplitToSequence,
//! ConcatFromSequence, SequenceMap, Optional, OptionalHasElement, OptionalGetElement.
//!
//! A sequence or optional is a `DT_VARIANT` edge (see [`es_core::infer::sequence`]). The list
//! ops are TensorFlow's as GE names them (EmptyTensorList, TensorListPushBack,
//! TensorListPopBack, TensorListGetItem, TensorListLength), the optional ops TensorFlow's
//! (OptionalFromValue, OptionalNone, OptionalHasValue, OptionalGetValue); where ONNX's semantics
//! have no TensorFlow op, a ge-rs op with ONNX's name (SequenceInsert with a position,
//! SequenceErase with a position, SplitToSequence, ConcatFromSequence). SequenceMap becomes a
//! While over the elements, as Loop does (see [`super::control`]).

use super::control::{
    bconst_i64, body_out_desc, body_port, bop, bop1, build_while, redirect, rewire, scalar_desc,
    Rewire,
};
use super::util::{Out, Translator};
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use crate::types::dtype_from_onnx;
use es_core::infer::sequence::{VariantInfo, VariantKind};
use es_core::{AttrValue, DataType, OutPort, Shape, TensorDesc};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("SequenceEmpty", sequence_empty),
    ("SequenceConstruct", sequence_construct),
    ("SequenceAt", sequence_at),
    ("SequenceInsert", sequence_insert),
    ("SequenceErase", sequence_erase),
    ("SequenceLength", sequence_length),
    ("SplitToSequence", split_to_sequence),
    ("ConcatFromSequence", concat_from_sequence),
    ("SequenceMap", sequence_map),
    ("Optional", optional),
    ("OptionalHasElement", optional_has_element),
    ("OptionalGetElement", optional_get_element),
];

/// The description of an ONNX `seq(elem)` value.
pub(crate) fn list_desc(elem: &TensorDesc, what: &str) -> Result<TensorDesc> {
    if elem.dtype == DataType::VARIANT {
        return Err(Error::unsupported(format!(
            "{what} is a sequence of sequences or optionals"
        )));
    }
    Ok(VariantInfo::new(VariantKind::Sequence, elem.dtype, elem.shape.clone()).desc())
}

/// The description of an ONNX `optional(elem)` value.
pub(crate) fn optional_desc(elem: &TensorDesc, what: &str) -> Result<TensorDesc> {
    match VariantInfo::of(elem) {
        None => Ok(
            VariantInfo::new(VariantKind::OptionalTensor, elem.dtype, elem.shape.clone()).desc(),
        ),
        Some(v) if v.kind == Some(VariantKind::Sequence) => Ok(VariantInfo {
            kind: Some(VariantKind::OptionalSequence),
            ..v
        }
        .desc()),
        Some(_) => Err(Error::unsupported(format!(
            "{what} is an optional of an optional"
        ))),
    }
}

impl NodeCtx<'_> {
    /// What input `i` holds, which must be a sequence.
    fn list_input(&self, i: usize) -> Result<VariantInfo> {
        let d = self.input_desc(i)?;
        match VariantInfo::of(&d) {
            Some(v) if matches!(v.kind, Some(VariantKind::Sequence) | None) => Ok(v),
            _ => Err(Error::tr(format!(
                "{}: input {i} must be a sequence, got {}",
                self.op_type(),
                if d.dtype == DataType::VARIANT {
                    "an optional".to_string()
                } else {
                    format!("a {} tensor", d.dtype.name())
                }
            ))),
        }
    }

    /// The element dtype of sequence input `i`, which must be known at import.
    fn element_dtype(&self, i: usize) -> Result<DataType> {
        let v = self.list_input(i)?;
        if v.elem_dtype == DataType::UNDEFINED {
            return Err(Error::unsupported(format!(
                "{}: the element type of sequence input {i} must be known at import",
                self.op_type()
            )));
        }
        Ok(v.elem_dtype)
    }

    /// An empty list of `dt` tensors of shape `shape` (unknown rank: any shape).
    fn empty_list(&mut self, dt: DataType, shape: &Shape) -> Result<OutPort> {
        let es = match shape.rank() {
            Some(r) => self.const_i32(
                &shape
                    .dims()
                    .iter()
                    .map(|&d| d.max(-1) as i32)
                    .collect::<Vec<_>>(),
                &[r as i64],
            )?,
            None => self.const_i32(&[-1], &[])?,
        };
        let max = self.const_i32(&[-1], &[])?;
        self.op1(
            "EmptyTensorList",
            &[es, max],
            vec![("element_dtype", AttrValue::Type(dt))],
        )
    }

    /// A tensor input's dtype, which must not be a sequence or optional.
    fn tensor_input(&mut self, i: usize) -> Result<OutPort> {
        let d = self.input_desc(i)?;
        if d.dtype == DataType::VARIANT {
            return Err(Error::tr(format!(
                "{}: input {i} must be a tensor, got a sequence or optional",
                self.op_type()
            )));
        }
        self.input(i)
    }
}

fn unknown_shape_i32(ctx: &mut NodeCtx<'_>) -> Result<OutPort> {
    ctx.const_i32(&[-1], &[])
}

fn sequence_empty(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["dtype"])?;
    let dt = match ctx.attr("dtype")? {
        None => DataType::FLOAT,
        Some(_) => dtype_from_onnx(ctx.attr_i("dtype", 1)? as i32)?,
    };
    Ok(vec![Some(ctx.empty_list(dt, &Shape::unknown_rank())?)])
}

fn sequence_construct(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let n = ctx.num_inputs();
    if n == 0 {
        return Err(Error::tr("SequenceConstruct needs at least one input"));
    }
    let mut xs = Vec::with_capacity(n);
    for i in 0..n {
        xs.push(ctx.tensor_input(i)?);
    }
    let first = ctx.desc(xs[0])?;
    let mut shape = first.shape.clone();
    for &x in &xs[1..] {
        let d = ctx.desc(x)?;
        if d.dtype != first.dtype {
            return Err(Error::tr(format!(
                "SequenceConstruct: the inputs have different dtypes ({} and {})",
                first.dtype.name(),
                d.dtype.name()
            )));
        }
        shape = es_core::infer::sequence::merge_shapes(&shape, &d.shape);
    }
    let mut list = ctx.empty_list(first.dtype, &shape)?;
    for x in xs {
        list = ctx.op1(
            "TensorListPushBack",
            &[list, x],
            vec![("element_dtype", AttrValue::Type(first.dtype))],
        )?;
    }
    Ok(vec![Some(list)])
}

fn sequence_at(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let dt = ctx.element_dtype(0)?;
    let s = ctx.input(0)?;
    let pos = ctx.input(1)?;
    let es = unknown_shape_i32(ctx)?;
    let y = ctx.op1(
        "TensorListGetItem",
        &[s, pos, es],
        vec![("element_dtype", AttrValue::Type(dt))],
    )?;
    Ok(vec![Some(y)])
}

fn sequence_insert(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    ctx.list_input(0)?;
    let s = ctx.input(0)?;
    let t = ctx.tensor_input(1)?;
    let y = match ctx.opt_input(2)? {
        None => {
            let dt = ctx.desc(t)?.dtype;
            ctx.op1(
                "TensorListPushBack",
                &[s, t],
                vec![("element_dtype", AttrValue::Type(dt))],
            )?
        }
        Some(p) => ctx.op1("SequenceInsert", &[s, t, p], vec![])?,
    };
    Ok(vec![Some(y)])
}

fn sequence_erase(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    ctx.list_input(0)?;
    let s = ctx.input(0)?;
    let y = match ctx.opt_input(1)? {
        None => {
            let dt = ctx.element_dtype(0)?;
            let es = unknown_shape_i32(ctx)?;
            ctx.op(
                "TensorListPopBack",
                vec![vec![Some(s)], vec![Some(es)]],
                vec![("element_dtype", AttrValue::Type(dt))],
            )?[0]
        }
        Some(p) => ctx.op1("SequenceErase", &[s, p], vec![])?,
    };
    Ok(vec![Some(y)])
}

fn sequence_length(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    ctx.list_input(0)?;
    let s = ctx.input(0)?;
    let n = ctx.op1("TensorListLength", &[s], vec![])?;
    Ok(vec![Some(ctx.cast(n, DataType::INT64)?)])
}

fn split_to_sequence(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "keepdims"])?;
    let x = ctx.tensor_input(0)?;
    let split = ctx.opt_input(1)?;
    let axis = ctx.attr_i("axis", 0)?;
    let keepdims = ctx.attr_i("keepdims", 1)?;
    let y = ctx.op(
        "SplitToSequence",
        vec![vec![Some(x)], vec![split]],
        vec![
            ("axis", AttrValue::Int(axis)),
            ("keepdims", AttrValue::Int(keepdims)),
        ],
    )?[0];
    Ok(vec![Some(y)])
}

fn concat_from_sequence(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "new_axis"])?;
    ctx.list_input(0)?;
    let axis = ctx
        .attr("axis")?
        .map(|_| ctx.attr_i("axis", 0))
        .transpose()?
        .ok_or_else(|| Error::tr("ConcatFromSequence needs the attribute 'axis'"))?;
    let new_axis = ctx.attr_i("new_axis", 0)?;
    let s = ctx.input(0)?;
    let y = ctx.op1(
        "ConcatFromSequence",
        &[s],
        vec![
            ("axis", AttrValue::Int(axis)),
            ("new_axis", AttrValue::Int(new_axis)),
        ],
    )?;
    Ok(vec![Some(y)])
}

fn optional(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["type"])?;
    let y = match ctx.opt_input(0)? {
        Some(x) => {
            if let Some(VariantInfo { kind: Some(k), .. }) = VariantInfo::of(&ctx.desc(x)?) {
                if k != VariantKind::Sequence {
                    return Err(Error::unsupported("Optional of an optional"));
                }
            }
            ctx.op1("OptionalFromValue", &[x], vec![])?
        }
        None => {
            if !ctx.has_attr("type") {
                return Err(Error::tr(
                    "Optional without an input needs the attribute 'type'",
                ));
            }
            ctx.op("OptionalNone", vec![], vec![])?[0]
        }
    };
    Ok(vec![Some(y)])
}

fn optional_has_element(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let y = match ctx.opt_input(0)? {
        // No input: an empty optional.
        None => ctx.constant(es_core::Tensor::scalar(false))?,
        Some(x) => {
            let d = ctx.desc(x)?;
            if d.dtype == DataType::VARIANT || d.dtype == DataType::UNDEFINED {
                ctx.op1("OptionalHasValue", &[x], vec![])?
            } else {
                // A tensor is always present.
                ctx.constant(es_core::Tensor::scalar(true))?
            }
        }
    };
    Ok(vec![Some(y)])
}

fn optional_get_element(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let x = ctx.input(0)?;
    let d = ctx.desc(x)?;
    let y = if d.dtype == DataType::VARIANT || d.dtype == DataType::UNDEFINED {
        ctx.op1("OptionalGetValue", &[x], vec![])?
    } else {
        ctx.op1("Identity", &[x], vec![])?
    };
    Ok(vec![Some(y)])
}

/// SequenceMap as a While. Loop values: [i, n (the length of input 0), the node's m inputs
/// (sequences and tensors), the k output lists, the captured values]. The body reads element
/// i of each sequence input (TensorListGetItem), takes each tensor input as is, and appends its
/// outputs to the output lists.
fn sequence_map(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["body"])?;
    let body = ctx
        .attr_graph("body")?
        .ok_or_else(|| Error::tr("SequenceMap needs the attribute 'body'"))?;
    let m = ctx.num_inputs();
    if m == 0 {
        return Err(Error::tr("SequenceMap needs at least one input"));
    }
    if body.input.len() != m {
        return Err(Error::tr(format!(
            "SequenceMap: the body has {} inputs, the node {m}",
            body.input.len()
        )));
    }
    let k = body.output.len();
    if ctx.num_outputs() > k {
        return Err(Error::tr(format!(
            "SequenceMap: the node has {} outputs, the body gives {k}",
            ctx.num_outputs()
        )));
    }
    ctx.list_input(0)?;
    let mut ins = Vec::with_capacity(m);
    let mut is_seq = Vec::with_capacity(m);
    let mut formal = Vec::with_capacity(m);
    for i in 0..m {
        let p = ctx.input(i)?;
        let d = ctx.desc(p)?;
        match VariantInfo::of(&d) {
            Some(v) => {
                ctx.list_input(i)?;
                formal.push(TensorDesc::new(v.elem_dtype, v.elem_shape.clone()));
                is_seq.push(true);
            }
            None => {
                formal.push(d);
                is_seq.push(false);
            }
        }
        ins.push(p);
    }
    let sub = ctx.subgraph(body, &formal)?;
    let caps: Vec<OutPort> = sub.captures.iter().map(|c| c.1).collect();
    let ncap = caps.len();
    // The output lists start empty, of the body outputs' dtypes.
    let mut lists = Vec::with_capacity(k);
    for j in 0..k {
        let d = body_out_desc(&sub, body, j)?;
        if d.dtype == DataType::UNDEFINED || d.dtype == DataType::VARIANT {
            return Err(Error::unsupported(format!(
                "SequenceMap: body output {j} must be a tensor of a dtype known at import"
            )));
        }
        lists.push(ctx.empty_list(d.dtype, &Shape::unknown_rank())?);
    }
    let (ml, kl) = (m as i64, k as i64);
    let mut new_inputs = vec![
        (0, scalar_desc(DataType::INT64), "iteration".to_string()),
        (1, scalar_desc(DataType::INT64), "count".to_string()),
    ];
    for (i, &p) in ins.iter().enumerate() {
        if is_seq[i] {
            new_inputs.push((2 + i as i64, ctx.desc(p)?, format!("sequence_{i}")));
        }
    }
    for (j, &l) in lists.iter().enumerate() {
        new_inputs.push((2 + ml + j as i64, ctx.desc(l)?, format!("output_{j}")));
    }
    let seqs = is_seq.clone();
    let (mut b, ports, dropped) = rewire(
        sub,
        Rewire {
            map: Box::new(move |old| {
                if old < ml {
                    (!seqs[old as usize]).then_some(2 + old)
                } else {
                    Some(old + 2 + kl)
                }
            }),
            new_inputs,
        },
    )?;
    let port = body_port(&ports, "SequenceMap");
    let unknown = b.create_const(es_core::Tensor::from_values(&[-1i32], vec![])?, None)?;
    for i in (0..m).filter(|&i| is_seq[i]) {
        let Some(&old) = dropped.get(&(i as i64)) else {
            return Err(Error::tr(
                "internal: a SequenceMap element input is missing",
            ));
        };
        let dt = b.graph().out_desc(old)?.dtype;
        let item = bop1(
            &mut b,
            "TensorListGetItem",
            &[port(2 + i as i64)?, port(0)?, unknown],
            vec![("element_dtype", AttrValue::Type(dt))],
        )?;
        redirect(b.graph_mut(), old, item)?;
        b.graph_mut().remove_node(old.node)?;
    }
    let old_outs = b.graph().outputs.clone();
    let one = bconst_i64(&mut b, &[1], &[])?;
    let i_next = bop1(&mut b, "Add", &[port(0)?, one], vec![])?;
    let mut outs = vec![i_next, port(1)?];
    for i in 0..m {
        outs.push(port(2 + i as i64)?);
    }
    for (j, &y) in old_outs.iter().enumerate() {
        let dt = b.graph().out_desc(y)?.dtype;
        let l = bop(
            &mut b,
            "TensorListPushBack",
            vec![vec![Some(port(2 + ml + j as i64)?)], vec![Some(y)]],
            vec![("element_dtype", AttrValue::Type(dt))],
        )?;
        outs.push(l);
    }
    for c in 0..ncap {
        outs.push(port(2 + ml + kl + c as i64)?);
    }
    let len = ctx.op1("TensorListLength", &[ins[0]], vec![])?;
    let n = ctx.cast(len, DataType::INT64)?;
    let mut head = vec![ctx.const_i64(&[0], &[])?, n];
    head.extend(ins);
    head.extend(lists);
    let res = build_while(ctx, &mut b, &outs, head, &[], caps, false)?;
    Ok(res[2 + m..2 + m + k].iter().map(|&p| Some(p)).collect())
}
