//! Recurrent layers: RNN, GRU, LSTM.

use super::util::{Out, Translator};
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::{AttrValue, DataType, OutPort};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[("RNN", rnn), ("GRU", gru), ("LSTM", lstm)];

// ---------------------------------------------------------------------------------------------
// RNN, GRU, LSTM: unrolled over the static sequence length
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cell {
    Rnn,
    Gru,
    Lstm,
}

impl Cell {
    fn gates(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 3,
            Cell::Lstm => 4,
        }
    }
    fn n_act(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 2,
            Cell::Lstm => 3,
        }
    }
    fn default_acts(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// One activation function of a recurrent layer with its alpha/beta.
#[derive(Clone)]
struct Act {
    name: String,
    alpha: Option<f32>,
    beta: Option<f32>,
}

fn rnn_acts(ctx: &NodeCtx<'_>, cell: Cell, dirs: usize) -> Result<Vec<Act>> {
    let n = cell.n_act() * dirs;
    let names: Vec<String> = match ctx.attr("activations")? {
        None => {
            let d = cell.default_acts();
            (0..n).map(|i| d[i % d.len()].to_string()).collect()
        }
        Some(crate::attrs::OnnxAttr::Strings(v)) => v,
        Some(o) => {
            return Err(Error::tr(format!(
                "attribute 'activations' must be STRINGS, got {}",
                o.kind()
            )))
        }
    };
    if names.len() != n {
        return Err(Error::tr(format!(
            "{}: 'activations' has {} entries, expected {n}",
            ctx.op_type(),
            names.len()
        )));
    }
    let alphas = ctx.attr_floats("activation_alpha")?.unwrap_or_default();
    let betas = ctx.attr_floats("activation_beta")?.unwrap_or_default();
    let (mut ia, mut ib) = (0usize, 0usize);
    let mut out = Vec::with_capacity(n);
    for name in names {
        let lower = name.to_ascii_lowercase();
        let (ua, ub) = match lower.as_str() {
            "relu" | "tanh" | "sigmoid" | "softsign" | "softplus" => (false, false),
            "leakyrelu" | "thresholdedrelu" | "elu" => (true, false),
            "affine" | "scaledtanh" | "hardsigmoid" => (true, true),
            _ => {
                return Err(Error::unsupported(format!(
                    "{}: activation '{name}'",
                    ctx.op_type()
                )))
            }
        };
        let alpha = if ua {
            ia += 1;
            alphas.get(ia - 1).copied()
        } else {
            None
        };
        let beta = if ub {
            ib += 1;
            betas.get(ib - 1).copied()
        } else {
            None
        };
        out.push(Act {
            name: lower,
            alpha,
            beta,
        });
    }
    Ok(out)
}

impl NodeCtx<'_> {
    fn scalar_like(&mut self, v: f64, dt: DataType) -> Result<OutPort> {
        self.const_of(dt, &[v], &[])
    }

    fn activate(&mut self, x: OutPort, a: &Act, dt: DataType) -> Result<OutPort> {
        let f = |v: Option<f32>, d: f32| AttrValue::Float(v.unwrap_or(d));
        Ok(match a.name.as_str() {
            "relu" => self.op1("Relu", &[x], vec![])?,
            "tanh" => self.op1("Tanh", &[x], vec![])?,
            "sigmoid" => self.op1("Sigmoid", &[x], vec![])?,
            "softsign" => self.op1("Softsign", &[x], vec![])?,
            "softplus" => self.op1("Softplus", &[x], vec![])?,
            "leakyrelu" => self.op1(
                "LeakyRelu",
                &[x],
                vec![("negative_slope", f(a.alpha, 0.01))],
            )?,
            "elu" => self.op1("Elu", &[x], vec![("alpha", f(a.alpha, 1.0))])?,
            "hardsigmoid" => self.op1(
                "HardSigmoid",
                &[x],
                vec![("alpha", f(a.alpha, 0.2)), ("beta", f(a.beta, 0.5))],
            )?,
            "thresholdedrelu" => {
                let t = self.scalar_like(a.alpha.unwrap_or(1.0) as f64, dt)?;
                let z = self.scalar_like(0.0, dt)?;
                let m = self.op1("Greater", &[x, t], vec![])?;
                self.op1("SelectV2", &[m, x, z], vec![])?
            }
            "affine" => {
                let al = self.scalar_like(a.alpha.unwrap_or(1.0) as f64, dt)?;
                let be = self.scalar_like(a.beta.unwrap_or(0.0) as f64, dt)?;
                let y = self.op1("Mul", &[x, al], vec![])?;
                self.op1("Add", &[y, be], vec![])?
            }
            "scaledtanh" => {
                let al = self.scalar_like(a.alpha.unwrap_or(1.0) as f64, dt)?;
                let be = self.scalar_like(a.beta.unwrap_or(1.0) as f64, dt)?;
                let y = self.op1("Mul", &[x, be], vec![])?;
                let y = self.op1("Tanh", &[y], vec![])?;
                self.op1("Mul", &[y, al], vec![])?
            }
            other => return Err(Error::unsupported(format!("activation '{other}'"))),
        })
    }

    fn unpack(&mut self, x: OutPort, n: usize) -> Result<Vec<OutPort>> {
        if n == 1 {
            return Ok(vec![self.op1(
                "Squeeze",
                &[x],
                vec![("axis", AttrValue::ListInt(vec![0]))],
            )?]);
        }
        self.op(
            "Unpack",
            vec![vec![Some(x)]],
            vec![
                ("num", AttrValue::Int(n as i64)),
                ("axis", AttrValue::Int(0)),
            ],
        )
    }

    /// Index `d` of axis 0 of `x` (that axis removed).
    fn take0(&mut self, x: OutPort, d: usize) -> Result<OutPort> {
        let idx = self.const_i64(&[d as i64], &[])?;
        let axis = self.const_i64(&[0], &[])?;
        self.op1("GatherV2", &[x, idx, axis], vec![])
    }
}

