//! Eager runs (crates/ge-runtime/src/eager.rs): the first run of a signature compiles the
//! whole graph, later ones go node by node; a node seen with the same input signature reuses
//! its compile (counted), a changed shape, dtype or shape value compiles it again and gives the
//! right result, results equal graph mode's bit for bit, and errors still name the node; a
//! graph whose compile folds a BatchNorm keeps compiling the whole graph.

use es_core::es::{self, GatherV2Attrs, ReshapeAttrs, ShapeAttrs};
use es_core::{DataType, Format, Graph, GraphBuilder, OutPort, Shape, Tensor};
use ge_runtime::eager::EagerStats;
use ge_runtime::ndarray::{ArrayD, IxDyn};
use ge_runtime::{Session, Value};
use std::collections::BTreeMap;

fn input(b: &mut GraphBuilder, index: i64, dtype: DataType, dims: &[i64]) -> OutPort {
    b.create_input(
        index,
        None,
        "Data",
        dtype,
        Format::ND,
        Shape::new(dims.to_vec()),
    )
    .expect("input")
}

fn session(mode: &str) -> Session {
    let mut o = BTreeMap::new();
    o.insert("ge.graphMode".to_string(), mode.to_string());
    o.insert("ge.threads".to_string(), "1".to_string());
    Session::new(&o).expect("session")
}

fn f32s(dims: &[usize], f: impl Fn(usize) -> f32) -> Value {
    let n = dims.iter().product();
    Value::F32(ArrayD::from_shape_vec(IxDyn(dims), (0..n).map(f).collect()).expect("value"))
}

fn f64s(dims: &[usize], f: impl Fn(usize) -> f64) -> Value {
    let n = dims.iter().product();
    Value::F64(ArrayD::from_shape_vec(IxDyn(dims), (0..n).map(f).collect()).expect("value"))
}

/// x + c, `n` times (inputs of unknown shape: any shape and float dtype runs).
fn chain(n: usize) -> Graph {
    let mut b = GraphBuilder::new("chain");
    let x = input(&mut b, 0, DataType::FLOAT, &[-2]);
    let c = input(&mut b, 1, DataType::FLOAT, &[-2]);
    let mut y = x;
    for _ in 0..n {
        y = es::add(&mut b, y, c).unwrap();
    }
    b.set_output(y, 0).unwrap();
    b.build_and_reset().unwrap()
}

/// Eager and graph sessions holding `g` as graph 1.
fn both(g: &Graph) -> (Session, Session) {
    let (e, s) = (session("off"), session("on"));
    e.add_graph(1, g.clone(), &BTreeMap::new()).unwrap();
    s.add_graph(1, g.clone(), &BTreeMap::new()).unwrap();
    (e, s)
}

fn bits(v: &Value) -> (DataType, Vec<usize>, Vec<u64>) {
    let b = match v {
        Value::F32(a) => a.iter().map(|x| x.to_bits() as u64).collect(),
        Value::F64(a) => a.iter().map(|x| x.to_bits()).collect(),
        Value::I64(a) => a.iter().map(|&x| x as u64).collect(),
        other => panic!("unexpected {other:?}"),
    };
    (v.dtype(), v.shape().to_vec(), b)
}

/// Runs `inputs` through both sessions; the outputs must agree bit for bit.
fn run_both(e: &Session, s: &Session, inputs: Vec<Value>) -> Vec<Value> {
    let a = e.run_graph(1, inputs.clone()).expect("eager run");
    let b = s.run_graph(1, inputs).expect("graph run");
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(bits(x), bits(y), "eager and graph mode differ");
    }
    a
}

fn stats(s: &Session) -> EagerStats {
    s.eager_stats(1).unwrap()
}

