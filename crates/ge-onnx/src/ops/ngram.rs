//! N-gram counting: TfIdfVectorizer on integer input (string input is refused with the string
//! tensors).
//!
//! The n-gram positions depend only on the row length C (known at import), so they become
//! constant gather indices: for each gram size n of `[min_gram_length, max_gram_length]` with
//! grams in the pool, every start and skip distance d (1 to `max_skip_count + 1`; unigrams only
//! once, at d = 1) whose n positions `start, start + d, ...` fit in the row. The gathered grams
//! are compared with the pool's grams of that size (Equal, ReduceAll over the gram), the matches
//! summed per pool gram, and a constant 0/1 matrix moves each pool gram's count to its output
//! position (`ngram_indexes`); TF, IDF or TFIDF weighting follows onnx's reference.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::{DataType, OutPort};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[("TfIdfVectorizer", tfidf_vectorizer)];

/// The validated attributes of a TfIdfVectorizer node.
struct Spec {
    min_n: i64,
    max_n: i64,
    max_skip: i64,
    mode: String,
    /// Where each gram size's grams start in the pool (size i + 1 at `counts[i]`).
    counts: Vec<i64>,
    indexes: Vec<i64>,
    pool: Vec<i64>,
    weights: Vec<f32>,
}

fn spec(ctx: &NodeCtx<'_>) -> Result<Spec> {
    ctx.known_attrs(&[
        "max_gram_length",
        "max_skip_count",
        "min_gram_length",
        "mode",
        "ngram_counts",
        "ngram_indexes",
        "pool_int64s",
        "pool_strings",
        "weights",
    ])?;
    if ctx.has_attr("pool_strings") {
        return Err(Error::unsupported(
            "TfIdfVectorizer with pool_strings (string tensors)",
        ));
    }
    let list = |name: &str| -> Result<Vec<i64>> {
        ctx.attr_ints(name)?
            .ok_or_else(|| Error::tr(format!("TfIdfVectorizer: attribute '{name}' is required")))
    };
    let s = Spec {
        min_n: ctx.attr_i("min_gram_length", 0)?,
        max_n: ctx.attr_i("max_gram_length", 0)?,
        max_skip: ctx.attr_i("max_skip_count", 0)?,
        mode: ctx.attr_s("mode", "")?,
        counts: list("ngram_counts")?,
        indexes: list("ngram_indexes")?,
        pool: list("pool_int64s")?,
        weights: ctx.attr_floats("weights")?.unwrap_or_default(),
    };
    if !matches!(s.mode.as_str(), "TF" | "IDF" | "TFIDF") {
        return Err(Error::tr(format!(
            "TfIdfVectorizer: mode '{}' is not TF, IDF or TFIDF",
            s.mode
        )));
    }
    if s.min_n < 1 || s.max_n < s.min_n || s.max_skip < 0 {
        return Err(Error::tr(format!(
            "TfIdfVectorizer: need 1 <= min_gram_length <= max_gram_length and \
             max_skip_count >= 0, got {}, {} and {}",
            s.min_n, s.max_n, s.max_skip
        )));
    }
    let p = s.pool.len() as i64;
    let sorted = s.counts.windows(2).all(|w| w[0] <= w[1]);
    if !sorted || s.counts.iter().any(|&c| c < 0 || c > p) {
        return Err(Error::tr(format!(
            "TfIdfVectorizer: ngram_counts {:?} must be nondecreasing starts in a pool of {p}",
            s.counts
        )));
    }
    if s.indexes.iter().any(|&i| i < 0) || s.indexes.is_empty() {
        return Err(Error::tr(
            "TfIdfVectorizer: ngram_indexes must be nonempty and nonnegative",
        ));
    }
    Ok(s)
}

impl Spec {
    fn out_len(&self) -> i64 {
        self.indexes.iter().copied().max().unwrap_or(0) + 1
    }

    /// The pool's grams of size `n` (their first id among every gram of the pool, and their
    /// values), empty where the pool has none.
    fn grams(&self, n: i64) -> Result<(usize, &[i64])> {
        let i = (n - 1) as usize;
        let Some(&start) = self.counts.get(i) else {
            return Ok((0, &[]));
        };
        let end = self
            .counts
            .get(i + 1)
            .copied()
            .unwrap_or(self.pool.len() as i64);
        if (end - start) % n != 0 {
            return Err(Error::tr(format!(
                "TfIdfVectorizer: {} pool items of gram size {n} are not whole grams",
                end - start
            )));
        }
        // The id of a gram is its position among every gram of the pool, sizes in order.
        let mut first = 0usize;
        for (j, w) in self.counts.iter().enumerate().take(i) {
            let e = self
                .counts
                .get(j + 1)
                .copied()
                .unwrap_or(self.pool.len() as i64);
            first += ((e - w) / (j as i64 + 1)) as usize;
        }
        Ok((first, &self.pool[start as usize..end as usize]))
    }
}

/// Row positions of every n-gram of size `n` in a row of `c` elements (row-major [G, n]).
fn positions(n: i64, c: i64, max_skip: i64) -> Vec<i64> {
    let mut v = Vec::new();
    let skips = if n == 1 { 1 } else { max_skip + 1 };
    for d in 1..=skips {
        for start in 0..c {
            if start + (n - 1) * d < c {
                v.extend((0..n).map(|k| start + k * d));
            }
        }
    }
    v
}

