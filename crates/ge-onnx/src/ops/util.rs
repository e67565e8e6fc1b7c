//! Small helpers shared by the special handlers.

use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::{AttrValue, DataType, OutPort};

pub(crate) type Out = Result<Vec<Option<OutPort>>>;

/// `axis` (ONNX allows negative values counting from the end) as an index into `rank` dims.
pub(crate) fn norm_axis(axis: i64, rank: usize, what: &str) -> Result<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if !(0..r.max(1)).contains(&a) {
        return Err(Error::tr(format!(
            "{what} {axis} is out of range for rank {rank}"
        )));
    }
    Ok(a as usize)
}

/// Every axis of `axes` normalised with [`norm_axis`]; repeats are an error.
#[allow(dead_code)] // for the reduction and squeeze handlers
pub(crate) fn norm_axes(axes: &[i64], rank: usize, what: &str) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = norm_axis(a, rank, what)?;
        if out.contains(&n) {
            return Err(Error::tr(format!("{what} {axes:?} repeats axis {n}")));
        }
        out.push(n);
    }
    Ok(out)
}

/// Largest number of elements a translator materialises as a constant (index tables, DFT
/// matrices, fills): model-given shapes must not make the importer allocate without bound.
pub(crate) const MAX_CONST_ELEMS: i64 = 1 << 26;

/// The product of `dims`, when it is at most [`MAX_CONST_ELEMS`].
pub(crate) fn const_elems(dims: &[i64], what: &str) -> Result<usize> {
    dims.iter()
        .try_fold(1i64, |a, &d| if d < 0 { None } else { a.checked_mul(d) })
        .filter(|&n| n <= MAX_CONST_ELEMS)
        .map(|n| n as usize)
        .ok_or_else(|| {
            Error::unsupported(format!(
                "{what} of shape {dims:?}: more than {MAX_CONST_ELEMS} elements to build at import"
            ))
        })
}

pub(crate) fn first(outs: Vec<OutPort>, op: &str) -> Result<OutPort> {
    outs.first()
        .copied()
        .ok_or_else(|| Error::tr(format!("internal: {op} has no output")))
}