#[test]
fn a_node_seen_with_its_signature_reuses_its_compile() {
    let n = 50;
    let (e, s) = both(&chain(n));
    let x = f32s(&[16], |i| i as f32 * 0.25 - 2.0);
    let c = f32s(&[16], |i| (i % 3) as f32 * 0.01);
    // The signature's first run compiles the whole graph; the second compiles each node.
    run_both(&e, &s, vec![x.clone(), c.clone()]);
    assert_eq!(
        stats(&e),
        EagerStats {
            hits: 0,
            misses: 0,
            whole_graph_runs: 1
        }
    );
    run_both(&e, &s, vec![x.clone(), c.clone()]);
    assert_eq!(
        stats(&e),
        EagerStats {
            hits: 0,
            misses: n as u64,
            whole_graph_runs: 1
        }
    );
    for _ in 0..3 {
        run_both(&e, &s, vec![x.clone(), c.clone()]);
    }
    assert_eq!(
        stats(&e),
        EagerStats {
            hits: 3 * n as u64,
            misses: n as u64,
            whole_graph_runs: 1
        }
    );
    // Eager runs capture no plan.
    assert_eq!(e.graph_cache_stats(1).unwrap().captures, 0);
}

#[test]
fn a_changed_shape_or_dtype_compiles_again_and_gives_the_right_result() {
    let n = 7;
    let (e, s) = both(&chain(n));
    let want = |x: &[f64], c: &[f64]| -> Vec<f64> {
        x.iter()
            .zip(c)
            .map(|(x, c)| (0..n).fold(*x, |y, _| y + c))
            .collect()
    };
    let x4 = f32s(&[4], |i| i as f32 - 1.5);
    let c4 = f32s(&[4], |i| i as f32 * 0.5);
    // Twice: the whole graph's compile, then node by node.
    run_both(&e, &s, vec![x4.clone(), c4.clone()]);
    let out = run_both(&e, &s, vec![x4.clone(), c4.clone()]);
    assert_eq!(
        out[0].to_f64_vec(),
        want(&x4.to_f64_vec(), &c4.to_f64_vec())
    );
    // Another shape: every node infers again.
    let x23 = f32s(&[2, 3], |i| i as f32 * 3.0);
    let c23 = f32s(&[2, 3], |i| 1.0 - i as f32);
    run_both(&e, &s, vec![x23.clone(), c23.clone()]);
    let out = run_both(&e, &s, vec![x23.clone(), c23.clone()]);
    assert_eq!(out[0].shape(), &[2, 3]);
    assert_eq!(
        out[0].to_f64_vec(),
        want(&x23.to_f64_vec(), &c23.to_f64_vec())
    );
    assert_eq!(stats(&e).misses, 2 * n as u64);
    // Another dtype: again; the output has it.
    let x8 = f64s(&[2, 3], |i| i as f64 / 7.0);
    let c8 = f64s(&[2, 3], |i| i as f64 * 1e-3);
    run_both(&e, &s, vec![x8.clone(), c8.clone()]);
    let out = run_both(&e, &s, vec![x8.clone(), c8.clone()]);
    assert_eq!(out[0].dtype(), DataType::DOUBLE);
    assert_eq!(
        out[0].to_f64_vec(),
        want(&x8.to_f64_vec(), &c8.to_f64_vec())
    );
    assert_eq!(stats(&e).misses, 3 * n as u64);
    // The first signature is still cached (a few are kept per node): hits only.
    let before = stats(&e);
    run_both(&e, &s, vec![x4, c4]);
    assert_eq!(stats(&e).misses, before.misses);
    assert_eq!(stats(&e).hits, before.hits + n as u64);
    assert_eq!(stats(&e).whole_graph_runs, 3);
}