fn tfidf_vectorizer(ctx: &mut NodeCtx<'_>) -> Out {
    let s = spec(ctx)?;
    let x = ctx.input(0)?;
    let xdt = ctx.desc(x)?.dtype;
    if !matches!(xdt, DataType::INT32 | DataType::INT64) {
        return Err(Error::unsupported(format!(
            "TfIdfVectorizer on {xdt} (int32 and int64 are supported)"
        )));
    }
    let dims = ctx.input_dims(0)?.ok_or_else(|| {
        Error::unsupported("TfIdfVectorizer: the rank of the input must be known at import")
    })?;
    let (rows, c) = match dims.as_slice() {
        [] => (None, 1),
        [c] => (None, *c),
        [b, c] => (Some(*b), *c),
        _ => {
            return Err(Error::tr(format!(
                "TfIdfVectorizer: the input has rank {}, not 1 or 2",
                dims.len()
            )))
        }
    };
    if c < 0 {
        return Err(Error::unsupported(
            "TfIdfVectorizer: the row length must be known at import",
        ));
    }
    let out = s.out_len();
    const_elems(
        &[s.pool.len() as i64 + 1, out],
        "TfIdfVectorizer's output map",
    )?;
    // [B, C] int64 (one row for a 0-D or 1-D input)
    let x = ctx.cast(x, I64)?;
    let x2 = if rows.is_some() {
        x
    } else {
        let shape = ctx.const_i64(&[1, c], &[2])?;
        ctx.op1("Reshape", &[x, shape], vec![])?
    };
    let mut total: Option<OutPort> = None;
    for n in s.min_n..=s.max_n {
        let (first, pool) = s.grams(n)?;
        let pn = pool.len() as i64 / n;
        let pos = positions(n, c, s.max_skip);
        let g = pos.len() as i64 / n;
        if pn == 0 || g == 0 {
            continue;
        }
        const_elems(&[g, pn, n], "TfIdfVectorizer's gram comparison")?;
        let idx = ctx.const_i64(&pos, &[g, n])?;
        let axis = ctx.const_i64(&[1], &[])?;
        let grams = ctx.op1("GatherV2", &[x2, idx, axis], vec![])?; // [B, G, n]
        let grams = ctx.unsqueeze(grams, &[2])?; // [B, G, 1, n]
        let p = ctx.const_i64(pool, &[pn, n])?;
        let eq = ctx.bin("Equal", grams, p)?; // [B, G, P, n]
        let axes = ctx.const_i64(&[-1], &[1])?;
        let hit = ctx.op1("ReduceAll", &[eq, axes], vec![])?; // [B, G, P]
        let hit = ctx.cast(hit, DataType::FLOAT)?;
        let axes = ctx.const_i64(&[1], &[1])?;
        let cnt = ctx.op1("ReduceSum", &[hit, axes], vec![])?; // [B, P]
        let mut map = vec![0.0f64; (pn * out) as usize];
        for k in 0..pn as usize {
            let Some(&o) = s.indexes.get(first + k) else {
                return Err(Error::tr(format!(
                    "TfIdfVectorizer: ngram_indexes has {} entries for a pool of more grams",
                    s.indexes.len()
                )));
            };
            map[k * out as usize + o as usize] = 1.0;
        }
        let m = ctx.const_of(DataType::FLOAT, &map, &[pn, out])?;
        let y = ctx.op1("MatMulV2", &[cnt, m], vec![])?; // [B, out]
        total = Some(match total {
            Some(t) => ctx.bin("Add", t, y)?,
            None => y,
        });
    }
    let zeros = |ctx: &mut NodeCtx<'_>| -> Result<OutPort> {
        let b = ctx.dim_scalar(x2, 0)?;
        let b = ctx.unsqueeze(b, &[0])?;
        let o = ctx.const_i64(&[out], &[1])?;
        let d = ctx.concat(&[b, o], 0)?;
        let z = ctx.const_of(DataType::FLOAT, &[0.0], &[])?;
        ctx.op1("Fill", &[d, z], vec![])
    };
    let tf = match total {
        Some(t) => t,
        None => zeros(ctx)?,
    };
    let w: Vec<f64> = if s.weights.is_empty() {
        vec![1.0; out as usize]
    } else if s.weights.len() as i64 >= out {
        s.weights[..out as usize]
            .iter()
            .map(|&v| v as f64)
            .collect()
    } else {
        return Err(Error::tr(format!(
            "TfIdfVectorizer: {} weights for an output of {out}",
            s.weights.len()
        )));
    };
    let y = match s.mode.as_str() {
        "TF" => tf,
        "IDF" => {
            let z = ctx.const_of(DataType::FLOAT, &[0.0], &[])?;
            let seen = ctx.bin("Greater", tf, z)?;
            let w = ctx.const_of(DataType::FLOAT, &w, &[out])?;
            ctx.op1("SelectV2", &[seen, w, z], vec![])?
        }
        _ if s.weights.is_empty() => tf,
        _ => {
            let w = ctx.const_of(DataType::FLOAT, &w, &[out])?;
            ctx.bin("Mul", tf, w)?
        }
    };
    let y = if rows.is_none() {
        let s = ctx.const_i64(&[out], &[1])?;
        ctx.op1("Reshape", &[y, s], vec![])?
    } else {
        y
    };
    one(y)
}

#[cfg(test)]
mod tests {
    use super::positions;

    #[test]
    fn unigrams_once_longer_grams_per_skip() {
        assert_eq!(positions(1, 3, 5), vec![0, 1, 2]);
        // bigrams in 4 elements, skips 0 and 1: (0,1) (1,2) (2,3) then (0,2) (1,3)
        assert_eq!(positions(2, 4, 1), vec![0, 1, 1, 2, 2, 3, 0, 2, 1, 3]);
        assert!(positions(3, 2, 2).is_empty());
    }
}
