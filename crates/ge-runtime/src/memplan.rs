//! The memory plan of an execution plan, and the memory limit (`ge.memoryLimit`).
//!
//! At compile, every tensor a step produces gets its byte size (from the compiled graph's
//! static output description; a shape with an unknown dim, or a dtype without a fixed size,
//! is counted as unknown and left out of the arena) and its lifetime in steps: from the step
//! that produces it to the last step that reads it (a graph output lives to the end; an output
//! nothing reads, only during its own step). The tensors are then placed in one arena by
//! "greedy by size" (TFLite's and onnxruntime's planner, after Pisarchyk and Lee, "Efficient
//! Memory Management for Deep Neural Net Inference", 2020): largest first, each at the
//! lowest-waste gap between the tensors already placed whose lifetimes overlap its own, or
//! above them all. Sizes are rounded up to [`ALIGN`] bytes. The result is the arena's size
//! (the plan's peak for its intermediates and outputs), beside the naive sum (one buffer per
//! tensor) and the live peak (the most bytes alive at one step, a lower bound for any
//! placement).
//!
//! The plan's peak, compared with `ge.memoryLimit` at compile, is the arena plus the constants
//! plus the inputs ([`MemoryPlan::peak_bytes`]). Kernels' own scratch buffers are not in it;
//! every buffer a kernel allocates through the checked helpers (kernels/common.rs) is also
//! checked, one at a time, against the limit of the run ([`with_limit`], [`check_alloc`]):
//! what bounds tensors whose sizes are known only at run time.

use crate::error::{Error, Result};
use es_core::{DataType, Shape};
use std::cell::Cell;

/// Every size in the arena is rounded up to a multiple of this (a cache line; the widest
/// vector loads).
pub const ALIGN: u64 = 64;

/// How many of the largest tensors errors and reports name.
pub const LARGEST_SHOWN: usize = 5;

/// One tensor to place: its size (already aligned) and its lifetime, steps `first..=last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub bytes: u64,
    pub first: usize,
    pub last: usize,
}

impl Request {
    /// Whether two tensors are alive at one step.
    pub fn overlaps(&self, o: &Request) -> bool {
        self.first <= o.last && o.first <= self.last
    }
}

/// `bytes` rounded up to [`ALIGN`] (saturating).
pub fn align(bytes: u64) -> u64 {
    bytes.div_ceil(ALIGN).saturating_mul(ALIGN)
}

/// Greedy by size: the offset of each request (in the order given) and the arena's size.
pub fn greedy_by_size(reqs: &[Request]) -> (Vec<u64>, u64) {
    let mut order: Vec<usize> = (0..reqs.len()).collect();
    // Largest first; ties by start, then by index, so that a plan is deterministic.
    order.sort_by(|&a, &b| {
        (reqs[b].bytes.cmp(&reqs[a].bytes))
            .then(reqs[a].first.cmp(&reqs[b].first))
            .then(a.cmp(&b))
    });
    let mut offsets = vec![0u64; reqs.len()];
    // Placed requests, by offset.
    let mut placed: Vec<(u64, usize)> = Vec::with_capacity(reqs.len());
    let mut arena = 0u64;
    for &i in &order {
        let r = reqs[i];
        if r.bytes == 0 {
            continue;
        }
        let mut best: Option<(u64, u64)> = None; // (waste, offset)
        let mut prev_end = 0u64;
        for &(off, j) in &placed {
            let p = reqs[j];
            if !p.overlaps(&r) {
                continue;
            }
            if off >= prev_end {
                let gap = off - prev_end;
                if gap >= r.bytes && best.is_none_or(|(w, _)| gap - r.bytes < w) {
                    best = Some((gap - r.bytes, prev_end));
                }
            }
            prev_end = prev_end.max(off.saturating_add(p.bytes));
        }
        let off = best.map_or(prev_end, |(_, o)| o);
        offsets[i] = off;
        arena = arena.max(off.saturating_add(r.bytes));
        let at = placed.partition_point(|&(o, _)| o <= off);
        placed.insert(at, (off, i));
    }
    (offsets, arena)
}

