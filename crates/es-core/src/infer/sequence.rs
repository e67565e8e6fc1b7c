//! Sequences (lists of tensors) and optionals: GE's `DT_VARIANT` values.
//!
//! An edge that carries a list or an optional has dtype [`DataType::VARIANT`] and a scalar
//! shape (a handle, as TensorFlow's list ops and GE have it). What is known about its contents
//! rides in the description's attributes (see [`VariantInfo`]): the kind (a list, an optional
//! tensor, an optional list), the element dtype and the element shape. Inference keeps them
//! where it can; where they are lost the element dtype is UNDEFINED and its shape unknown.
//!
//! The operators: TensorFlow's list ops as GE names them (EmptyTensorList, TensorListPushBack,
//! TensorListPopBack, TensorListLength, TensorListGetItem), TensorFlow's optional ops
//! (OptionalFromValue, OptionalNone, OptionalHasValue, OptionalGetValue), and ge-rs ops with
//! ONNX semantics where TensorFlow has none (SequenceInsert, SequenceErase, SplitToSequence,
//! ConcatFromSequence).

use super::{InferCtx, InferFn};
use crate::attr::AttrValue;
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The attribute of a variant description naming its kind ([`VariantKind::name`]).
pub const KIND_ATTR: &str = "_variant_kind";
/// The attribute holding the element dtype (a Type).
pub const ELEMENT_DTYPE_ATTR: &str = "_element_dtype";
/// The attribute holding the element shape (a ListInt; absent: unknown rank).
pub const ELEMENT_SHAPE_ATTR: &str = "_element_shape";

/// Whether `name` is one of the attributes describing a variant's contents.
pub fn is_content_attr(name: &str) -> bool {
    matches!(name, KIND_ATTR | ELEMENT_DTYPE_ATTR | ELEMENT_SHAPE_ATTR)
}

/// What a `DT_VARIANT` value holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariantKind {
    /// A list of tensors of one dtype (ONNX's sequence).
    Sequence,
    /// An optional tensor (empty, or one tensor).
    OptionalTensor,
    /// An optional list (empty, or one list).
    OptionalSequence,
}

impl VariantKind {
    pub fn name(self) -> &'static str {
        match self {
            VariantKind::Sequence => "sequence",
            VariantKind::OptionalTensor => "optional_tensor",
            VariantKind::OptionalSequence => "optional_sequence",
        }
    }
    pub fn from_name(s: &str) -> Option<VariantKind> {
        Some(match s {
            "sequence" => VariantKind::Sequence,
            "optional_tensor" => VariantKind::OptionalTensor,
            "optional_sequence" => VariantKind::OptionalSequence,
            _ => return None,
        })
    }
}

/// What a variant description says of its value.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantInfo {
    /// None where not known (an optional whose type was lost).
    pub kind: Option<VariantKind>,
    /// The dtype of the (list's) tensors; UNDEFINED when not known.
    pub elem_dtype: DataType,
    /// The shape of the tensors (dims -1 where they differ); unknown rank when not known.
    pub elem_shape: Shape,
}

impl VariantInfo {
    pub fn new(kind: VariantKind, elem_dtype: DataType, elem_shape: Shape) -> VariantInfo {
        VariantInfo {
            kind: Some(kind),
            elem_dtype,
            elem_shape,
        }
    }

    /// What `d` says (None when it is not a variant).
    pub fn of(d: &TensorDesc) -> Option<VariantInfo> {
        if d.dtype != DataType::VARIANT {
            return None;
        }
        let kind = d
            .attrs
            .get(KIND_ATTR)
            .and_then(AttrValue::as_str)
            .and_then(VariantKind::from_name);
        let elem_dtype = d
            .attrs
            .get(ELEMENT_DTYPE_ATTR)
            .and_then(AttrValue::as_type)
            .unwrap_or(DataType::UNDEFINED);
        let elem_shape = d
            .attrs
            .get(ELEMENT_SHAPE_ATTR)
            .and_then(AttrValue::as_list_int)
            .map(|v| Shape::new(v.to_vec()))
            .unwrap_or_else(Shape::unknown_rank);
        Some(VariantInfo {
            kind,
            elem_dtype,
            elem_shape,
        })
    }

    /// The description of an edge carrying such a value.
    pub fn desc(&self) -> TensorDesc {
        let mut d = TensorDesc::new(DataType::VARIANT, Shape::scalar());
        if let Some(k) = self.kind {
            d.attrs
                .insert(KIND_ATTR.into(), AttrValue::String(k.name().into()));
        }
        if self.elem_dtype != DataType::UNDEFINED {
            d.attrs
                .insert(ELEMENT_DTYPE_ATTR.into(), AttrValue::Type(self.elem_dtype));
        }
        if !self.elem_shape.is_unknown_rank() {
            d.attrs.insert(
                ELEMENT_SHAPE_ATTR.into(),
                AttrValue::ListInt(self.elem_shape.dims().to_vec()),
            );
        }
        d
    }

