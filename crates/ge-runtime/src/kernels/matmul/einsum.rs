//! Einsum: numpy's equation language (implicit output: the labels seen once, sorted, after the
//! ellipsis dims), repeated labels in an operand take a diagonal, ellipsis dims broadcast.
//! Operands are contracted left to right, each pair as one batched matrix product
//! ([`super::batched`]); labels no later operand or the output needs are summed first. Letter
//! labels must have one size (the shape rule's check; numpy would also broadcast a size-1 dim).
//! An explicit output without "..." sums the ellipsis dims (the shape rule's shape; numpy
//! refuses such an equation). Integers accumulate in i64, wrapping, then wrap into the dtype.

use super::batched;
use crate::error::{Error, Result};
use crate::kernels::common::{
    array, bad_attr, broadcast_shape, numel, owned, required, std_slice, strides_of, with_capacity,
    Pick,
};
use crate::kernels::input;
use crate::kernels::{Kernel, NodeInfo};
use crate::value::Value;
use es_core::opmath::{parse_einsum, EinsumTerm};
use es_core::DataType;
use half::bf16;
use half::f16;
use ndarray::{ArrayD, Axis, IxDyn, LinalgScalar};
use std::num::Wrapping;

/// A parsed equation: its operands' terms and its output term (numpy's implicit one when the
/// equation has none), by `es_core::opmath`'s parser.
#[derive(Clone, Debug)]
struct Equation {
    inputs: Vec<EinsumTerm>,
    output: EinsumTerm,
}

fn parse_equation(eq: &str) -> std::result::Result<Equation, String> {
    let e = parse_einsum(eq).map_err(|t| format!("invalid term {t:?}"))?;
    e.check_output()?;
    Ok(Equation {
        output: e.output_term(),
        inputs: e.inputs,
    })
}

/// The label of the `j`-th of `ne` ellipsis dims (letters are their ASCII codes).
const ELLIPSIS: u32 = 256;

/// `a` with the dims of repeated labels reduced to their diagonal; the labels become unique.
fn diagonal<C: Copy>(a: ArrayD<C>, labels: &[u32]) -> Result<(ArrayD<C>, Vec<u32>)> {
    let mut uniq: Vec<u32> = Vec::with_capacity(labels.len());
    for &l in labels {
        if !uniq.contains(&l) {
            uniq.push(l);
        }
    }
    if uniq.len() == labels.len() {
        return Ok((a, uniq));
    }
    let shape = a.shape().to_vec();
    let st = strides_of(&shape);
    let (mut dims, mut ustr) = (Vec::new(), Vec::new());
    for &u in &uniq {
        let (mut d, mut s) = (None, 0usize);
        for (i, _) in labels.iter().enumerate().filter(|(_, &l)| l == u) {
            match d {
                Some(x) if x != shape[i] => {
                    return Err(Error::kernel(format!(
                        "Einsum: the dims of the repeated label '{}' differ ({x} and {})",
                        char::from_u32(u).unwrap_or('?'),
                        shape[i]
                    )))
                }
                _ => d = Some(shape[i]),
            }
            s += st[i];
        }
        dims.push(d.unwrap_or(1));
        ustr.push(s);
    }
    let src = std_slice(&a);
    let total = numel(&dims)?;
    let mut out = with_capacity(total)?;
    if total > 0 {
        let mut idx = vec![0usize; dims.len()];
        let mut off = 0usize;
        'all: loop {
            out.push(
                *src.get(off)
                    .ok_or_else(|| Error::kernel("internal error: diagonal out of bounds"))?,
            );
            let mut k = dims.len();
            loop {
                if k == 0 {
                    break 'all;
                }
                k -= 1;
                idx[k] += 1;
                off += ustr[k];
                if idx[k] < dims[k] {
                    break;
                }
                off -= ustr[k] * dims[k];
                idx[k] = 0;
            }
        }
    }
    Ok((array(&dims, out)?, uniq))
}