fn rnn(ctx: &mut NodeCtx<'_>) -> Out {
    recurrent(ctx, Cell::Rnn)
}
fn gru(ctx: &mut NodeCtx<'_>) -> Out {
    recurrent(ctx, Cell::Gru)
}
fn lstm(ctx: &mut NodeCtx<'_>) -> Out {
    recurrent(ctx, Cell::Lstm)
}

fn recurrent(ctx: &mut NodeCtx<'_>, cell: Cell) -> Out {
    let mut known = vec![
        "activation_alpha",
        "activation_beta",
        "activations",
        "clip",
        "direction",
        "hidden_size",
        "layout",
    ];
    match cell {
        Cell::Gru => known.push("linear_before_reset"),
        Cell::Lstm => known.push("input_forget"),
        Cell::Rnn => {}
    }
    ctx.known_attrs(&known)?;
    let op = ctx.op_type().to_string();
    let direction = ctx.attr_s("direction", "forward")?;
    let dirs: Vec<bool> = match direction.as_str() {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        d => return Err(Error::tr(format!("{op}: direction '{d}'"))),
    };
    let nd = dirs.len();
    let layout = ctx.attr_i("layout", 0)?;
    if layout != 0 && layout != 1 {
        return Err(Error::tr(format!("{op}: layout {layout} must be 0 or 1")));
    }
    let lbr = ctx.attr_i("linear_before_reset", 0)? != 0;
    let input_forget = ctx.attr_i("input_forget", 0)? != 0;
    let clip = if ctx.has_attr("clip") {
        Some(ctx.attr_f("clip", 0.0)?)
    } else {
        None
    };
    let acts = rnn_acts(ctx, cell, nd)?;
    let g = cell.gates();
    let mut x = ctx.input(0)?;
    let xd = ctx.desc(x)?;
    let dt = xd.dtype;
    if !matches!(dt, DataType::FLOAT | DataType::FLOAT16 | DataType::BF16) {
        return Err(Error::unsupported(format!(
            "{op} on {dt} (GE's MatMulV2 takes float, float16 and bfloat16)"
        )));
    }
    if ctx.input_rank(0)? != 3 {
        return Err(Error::tr(format!("{op}: X must be 3-D")));
    }
    if layout == 1 {
        x = ctx.transpose(x, &[1, 0, 2])?;
    }
    let t_len = ctx.desc(x)?.shape.dims()[0];
    if t_len < 1 {
        return Err(Error::unsupported(format!(
            "{op}: the sequence length must be known (and positive) at import to unroll it"
        )));
    }
    // Each step becomes nodes: bound the unrolling (a model may declare any length).
    const MAX_STEPS: i64 = 4096;
    if t_len > MAX_STEPS {
        return Err(Error::unsupported(format!(
            "{op}: a sequence of {t_len} steps is longer than the {MAX_STEPS} ge unrolls"
        )));
    }
    let t_len = t_len as usize;
    let w = ctx.input(1)?;
    let r = ctx.input(2)?;
    let hidden = {
        let rd = ctx.desc(r)?;
        let h = rd.shape.dims().get(2).copied().unwrap_or(-1);
        let attr_h = ctx.attr_i("hidden_size", h)?;
        if h >= 0 && attr_h != h {
            return Err(Error::tr(format!(
                "{op}: hidden_size {attr_h} differs from R's last dim {h}"
            )));
        }
        attr_h
    };
    let b = ctx.opt_input(3)?;
    let seq_lens = match ctx.opt_input(4)? {
        Some(p) => {
            let p = ctx.cast(p, DataType::INT64)?;
            Some(p)
        }
        None => None,
    };
    let init_h = ctx.opt_input(5)?;
    let init_c = if cell == Cell::Lstm {
        ctx.opt_input(6)?
    } else {
        None
    };
    let peep = if cell == Cell::Lstm {
        ctx.opt_input(7)?
    } else {
        None
    };
    // Initial states as [num_directions, batch, hidden].
    let init_h = match init_h {
        Some(p) if layout == 1 => Some(ctx.transpose(p, &[1, 0, 2])?),
        o => o,
    };
    let init_c = match init_c {
        Some(p) if layout == 1 => Some(ctx.transpose(p, &[1, 0, 2])?),
        o => o,
    };
    // Masks per step: t < sequence_lens[b], as [batch, 1].
    let mut masks: Vec<Option<OutPort>> = vec![None; t_len];
    if let Some(l) = seq_lens {
        let col = ctx.const_i64(&[-1, 1], &[2])?;
        let l2 = ctx.op1("Reshape", &[l, col], vec![])?;
        for (t, m) in masks.iter_mut().enumerate() {
            let tc = ctx.const_i64(&[t as i64], &[])?;
            *m = Some(ctx.op1("Less", &[tc, l2], vec![])?);
        }
    }
    let _ = hidden;
    let mut ys = Vec::with_capacity(nd);
    let mut hs = Vec::with_capacity(nd);
    let mut cs = Vec::with_capacity(nd);
    for (d, &reverse) in dirs.iter().enumerate() {
        let act = &acts[d * cell.n_act()..(d + 1) * cell.n_act()];
        let wd = ctx.take0(w, d)?;
        let rd = ctx.take0(r, d)?;
        let wg = ctx.split_n(wd, 0, g)?;
        let rg = ctx.split_n(rd, 0, g)?;
        let (wb, rb) = match b {
            Some(b) => {
                let bd = ctx.take0(b, d)?;
                let parts = ctx.split_n(bd, 0, 2 * g)?;
                (
                    parts[..g].iter().map(|p| Some(*p)).collect::<Vec<_>>(),
                    parts[g..].iter().map(|p| Some(*p)).collect::<Vec<_>>(),
                )
            }
            None => (vec![None; g], vec![None; g]),
        };
        // X W_g^T (+ biases) for every step: [T, batch, hidden] → T tensors.
        let mut xw: Vec<Vec<OutPort>> = Vec::with_capacity(g);
        for k in 0..g {
            let mut y = ctx.op1(
                "BatchMatMulV2",
                &[x, wg[k]],
                vec![("adj_x2", AttrValue::Bool(true))],
            )?;
            // GRU with linear_before_reset: R's bias of the h gate goes inside r * (...).
            let rb_here = !(cell == Cell::Gru && lbr && k == 2);
            let bias = match (wb[k], rb[k]) {
                (Some(a), Some(c)) if rb_here => Some(ctx.op1("Add", &[a, c], vec![])?),
                (Some(a), _) => Some(a),
                _ => None,
            };
            if let Some(bias) = bias {
                y = ctx.op1("Add", &[y, bias], vec![])?;
            }
            xw.push(ctx.unpack(y, t_len)?);
        }
        let zeros = ctx.op1("ZerosLike", &[xw[0][0]], vec![])?;
        let mut h = match init_h {
            Some(p) => ctx.take0(p, d)?,
            None => zeros,
        };
        let mut c = match init_c {
            Some(p) => ctx.take0(p, d)?,
            None => zeros,
        };
        let pd = match peep {
            Some(p) => {
                let pp = ctx.take0(p, d)?;
                ctx.split_n(pp, 0, 3)?.into_iter().map(Some).collect()
            }
            None => vec![None; 3],
        };
        let clip_c = match clip {
            Some(v) => Some((
                ctx.scalar_like(-(v as f64), dt)?,
                ctx.scalar_like(v as f64, dt)?,
            )),
            None => None,
        };
        let mut y_steps: Vec<Option<OutPort>> = vec![None; t_len];
        let order: Vec<usize> = if reverse {
            (0..t_len).rev().collect()
        } else {
            (0..t_len).collect()
        };
        for t in order {
            let rec = |ctx: &mut NodeCtx<'_>, hh: OutPort, k: usize| -> Result<OutPort> {
                ctx.op1(
                    "MatMulV2",
                    &[hh, rg[k]],
                    vec![("transpose_x2", AttrValue::Bool(true))],
                )
            };
            let clipped = |ctx: &mut NodeCtx<'_>, v: OutPort| -> Result<OutPort> {
                match clip_c {
                    Some((lo, hi)) => ctx.op1("ClipByValue", &[v, lo, hi], vec![]),
                    None => Ok(v),
                }
            };
            let (h_new, c_new) = match cell {
                Cell::Rnn => {
                    let pre = rec(ctx, h, 0)?;
                    let pre = ctx.op1("Add", &[xw[0][t], pre], vec![])?;
                    let pre = clipped(ctx, pre)?;
                    (ctx.activate(pre, &act[0], dt)?, None)
                }
                Cell::Gru => {
                    let zp = rec(ctx, h, 0)?;
                    let zp = ctx.op1("Add", &[xw[0][t], zp], vec![])?;
                    let zp = clipped(ctx, zp)?;
                    let z = ctx.activate(zp, &act[0], dt)?;
                    let rp = rec(ctx, h, 1)?;
                    let rp = ctx.op1("Add", &[xw[1][t], rp], vec![])?;
                    let rp = clipped(ctx, rp)?;
                    let rr = ctx.activate(rp, &act[0], dt)?;
                    let hp = if lbr {
                        let mut hr = rec(ctx, h, 2)?;
                        if let Some(rbh) = rb[2] {
                            hr = ctx.op1("Add", &[hr, rbh], vec![])?;
                        }
                        let hr = ctx.op1("Mul", &[rr, hr], vec![])?;
                        ctx.op1("Add", &[xw[2][t], hr], vec![])?
                    } else {
                        let rh = ctx.op1("Mul", &[rr, h], vec![])?;
                        let hr = rec(ctx, rh, 2)?;
                        ctx.op1("Add", &[xw[2][t], hr], vec![])?
                    };
                    let hp = clipped(ctx, hp)?;
                    let hh = ctx.activate(hp, &act[1], dt)?;
                    // (1 - z) * hh + z * h = hh + z * (h - hh)
                    let diff = ctx.op1("Sub", &[h, hh], vec![])?;
                    let zd = ctx.op1("Mul", &[z, diff], vec![])?;
                    (ctx.op1("Add", &[hh, zd], vec![])?, None)
                }
                Cell::Lstm => {
                    // Gate order in W/R/B: i, o, f, c; peepholes: i, o, f.
                    let pre = |ctx: &mut NodeCtx<'_>, k: usize| -> Result<OutPort> {
                        let r = rec(ctx, h, k)?;
                        ctx.op1("Add", &[xw[k][t], r], vec![])
                    };
                    // Gate k's clipped pre-activation, with its peephole on `cell`.
                    let gate = |ctx: &mut NodeCtx<'_>, k: usize, cell: OutPort| {
                        let mut v = pre(ctx, k)?;
                        if let Some(p) = pd[k] {
                            let m = ctx.op1("Mul", &[p, cell], vec![])?;
                            v = ctx.op1("Add", &[v, m], vec![])?;
                        }
                        clipped(ctx, v)
                    };
                    let ip = gate(ctx, 0, c)?;
                    let i_g = ctx.activate(ip, &act[0], dt)?;
                    let f_g = if input_forget {
                        let one = ctx.scalar_like(1.0, dt)?;
                        ctx.op1("Sub", &[one, i_g], vec![])?
                    } else {
                        let fp = gate(ctx, 2, c)?;
                        ctx.activate(fp, &act[0], dt)?
                    };
                    let cp = pre(ctx, 3)?;
                    let cp = clipped(ctx, cp)?;
                    let c_t = ctx.activate(cp, &act[1], dt)?;
                    let fc = ctx.op1("Mul", &[f_g, c], vec![])?;
                    let ic = ctx.op1("Mul", &[i_g, c_t], vec![])?;
                    let c2 = ctx.op1("Add", &[fc, ic], vec![])?;
                    let op_ = gate(ctx, 1, c2)?;
                    let o_g = ctx.activate(op_, &act[0], dt)?;
                    let hc = ctx.activate(c2, &act[2], dt)?;
                    (ctx.op1("Mul", &[o_g, hc], vec![])?, Some(c2))
                }
            };
            match masks[t] {
                Some(m) => {
                    y_steps[t] = Some(ctx.op1("SelectV2", &[m, h_new, zeros], vec![])?);
                    h = ctx.op1("SelectV2", &[m, h_new, h], vec![])?;
                    if let Some(c2) = c_new {
                        c = ctx.op1("SelectV2", &[m, c2, c], vec![])?;
                    }
                }
                None => {
                    y_steps[t] = Some(h_new);
                    h = h_new;
                    if let Some(c2) = c_new {
                        c = c2;
                    }
                }
            }
        }
        let y_steps: Vec<OutPort> = y_steps.into_iter().flatten().collect();
        ys.push(ctx.pack(&y_steps, 0)?);
        hs.push(h);
        cs.push(c);
    }
    // Y: [T, D, batch, hidden]; Y_h, Y_c: [D, batch, hidden].
    let mut y = ctx.pack(&ys, 1)?;
    let mut yh = ctx.pack(&hs, 0)?;
    if layout == 1 {
        y = ctx.transpose(y, &[2, 0, 1, 3])?;
        yh = ctx.transpose(yh, &[1, 0, 2])?;
    }
    let mut out = vec![Some(y), Some(yh)];
    if cell == Cell::Lstm {
        let mut yc = ctx.pack(&cs, 0)?;
        if layout == 1 {
            yc = ctx.transpose(yc, &[1, 0, 2])?;
        }
        out.push(Some(yc));
    }
    Ok(out)
}
