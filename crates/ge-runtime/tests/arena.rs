//! Replays in reused buffers (crates/ge-runtime/src/arena.rs): a replay after a warm-up run
//! allocates exactly its outputs (the vector and each output's buffer, counted through the
//! global allocator); element-wise steps write over their dying input; a Concat's producers
//! write into its output; and results equal the allocating kernels' bit for bit, over random
//! graphs of odd shapes.

use es_core::builder::OpArgs;
use es_core::es::{self, FlattenAttrs, ReshapeAttrs, UnsqueezeAttrs};
use es_core::{DataType, Format, Graph, GraphBuilder, OutPort, Shape, Tensor};
use ge_runtime::ndarray::{ArrayD, IxDyn};
use ge_runtime::plan::{compile, signature, Plan};
use ge_runtime::Value;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

// ---- counting allocations (of the current thread, while counting) ----

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: the thread's locals may be gone while it exits.
    let _ = COUNTING.try_with(|c| {
        if c.get() {
            let _ = COUNT.try_with(|n| n.set(n.get() + 1));
        }
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note();
        System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note();
        System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note();
        System.realloc(p, l, n)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// What `f` returns and how many allocations (and reallocations) it made on this thread.
fn count<R>(f: impl FnOnce() -> R) -> (R, usize) {
    COUNT.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    let r = f();
    COUNTING.with(|c| c.set(false));
    (r, COUNT.with(Cell::get))
}

// ---- graphs ----

fn input(b: &mut GraphBuilder, index: u32, dtype: DataType, dims: &[usize]) -> OutPort {
    let shape = Shape::new(dims.iter().map(|&d| d as i64).collect());
    b.create_input(index.into(), None, "Data", dtype, Format::ND, shape)
        .expect("input")
}

fn konst(b: &mut GraphBuilder, dims: &[usize], f: impl Fn(usize) -> f32) -> OutPort {
    let n: usize = dims.iter().product();
    let v: Vec<f32> = (0..n).map(f).collect();
    let t = Tensor::from_values(&v, dims.iter().map(|&d| d as i64).collect()).expect("tensor");
    b.create_const(t, None).expect("const")
}

fn shape_const(b: &mut GraphBuilder, dims: &[i64]) -> OutPort {
    let t = Tensor::from_values(dims, vec![dims.len() as i64]).expect("tensor");
    b.create_const(t, None).expect("const")
}

fn f32s(dims: &[usize], f: impl Fn(usize) -> f32) -> Value {
    let n = dims.iter().product();
    Value::F32(ArrayD::from_shape_vec(IxDyn(dims), (0..n).map(f).collect()).expect("value"))
}

fn plan(g: &Graph, inputs: &[Value]) -> Plan {
    compile(g, &signature(inputs), None).expect("compile")
}

/// The bits of each element (so that NaNs compare equal), with the dtype and shape.
fn bits(v: &Value) -> (DataType, Vec<usize>, Vec<u64>) {
    let b = match v {
        Value::F32(a) => a.iter().map(|x| x.to_bits() as u64).collect(),
        Value::I32(a) => a.iter().map(|&x| x as u32 as u64).collect(),
        Value::I64(a) => a.iter().map(|&x| x as u64).collect(),
        other => panic!("unexpected {other:?}"),
    };
    (v.dtype(), v.shape().to_vec(), b)
}

fn same(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| bits(x) == bits(y))
}

/// The index of the step named `name`.
fn step(p: &Plan, name: &str) -> usize {
    p.step_names()
        .iter()
        .position(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no step {name}: {:?}", p.step_names()))
}

/// The name of the node making `port` (its node's name).
fn name(g: &GraphBuilder, port: OutPort) -> String {
    g.graph().node(port.node).expect("node").name.to_string()
}

// ---- allocation-free replay ----

/// x [4, 8] -> Add c -> Relu -> Mul x -> (MatMul w) -> (Sub c, Maximum x) concatenated on axis
/// 0 -> Reshape [64] -> Sigmoid -> Unsqueeze -> Flatten -> Mul d: every step an into-kernel or
/// a move.
fn replay_graph(matmul: bool) -> Graph {
    let mut b = GraphBuilder::new("replay");
    let x = input(&mut b, 0, DataType::FLOAT, &[4, 8]);
    let c = konst(&mut b, &[8], |i| i as f32 / 8.0 - 0.4);
    let d = konst(&mut b, &[1, 64], |i| (i % 5) as f32 - 2.0);
    let a = es::add(&mut b, x, c).unwrap();
    let r = es::relu(&mut b, a).unwrap();
    let m = es::mul(&mut b, r, x).unwrap();
    let w = konst(&mut b, &[8, 8], |i| ((i * 7) % 11) as f32 / 5.0 - 1.0);
    let mm = if matmul {
        es::mat_mul_v2(&mut b, m, w, None, None, Default::default()).unwrap()
    } else {
        m
    };
    let p1 = es::sub(&mut b, mm, c).unwrap();
    let p2 = es::maximum(&mut b, x, c).unwrap();
    let cat = es::concat_d(&mut b, &[p1, p2], 0).unwrap();
    let shape = shape_const(&mut b, &[64]);
    let flat = es::reshape(&mut b, cat, shape, ReshapeAttrs::default()).unwrap();
    let s = es::sigmoid(&mut b, flat).unwrap();
    let u = es::unsqueeze(
        &mut b,
        s,
        UnsqueezeAttrs {
            axes: Some(vec![0]),
        },
    )
    .unwrap();
    let f = es::flatten(&mut b, u, FlattenAttrs::default()).unwrap();
    let y = es::mul(&mut b, f, d).unwrap();
    b.set_output(y, 0).unwrap();
    b.build_and_reset().unwrap()
}

/// How many times a replay of `g` allocates after a warm-up run (the same each time), its
/// results checked against the allocating kernels'.
fn replay_allocations(g: &Graph) -> usize {
    let x = f32s(&[4, 8], |i| (i as f32 - 13.0) / 7.0);
    let p = plan(g, std::slice::from_ref(&x));
    let want = p.execute_reference(vec![x.clone()]).unwrap();
    let first = p.execute(vec![x.clone()]).unwrap();
    assert!(same(&first, &want));
    let mut counts = Vec::new();
    for _ in 0..3 {
        let inputs = vec![x.clone()];
        let (outs, n) = count(|| p.execute(inputs).unwrap());
        assert!(same(&outs, &want));
        counts.push(n);
    }
    assert!(counts.iter().all(|&n| n == counts[0]), "{counts:?}");
    // A reference run allocates per step.
    let (_, n) = count(|| p.execute_reference(vec![x.clone()]).unwrap());
    assert!(n > 2 * p.len(), "a reference run allocated {n} times");
    counts[0]
}

#[test]
fn a_replay_allocates_only_its_outputs() {
    // The vector of outputs and the one output's buffer: nothing per step.
    assert_eq!(replay_allocations(&replay_graph(false)), 2);
    // With a MatMul: its output is a reused buffer too, but the gemm crate allocates its own
    // packing scratch inside each call (twice for this product on x86-64; its dispatch picks).
    let n = replay_allocations(&replay_graph(true));
    assert!((2..=4).contains(&n), "{n} allocations");
}

#[test]
fn the_chain_of_adds_runs_in_one_buffer() {
    let mut b = GraphBuilder::new("chain");
    let mut y = input(&mut b, 0, DataType::FLOAT, &[16]);
    let c = input(&mut b, 1, DataType::FLOAT, &[16]);
    for _ in 0..100 {
        y = es::add(&mut b, y, c).unwrap();
    }
    b.set_output(y, 0).unwrap();
    let g = b.build_and_reset().unwrap();
    let ins = vec![f32s(&[16], |i| i as f32), f32s(&[16], |_| 0.5)];
    let p = plan(&g, &ins);
    let (outs, trace) = p.execute_traced(ins.clone()).unwrap();
    assert!(trace.iter().all(|&a| a == trace[0] && a != 0));
    let Value::F32(y) = &outs[0] else { panic!() };
    assert_eq!(y[[3]], 3.0 + 50.0);
    let (_, n) = count(|| p.execute(ins).unwrap());
    assert_eq!(n, 2);
    let m = p.memory();
    assert!(m.tensors.iter().all(|t| t.offset == Some(0)));
    assert_eq!(m.arena_bytes, 64);
}

/// An eager run (`ge.graphMode` = off) of an Add chain, after earlier runs compiled its nodes:
/// each node reuses its compile and writes over its dying input, so a run allocates the same
/// few times whatever the chain's length (the run's signature, the output and the vector of
/// outputs), nothing per node.
#[test]
fn an_eager_rerun_allocates_nothing_per_node() {
    let eager_allocs = |n: usize| {
        let mut b = GraphBuilder::new("chain");
        let mut y = input(&mut b, 0, DataType::FLOAT, &[16]);
        let c = input(&mut b, 1, DataType::FLOAT, &[16]);
        for _ in 0..n {
            y = es::add(&mut b, y, c).unwrap();
        }
        b.set_output(y, 0).unwrap();
        let opts: std::collections::BTreeMap<String, String> =
            [("ge.graphMode", "off"), ("ge.threads", "1")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        let s = ge_runtime::Session::new(&opts).unwrap();
        s.add_graph(1, b.build_and_reset().unwrap(), &Default::default())
            .unwrap();
        let ins = vec![f32s(&[16], |i| i as f32), f32s(&[16], |_| 0.5)];
        // The whole graph's compile, then each node's.
        s.run_graph(1, ins.clone()).unwrap();
        s.run_graph(1, ins.clone()).unwrap();
        let mut counts = Vec::new();
        for _ in 0..3 {
            let inputs = ins.clone();
            let (outs, k) = count(|| s.run_graph(1, inputs).unwrap());
            let Value::F32(y) = &outs[0] else { panic!() };
            assert_eq!(y[[3]], 3.0 + 0.5 * n as f32);
            counts.push(k);
        }
        assert!(counts.iter().all(|&k| k == counts[0]), "{counts:?}");
        let st = s.eager_stats(1).unwrap();
        assert_eq!((st.hits, st.misses), (3 * n as u64, n as u64));
        counts[0]
    };
    let (short, long) = (eager_allocs(10), eager_allocs(200));
    assert_eq!(short, long);
    assert!(short <= 8, "{short} allocations");
}

// ---- in place ----

#[test]
fn an_elementwise_step_writes_over_its_dying_input() {
    let mut b = GraphBuilder::new("inplace");
    let x = input(&mut b, 0, DataType::FLOAT, &[3, 5]);
    let c = konst(&mut b, &[5], |i| i as f32 - 2.0);
    let a = es::add(&mut b, x, c).unwrap();
    let r = es::relu(&mut b, a).unwrap();
    // `r` is read twice: the Mul cannot write over it, the Sub after it can.
    let m = es::mul(&mut b, r, r).unwrap();
    let s = es::sub(&mut b, m, r).unwrap();
    let names = [a, r, m, s].map(|p| name(&b, p));
    b.set_output(s, 0).unwrap();
    let g = b.build_and_reset().unwrap();
    let x = f32s(&[3, 5], |i| i as f32 / 3.0 - 2.0);
    let p = plan(&g, std::slice::from_ref(&x));
    let (outs, trace) = p.execute_traced(vec![x.clone()]).unwrap();
    let [ta, tr, tm, ts] = names.clone().map(|n| trace[step(&p, &n)]);
    assert_eq!(ta, tr, "Relu writes over the Add's output");
    assert_ne!(tm, tr, "Mul reads its input twice: a buffer of its own");
    assert_eq!(ts, tm, "Sub writes over the Mul's output (its first input)");
    let Value::F32(y) = &outs[0] else { panic!() };
    assert_eq!(
        y.as_ptr() as usize,
        ts,
        "the output is the buffer written in place"
    );
    assert!(same(&outs, &p.execute_reference(vec![x]).unwrap()));
    // The memory plan agrees: the tensors written in place share their input's region.
    let mem = p.memory();
    let off = |n: &str| mem.tensors.iter().find(|t| t.name == n).unwrap().offset;
    assert_eq!(off(&names[0]), off(&names[1]));
    assert_eq!(off(&names[2]), off(&names[3]));
    assert_ne!(off(&names[1]), off(&names[2]));
}

// ---- Concat in place ----

#[test]
fn concat_producers_write_into_its_output() {
    for (axis, in_place) in [(0i64, true), (1, false), (-2, true)] {
        let mut b = GraphBuilder::new("concat");
        let x = input(&mut b, 0, DataType::FLOAT, &[2, 3]);
        let c = konst(&mut b, &[3], |i| i as f32);
        let p1 = es::add(&mut b, x, c).unwrap();
        let p2 = es::mul(&mut b, x, c).unwrap();
        let p3 = es::neg(&mut b, x).unwrap();
        let cat = es::concat_d(&mut b, &[p1, p2, x, p3], axis).unwrap();
        let names = [p1, p2, p3, cat].map(|p| name(&b, p));
        b.set_output(cat, 0).unwrap();
        let g = b.build_and_reset().unwrap();
        let xv = f32s(&[2, 3], |i| i as f32 - 2.5);
        let p = plan(&g, std::slice::from_ref(&xv));
        for _ in 0..2 {
            let (outs, trace) = p.execute_traced(vec![xv.clone()]).unwrap();
            let [t1, t2, t3, tc] = names.clone().map(|n| trace[step(&p, &n)]);
            let part = 2 * 3 * 4; // bytes of one [2, 3] input
            if in_place {
                assert_eq!((t1, t2, t3), (tc, tc + part, tc + 3 * part), "axis {axis}");
            } else {
                assert!(
                    t1 != tc && t2 != tc + part,
                    "axis {axis}: slices are not contiguous"
                );
            }
            assert!(same(&outs, &p.execute_reference(vec![xv.clone()]).unwrap()));
            let Value::F32(y) = &outs[0] else { panic!() };
            assert_eq!(y.as_ptr() as usize, tc);
        }
        let mem = p.memory();
        let t = |n: &str| mem.tensors.iter().find(|t| t.name == n).unwrap().clone();
        let (c1, c2, cc) = (t(&names[0]), t(&names[1]), t(&names[3]));
        if in_place {
            assert_eq!(c1.offset, cc.offset);
            assert_eq!(c2.offset, cc.offset.map(|o| o + 24));
        } else {
            assert_ne!(c1.offset, cc.offset);
        }
        assert!(mem.live_peak_bytes <= mem.arena_bytes && mem.arena_bytes <= mem.naive_bytes);
    }
}

// ---- the same results as the allocating kernels ----

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random graph on one input of `dims`: element-wise ops on earlier values (some read
/// again later, so not every input dies), broadcast constants, Concat, Reshape, Unsqueeze and
/// Flatten; two outputs.
fn random_graph(r: &mut Rng, dims: &[usize], dtype: DataType) -> Graph {
    let mut b = GraphBuilder::new("random");
    let x = input(&mut b, 0, dtype, dims);
    let float = dtype == DataType::FLOAT;
    // Values of shape `dims` built so far.
    let mut vals = vec![x];
    let steps = 3 + r.below(10);
    for _ in 0..steps {
        let pick = |r: &mut Rng, v: &[OutPort]| v[v.len() - 1 - r.below(v.len().min(3))];
        let a = pick(r, &vals);
        let other = |b: &mut GraphBuilder, r: &mut Rng, vals: &[OutPort]| -> OutPort {
            match r.below(4) {
                0 => pick(r, vals),
                // A constant broadcast along the last dim, or a scalar.
                1 | 2 => {
                    let cd = if r.below(2) == 0 {
                        vec![*dims.last().unwrap()]
                    } else {
                        vec![1]
                    };
                    if float {
                        konst(b, &cd, |i| i as f32 * 0.75 - 1.0)
                    } else {
                        let n: usize = cd.iter().product();
                        let v: Vec<i32> = (0..n).map(|i| i as i32 - 1).collect();
                        let t = Tensor::from_values(&v, cd.iter().map(|&d| d as i64).collect())
                            .unwrap();
                        b.create_const(t, None).unwrap()
                    }
                }
                _ => pick(r, vals),
            }
        };
        let o = other(&mut b, r, &vals);
        let y = match r.below(if float { 11 } else { 7 }) {
            0 => es::add(&mut b, a, o).unwrap(),
            1 => es::sub(&mut b, o, a).unwrap(),
            2 => es::mul(&mut b, a, o).unwrap(),
            3 => es::maximum(&mut b, a, o).unwrap(),
            4 => es::minimum(&mut b, o, a).unwrap(),
            5 => es::neg(&mut b, a).unwrap(),
            // Concat on a random axis, then Reshape, Flatten and Unsqueeze of it: an extra
            // output.
            6 => {
                let c = pick(r, &vals);
                let axis = r.below(dims.len()) as i64;
                let cat = es::concat_d(&mut b, &[a, c], axis).unwrap();
                let to: Vec<i64> = std::iter::once(2)
                    .chain(dims.iter().map(|&d| d as i64))
                    .collect();
                let to = shape_const(&mut b, &to);
                let re = es::reshape(&mut b, cat, to, ReshapeAttrs::default()).unwrap();
                let fl = es::flatten(&mut b, re, FlattenAttrs::default()).unwrap();
                let axes = Some(vec![0]);
                extra(es::unsqueeze(&mut b, fl, UnsqueezeAttrs { axes }).unwrap());
                a
            }
            7 => es::relu(&mut b, a).unwrap(),
            8 => es::sigmoid(&mut b, a).unwrap(),
            9 if dims.len() == 2 => {
                let d = dims[1];
                let w = konst(&mut b, &[d, d], |i| ((i * 5) % 7) as f32 / 3.0 - 1.0);
                es::mat_mul_v2(&mut b, a, w, None, None, Default::default()).unwrap()
            }
            9 => es::tanh(&mut b, a).unwrap(),
            _ => es::real_div(&mut b, a, o).unwrap(),
        };
        vals.push(y);
    }
    let n = vals.len();
    let second = vals[r.below(n)];
    b.set_output(vals[n - 1], 0).unwrap();
    b.set_output(second, 1).unwrap();
    let extras = EXTRA.with(|e| std::mem::take(&mut *e.borrow_mut()));
    for (i, e) in extras.into_iter().enumerate() {
        b.set_output(e, 2 + i).unwrap();
    }
    b.build_and_reset().unwrap()
}

thread_local! {
    static EXTRA: std::cell::RefCell<Vec<OutPort>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Keeps `p` as an extra graph output (set when the graph is finished).
fn extra(p: OutPort) {
    EXTRA.with(|e| e.borrow_mut().push(p));
}

#[test]
fn replays_equal_the_allocating_kernels_on_random_graphs() {
    let shapes: &[&[usize]] = &[
        &[1],
        &[7],
        &[3, 1],
        &[2, 5],
        &[1, 1, 3],
        &[2, 3, 4],
        &[5, 1, 2, 3],
    ];
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut in_place = 0;
    for case in 0..150 {
        let dims = shapes[r.below(shapes.len())];
        let dtype = if case % 4 == 3 {
            DataType::INT32
        } else {
            DataType::FLOAT
        };
        let g = random_graph(&mut r, dims, dtype);
        let n: usize = dims.iter().product();
        let x = match dtype {
            DataType::FLOAT => f32s(dims, |i| ((i * 37 + case) % 23) as f32 / 4.0 - 2.5),
            _ => Value::I32(
                ArrayD::from_shape_vec(
                    IxDyn(dims),
                    (0..n).map(|i| ((i * 37 + case) % 23) as i32 - 11).collect(),
                )
                .unwrap(),
            ),
        };
        let p = plan(&g, std::slice::from_ref(&x));
        let want = p.execute_reference(vec![x.clone()]).unwrap();
        for run in 0..3 {
            let (got, trace) = p.execute_traced(vec![x.clone()]).unwrap();
            assert!(
                same(&got, &want),
                "case {case} run {run}: {got:?} != {want:?}"
            );
            in_place += trace
                .windows(2)
                .filter(|w| w[0] == w[1] && w[0] != 0)
                .count();
        }
    }
    assert!(in_place > 100, "steps in place: {in_place}");
}

#[test]
fn integer_division_by_zero_is_the_same_error_in_place() {
    let mut b = GraphBuilder::new("div");
    let x = input(&mut b, 0, DataType::INT32, &[4]);
    let y = input(&mut b, 1, DataType::INT32, &[4]);
    let a = es::add(&mut b, x, y).unwrap();
    let d = es::div(&mut b, a, y).unwrap();
    b.set_output(d, 0).unwrap();
    let g = b.build_and_reset().unwrap();
    let i32s = |v: [i32; 4]| Value::I32(ArrayD::from_shape_vec(IxDyn(&[4]), v.to_vec()).unwrap());
    let ins = vec![i32s([1, 2, 3, 4]), i32s([1, 0, 2, 2])];
    let p = plan(&g, &ins);
    let want = p.execute_reference(ins.clone()).unwrap_err().to_string();
    for _ in 0..2 {
        assert_eq!(p.execute(ins.clone()).unwrap_err().to_string(), want);
    }
    assert!(want.contains("division by zero"), "{want}");
    // And after the error, a good run.
    let ok = vec![i32s([1, 2, 3, 4]), i32s([1, 1, 2, 2])];
    assert!(same(
        &p.execute(ok.clone()).unwrap(),
        &p.execute_reference(ok).unwrap()
    ));
}

#[test]
fn a_registered_kernel_replaces_the_into_kernel() {
    use ge_runtime::kernels::{register_custom, unregister_custom};
    let mut b = GraphBuilder::new("custom");
    let x = input(&mut b, 0, DataType::FLOAT, &[3]);
    let y = b
        .add_op(
            "Abs",
            OpArgs {
                inputs: vec![vec![Some(x)]],
                ..Default::default()
            },
        )
        .unwrap();
    b.set_output(OutPort { node: y, index: 0 }, 0).unwrap();
    let g = b.build_and_reset().unwrap();
    // A kernel returning its input (for an op type no other test here compiles).
    register_custom(
        "Abs",
        std::sync::Arc::new(|_| {
            Ok(
                Box::new(|inputs: &[Option<&Value>]| Ok(vec![inputs[0].cloned().expect("input")]))
                    as ge_runtime::kernels::Kernel,
            )
        }),
    );
    let x = f32s(&[3], |i| i as f32 - 1.0);
    let p = plan(&g, std::slice::from_ref(&x));
    let got = p.execute(vec![x.clone()]);
    unregister_custom("Abs");
    assert!(same(&got.unwrap(), &[x]));
}

#[test]
fn large_steps_split_across_threads_give_the_same_results() {
    // Above the parallel threshold: the into-kernels split their output across 2 threads.
    let dims = [300usize, 1000];
    let mut b = GraphBuilder::new("large");
    let x = input(&mut b, 0, DataType::FLOAT, &dims);
    let c = konst(&mut b, &[1000], |i| i as f32 / 100.0 - 5.0);
    let row = konst(&mut b, &[300, 1], |i| i as f32 / 30.0 - 5.0);
    let a = es::add(&mut b, x, c).unwrap();
    let m = es::mul(&mut b, a, row).unwrap();
    let s = es::sigmoid(&mut b, m).unwrap();
    let d = es::real_div(&mut b, s, x).unwrap();
    let cat = es::concat_d(&mut b, &[d, a], 0).unwrap();
    b.set_output(cat, 0).unwrap();
    let g = b.build_and_reset().unwrap();
    let xv = f32s(&dims, |i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0);
    let p = plan(&g, std::slice::from_ref(&xv));
    for threads in [1, 2] {
        let run = |reference: bool| {
            ge_runtime::par::run_with(threads, || {
                if reference {
                    p.execute_reference(vec![xv.clone()])
                } else {
                    p.execute(vec![xv.clone()])
                }
            })
            .unwrap()
        };
        let want = run(true);
        for _ in 0..2 {
            assert!(same(&run(false), &want), "{threads} threads");
        }
    }
}

// ---- convolutions into buffers ----

/// One channels-first convolution of a test: x dims, output channels, kernel, strides, pads,
/// dilations, groups, whether it has a bias and whether its filter is a graph input.
struct ConvCase {
    x: Vec<usize>,
    o: usize,
    k: Vec<usize>,
    s: i64,
    p: i64,
    d: i64,
    groups: usize,
    bias: bool,
    filter_input: bool,
}

/// `case` as a graph: the convolution, then a Relu (fused into it: one step), concatenated on
/// the channels with a second, 1x1 convolution of the same x when `cat` (its producers write
/// into its output). Also the names of the convolution and, with `cat`, of the 1x1 one and the
/// Concat.
fn conv_graph(case: &ConvCase, cat: bool) -> (Graph, Vec<Value>, Vec<String>) {
    let r = case.x.len() - 2;
    let mut b = GraphBuilder::new("conv");
    let x = input(&mut b, 0, DataType::FLOAT, &case.x);
    let mut fdims = vec![case.o, case.x[1] / case.groups];
    fdims.extend_from_slice(&case.k);
    let fval = |i: usize| ((i * 37) % 19) as f32 / 9.0 - 1.0;
    let mut inputs = vec![f32s(&case.x, |i| ((i * 13) % 29) as f32 / 7.0 - 2.0)];
    let f = if case.filter_input {
        inputs.push(f32s(&fdims, fval));
        input(&mut b, 1, DataType::FLOAT, &fdims)
    } else {
        konst(&mut b, &fdims, fval)
    };
    let bias = case
        .bias
        .then(|| konst(&mut b, &[case.o], |i| i as f32 / 4.0 - 0.5));
    let conv = |b: &mut GraphBuilder, f: OutPort, bias: Option<OutPort>, s: i64, p: i64, d: i64| {
        if r == 2 {
            let attrs = es::Conv2DAttrs {
                dilations: Some(vec![1, 1, d, d]),
                groups: Some(case.groups as i64),
                data_format: Some("NCHW".into()),
                offset_x: None,
            };
            es::conv2_d(b, x, f, bias, None, vec![1, 1, s, s], vec![p; 4], attrs).unwrap()
        } else {
            let attrs = es::Conv3DAttrs {
                dilations: Some(vec![1, 1, d, d, d]),
                groups: Some(case.groups as i64),
                data_format: Some("NCDHW".into()),
                offset_x: None,
            };
            es::conv3_d(b, x, f, bias, None, vec![1, 1, s, s, s], vec![p; 6], attrs).unwrap()
        }
    };
    let y = conv(&mut b, f, bias, case.s, case.p, case.d);
    let relu = es::relu(&mut b, y).unwrap();
    let mut names = vec![name(&b, y)];
    let out = if cat {
        let mut f1 = vec![3, case.x[1]];
        f1.extend(std::iter::repeat_n(1, r));
        let f1 = konst(&mut b, &f1, |i| (i % 7) as f32 / 3.0 - 1.0);
        assert_eq!(case.groups, 1, "the 1x1 branch has one group");
        let y1 = conv(&mut b, f1, None, 1, 0, 1);
        names.push(name(&b, y1));
        let c = es::concat_d(&mut b, &[relu, y1], 1).unwrap();
        names.push(name(&b, c));
        c
    } else {
        relu
    };
    b.set_output(out, 0).unwrap();
    (b.build_and_reset().unwrap(), inputs, names)
}

fn conv_cases() -> Vec<ConvCase> {
    let c = |x: &[usize], o, k: &[usize], s, p, d, groups, bias, filter_input| ConvCase {
        x: x.to_vec(),
        o,
        k: k.to_vec(),
        s,
        p,
        d,
        groups,
        bias,
        filter_input,
    };
    vec![
        // 1x1 with unit strides: the input read as it is.
        c(&[1, 8, 5, 7], 16, &[1, 1], 1, 0, 1, 1, true, false),
        // A 1-pixel image, padding larger than the kernel.
        c(&[2, 3, 1, 1], 4, &[1, 1], 1, 2, 1, 1, false, false),
        // Groups, dilations, strides; odd sizes.
        c(&[1, 4, 9, 11], 6, &[3, 3], 2, 1, 2, 2, true, false),
        // Depthwise: a group per channel, channels not a multiple of the vector width.
        c(&[1, 5, 6, 13], 5, &[3, 3], 1, 1, 1, 5, true, false),
        // The filter fed at run time (not packed).
        c(&[2, 3, 5, 5], 4, &[3, 3], 1, 1, 1, 1, true, true),
        // Conv3D, channels first.
        c(&[1, 2, 3, 4, 5], 3, &[2, 2, 2], 1, 1, 1, 1, true, false),
        // Large enough to split across threads.
        c(&[1, 16, 30, 30], 32, &[3, 3], 1, 1, 1, 1, true, false),
    ]
}

#[test]
fn convolutions_into_buffers_equal_the_allocating_kernel() {
    for (i, case) in conv_cases().iter().enumerate() {
        let (g, inputs, _) = conv_graph(case, false);
        let p = plan(&g, &inputs);
        for threads in [1, 2] {
            let run = |reference: bool| {
                ge_runtime::par::run_with(threads, || {
                    if reference {
                        p.execute_reference(inputs.clone())
                    } else {
                        p.execute(inputs.clone())
                    }
                })
                .unwrap()
            };
            let want = run(true);
            for _ in 0..2 {
                assert!(same(&run(false), &want), "case {i}, {threads} threads");
            }
        }
    }
}

#[test]
fn convolutions_write_into_their_concat() {
    // The cases whose output has x's spatial size (the 1x1 branch's).
    let same_size = |c: &&ConvCase| c.s == 1 && c.d == 1 && 2 * c.p as usize + 1 == c.k[0];
    for case in conv_cases()
        .iter()
        .filter(|c| c.groups == 1 && c.x.len() == 4)
        .filter(same_size)
    {
        let (g, inputs, names) = conv_graph(case, true);
        let p = plan(&g, &inputs);
        let want = p.execute_reference(inputs.clone()).unwrap();
        for _ in 0..2 {
            let (outs, trace) = p.execute_traced(inputs.clone()).unwrap();
            assert!(same(&outs, &want), "{:?}", case.x);
            let [t0, t1, tc] = [0, 1, 2].map(|i| trace[step(&p, &names[i])]);
            // With one image the channel blocks are contiguous: the fused convolution's slice
            // leads the output, the 1x1 one's follows it.
            if case.x[0] == 1 {
                assert_eq!(t0, tc, "{:?}", case.x);
                let Value::F32(y) = &want[0] else { panic!() };
                let plane: usize = y.shape()[2..].iter().product();
                assert_eq!(t1, tc + case.o * plane * 4, "{:?}", case.x);
            }
        }
    }
}