// NodeCtx helpers shared by several families.
impl NodeCtx<'_> {
    /// Fails on any attribute not in `known`.
    pub(crate) fn check_attrs(&self, known: &[&str]) -> Result<()> {
        for a in &self.node.attribute {
            let name = a.name.as_deref().unwrap_or("");
            if !known.contains(&name) {
                return Err(Error::unsupported(format!(
                    "{}: attribute '{name}' is not supported",
                    self.op_type()
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn concat(&mut self, xs: &[OutPort], axis: i64) -> Result<OutPort> {
        let a = self.const_i64(&[axis], &[])?;
        let outs = self.op(
            "ConcatV2",
            vec![xs.iter().map(|p| Some(*p)).collect(), vec![Some(a)]],
            vec![],
        )?;
        first(outs, "ConcatV2")
    }

    pub(crate) fn transpose(&mut self, x: OutPort, perm: &[i64]) -> Result<OutPort> {
        let p = self.const_i64(perm, &[perm.len() as i64])?;
        self.op1("Transpose", &[x, p], vec![])
    }

    pub(crate) fn split_n(&mut self, x: OutPort, axis: i64, n: usize) -> Result<Vec<OutPort>> {
        if n == 1 {
            return Ok(vec![x]);
        }
        let a = self.const_i32(&[axis as i32], &[])?;
        self.op(
            "Split",
            vec![vec![Some(a)], vec![Some(x)]],
            vec![("num_split", AttrValue::Int(n as i64))],
        )
    }

    pub(crate) fn pack(&mut self, xs: &[OutPort], axis: i64) -> Result<OutPort> {
        let outs = self.op(
            "Pack",
            vec![xs.iter().map(|p| Some(*p)).collect()],
            vec![("axis", AttrValue::Int(axis))],
        )?;
        first(outs, "Pack")
    }
}

pub(crate) fn li(v: &[i64]) -> AttrValue {
    AttrValue::ListInt(v.to_vec())
}

pub(crate) fn st(v: &str) -> AttrValue {
    AttrValue::String(v.to_string())
}

impl NodeCtx<'_> {
    /// Every attribute of the node must be one of `known` (the translation handles them).
    pub(crate) fn known_attrs(&self, known: &[&str]) -> Result<()> {
        for a in &self.node.attribute {
            let name = a.name.as_deref().unwrap_or("");
            if !known.contains(&name) {
                return Err(Error::unsupported(format!(
                    "attribute '{name}' of {} is not handled by its translation",
                    self.op_type()
                )));
            }
        }
        Ok(())
    }

    /// The dims of input `i` (-1 where unknown); its rank must be known.
    pub(crate) fn rank_dims(&self, i: usize) -> Result<Vec<i64>> {
        self.input_rank(i)?;
        Ok(self.input_desc(i)?.shape.dims().to_vec())
    }

    pub(crate) fn unsqueeze(&mut self, x: OutPort, axes: &[i64]) -> Result<OutPort> {
        self.op1("Unsqueeze", &[x], vec![("axes", li(axes))])
    }

    pub(crate) fn squeeze(&mut self, x: OutPort, axes: &[i64]) -> Result<OutPort> {
        self.op1("Squeeze", &[x], vec![("axis", li(axes))])
    }

    /// A scalar constant of the dtype of `like`.
    pub(crate) fn scalar_as(&mut self, like: OutPort, v: f64) -> Result<OutPort> {
        let dt = self.desc(like)?.dtype;
        self.const_of(dt, &[v], &[])
    }
}

// ---------------------------------------------------------------------------------------------
// Windows: kernel, strides, dilations, pads (auto_pad resolved)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub(crate) struct Window {
    pub(crate) k: Vec<i64>,
    pub(crate) s: Vec<i64>,
    pub(crate) d: Vec<i64>,
    /// Leading and trailing pads per spatial dim.
    pub(crate) p0: Vec<i64>,
    pub(crate) p1: Vec<i64>,
}

/// A per-spatial-dim list attribute (default `def` for every dim), each value >= `min`.
/// Largest kernel size, stride, dilation or pad accepted: window arithmetic on model-given
/// values must not overflow.
pub(crate) const MAX_WINDOW: i64 = 1 << 20;

/// Largest spatial dim used in window arithmetic.
pub(crate) const MAX_DIM: i64 = 1 << 40;

pub(crate) fn check_bound(v: &[i64], max: i64, what: &str) -> Result<()> {
    match v.iter().find(|&&x| x > max) {
        Some(bad) => Err(Error::unsupported(format!(
            "{what} value {bad} is larger than {max}"
        ))),
        None => Ok(()),
    }
}

pub(crate) fn spatial_list(
    ctx: &NodeCtx<'_>,
    name: &str,
    n: usize,
    def: i64,
    min: i64,
) -> Result<Vec<i64>> {
    let v = ctx.attr_ints(name)?.unwrap_or_else(|| vec![def; n]);
    check_bound(&v, MAX_WINDOW, &format!("attribute '{name}'"))?;
    if v.len() != n {
        return Err(Error::tr(format!(
            "attribute '{name}' must have {n} values (one per spatial dim), got {v:?}"
        )));
    }
    if let Some(bad) = v.iter().find(|&&x| x < min) {
        return Err(Error::tr(format!(
            "attribute '{name}' values must be >= {min}, got {bad} in {v:?}"
        )));
    }
    Ok(v)
}

/// The window of a convolution or pooling node with kernel `k` over spatial dims `sp` (-1 where
/// unknown; they are needed only for auto_pad SAME_*).
pub(crate) fn window(ctx: &NodeCtx<'_>, k: Vec<i64>, sp: &[i64]) -> Result<Window> {
    let n = k.len();
    if let Some(bad) = k.iter().find(|&&x| x < 1) {
        return Err(Error::tr(format!(
            "kernel_shape values must be >= 1, got {bad} in {k:?}"
        )));
    }
    check_bound(&k, MAX_WINDOW, "kernel_shape")?;
    check_bound(sp, MAX_DIM, "input spatial dim")?;
    let s = spatial_list(ctx, "strides", n, 1, 1)?;
    let d = spatial_list(ctx, "dilations", n, 1, 1)?;
    let auto_pad = ctx.attr_s("auto_pad", "NOTSET")?;
    let (p0, p1) = match auto_pad.as_str() {
        "NOTSET" | "" => {
            let p = ctx.attr_ints("pads")?.unwrap_or_else(|| vec![0; 2 * n]);
            if p.len() != 2 * n || p.iter().any(|&x| x < 0) {
                return Err(Error::tr(format!(
                    "attribute 'pads' must have {} values >= 0, got {p:?}",
                    2 * n
                )));
            }
            check_bound(&p, MAX_WINDOW, "attribute 'pads'")?;
            (p[..n].to_vec(), p[n..].to_vec())
        }
        "VALID" => (vec![0; n], vec![0; n]),
        "SAME_UPPER" | "SAME_LOWER" => {
            if sp.len() != n || sp.iter().any(|&x| x < 0) {
                return Err(Error::unsupported(format!(
                    "{}: auto_pad {auto_pad} needs the spatial dims of the input at import, \
                     got {sp:?}",
                    ctx.op_type()
                )));
            }
            let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
            for i in 0..n {
                let out = (sp[i] + s[i] - 1) / s[i];
                let eff = (k[i] - 1) * d[i] + 1;
                let total = ((out - 1) * s[i] + eff - sp[i]).max(0);
                if auto_pad == "SAME_UPPER" {
                    a.push(total / 2);
                    b.push(total - total / 2);
                } else {
                    a.push(total - total / 2);
                    b.push(total / 2);
                }
            }
            (a, b)
        }
        other => {
            return Err(Error::tr(format!(
            "attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got {other:?}"
        )))
        }
    };
    Ok(Window { k, s, d, p0, p1 })
}

/// The kernel's spatial dims: attribute `kernel_shape`, or the weight's dims 2.. .
pub(crate) fn kernel_shape(ctx: &NodeCtx<'_>, n: usize, w: usize) -> Result<Vec<i64>> {
    let k = match ctx.attr_ints("kernel_shape")? {
        Some(k) => k,
        None => {
            let wd = ctx.rank_dims(w)?;
            let k = wd.get(2..).map(<[i64]>::to_vec).unwrap_or_default();
            if k.iter().any(|&x| x < 0) {
                return Err(Error::unsupported(format!(
                    "{}: without kernel_shape the weight's spatial dims must be known at \
                     import, got {wd:?}",
                    ctx.op_type()
                )));
            }
            k
        }
    };
    if k.len() != n {
        return Err(Error::tr(format!(
            "kernel_shape {k:?} must have {n} values (one per spatial dim of the input)"
        )));
    }
    Ok(k)
}

// ---------------------------------------------------------------------------------------------
// Conv
// ---------------------------------------------------------------------------------------------

/// Conv2D/Conv3D (NCHW/NCDHW) over an N-D input, 1-D through an inserted height of 1.
pub(crate) fn conv_core(
    ctx: &mut NodeCtx<'_>,
    x: OutPort,
    w: OutPort,
    b: Option<OutPort>,
    win: &Window,
    group: i64,
) -> Result<OutPort> {
    let n = win.k.len();
    let base = |v: &[i64]| -> Vec<i64> {
        let mut o = vec![1, 1];
        o.extend_from_slice(v);
        o
    };
    let pads: Vec<i64> = (0..n).flat_map(|i| [win.p0[i], win.p1[i]]).collect();
    let ins = |x, w| vec![vec![Some(x)], vec![Some(w)], vec![b]];
    match n {
        1 => {
            let x2 = ctx.unsqueeze(x, &[2])?;
            let w2 = ctx.unsqueeze(w, &[2])?;
            let y = ctx.op(
                "Conv2D",
                ins(x2, w2),
                vec![
                    ("strides", li(&[1, 1, 1, win.s[0]])),
                    ("pads", li(&[0, 0, pads[0], pads[1]])),
                    ("dilations", li(&[1, 1, 1, win.d[0]])),
                    ("groups", AttrValue::Int(group)),
                    ("data_format", st("NCHW")),
                ],
            )?;
            ctx.squeeze(y[0], &[2])
        }
        2 | 3 => {
            let (op, fmt) = if n == 2 {
                ("Conv2D", "NCHW")
            } else {
                ("Conv3D", "NCDHW")
            };
            let y = ctx.op(
                op,
                ins(x, w),
                vec![
                    ("strides", li(&base(&win.s))),
                    ("pads", li(&pads)),
                    ("dilations", li(&base(&win.d))),
                    ("groups", AttrValue::Int(group)),
                    ("data_format", st(fmt)),
                ],
            )?;
            Ok(y[0])
        }
        _ => Err(Error::unsupported(format!(
            "{}: {n}-D convolution (1-D, 2-D and 3-D are supported)",
            ctx.op_type()
        ))),
    }
}

/// A matrix product with ONNX MatMul's rank rules (1-D operands, batch broadcast).
pub(crate) fn matmul_ports(
    ctx: &mut NodeCtx<'_>,
    a: OutPort,
    b: OutPort,
    ra: usize,
    rb: usize,
) -> Result<OutPort> {
    if ra == 0 || rb == 0 {
        return Err(Error::tr(format!(
            "{} operands must have rank >= 1",
            ctx.op_type()
        )));
    }
    let (a, b) = (
        if ra == 1 { ctx.unsqueeze(a, &[0])? } else { a },
        if rb == 1 { ctx.unsqueeze(b, &[1])? } else { b },
    );
    let (ra2, rb2) = (ra.max(2), rb.max(2));
    let op = if ra2 == 2 && rb2 == 2 {
        "MatMulV2"
    } else {
        "BatchMatMulV2"
    };
    let mut y = ctx.op1(op, &[a, b], vec![])?;
    let yr = ra2.max(rb2) as i64;
    let mut sq = Vec::new();
    if ra == 1 {
        sq.push(yr - 2);
    }
    if rb == 1 {
        sq.push(yr - 1);
    }
    if !sq.is_empty() {
        y = ctx.squeeze(y, &sq)?;
    }
    Ok(y)
}

pub(crate) fn one(p: OutPort) -> Out {
    Ok(vec![Some(p)])
}

// Helpers.

impl NodeCtx<'_> {
    /// Every attribute of the node must be in `known`.
    pub(crate) fn only_attrs(&self, known: &[&str]) -> Result<()> {
        for a in &self.node.attribute {
            let name = a.name.as_deref().unwrap_or("");
            if !known.contains(&name) {
                return Err(Error::unsupported(format!(
                    "attribute '{name}' of {}",
                    self.op_type()
                )));
            }
        }
        Ok(())
    }
    /// The dtype of input `i`, which must be known at import.
    pub(crate) fn in_dtype(&self, i: usize) -> Result<DataType> {
        let dt = self.input_desc(i)?.dtype;
        if dt == DataType::UNDEFINED {
            return Err(Error::unsupported(format!(
                "{}: the dtype of input {i} must be known at import",
                self.op_type()
            )));
        }
        Ok(dt)
    }
    /// The dtype of port `p`, which must be known.
    pub(crate) fn port_dtype(&self, p: OutPort) -> Result<DataType> {
        let dt = self.desc(p)?.dtype;
        if dt == DataType::UNDEFINED {
            return Err(Error::unsupported(format!(
                "{}: a dtype must be known at import",
                self.op_type()
            )));
        }
        Ok(dt)
    }
    /// A scalar constant of `dt`.
    pub(crate) fn scalar(&mut self, dt: DataType, v: f64) -> Result<OutPort> {
        self.const_of(dt, &[v], &[])
    }
    pub(crate) fn bin(&mut self, op: &str, a: OutPort, b: OutPort) -> Result<OutPort> {
        self.op1(op, &[a, b], vec![])
    }
    pub(crate) fn un(&mut self, op: &str, a: OutPort) -> Result<OutPort> {
        self.op1(op, &[a], vec![])
    }
    /// `p`'s static dim `axis`, when known.
    pub(crate) fn static_dim(&self, p: OutPort, axis: usize) -> Result<Option<i64>> {
        let d = self.desc(p)?;
        Ok(d.shape
            .rank()
            .and_then(|_| d.shape.dims().get(axis).copied())
            .filter(|&v| v >= 0))
    }
    /// Whether GE op `op` accepts dtype `dt` for its first input.
    pub(crate) fn accepts(&self, op: &str, dt: DataType) -> Result<bool> {
        self.accepts_at(op, 0, dt)
    }
    /// Whether GE op `op` accepts dtype `dt` for its input `i`.
    pub(crate) fn accepts_at(&self, op: &str, i: usize, dt: DataType) -> Result<bool> {
        let proto = self.graph_op_proto(op)?;
        Ok(proto
            .inputs
            .get(i)
            .and_then(|i| proto.allowed(&i.ty))
            .is_some_and(|l| l.contains(&dt)))
    }
}

pub(crate) fn unsupported(ctx: &NodeCtx<'_>, why: impl std::fmt::Display) -> Error {
    Error::unsupported(format!("{}: {why}", ctx.op_type()))
}

pub(crate) fn is_unsigned(dt: DataType) -> bool {
    matches!(
        dt,
        DataType::UINT8 | DataType::UINT16 | DataType::UINT32 | DataType::UINT64
    )
}

/// The lowest and highest value of `dt` (infinities for floating types).
pub(crate) fn dtype_range(dt: DataType) -> Option<(f64, f64)> {
    use DataType::*;
    Some(match dt {
        FLOAT | DOUBLE | FLOAT16 | BF16 => (f64::NEG_INFINITY, f64::INFINITY),
        INT8 => (i8::MIN as f64, i8::MAX as f64),
        INT16 => (i16::MIN as f64, i16::MAX as f64),
        INT32 => (i32::MIN as f64, i32::MAX as f64),
        INT64 => (i64::MIN as f64, i64::MAX as f64),
        UINT8 => (0.0, u8::MAX as f64),
        UINT16 => (0.0, u16::MAX as f64),
        UINT32 => (0.0, u32::MAX as f64),
        UINT64 => (0.0, u64::MAX as f64),
        _ => return None,
    })
}

/// The axes a reduction works on.
#[derive(Clone)]
pub(crate) enum Axes {
    /// Empty axes with noop_with_empty_axes: no reduction.
    Noop,
    /// Every axis.
    All,
    /// Constant axes (normalised when the rank is known).
    List(Vec<i64>),
    /// Axes known only at run time; `noop` says what an empty tensor means.
    Dyn(OutPort, bool),
}

/// One GE reduction `op` of `x` (Noop: `x` itself).
pub(crate) fn reduce_op(
    ctx: &mut NodeCtx<'_>,
    op: &str,
    x: OutPort,
    axes: &Axes,
    keep: bool,
) -> Result<OutPort> {
    let has_noop = ctx
        .graph_op_proto(op)?
        .attr("noop_with_empty_axes")
        .is_some();
    let (axes_port, noop) = match axes {
        Axes::Noop => return ctx.un("Identity", x),
        Axes::List(v) => (ctx.const_i64(v, &[v.len() as i64])?, false),
        Axes::All => match ctx.desc(x)?.shape.rank() {
            Some(r) => {
                let v: Vec<i64> = (0..r as i64).collect();
                (ctx.const_i64(&v, &[r as i64])?, false)
            }
            None if has_noop => (ctx.const_i64(&[], &[0])?, false),
            None => {
                return Err(unsupported(
                    ctx,
                    "reducing every axis of an input of unknown rank",
                ))
            }
        },
        Axes::Dyn(p, noop) => {
            if !has_noop && !*noop {
                return Err(unsupported(ctx, "axes known only at run time here"));
            }
            (*p, *noop)
        }
    };
    let mut attrs = vec![("keep_dims", AttrValue::Bool(keep))];
    if has_noop {
        attrs.push(("noop_with_empty_axes", AttrValue::Bool(noop)));
    }
    ctx.op1(op, &[x, axes_port], attrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_are_normalised_and_checked() {
        assert_eq!(norm_axis(-1, 4, "axis").unwrap(), 3);
        assert!(norm_axis(4, 4, "axis").is_err());
        assert!(norm_axis(-5, 4, "axis").is_err());
        assert_eq!(norm_axes(&[0, -1], 3, "axes").unwrap(), vec![0, 2]);
        assert!(norm_axes(&[1, -2], 3, "axes").is_err());
    }
}
