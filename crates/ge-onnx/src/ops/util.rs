//! Small helpers shared by the special handlers.

use crate::compat;
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort};

pub(crate) type Out = Result<Vec<Option<OutPort>>>;

/// A translator as a family's table lists it.
pub(crate) type Translator = fn(&mut NodeCtx<'_>) -> Out;

/// Registers every `(key, translator)` row of a family's table.
pub(crate) fn register_table(r: &mut Registry, table: &[(&str, Translator)]) {
    for &(key, f) in table {
        r.register(key, std::sync::Arc::new(f));
    }
}

/// A family's enum of operator variants (`Clone, Copy, PartialEq, Eq, Debug`), with `ALL`,
/// every variant in order: `variants!(Win { Blackman, Hamming, Hann })`.
macro_rules! variants {
    ($name:ident { $($v:ident),+ $(,)? }) => {
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        enum $name {
            $($v),+
        }

        impl $name {
            const ALL: &'static [$name] = &[$($name::$v),+];
        }
    };
}
pub(crate) use variants;

/// Registers `f(ctx, v)` for each of a family's `variants` under the key `key(v)`.
pub(crate) fn register_variants<E>(
    r: &mut Registry,
    variants: &[E],
    key: impl Fn(E) -> String,
    f: fn(&mut NodeCtx<'_>, E) -> Out,
) where
    E: Copy + Send + Sync + 'static,
{
    for &v in variants {
        r.register(
            &key(v),
            std::sync::Arc::new(move |c: &mut NodeCtx<'_>| f(c, v)),
        );
    }
}

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
    /// StridedSlice of `x` with `mask` as both its begin and end mask (a set bit: that dim
    /// whole).
    pub(crate) fn strided_slice(
        &mut self,
        x: OutPort,
        [begin, end, strides]: [OutPort; 3],
        mask: i64,
    ) -> Result<OutPort> {
        let masks = vec![
            ("begin_mask", AttrValue::Int(mask)),
            ("end_mask", AttrValue::Int(mask)),
        ];
        self.op1("StridedSlice", &[x, begin, end, strides], masks)
    }

    /// The constant (begin, end, strides) of a slice of a rank-`r` value along `axis` only:
    /// `[start, end)` by `step`; with [`axis_mask`] the other dims stay whole.
    pub(crate) fn axis_slice_bounds(
        &mut self,
        r: usize,
        axis: usize,
        (start, end, step): (i64, i64, i64),
    ) -> Result<[OutPort; 3]> {
        let mut bounds = [vec![0i64; r], vec![0i64; r], vec![1i64; r]];
        for (b, v) in bounds.iter_mut().zip([start, end, step]) {
            b[axis] = v;
        }
        let mut out = Vec::with_capacity(3);
        for b in &bounds {
            out.push(self.const_i64(b, &[r as i64])?);
        }
        Ok([out[0], out[1], out[2]])
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

/// The StridedSlice mask of a rank-`r` value that keeps every dim but `axis` whole.
/// One entry of [`NodeCtx::shape_from`]: a constant, or dim `axis` of a port.
#[derive(Clone, Copy)]
pub(crate) enum Dim {
    Is(i64),
    Of(OutPort, usize),
}

pub(crate) fn axis_mask(r: usize, axis: usize) -> i64 {
    ((1i64 << r) - 1) & !(1i64 << axis)
}

pub(crate) fn li(v: &[i64]) -> AttrValue {
    AttrValue::ListInt(v.to_vec())
}

pub(crate) fn st(v: &str) -> AttrValue {
    AttrValue::String(v.to_string())
}

impl NodeCtx<'_> {
    /// Every attribute of the node must be one of `known` (the translation handles them), or
    /// one the compatibility layer made an input.
    pub(crate) fn known_attrs(&self, known: &[&str]) -> Result<()> {
        known_attrs_old(self, known, &[])
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

/// The dims of input 0 of a convolution or pooling, of rank >= 3 (N, C, spatial dims).
pub(crate) fn spatial_input_dims(ctx: &NodeCtx<'_>) -> Result<Vec<i64>> {
    let xd = ctx.rank_dims(0)?;
    if xd.len() < 3 {
        return Err(Error::tr(format!(
            "{} needs an input of rank >= 3 (N, C, spatial dims), got {xd:?}",
            ctx.op_type()
        )));
    }
    Ok(xd)
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
    /// The dtype of input `i`, which must be known at import.
    pub(crate) fn in_dtype(&self, i: usize) -> Result<DataType> {
        let dt = self.input_desc(i)?.dtype;
        self.known_dtype(dt, format_args!("the dtype of input {i}"))
    }
    /// The dtype of port `p`, which must be known.
    pub(crate) fn port_dtype(&self, p: OutPort) -> Result<DataType> {
        self.known_dtype(self.desc(p)?.dtype, "a dtype")
    }
    /// `dt` (`what`), which must be known at import.
    fn known_dtype(&self, dt: DataType, what: impl std::fmt::Display) -> Result<DataType> {
        if dt == DataType::UNDEFINED {
            return Err(Error::unsupported(format!(
                "{}: {what} must be known at import",
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
    /// `p`'s dim `axis` as an int64 scalar: a constant when known at import, else
    /// Gather(Shape(p), axis) at run time.
    pub(crate) fn dim_scalar(&mut self, p: OutPort, axis: usize) -> Result<OutPort> {
        if let Some(d) = self.static_dim(p, axis)? {
            return self.const_i64(&[d], &[]);
        }
        let s = self.shape_i64(p)?;
        let i = self.const_i64(&[axis as i64], &[])?;
        let a = self.const_i64(&[0], &[])?;
        self.op1("GatherV2", &[s, i, a], vec![])
    }
    /// A 1-D int64 shape from `parts`: a constant when every part is known at import, else
    /// the Concat of constants and run-time dims.
    pub(crate) fn shape_from(&mut self, parts: &[Dim]) -> Result<OutPort> {
        let mut known = Vec::with_capacity(parts.len());
        for p in parts {
            known.push(match *p {
                Dim::Is(v) => Some(v),
                Dim::Of(x, a) => self.static_dim(x, a)?,
            });
        }
        if let Some(v) = known.iter().copied().collect::<Option<Vec<i64>>>() {
            return self.const_i64(&v, &[v.len() as i64]);
        }
        let mut ports = Vec::with_capacity(parts.len());
        for (p, k) in parts.iter().zip(known) {
            ports.push(match (*p, k) {
                (_, Some(v)) => self.const_i64(&[v], &[1])?,
                (Dim::Of(x, a), None) => {
                    let s = self.shape_i64(x)?;
                    self.gather_const(s, &[a as i64])?
                }
                (Dim::Is(v), None) => self.const_i64(&[v], &[1])?,
            });
        }
        self.concat(&ports, 0)
    }
    /// `0..n` (an int64 scalar port) reshaped to `shape` (one entry -1).
    pub(crate) fn iota(&mut self, n: OutPort, shape: &[i64]) -> Result<OutPort> {
        let zero = self.const_i64(&[0], &[])?;
        let one = self.const_i64(&[1], &[])?;
        let r = self.op1("Range", &[zero, n, one], vec![])?;
        let s = self.const_i64(shape, &[shape.len() as i64])?;
        self.op1("Reshape", &[r, s], vec![])
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

pub(crate) const I64: DataType = DataType::INT64;

/// Refuses any attribute of the node that is not in `known`, nor in `old` before the opset
/// given there (attributes later opsets removed), nor one the compatibility layer made an
/// input at this opset ([`compat::attr_becomes_input`]).
pub(crate) fn known_attrs_old(
    ctx: &NodeCtx<'_>,
    known: &[&str],
    old: &[(&str, i64)],
) -> Result<()> {
    let accepted = |name: &str| {
        known.contains(&name)
            || old.iter().any(|&(n, until)| n == name && ctx.opset < until)
            || compat::attr_becomes_input(ctx.node, name, ctx.opset)
    };
    let names = ctx
        .node
        .attribute
        .iter()
        .map(|a| a.name.as_deref().unwrap_or(""));
    match names.into_iter().find(|&name| !accepted(name)) {
        Some(name) => Err(Error::unsupported(format!(
            "{}: attribute '{name}' is not supported (opset {})",
            ctx.op_type(),
            ctx.opset
        ))),
        None => Ok(()),
    }
}

pub(crate) fn dtype_attr(dt: DataType) -> AttrValue {
    AttrValue::Int(dt.value() as i64)
}

impl NodeCtx<'_> {
    /// The GE reduction `op` of `x` over the constant `axes`, keeping the reduced dims.
    pub(crate) fn reduce_keep(&mut self, op: &str, x: OutPort, axes: &[i64]) -> Result<OutPort> {
        let axes = self.const_i64(axes, &[axes.len() as i64])?;
        self.op1(op, &[x, axes], vec![("keep_dims", AttrValue::Bool(true))])
    }
    /// ScatterElements along axis 0: `data` with `upd` written (or, with `reduction`,
    /// combined) at the positions `idx`.
    pub(crate) fn scatter_axis0(
        &mut self,
        data: OutPort,
        idx: OutPort,
        upd: OutPort,
        reduction: Option<&str>,
    ) -> Result<OutPort> {
        let mut attrs = vec![("axis", AttrValue::Int(0))];
        if let Some(r) = reduction {
            attrs.push(("reduction", AttrValue::String(r.into())));
        }
        self.op1("ScatterElements", &[data, idx, upd], attrs)
    }
    /// The int64 shape of `x`.
    pub(crate) fn shape_i64(&mut self, x: OutPort) -> Result<OutPort> {
        self.op1("Shape", &[x], vec![("dtype", dtype_attr(I64))])
    }
    /// Input `i` cast to int64, when present.
    pub(crate) fn opt_input_i64(&mut self, i: usize) -> Result<Option<OutPort>> {
        match self.opt_input(i)? {
            Some(p) => Ok(Some(self.cast(p, I64)?)),
            None => Ok(None),
        }
    }
    /// The static dims of input `i` (-1 for unknown dims), None when its rank is unknown.
    pub(crate) fn input_dims(&self, i: usize) -> Result<Option<Vec<i64>>> {
        let d = self.input_desc(i)?;
        Ok(d.shape.rank().map(|_| d.shape.dims().to_vec()))
    }
    /// The static dims of input `i`, which must all be known.
    pub(crate) fn static_dims(&self, i: usize, why: &str) -> Result<Vec<i64>> {
        match self.input_dims(i)? {
            Some(d) if d.iter().all(|&v| v >= 0) => Ok(d),
            _ => Err(Error::unsupported(format!(
                "{}: the shape of input {i} must be known at import ({why})",
                self.op_type()
            ))),
        }
    }
    /// Number of elements of the 1-D input `i`, when known.
    pub(crate) fn vec_len(&self, i: usize) -> Result<Option<usize>> {
        let d = self.input_desc(i)?;
        Ok(match d.shape.dims() {
            [n] if *n >= 0 => Some(*n as usize),
            [] => Some(1),
            _ => None,
        })
    }
    /// `v` gathered at the constant positions `idx` (1-D).
    pub(crate) fn gather_const(&mut self, v: OutPort, idx: &[i64]) -> Result<OutPort> {
        let i = self.const_i64(idx, &[idx.len() as i64])?;
        let axis = self.const_i64(&[0], &[])?;
        self.op1("GatherV2", &[v, i, axis], vec![])
    }
    /// The run-time axes of input `i` (int64), negative ones wrapped by `rank`.
    pub(crate) fn runtime_axes(&mut self, i: usize, rank: usize) -> Result<OutPort> {
        let a = self.input(i)?;
        let a = self.cast(a, I64)?;
        let r = self.const_i64(&[rank as i64], &[])?;
        wrap_negative(self, a, r)
    }
    /// `base` (a constant 1-D vector of `len` values of `dtype`) with `vals` written at the
    /// run-time positions `pos` (ScatterElements).
    pub(crate) fn scatter_runtime(
        &mut self,
        dtype: DataType,
        base: &[f64],
        pos: OutPort,
        vals: OutPort,
    ) -> Result<OutPort> {
        let b = self.const_of(dtype, base, &[base.len() as i64])?;
        let vals = self.cast(vals, dtype)?;
        self.scatter_axis0(b, pos, vals, None)
    }
    /// `x` reshaped to the entries of its shape `xs` (int64, 1-D) where the run-time mask
    /// `keep` is true: dims of 1 removed by a shape computed at run time.
    pub(crate) fn reshape_to_kept(
        &mut self,
        x: OutPort,
        xs: OutPort,
        keep: OutPort,
    ) -> Result<OutPort> {
        let idx = self.op1("NonZero", &[keep], vec![])?;
        let idx = self.cast(idx, I64)?;
        let m1 = self.const_i64(&[-1], &[1])?;
        let idx = self.op1("Reshape", &[idx, m1], vec![])?;
        let zero = self.const_i64(&[0], &[])?;
        let dims = self.op1("GatherV2", &[xs, idx, zero], vec![])?;
        self.op1("Reshape", &[x, dims], vec![])
    }
    /// Per dim of a rank-`rank` tensor: how many of the (run-time, normalised) axes name it.
    pub(crate) fn axis_counts(&mut self, ax: OutPort, n: usize, rank: usize) -> Result<OutPort> {
        let pos: Vec<i64> = (0..rank as i64).collect();
        let pos = self.const_i64(&pos, &[rank as i64])?;
        self.axis_counts_at(ax, n, pos)
    }
    /// Per position of the vector `pos` (int64, `0..len`, maybe computed at run time): how many
    /// of the `n` run-time, normalised axes `ax` name it. An axis out of `0..len` is an error
    /// at run time (the axes are gathered from `pos`, which checks them).
    pub(crate) fn axis_counts_at(
        &mut self,
        ax: OutPort,
        n: usize,
        pos: OutPort,
    ) -> Result<OutPort> {
        let zero = self.const_i64(&[0], &[])?;
        let ax = self.op1("GatherV2", &[pos, ax, zero], vec![])?;
        let col = self.const_i64(&[n as i64, 1], &[2])?;
        let ax = self.op1("Reshape", &[ax, col], vec![])?;
        let row = self.const_i64(&[1, -1], &[2])?;
        let pos = self.op1("Reshape", &[pos, row], vec![])?;
        let eq = self.op1("Equal", &[ax, pos], vec![])?;
        let eq = self.cast(eq, I64)?;
        let zero = self.const_i64(&[0], &[1])?;
        self.op1(
            "ReduceSum",
            &[eq, zero],
            vec![("keep_dims", AttrValue::Bool(false))],
        )
    }
    /// A full-rank vector from the values `v` (1-D, one per entry of `axes`) placed at `axes`,
    /// `fill` elsewhere: constant-folded when `v` is constant.
    pub(crate) fn scatter_axes(
        &mut self,
        v: OutPort,
        axes: &[usize],
        rank: usize,
        fill: &[f64],
    ) -> Result<OutPort> {
        let full: Vec<f64> = (0..rank).map(|d| fill[d % fill.len()]).collect();
        scatter_into(self, v, axes, &full, "axes")
    }
}

// ---------------------------------------------------------------------------------------------
// GatherElements, GatherND, ScatterND
// ---------------------------------------------------------------------------------------------

/// `idx` (int64) with negative entries wrapped by `size` (a broadcastable int64 port):
/// nothing is added when `idx` is a constant without negative entries.
pub(crate) fn wrap_negative(ctx: &mut NodeCtx<'_>, idx: OutPort, size: OutPort) -> Result<OutPort> {
    if let Some(t) = ctx.const_value(idx) {
        if t.to_i64_vec()?.iter().all(|&v| v >= 0) {
            return Ok(idx);
        }
    }
    let zero = ctx.const_i64(&[0], &[])?;
    let neg = ctx.op1("Less", &[idx, zero], vec![])?;
    let up = ctx.op1("Add", &[idx, size], vec![])?;
    ctx.op1("SelectV2", &[neg, up, idx], vec![])
}

/// [`NodeCtx::scatter_axes`] with a per-position fill (`fill.len()` = the full length).
pub(crate) fn scatter_fill(
    ctx: &mut NodeCtx<'_>,
    v: OutPort,
    pos: &[usize],
    fill: &[f64],
) -> Result<OutPort> {
    scatter_into(ctx, v, pos, fill, "positions")
}

/// The vector `fill` with the values `v` (1-D, one per entry of `pos`) placed at `pos`:
/// constant-folded when `v` is constant, else Concat([v, fill]) gathered at each position.
fn scatter_into(
    ctx: &mut NodeCtx<'_>,
    v: OutPort,
    pos: &[usize],
    fill: &[f64],
    what: &str,
) -> Result<OutPort> {
    let dt = ctx.desc(v)?.dtype;
    let len = fill.len();
    if let Some(t) = ctx.const_value(v) {
        let vals = t.to_f64_vec()?;
        if vals.len() != pos.len() {
            return Err(Error::tr(format!(
                "{}: {} values for {} {what}",
                ctx.op_type(),
                vals.len(),
                pos.len()
            )));
        }
        let mut full = fill.to_vec();
        for (k, &p) in pos.iter().enumerate() {
            full[p] = vals[k];
        }
        return ctx.const_of(dt, &full, &[len as i64]);
    }
    let f = ctx.const_of(dt, fill, &[len as i64])?;
    let both = ctx.concat(&[v, f], 0)?;
    ctx.gather_const(both, &placement(pos, len))
}

/// The indices that gather, from Concat([v, full]) (`v`: one value per entry of `pos`; `full`:
/// `len` values), v's value at each position in `pos` and full's elsewhere.
pub(crate) fn placement(pos: &[usize], len: usize) -> Vec<i64> {
    let n = pos.len() as i64;
    (0..len)
        .map(|d| match pos.iter().position(|&a| a == d) {
            Some(k) => k as i64,
            None => n + d as i64,
        })
        .collect()
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