    /// The description of one element (a tensor; a list for an optional list).
    pub fn element_desc(&self) -> TensorDesc {
        match self.kind {
            Some(VariantKind::OptionalSequence) => VariantInfo {
                kind: Some(VariantKind::Sequence),
                ..self.clone()
            }
            .desc(),
            None => TensorDesc::default(),
            _ => TensorDesc::new(self.elem_dtype, self.elem_shape.clone()),
        }
    }

    /// This list with a tensor of `d` added: the dtype taken where unknown, the shapes merged
    /// (a list made without an element shape keeps an unknown one: it may hold tensors of any
    /// shape already).
    fn with_element(mut self, d: &TensorDesc) -> VariantInfo {
        if self.elem_dtype == DataType::UNDEFINED {
            self.elem_dtype = d.dtype;
        }
        self.elem_shape = merge_shapes(&self.elem_shape, &d.shape);
        self
    }
}

/// `a` and `b` as one shape: dims that differ unknown, ranks that differ an unknown rank.
pub fn merge_shapes(a: &Shape, b: &Shape) -> Shape {
    match (a.rank(), b.rank()) {
        (Some(x), Some(y)) if x == y => Shape::new(
            a.dims()
                .iter()
                .zip(b.dims())
                .map(|(&p, &q)| if p == q { p } else { UNKNOWN_DIM })
                .collect(),
        ),
        _ => Shape::unknown_rank(),
    }
}

/// The merge of variant descriptions (the outputs of If/Case branches): one kind where they
/// agree, the element dtype where they agree, the element shapes merged.
pub fn merge_variants<'a>(descs: impl IntoIterator<Item = &'a TensorDesc>) -> TensorDesc {
    let mut out: Option<VariantInfo> = None;
    for d in descs {
        let Some(v) = VariantInfo::of(d) else {
            continue;
        };
        out = Some(match out {
            None => v,
            Some(o) => VariantInfo {
                kind: if o.kind == v.kind { o.kind } else { None },
                elem_dtype: if o.elem_dtype == v.elem_dtype {
                    o.elem_dtype
                } else {
                    DataType::UNDEFINED
                },
                elem_shape: merge_shapes(&o.elem_shape, &v.elem_shape),
            },
        });
    }
    out.map_or_else(
        || TensorDesc::new(DataType::VARIANT, Shape::scalar()),
        |v| v.desc(),
    )
}

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "EmptyTensorList" => empty_list,
        "TensorListPushBack" | "SequenceInsert" => push_back,
        "TensorListPopBack" => pop_back,
        "TensorListLength" => |_| Ok(vec![TensorDesc::new(DataType::INT32, Shape::scalar())]),
        "TensorListGetItem" => get_item,
        "SequenceErase" => erase,
        "SplitToSequence" => split_to_sequence,
        "ConcatFromSequence" => concat_from_sequence,
        "OptionalFromValue" => optional_from_value,
        "OptionalNone" => |_| Ok(vec![optional_of(None)]),
        "OptionalHasValue" => |_| Ok(vec![TensorDesc::new(DataType::BOOL, Shape::scalar())]),
        "OptionalGetValue" => optional_get_value,
        _ => return None,
    })
}

/// The list an input carries: what its description says, or an unknown list.
fn list_info(ctx: &InferCtx, name: &str) -> Result<VariantInfo> {
    let d = ctx.req(name)?;
    match VariantInfo::of(d) {
        Some(v) => Ok(v),
        None if d.dtype == DataType::UNDEFINED => Ok(VariantInfo::new(
            VariantKind::Sequence,
            DataType::UNDEFINED,
            Shape::unknown_rank(),
        )),
        None => Err(ctx.err(format!(
            "input '{name}' must be a list (DT_VARIANT), got {}",
            d.dtype.name()
        ))),
    }
}

/// The element dtype of a list op: the input list's, else the `element_dtype` attribute.
fn element_dtype(ctx: &InferCtx, v: &VariantInfo) -> DataType {
    if v.elem_dtype != DataType::UNDEFINED {
        return v.elem_dtype;
    }
    ctx.attrs
        .get("element_dtype")
        .and_then(AttrValue::as_type)
        .unwrap_or(DataType::UNDEFINED)
}