/// `a` summed over the dims whose label `keep` refuses.
fn sum_out<C: LinalgScalar>(
    mut a: ArrayD<C>,
    mut labels: Vec<u32>,
    keep: impl Fn(u32) -> bool,
) -> (ArrayD<C>, Vec<u32>) {
    for i in (0..labels.len()).rev() {
        if !keep(labels[i]) {
            a = a.sum_axis(Axis(i));
            labels.remove(i);
        }
    }
    (a, labels)
}

/// `x` (its dims labelled `lx`) as a [batch.., rows, cols] array: its dims permuted to the
/// labels of `groups` (batch, rows, cols) in order and broadcast to `dim` of each label, then the
/// rows and the cols each flattened to one dim of size `rc`.
fn as_batched<C: Clone>(
    x: &ArrayD<C>,
    lx: &[u32],
    groups: [&[u32]; 3],
    dim: impl Fn(u32) -> usize,
    rc: [usize; 2],
) -> Result<ArrayD<C>> {
    let order: Vec<u32> = groups.concat();
    let perm: Vec<usize> = order
        .iter()
        .map(|&l| lx.iter().position(|&x| x == l).unwrap_or(0))
        .collect();
    let tgt: Vec<usize> = order.iter().map(|&l| dim(l)).collect();
    let v = x.view().permuted_axes(IxDyn(&perm));
    let v = v
        .broadcast(IxDyn(&tgt))
        .ok_or_else(|| Error::kernel("Einsum: the operands' dims do not broadcast"))?;
    let mut d3 = tgt[..groups[0].len()].to_vec();
    d3.extend(rc);
    owned(v, &d3)
}

/// The contraction of two operands, keeping the labels in `keep`: one batched matrix product
/// of a as [batch, m, k] and b as [batch, k, n] (batch: shared and kept; k: shared, summed).
fn contract<C: LinalgScalar + Send + Sync>(
    a: ArrayD<C>,
    la: Vec<u32>,
    b: ArrayD<C>,
    lb: Vec<u32>,
    keep: &[u32],
) -> Result<(ArrayD<C>, Vec<u32>)> {
    let (a, la) = sum_out(a, la, |l| keep.contains(&l) || lb.contains(&l));
    let (b, lb) = sum_out(b, lb, |l| keep.contains(&l) || la.contains(&l));
    let at = |ls: &[u32], l: u32| ls.iter().position(|&x| x == l).unwrap_or(0);
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    let da = |l: u32| sa[at(&la, l)];
    let db = |l: u32| sb[at(&lb, l)];
    let shared = |l: &u32| lb.contains(l);
    let batch: Vec<u32> = la
        .iter()
        .copied()
        .filter(|l| shared(l) && keep.contains(l))
        .collect();
    let summed: Vec<u32> = la
        .iter()
        .copied()
        .filter(|l| shared(l) && !keep.contains(l))
        .collect();
    let m: Vec<u32> = la.iter().copied().filter(|l| !shared(l)).collect();
    let n: Vec<u32> = lb.iter().copied().filter(|l| !la.contains(l)).collect();
    // Summed dims broadcast to their common size.
    let kd = |l: u32| da(l).max(db(l));
    let dim_a = |l: u32| if summed.contains(&l) { kd(l) } else { da(l) };
    let dim_b = |l: u32| if summed.contains(&l) { kd(l) } else { db(l) };
    let size =
        |ls: &[u32], d: &dyn Fn(u32) -> usize| numel(&ls.iter().map(|&l| d(l)).collect::<Vec<_>>());
    let (mm, kk, nn) = (size(&m, &da)?, size(&summed, &kd)?, size(&n, &db)?);
    let layout = |e: ndarray::ShapeError| Error::kernel(format!("internal error: {e}"));
    // a as [batch.., m, k], b as [batch.., k, n].
    let a3 = as_batched(&a, &la, [&batch, &m, &summed], dim_a, [mm, kk])?;
    let b3 = as_batched(&b, &lb, [&batch, &summed, &n], dim_b, [kk, nn])?;
    // The product's size, checked (and its memory asked for) before the GEMM allocates it.
    let mut dims = broadcast_shape(&a3.shape()[..a3.ndim() - 2], &b3.shape()[..b3.ndim() - 2])?;
    drop(with_capacity::<C>(numel(&[numel(&dims)?, mm, nn])?)?);
    let r = batched(&a3, &b3, false, false)?;
    dims.extend(m.iter().map(|&l| da(l)));
    dims.extend(n.iter().map(|&l| db(l)));
    let r = r.into_shape_with_order(IxDyn(&dims)).map_err(layout)?;
    let mut labels = batch;
    labels.extend(m);
    labels.extend(n);
    Ok((r, labels))
}