/// Reshape(y, Shape(x)): the shape is a value computed at run time from x's shape; it is part
/// of Reshape's signature, so a new shape of x reshapes to it.
#[test]
fn a_changed_shape_value_compiles_again() {
    let mut b = GraphBuilder::new("reshape");
    let x = input(&mut b, 0, DataType::FLOAT, &[-1, -1]);
    let y = input(&mut b, 1, DataType::FLOAT, &[-1]);
    let sh = es::shape(&mut b, x, ShapeAttrs::default()).unwrap();
    let r = es::reshape(&mut b, y, sh, ReshapeAttrs::default()).unwrap();
    let o = es::mul(&mut b, r, x).unwrap();
    b.set_output(o, 0).unwrap();
    let (e, s) = both(&b.build_and_reset().unwrap());
    let y6 = f32s(&[6], |i| i as f32 + 1.0);
    for _ in 0..2 {
        let out = run_both(&e, &s, vec![f32s(&[2, 3], |_| 2.0), y6.clone()]);
        assert_eq!(out[0].shape(), &[2, 3]);
    }
    let misses = stats(&e).misses;
    assert_eq!(misses, 3);
    // The node-by-node verdict is per signature: [3, 2]'s first run compiles the whole graph.
    for _ in 0..2 {
        let out = run_both(&e, &s, vec![f32s(&[3, 2], |_| 2.0), y6.clone()]);
        assert_eq!(out[0].shape(), &[3, 2]);
        assert_eq!(out[0].to_f64_vec(), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    }
    // Shape and Mul see new shapes, Reshape a new shape value (its data input is the same).
    assert_eq!(stats(&e).misses, misses + 3);
    let out = run_both(&e, &s, vec![f32s(&[3, 2], |_| 2.0), y6]);
    assert_eq!(out[0].shape(), &[3, 2]);
    assert_eq!(stats(&e).misses, misses + 3);
}

/// A run-time error of a node reused from the cache still names the node, as in graph mode.
#[test]
fn errors_name_the_node() {
    let mut b = GraphBuilder::new("gather");
    let t = Tensor::from_values(&[1.0f32, 2.0, 3.0, 4.0], vec![4]).unwrap();
    let params = b.create_const(t, None).unwrap();
    let idx = input(&mut b, 0, DataType::INT64, &[1]);
    let axis = b
        .create_const(Tensor::from_values(&[0i64], vec![]).unwrap(), None)
        .unwrap();
    let gth = es::gather_v2(&mut b, params, idx, axis, GatherV2Attrs::default()).unwrap();
    let name = b.graph().node(gth.node).unwrap().name.to_string();
    b.set_output(gth, 0).unwrap();
    let (e, s) = both(&b.build_and_reset().unwrap());
    let i64s = |v: i64| Value::I64(ArrayD::from_shape_vec(IxDyn(&[1]), vec![v]).unwrap());
    run_both(&e, &s, vec![i64s(1)]);
    let out = run_both(&e, &s, vec![i64s(2)]);
    assert_eq!(out[0].to_f64_vec(), vec![3.0]);
    let hits = stats(&e).hits;
    let err_e = e.run_graph(1, vec![i64s(9)]).unwrap_err().to_string();
    let err_s = s.run_graph(1, vec![i64s(9)]).unwrap_err().to_string();
    assert_eq!(
        stats(&e).hits,
        hits + 1,
        "the failing run reused the compile"
    );
    assert!(err_e.contains(&name), "{err_e}");
    assert_eq!(err_e, err_s);
    // A compile error (inputs that do not broadcast) is graph mode's, naming the node.
    let (e, s) = both(&chain(3));
    let bad = vec![f32s(&[3], |_| 0.0), f32s(&[4], |_| 0.0)];
    let err_e = e.run_graph(1, bad.clone()).unwrap_err().to_string();
    let err_s = s.run_graph(1, bad).unwrap_err().to_string();
    assert_eq!(err_e, err_s);
    assert!(err_e.contains("Add"), "{err_e}");
    // And a good run afterwards is right.
    let out = run_both(&e, &s, vec![f32s(&[3], |_| 1.0), f32s(&[3], |_| 0.5)]);
    assert_eq!(out[0].to_f64_vec(), vec![2.5; 3]);
}

/// A product, its bias and activation (fused in graph mode), a Concat, a Reshape, a Cast
/// (promotion casts where the dtypes differ), a reduction: eager equals graph mode bitwise.
#[test]
fn mixed_graph_equals_graph_mode_bitwise() {
    let mut b = GraphBuilder::new("mixed");
    let x = input(&mut b, 0, DataType::FLOAT, &[-1, 8]);
    let w = b
        .create_const(
            Tensor::from_values(
                &(0..64)
                    .map(|i| ((i * 7) % 11) as f32 / 5.0 - 1.0)
                    .collect::<Vec<_>>(),
                vec![8, 8],
            )
            .unwrap(),
            None,
        )
        .unwrap();
    let bias = b
        .create_const(
            Tensor::from_values(&(0..8).map(|i| i as f32 * 0.1).collect::<Vec<_>>(), vec![8])
                .unwrap(),
            None,
        )
        .unwrap();
    let m = es::mat_mul_v2(&mut b, x, w, None, None, Default::default()).unwrap();
    let a = es::add(&mut b, m, bias).unwrap();
    let r = es::relu(&mut b, a).unwrap();
    let sg = es::sigmoid(&mut b, x).unwrap();
    let one = b
        .create_const(Tensor::from_values(&[1i32], vec![]).unwrap(), None)
        .unwrap();
    let cat = es::concat_v2(&mut b, &[r, sg], one).unwrap();
    let k = es::cast(&mut b, cat, DataType::DOUBLE as i64).unwrap();
    let y = es::exp(&mut b, k, Default::default()).unwrap();
    b.set_output(y, 0).unwrap();
    let (e, s) = both(&b.build_and_reset().unwrap());
    for rows in [1usize, 3, 1, 5] {
        let x = f32s(&[rows, 8], |i| (i as f32 * 0.37).sin());
        run_both(&e, &s, vec![x.clone()]);
        run_both(&e, &s, vec![x]);
    }
    assert!(stats(&e).hits > 0);
    // One whole-graph compile per signature (rows 1, 3, 5), node by node after it.
    assert_eq!(stats(&e).whole_graph_runs, 3);
    assert!(stats(&e).misses > 0);
}

/// Conv -> BatchNorm: graph mode folds the BatchNorm into the convolution's weights (other
/// bits), so eager runs keep compiling the whole graph and give graph mode's results.
#[test]
fn a_folded_batch_norm_keeps_whole_graph_compiles() {
    let mut b = GraphBuilder::new("conv_bn");
    let x = input(&mut b, 0, DataType::FLOAT, &[1, 2, 5, 5]);
    let cst = |b: &mut GraphBuilder, v: Vec<f32>, dims: Vec<i64>| {
        b.create_const(Tensor::from_values(&v, dims).unwrap(), None)
            .unwrap()
    };
    let w = cst(
        &mut b,
        (0..36).map(|i| (i as f32 * 0.37).sin()).collect(),
        vec![2, 2, 3, 3],
    );
    let mut args = es_core::OpArgs {
        inputs: vec![vec![Some(x)], vec![Some(w)], vec![None], vec![None]],
        ..Default::default()
    };
    for (k, v) in [("strides", vec![1i64, 1, 1, 1]), ("pads", vec![1, 1, 1, 1])] {
        args.attrs.insert(k.into(), es_core::AttrValue::from(v));
    }
    args.attrs.insert(
        "data_format".into(),
        es_core::AttrValue::from("NCHW".to_string()),
    );
    let conv = b.add_op("Conv2D", args).unwrap();
    let conv = OutPort {
        node: conv,
        index: 0,
    };
    let p = |b: &mut GraphBuilder, v: [f32; 2]| cst(b, v.to_vec(), vec![2]);
    let ins = [
        conv,
        p(&mut b, [1.5, 0.5]),
        p(&mut b, [0.1, -0.2]),
        p(&mut b, [0.3, -0.1]),
        p(&mut b, [2.0, 0.7]),
    ];
    let mut args = es_core::OpArgs {
        inputs: ins.into_iter().map(|p| vec![Some(p)]).collect(),
        ..Default::default()
    };
    args.attrs
        .insert("is_training".into(), es_core::AttrValue::from(false));
    args.attrs.insert(
        "data_format".into(),
        es_core::AttrValue::from("NCHW".to_string()),
    );
    let bn = b.add_op("BatchNorm", args).unwrap();
    b.set_output(OutPort { node: bn, index: 0 }, 0).unwrap();
    let (e, s) = both(&b.build_and_reset().unwrap());
    let x = f32s(&[1, 2, 5, 5], |i| (i as f32 * 0.11).cos());
    for _ in 0..3 {
        run_both(&e, &s, vec![x.clone()]);
    }
    let rep = e.compile_report(1).unwrap().unwrap().to_string();
    assert!(
        rep.contains("BatchNorms folded into convolutions 1"),
        "{rep}"
    );
    assert_eq!(
        stats(&e),
        EagerStats {
            hits: 0,
            misses: 0,
            whole_graph_runs: 3
        }
    );
}