/// The shape an `element_shape` input gives (-1 or a scalar: unknown rank; -1 dims unknown).
fn element_shape_input(ctx: &InferCtx) -> Result<Shape> {
    Ok(match ctx.const_ints("element_shape")? {
        Some(v) if ctx.req("element_shape")?.shape.rank() == Some(1) => Shape::new(
            v.into_iter()
                .map(|x| if x < 0 { UNKNOWN_DIM } else { x })
                .collect(),
        ),
        _ => Shape::unknown_rank(),
    })
}

fn empty_list(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let dt = ctx.attr_type("element_dtype")?;
    let shape = element_shape_input(ctx)?;
    Ok(vec![
        VariantInfo::new(VariantKind::Sequence, dt, shape).desc()
    ])
}

fn push_back(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let v = list_info(ctx, "input_handle")?;
    let t = ctx.req("tensor")?;
    if let Some(dt) = ctx.attrs.get("element_dtype").and_then(AttrValue::as_type) {
        if t.dtype != DataType::UNDEFINED && t.dtype != dt {
            return Err(ctx.err(format!(
                "tensor is {}, the list holds {}",
                t.dtype.name(),
                dt.name()
            )));
        }
    }
    if v.elem_dtype != DataType::UNDEFINED
        && t.dtype != DataType::UNDEFINED
        && v.elem_dtype != t.dtype
    {
        return Err(ctx.err(format!(
            "tensor is {}, the list holds {}",
            t.dtype.name(),
            v.elem_dtype.name()
        )));
    }
    Ok(vec![v.with_element(t).desc()])
}

/// The input list and the description of one of its tensors (the shape from the list, else
/// from the `element_shape` input).
fn list_and_item(ctx: &InferCtx) -> Result<(VariantInfo, TensorDesc)> {
    let v = list_info(ctx, "input_handle")?;
    let dt = element_dtype(ctx, &v);
    let shape = if v.elem_shape.is_unknown_rank() {
        element_shape_input(ctx)?
    } else {
        v.elem_shape.clone()
    };
    Ok((v, TensorDesc::new(dt, shape)))
}

fn pop_back(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let (v, item) = list_and_item(ctx)?;
    Ok(vec![v.desc(), item])
}

fn get_item(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    Ok(vec![list_and_item(ctx)?.1])
}

fn erase(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    Ok(vec![list_info(ctx, "input_handle")?.desc()])
}

fn split_to_sequence(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let keepdims = ctx.attr_int("keepdims")? != 0;
    let split = ctx.input("split")?;
    let shape = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(r) => {
            let axis = ctx.axis(ctx.attr_int("axis")?, r, "axis")?;
            let mut dims = x.shape.dims().to_vec();
            if split.is_none() && !keepdims {
                dims.remove(axis);
            } else if split.is_none() {
                dims[axis] = 1;
            } else {
                dims[axis] = UNKNOWN_DIM;
            }
            Shape::new(dims)
        }
    };
    Ok(vec![VariantInfo::new(
        VariantKind::Sequence,
        x.dtype,
        shape,
    )
    .desc()])
}

fn concat_from_sequence(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let v = list_info(ctx, "input_handle")?;
    let new_axis = ctx.attr_int("new_axis")? != 0;
    let shape = match v.elem_shape.rank() {
        None => Shape::unknown_rank(),
        Some(r) => {
            let r_out = r + usize::from(new_axis);
            let axis = ctx.axis(ctx.attr_int("axis")?, r_out, "axis")?;
            let mut dims = v.elem_shape.dims().to_vec();
            if new_axis {
                dims.insert(axis, UNKNOWN_DIM);
            } else {
                dims[axis] = UNKNOWN_DIM;
            }
            Shape::new(dims)
        }
    };
    Ok(vec![TensorDesc::new(v.elem_dtype, shape)])
}

/// An optional's description from its value's (None: nothing known).
fn optional_of(d: Option<&TensorDesc>) -> TensorDesc {
    match d {
        None => VariantInfo {
            kind: None,
            elem_dtype: DataType::UNDEFINED,
            elem_shape: Shape::unknown_rank(),
        }
        .desc(),
        Some(d) => match VariantInfo::of(d) {
            Some(v) => VariantInfo {
                kind: Some(VariantKind::OptionalSequence),
                ..v
            }
            .desc(),
            None => VariantInfo::new(VariantKind::OptionalTensor, d.dtype, d.shape.clone()).desc(),
        },
    }
}

fn optional_from_value(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    Ok(vec![optional_of(Some(ctx.req("components")?))])
}

fn optional_get_value(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let d = ctx.req("optional")?;
    Ok(vec![match VariantInfo::of(d) {
        None => d.clone(),
        Some(v) => match v.kind {
            Some(VariantKind::Sequence) => d.clone(),
            _ => v.element_desc(),
        },
    }])
}