/// The most bytes alive at one step (the sum over requests alive there).
pub fn live_peak(reqs: &[Request]) -> u64 {
    let Some(end) = reqs.iter().map(|r| r.last + 1).max() else {
        return 0;
    };
    // Differences at step boundaries, then a running sum.
    let mut delta = vec![0i128; end + 1];
    for r in reqs {
        delta[r.first] += r.bytes as i128;
        delta[r.last + 1] -= r.bytes as i128;
    }
    let (mut live, mut peak) = (0i128, 0i128);
    for d in delta {
        live += d;
        peak = peak.max(live);
    }
    u64::try_from(peak).unwrap_or(u64::MAX)
}

/// A tensor a step produces, as planned.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorPlan {
    /// The producing node's name, with `:<index>` for an output other than the first.
    pub name: String,
    pub op: String,
    pub dtype: DataType,
    /// Its static shape (-1 for an unknown dim; empty with `unknown_rank` for an unknown rank).
    pub shape: Vec<i64>,
    pub unknown_rank: bool,
    /// Bytes (unaligned); None when the size is not known at compile.
    pub bytes: Option<u64>,
    /// Its lifetime: the producing step to the last reading step (the last step for a graph
    /// output).
    pub first: usize,
    pub last: usize,
    /// Where it sits in the arena (None when its size is unknown).
    pub offset: Option<u64>,
}

impl TensorPlan {
    /// `shape` as text: `[2, 3]`, `[-1, 3]`, or `[?]` for an unknown rank.
    pub fn shape_text(&self) -> String {
        if self.unknown_rank {
            return "[?]".into();
        }
        let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        format!("[{}]", dims.join(", "))
    }
}

/// A tensor before placement: what the plan builder knows of a step's output.
pub struct TensorSpec<'a> {
    pub name: String,
    pub op: &'a str,
    pub dtype: DataType,
    pub shape: &'a Shape,
    pub first: usize,
    pub last: usize,
    /// Where it shares another tensor's region (by its index among the specs) at a byte
    /// offset in it: an element-wise output written over its dying input (offset 0), a
    /// Concat's input written by its producer straight into its slice of the Concat's output.
    pub alias: Option<(usize, u64)>,
}

/// The memory plan of an execution plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryPlan {
    /// Every tensor a step produces, in the order of the steps.
    pub tensors: Vec<TensorPlan>,
    /// The arena's size: every planned tensor at its offset.
    pub arena_bytes: u64,
    /// One buffer per planned tensor (the sum of their aligned sizes).
    pub naive_bytes: u64,
    /// The most (aligned) bytes alive at one step: no placement needs less than this.
    pub live_peak_bytes: u64,
    /// The constants the plan holds.
    pub const_bytes: u64,
    /// The inputs of a run (their signature's sizes).
    pub input_bytes: u64,
    /// Tensors whose size is not known at compile (not in the arena; bounded at run time).
    pub unknown: usize,
}