/// Einsum of arrays of one compute type.
fn einsum_arrays<C: LinalgScalar + Send + Sync>(
    eq: &Equation,
    xs: Vec<ArrayD<C>>,
) -> Result<ArrayD<C>> {
    if xs.len() != eq.inputs.len() {
        return Err(Error::kernel(format!(
            "Einsum: the equation has {} operands, got {} tensors",
            eq.inputs.len(),
            xs.len()
        )));
    }
    // Labels of every dim; ellipsis dims right-aligned across operands (numpy broadcasting).
    let mut ne = 0usize;
    for (k, (t, x)) in eq.inputs.iter().zip(&xs).enumerate() {
        let (nl, r) = (t.pre.len() + t.post.len(), x.ndim());
        if (t.ellipsis && r < nl) || (!t.ellipsis && r != nl) {
            return Err(Error::kernel(format!(
                "Einsum: operand {k} has {nl} labels but shape {:?}",
                x.shape()
            )));
        }
        ne = ne.max(r - nl);
    }
    let ell = |count: usize| (ELLIPSIS + (ne - count) as u32)..(ELLIPSIS + ne as u32);
    let mut labels: Vec<Vec<u32>> = Vec::with_capacity(xs.len());
    let mut sizes: Vec<(u32, usize)> = Vec::new();
    for (t, x) in eq.inputs.iter().zip(&xs) {
        let e = x.ndim() - t.pre.len() - t.post.len();
        let l: Vec<u32> = t
            .pre
            .iter()
            .map(|&c| u32::from(c))
            .chain(ell(e))
            .chain(t.post.iter().map(|&c| u32::from(c)))
            .collect();
        for (&lab, &d) in l.iter().zip(x.shape()) {
            match sizes.iter_mut().find(|(s, _)| *s == lab) {
                None => sizes.push((lab, d)),
                Some((_, s)) if *s == d => {}
                Some((_, s)) if lab >= ELLIPSIS && (*s == 1 || d == 1) => *s = (*s).max(d),
                Some((_, s)) => {
                    return Err(Error::kernel(if lab >= ELLIPSIS {
                        format!(
                            "Einsum: the ellipsis dims of the operands do not broadcast ({s} and {d})"
                        )
                    } else {
                        format!(
                            "Einsum: label '{}' has sizes {s} and {d}",
                            char::from_u32(lab).unwrap_or('?')
                        )
                    }))
                }
            }
        }
        labels.push(l);
    }
    let o = &eq.output;
    let mut out: Vec<u32> = o.pre.iter().map(|&c| u32::from(c)).collect();
    if o.ellipsis {
        out.extend(ell(ne));
    }
    out.extend(o.post.iter().map(|&c| u32::from(c)));
    // Diagonals, then the labels no other operand and not the output needs are summed.
    let mut ops: Vec<(ArrayD<C>, Vec<u32>)> = Vec::with_capacity(xs.len());
    for (k, x) in xs.into_iter().enumerate() {
        let (a, l) = diagonal(x, &labels[k])?;
        let needed = |lab: u32| {
            out.contains(&lab)
                || labels
                    .iter()
                    .enumerate()
                    .any(|(j, lj)| j != k && lj.contains(&lab))
        };
        ops.push(sum_out(a, l, needed));
    }
    let mut rest = ops.into_iter();
    let (mut acc, mut la) = rest
        .next()
        .ok_or_else(|| Error::kernel("Einsum needs at least one operand"))?;
    let rest: Vec<(ArrayD<C>, Vec<u32>)> = rest.collect();
    let later: Vec<Vec<u32>> = rest.iter().map(|(_, l)| l.clone()).collect();
    for (i, (b, lb)) in rest.into_iter().enumerate() {
        let mut keep = out.clone();
        keep.extend(later[i + 1..].iter().flatten().copied());
        (acc, la) = contract(acc, la, b, lb, &keep)?;
    }
    let (acc, la) = sum_out(acc, la, |l| out.contains(&l));
    let perm: Vec<usize> = out
        .iter()
        .map(|l| la.iter().position(|x| x == l))
        .collect::<Option<_>>()
        .filter(|p: &Vec<usize>| p.len() == la.len())
        .ok_or_else(|| Error::kernel("internal error: Einsum lost a label"))?;
    Ok(acc
        .permuted_axes(IxDyn(&perm))
        .as_standard_layout()
        .into_owned())
}