/// Per tensor, the tensor owning the region it shares and its byte offset there (following
/// aliases of aliases; `None` for a tensor in its own region, or for a cycle).
fn alias_roots(tensors: &[TensorSpec<'_>]) -> Vec<Option<(usize, u64)>> {
    (0..tensors.len())
        .map(|k| {
            let (mut at, mut off) = (tensors[k].alias?, 0u64);
            for _ in 0..tensors.len() {
                off = off.saturating_add(at.1);
                match tensors.get(at.0)?.alias {
                    Some(next) => at = (next.0, next.1),
                    None => return Some((at.0, off)),
                }
            }
            None
        })
        .collect()
}

impl MemoryPlan {
    /// Plans `tensors` (the steps' outputs) beside `const_bytes` of constants and `input_bytes`
    /// of inputs. A static size over one buffer's limit is a [`Error::Resource`]. A tensor that
    /// shares another's region ([`TensorSpec::alias`]) is placed with it: the region lives
    /// from the first to the last step of the tensors in it and holds the largest of them.
    pub fn new(tensors: Vec<TensorSpec<'_>>, const_bytes: u64, input_bytes: u64) -> Result<Self> {
        let mut planned = Vec::with_capacity(tensors.len());
        let mut sizes = Vec::with_capacity(tensors.len());
        let mut unknown = 0;
        let roots = alias_roots(&tensors);
        for t in tensors {
            let bytes = es_core::opmath::byte_size(&t.name, t.dtype, t.shape)
                .map_err(|e| Error::Resource(format!("{} ({}): {e}", t.name, t.op)))?
                .map(|b| b as u64);
            if bytes.is_none() {
                unknown += 1;
            }
            sizes.push(bytes);
            let unknown_rank = t.shape.is_unknown_rank();
            planned.push(TensorPlan {
                name: t.name,
                op: t.op.to_string(),
                dtype: t.dtype,
                shape: if unknown_rank {
                    Vec::new()
                } else {
                    t.shape.dims().to_vec()
                },
                unknown_rank,
                bytes,
                first: t.first,
                last: t.last,
                offset: None,
            });
        }
        // One request per region: a tensor of known size that shares no other's region (or
        // whose region's owner has no known size), grown by the tensors placed in it.
        let mut req_of: Vec<Option<usize>> = vec![None; planned.len()];
        let mut reqs: Vec<(usize, Request)> = Vec::with_capacity(planned.len());
        let mut naive_bytes = 0u64;
        for (k, t) in planned.iter().enumerate() {
            if let Some(b) = sizes[k] {
                naive_bytes = naive_bytes.saturating_add(align(b));
                if roots[k].is_none_or(|(r, _)| sizes[r].is_none()) {
                    req_of[k] = Some(reqs.len());
                    let (first, last) = (t.first, t.last);
                    reqs.push((
                        k,
                        Request {
                            bytes: align(b),
                            first,
                            last,
                        },
                    ));
                }
            }
        }
        for (k, t) in planned.iter().enumerate() {
            if let (Some(b), Some((r, off)), None) = (sizes[k], roots[k], req_of[k]) {
                if let Some(q) = req_of[r] {
                    let req = &mut reqs[q].1;
                    req.bytes = req.bytes.max(align(off.saturating_add(b)));
                    req.first = req.first.min(t.first);
                    req.last = req.last.max(t.last);
                }
            }
        }
        let rs: Vec<Request> = reqs.iter().map(|(_, r)| *r).collect();
        let (offsets, arena_bytes) = greedy_by_size(&rs);
        for ((k, _), off) in reqs.iter().zip(&offsets) {
            planned[*k].offset = Some(*off);
        }
        for k in 0..planned.len() {
            if let (Some(_), Some((r, off)), None) = (sizes[k], roots[k], req_of[k]) {
                planned[k].offset = req_of[r].map(|q| offsets[q].saturating_add(off));
            }
        }
        Ok(MemoryPlan {
            tensors: planned,
            arena_bytes,
            naive_bytes,
            live_peak_bytes: live_peak(&rs),
            const_bytes,
            input_bytes,
            unknown,
        })
    }

    /// What a run holds at its peak, as far as the plan knows: the arena, the constants and
    /// the inputs.
    pub fn peak_bytes(&self) -> u64 {
        self.arena_bytes
            .saturating_add(self.const_bytes)
            .saturating_add(self.input_bytes)
    }

    /// The `n` largest tensors of known size, largest first (ties in step order).
    pub fn largest(&self, n: usize) -> Vec<&TensorPlan> {
        let mut v: Vec<&TensorPlan> = self.tensors.iter().filter(|t| t.bytes.is_some()).collect();
        v.sort_by_key(|t| std::cmp::Reverse(t.bytes));
        v.truncate(n);
        v
    }

    /// The largest tensors as text: `name (Op) float32 [2, 3]: 24 bytes; ...`.
    pub fn largest_text(&self, n: usize) -> String {
        let parts: Vec<String> = self
            .largest(n)
            .into_iter()
            .map(|t| {
                format!(
                    "'{}' ({}) {} {}: {} bytes",
                    t.name,
                    t.op,
                    t.dtype.name(),
                    t.shape_text(),
                    t.bytes.unwrap_or(0)
                )
            })
            .collect();
        if parts.is_empty() {
            "none of known size".into()
        } else {
            parts.join("; ")
        }
    }

    /// An error unless the plan's peak fits `limit` bytes.
    pub fn check(&self, limit: u64) -> Result<()> {
        if self.peak_bytes() <= limit {
            return Ok(());
        }
        Err(Error::Resource(format!(
            "the plan needs {} bytes at its peak (arena {}, constants {}, inputs {}), over the \
             memory limit of {limit} bytes (ge.memoryLimit); largest tensors: {}",
            self.peak_bytes(),
            self.arena_bytes,
            self.const_bytes,
            self.input_bytes,
            self.largest_text(LARGEST_SHOWN)
        )))
    }
}

impl std::fmt::Display for MemoryPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "memory: peak {} bytes (arena {}, constants {}, inputs {}); {} tensors planned, \
             naive sum {}, live peak {}",
            self.peak_bytes(),
            self.arena_bytes,
            self.const_bytes,
            self.input_bytes,
            self.tensors.len() - self.unknown,
            self.naive_bytes,
            self.live_peak_bytes
        )?;
        if self.unknown > 0 {
            write!(f, "; {} of unknown size", self.unknown)?;
        }
        Ok(())
    }
}

thread_local! {
    /// The memory limit of the run on this thread (`u64::MAX`: none).
    static LIMIT: Cell<u64> = const { Cell::new(u64::MAX) };
}

/// Runs `f` with every checked allocation on this thread bounded by `limit` bytes.
pub fn with_limit<R>(limit: u64, f: impl FnOnce() -> R) -> R {
    struct Restore(u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            LIMIT.with(|l| l.set(self.0));
        }
    }
    let _restore = Restore(LIMIT.with(|l| l.replace(limit)));
    f()
}

/// An error when one buffer of `bytes` would pass the limit of the run on this thread.
pub fn check_alloc(bytes: u128) -> Result<()> {
    let limit = LIMIT.with(Cell::get);
    if bytes > limit as u128 {
        return Err(Error::Resource(format!(
            "cannot allocate {bytes} bytes: over the memory limit of {limit} bytes (ge.memoryLimit)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn req(bytes: u64, first: usize, last: usize) -> Request {
        Request { bytes, first, last }
    }

    #[test]
    fn a_chain_reuses_two_buffers() {
        // x0 -> x1 -> x2 -> x3, each read only by the next step: two buffers suffice.
        let reqs: Vec<Request> = (0..4).map(|i| req(64, i, i + 1)).collect();
        let (off, arena) = greedy_by_size(&reqs);
        assert_eq!(arena, 128);
        assert_ne!(off[0], off[1]);
        assert_eq!(off[0], off[2]);
        assert_eq!(live_peak(&reqs), 128);
    }

    #[test]
    fn the_largest_is_placed_first_and_a_smaller_one_fills_a_gap() {
        // a (256, steps 0..=1) and c (256, steps 2..=3) share an offset; b (128, 1..=2) overlaps
        // both and goes above them, d (64, 3..=3) fits under b's lifetime's end.
        let reqs = [
            req(256, 0, 1),
            req(128, 1, 2),
            req(256, 2, 3),
            req(64, 3, 3),
        ];
        let (off, arena) = greedy_by_size(&reqs);
        assert_eq!(off[0], 0);
        assert_eq!(off[2], 0);
        assert_eq!(off[1], 256);
        assert_eq!(off[3], 256);
        assert_eq!(arena, 384);
        assert_eq!(live_peak(&reqs), 384);
    }

    #[test]
    fn the_tightest_gap_wins() {
        // At step 1, three 64-byte tensors are alive (0..=2) with a 192-byte gap below them
        // (a tensor alive at step 0 only) and a 64-byte gap between two of them: a 64-byte
        // tensor alive at step 1 goes in the 64-byte gap, not the 192-byte one.
        let reqs = [
            req(64, 0, 2),
            req(192, 0, 0), // makes the first gap
            req(64, 0, 2),
            req(64, 0, 0), // makes the second gap
            req(64, 0, 2),
            req(64, 1, 1),
        ];
        let (off, _) = greedy_by_size(&reqs);
        check_no_overlap(&reqs, &off);
        let gap_of_64 = off[3];
        assert_eq!(off[5], gap_of_64, "{off:?}");
    }

    #[test]
    fn empty_and_zero_sized() {
        assert_eq!(greedy_by_size(&[]), (vec![], 0));
        assert_eq!(live_peak(&[]), 0);
        let (off, arena) = greedy_by_size(&[req(0, 0, 3), req(64, 1, 1)]);
        assert_eq!((off[1], arena), (0, 64));
    }

    #[test]
    fn align_rounds_up() {
        assert_eq!(align(0), 0);
        assert_eq!(align(1), 64);
        assert_eq!(align(64), 64);
        assert_eq!(align(65), 128);
        assert_eq!(align(u64::MAX), u64::MAX); // saturates (sizes stay under isize::MAX)
    }

    fn spec<'a>(
        name: &str,
        dtype: DataType,
        shape: &'a Shape,
        life: (usize, usize),
    ) -> TensorSpec<'a> {
        TensorSpec {
            name: name.into(),
            op: "Op",
            dtype,
            shape,
            first: life.0,
            last: life.1,
            alias: None,
        }
    }

    #[test]
    fn aliased_tensors_share_their_region() {
        let (small, big) = (Shape::new(vec![16]), Shape::new(vec![32]));
        let f = DataType::FLOAT;
        let a = spec("a", f, &small, (0, 1));
        // Written over `a` (in place), and into the second half of `c` (Concat in place).
        let b = TensorSpec {
            alias: Some((0, 0)),
            ..spec("b", f, &small, (1, 2))
        };
        let p = TensorSpec {
            alias: Some((3, 64)),
            ..spec("p", f, &small, (2, 4))
        };
        let c = spec("c", f, &big, (4, 5));
        let m = MemoryPlan::new(vec![a, b, p, c], 0, 0).unwrap();
        let off: Vec<Option<u64>> = m.tensors.iter().map(|t| t.offset).collect();
        // c's region lives from p's first step (2), so it overlaps a's region (to step 2).
        assert_eq!(off, vec![Some(128), Some(128), Some(64), Some(0)]);
        assert_eq!(m.arena_bytes, 192);
        assert_eq!(m.naive_bytes, 64 * 3 + 128);
        assert_eq!(m.live_peak_bytes, 192);
        // An alias of an alias adds the offsets; a cycle is placed on its own.
        let specs = vec![
            spec("r", f, &big, (0, 3)),
            TensorSpec {
                alias: Some((0, 64)),
                ..spec("s", f, &small, (0, 1))
            },
            TensorSpec {
                alias: Some((1, 0)),
                ..spec("t", f, &small, (1, 2))
            },
            TensorSpec {
                alias: Some((4, 0)),
                ..spec("u", f, &small, (0, 3))
            },
            TensorSpec {
                alias: Some((3, 0)),
                ..spec("v", f, &small, (0, 3))
            },
        ];
        let m = MemoryPlan::new(specs, 0, 0).unwrap();
        let off: Vec<Option<u64>> = m.tensors.iter().map(|t| t.offset).collect();
        assert_eq!(&off[..3], &[Some(0), Some(64), Some(64)]);
        assert!(off[3].is_some() && off[4].is_some() && off[3] != off[4]);
        assert_eq!(m.arena_bytes, 256);
    }

    #[test]
    fn a_plan_counts_unknown_sizes_and_names_the_largest() {
        let big = Shape::new(vec![1000, 10]);
        let small = Shape::new(vec![3]);
        let dynamic = Shape::new(vec![-1, 3]);
        let m = MemoryPlan::new(
            vec![
                spec("small", DataType::FLOAT, &small, (0, 1)),
                spec("big", DataType::FLOAT, &big, (1, 2)),
                spec("dyn", DataType::FLOAT, &dynamic, (2, 2)),
            ],
            100,
            12,
        )
        .unwrap();
        assert_eq!(m.unknown, 1);
        assert_eq!(m.tensors[2].offset, None);
        assert_eq!(m.arena_bytes, 40000 + 64);
        assert_eq!(m.naive_bytes, 40000 + 64);
        assert_eq!(m.peak_bytes(), 40064 + 100 + 12);
        let largest = m.largest(5);
        assert_eq!(largest.len(), 2);
        assert_eq!(largest[0].name, "big");
        assert!(m.to_string().contains("1 of unknown size"), "{m}");
        m.check(m.peak_bytes()).unwrap();
        let e = m.check(m.peak_bytes() - 1).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::Resource(_)));
        assert!(
            text.contains("'big' (Op) DT_FLOAT [1000, 10]: 40000 bytes")
                && text.contains(&format!("limit of {} bytes", m.peak_bytes() - 1)),
            "{text}"
        );
    }

    #[test]
    fn a_size_past_one_buffer_is_a_resource_error() {
        let huge = Shape::new(vec![1 << 31, 1 << 31]);
        let e =
            MemoryPlan::new(vec![spec("fill", DataType::FLOAT, &huge, (0, 0))], 0, 0).unwrap_err();
        assert!(matches!(e, Error::Resource(_)), "{e}");
        assert!(e.to_string().contains("fill"), "{e}");
    }

    #[test]
    fn the_run_limit_bounds_each_allocation_and_is_restored() {
        check_alloc(1 << 40).unwrap();
        with_limit(1000, || {
            check_alloc(1000).unwrap();
            let e = check_alloc(1001).unwrap_err();
            assert!(matches!(e, Error::Resource(_)));
            assert!(e.to_string().contains("limit of 1000 bytes"), "{e}");
        });
        check_alloc(1 << 40).unwrap();
    }

    fn check_no_overlap(reqs: &[Request], off: &[u64]) {
        for i in 0..reqs.len() {
            for j in i + 1..reqs.len() {
                let (a, b) = (reqs[i], reqs[j]);
                if a.bytes == 0 || b.bytes == 0 || !a.overlaps(&b) {
                    continue;
                }
                let disjoint = off[i] + a.bytes <= off[j] || off[j] + b.bytes <= off[i];
                assert!(disjoint, "{i} {a:?}@{} and {j} {b:?}@{}", off[i], off[j]);
            }
        }
    }

    proptest! {
        #[test]
        fn placements_never_overlap_and_the_arena_is_bounded(
            raw in prop::collection::vec((0u64..5000, 0usize..30, 0usize..8), 0..60)
        ) {
            let reqs: Vec<Request> = raw
                .iter()
                .map(|&(b, first, len)| req(align(b), first, first + len))
                .collect();
            let (off, arena) = greedy_by_size(&reqs);
            check_no_overlap(&reqs, &off);
            for (r, o) in reqs.iter().zip(&off) {
                prop_assert!(o + r.bytes <= arena);
                prop_assert_eq!(o % ALIGN, 0);
            }
            prop_assert!(arena >= live_peak(&reqs));
            prop_assert!(arena <= reqs.iter().map(|r| r.bytes).sum::<u64>());
        }
    }
}