/// Einsum of values of `T`, computed in `C`.
fn einsum_via<T: Pick, C: LinalgScalar + Send + Sync>(
    eq: &Equation,
    xs: &[&Value],
    up: impl Fn(T) -> C,
    down: impl Fn(C) -> T,
) -> Result<ArrayD<T>> {
    let arrs = xs
        .iter()
        .map(|x| {
            T::pick(x)
                .map(|a| a.mapv(&up))
                .ok_or_else(|| Error::kernel("internal error: Einsum operand dtype"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(einsum_arrays(eq, arrs)?.mapv(down))
}

/// Integers accumulate in i64, wrapping (the dtype's own wrap-around, its low bits).
fn einsum_int<T: Pick>(eq: &Equation, xs: &[&Value]) -> Result<ArrayD<T>> {
    einsum_via(
        eq,
        xs,
        |v: T| Wrapping(v.to_i64_bits()),
        |w: Wrapping<i64>| T::from_i64_bits(w.0),
    )
}

fn einsum_value(eq: &Equation, xs: &[&Value]) -> Result<Value> {
    let dt = xs
        .first()
        .map(|x| x.dtype())
        .ok_or_else(|| Error::kernel("Einsum needs at least one operand"))?;
    if let Some(x) = xs.iter().find(|x| x.dtype() != dt) {
        return Err(Error::kernel(format!(
            "Einsum: the operands have dtypes {dt} and {}, which must agree",
            x.dtype()
        )));
    }
    use DataType::*;
    Ok(match dt {
        FLOAT => Value::F32(einsum_via(eq, xs, |v: f32| v, |v| v)?),
        DOUBLE => Value::F64(einsum_via(eq, xs, |v: f64| v, |v| v)?),
        FLOAT16 => Value::F16(einsum_via(eq, xs, f16::to_f32, f16::from_f32)?),
        BF16 => Value::BF16(einsum_via(eq, xs, bf16::to_f32, bf16::from_f32)?),
        INT8 => Value::I8(einsum_int(eq, xs)?),
        INT16 => Value::I16(einsum_int(eq, xs)?),
        INT32 => Value::I32(einsum_int(eq, xs)?),
        INT64 => Value::I64(einsum_int(eq, xs)?),
        UINT8 => Value::U8(einsum_int(eq, xs)?),
        UINT16 => Value::U16(einsum_int(eq, xs)?),
        UINT32 => Value::U32(einsum_int(eq, xs)?),
        UINT64 => Value::U64(einsum_int(eq, xs)?),
        _ => return Err(Error::kernel(format!("Einsum does not take {dt} tensors"))),
    })
}

pub(super) fn einsum_factory(info: &NodeInfo) -> Result<Kernel> {
    let eq = required(info, "equation")?
        .as_str()
        .ok_or_else(|| bad_attr(info, "attribute 'equation' must be a string"))?
        .to_string();
    let parsed = parse_equation(&eq)
        .map_err(|m| bad_attr(info, format!("attribute 'equation' {eq:?}: {m}")))?;
    Ok(Box::new(move |inputs| {
        let xs = (0..inputs.len())
            .map(|i| input(inputs, i))
            .collect::<Result<Vec<_>>>()?;
        Ok(vec![einsum_value(&parsed, &xs)?])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    use ndarray::{ArrayD, IxDyn};

    use crate::kernels::common::testing::{f64s, i8s, run1, s};

    fn einsum(eq: &str, xs: &[&Value]) -> Result<Value> {
        run1("Einsum", &[("equation", s(eq))], xs)
    }

    #[test]
    fn einsum_contracts_diagonals_and_ellipses() {
        let a = f64s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = f64s(&[3, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        let y = einsum("ij,jk->ik", &[&a, &b]).unwrap();
        assert_eq!(y.to_f64_vec(), vec![4.0, 5.0, 10.0, 11.0]);
        // Implicit output: the labels seen once, sorted.
        assert_eq!(einsum("ij,jk", &[&a, &b]).unwrap(), y);
        let t = einsum("ij->ji", &[&a]).unwrap();
        assert_eq!(
            (t.shape(), t.to_f64_vec()),
            (&[3, 2][..], vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
        );
        let sq = f64s(&[3, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        assert_eq!(einsum("ii", &[&sq]).unwrap().to_f64_vec(), vec![15.0]);
        assert_eq!(
            einsum("ii->i", &[&sq]).unwrap().to_f64_vec(),
            vec![1.0, 5.0, 9.0]
        );
        assert_eq!(einsum("ij->", &[&a]).unwrap().to_f64_vec(), vec![21.0]);
        // Outer product, three operands, ellipsis broadcasting.
        let v = f64s(&[2], &[1.0, 2.0]);
        assert_eq!(
            einsum("i,j->ij", &[&v, &v]).unwrap().to_f64_vec(),
            vec![1.0, 2.0, 2.0, 4.0]
        );
        assert_eq!(
            einsum("i,ij,j->", &[&v, &a, &f64s(&[3], &[1.0, 1.0, 1.0])])
                .unwrap()
                .to_f64_vec(),
            vec![6.0 + 2.0 * 15.0]
        );
        let e1 = f64s(&[2, 1, 2, 3], &[1.0; 12]);
        let e2 = f64s(&[4, 3, 1], &[1.0; 12]);
        let y = einsum("...ij,...jk->...ik", &[&e1, &e2]).unwrap();
        assert_eq!(y.shape(), &[2, 4, 2, 1]);
        assert!(y.to_f64_vec().iter().all(|&v| v == 3.0));
        // An output without the ellipsis sums its dims.
        assert_eq!(
            einsum("...i->i", &[&a]).unwrap().to_f64_vec(),
            vec![5.0, 7.0, 9.0]
        );
        // Integers wrap.
        let big = i8s(&[2], &[100, 100]);
        assert_eq!(
            einsum("i,i->", &[&big, &big]).unwrap().to_i64_vec(),
            vec![32]
        );
    }

    #[test]
    fn einsum_errors() {
        let a = f64s(&[2, 3], &[0.0; 6]);
        let e = einsum("ij,jk->ik", &[&a, &a]).unwrap_err();
        assert!(e.to_string().contains("label 'j'"), "{e}");
        assert!(einsum("ijk->i", &[&a]).is_err());
        assert!(einsum("ij,jk->ik", &[&a]).is_err());
        assert!(einsum("ii", &[&a]).is_err());
        assert!(einsum(
            "ij",
            &[&Value::Bool(ArrayD::from_elem(IxDyn(&[1, 1]), true))]
        )
        .is_err());
        for bad in ["i2->i", "ij->k", "ij->ii", "i.j"] {
            let e = einsum(bad, &[&a]).unwrap_err();
            assert!(matches!(e, Error::Compile(_)), "{bad}: {e}");
        }
    }
}
