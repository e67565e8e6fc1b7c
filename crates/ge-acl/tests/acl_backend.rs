//! The ACL backend against the ACL test double (a C library built by this test that stands
//! in for ACL: it computes on the host, records every call and flags illegal ones; see
//! `acl_sys::test_double`). Nothing here runs on an NPU.

use acl_sys::test_double::TestDouble;
use es_core::attr::AttrValue;
use es_core::builder::OpArgs;
use es_core::{DataType, Format, Graph, GraphBuilder, OutPort, Shape, Tensor};
use ge_runtime::{Error, Session, Value};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Builds the double once and points `ASCEND_HOME_PATH` at it (before anything loads ACL).
/// The double is one global state, so the tests take turns.
fn double() -> (MutexGuard<'static, ()>, &'static TestDouble) {
    static TURN: Mutex<()> = Mutex::new(());
    static D: OnceLock<TestDouble> = OnceLock::new();
    let guard = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let d = D.get_or_init(|| {
        let dir = Box::leak(Box::new(tempfile::tempdir().unwrap()));
        let d = TestDouble::build(dir.path()).expect("the test double builds");
        std::env::set_var("ASCEND_HOME_PATH", d.root());
        ge_acl::register();
        d
    });
    d.reset();
    (guard, d)
}

fn op(
    b: &mut GraphBuilder,
    ty: &str,
    ins: &[Option<OutPort>],
    attrs: &[(&str, AttrValue)],
) -> OutPort {
    let mut a = OpArgs {
        inputs: ins.iter().map(|i| vec![*i]).collect(),
        ..Default::default()
    };
    for (k, v) in attrs {
        a.attrs.insert((*k).into(), v.clone());
    }
    let node = b.add_op(ty, a).unwrap();
    OutPort { node, index: 0 }
}

fn input(b: &mut GraphBuilder, i: i64, dims: Vec<i64>) -> OutPort {
    b.create_input(
        i,
        None,
        "Data",
        DataType::FLOAT,
        Format::ND,
        Shape::new(dims),
    )
    .unwrap()
}

fn c_f32(b: &mut GraphBuilder, v: &[f32], dims: Vec<usize>) -> OutPort {
    b.create_const(
        Tensor::from_values(v, dims.iter().map(|&d| d as i64).collect()).unwrap(),
        None,
    )
    .unwrap()
}

fn c_i64(b: &mut GraphBuilder, v: &[i64]) -> OutPort {
    b.create_const(Tensor::from_values(v, vec![v.len() as i64]).unwrap(), None)
        .unwrap()
}

/// softmax(relu(x @ w^T + bias)) and mean(transpose(x)) as f16-cast, reshaped: most of the
/// operators the backend runs. `x` is [n, 3] (n dynamic).
fn model() -> Graph {
    let mut b = GraphBuilder::new("mlp");
    let x = input(&mut b, 0, vec![-1, 3]);
    let w = c_f32(&mut b, &[0.5, -1.0, 2.0, 1.0, 0.25, -0.5], vec![2, 3]);
    let bias = c_f32(&mut b, &[0.1, -0.2], vec![2]);
    let y = op(
        &mut b,
        "MatMulV2",
        &[Some(x), Some(w), None, None],
        &[("transpose_x2", AttrValue::Bool(true))],
    );
    let y = op(&mut b, "Add", &[Some(y), Some(bias)], &[]);
    let y = op(&mut b, "Relu", &[Some(y)], &[]);
    let y = op(&mut b, "SoftmaxV2", &[Some(y)], &[]);
    let perm = c_i64(&mut b, &[1, 0]);
    let t = op(&mut b, "Transpose", &[Some(x), Some(perm)], &[]);
    let axes = c_i64(&mut b, &[1]);
    let m = op(
        &mut b,
        "ReduceMean",
        &[Some(t), Some(axes)],
        &[("keep_dims", AttrValue::Bool(true))],
    );
    let m = op(&mut b, "Exp", &[Some(m)], &[]);
    let m = op(
        &mut b,
        "Cast",
        &[Some(m)],
        &[("dst_type", AttrValue::Int(DataType::FLOAT16.value() as i64))],
    );
    let shape = c_i64(&mut b, &[3]);
    let m = op(&mut b, "Reshape", &[Some(m), Some(shape)], &[]);
    b.set_output(y, 0).unwrap();
    b.set_output(m, 1).unwrap();
    b.build_and_reset().unwrap()
}

fn opts(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A session with options `kv` and `g` added as graph 1.
fn session(kv: &[(&str, &str)], g: Graph) -> Session {
    let s = Session::new(&opts(kv)).unwrap();
    s.add_graph(1, g, &BTreeMap::new()).unwrap();
    s
}

/// Closes session `s` and checks that the double holds no `kind` any more.
fn close_leaves_none(d: &TestDouble, s: Session, kind: &str) {
    drop(s);
    assert_eq!(d.live(kind), 0, "{kind} left");
}

fn x(n: usize, seed: f32) -> Value {
    let v: Vec<f32> = (0..n * 3)
        .map(|i| (i as f32 * 0.37 + seed).sin() * 2.0)
        .collect();
    Value::F32(ge_runtime::ndarray::ArrayD::from_shape_vec(vec![n, 3], v).unwrap())
}

fn close(a: &[Value], b: &[Value]) {
    assert_eq!(a.len(), b.len());
    for (a, b) in a.iter().zip(b) {
        assert_eq!(a.dtype(), b.dtype());
        assert_eq!(a.shape(), b.shape());
        for (p, q) in a.to_f64_vec().iter().zip(b.to_f64_vec()) {
            assert!((p - q).abs() <= 2e-3 * (1.0 + q.abs()), "{p} vs {q}");
        }
    }
}

/// Functions ACL forbids while a stream captures.
const ILLEGAL_IN_CAPTURE: [&str; 7] = [
    "aclrtSynchronizeStream",
    "aclrtMemcpy",
    "aclrtMemset",
    "aclrtMalloc",
    "aclrtFree",
    "aclrtMallocHost",
    "aclrtFreeHost",
];

/// The calls between each CaptureBegin and its End.
fn captured_calls(d: &TestDouble) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut cur: Option<Vec<String>> = None;
    for name in d.call_names() {
        match name.as_str() {
            "aclmdlRICaptureBegin" => cur = Some(Vec::new()),
            "aclmdlRICaptureEnd" => out.extend(cur.take()),
            _ => {
                if let Some(c) = cur.as_mut() {
                    c.push(name);
                }
            }
        }
    }
    out
}

#[test]
fn graph_mode_captures_once_and_replays_matching_the_cpu() {
    let (_t, d) = double();
    let cpu = session(&[("ge.device", "cpu")], model());
    let npu = session(&[("ge.device", "acl")], model());
    assert!(npu.runs_on_acl(1).unwrap());

    let first = npu.run_graph(1, vec![x(4, 0.0)]).unwrap();
    close(&first, &cpu.run_graph(1, vec![x(4, 0.0)]).unwrap());
    assert_eq!(d.calls("aclmdlRICaptureBegin"), 1);
    assert_eq!(d.calls("aclmdlRICaptureEnd"), 1);
    assert_eq!(d.calls("aclmdlRIExecuteAsync"), 1);
    let launches = d.calls("aclnnMatmul");
    assert_eq!(launches, 1);

    // A hit replays: no new capture, no new launch, new inputs give new results.
    for seed in [1.0, 2.0] {
        let got = npu.run_graph(1, vec![x(4, seed)]).unwrap();
        close(&got, &cpu.run_graph(1, vec![x(4, seed)]).unwrap());
    }
    assert_eq!(d.calls("aclmdlRICaptureBegin"), 1);
    assert_eq!(d.calls("aclmdlRIExecuteAsync"), 3);
    assert_eq!(d.calls("aclnnMatmul"), launches);
    let st = npu.graph_cache_stats(1).unwrap();
    assert_eq!((st.hits, st.misses, st.captures, st.size), (2, 1, 1, 1));

    // Nothing illegal happened during the capture, and the double saw no misuse at all.
    let inside = captured_calls(d);
    assert_eq!(inside.len(), 1);
    assert!(
        inside[0].iter().any(|c| c == "aclnnMatmul"),
        "{:?}",
        inside[0]
    );
    for c in &inside[0] {
        assert!(
            !ILLEGAL_IN_CAPTURE.contains(&c.as_str()),
            "{c} during capture"
        );
        assert!(
            !c.ends_with("GetWorkspaceSize"),
            "{c}: first phases run before the capture"
        );
    }
    assert_eq!(d.violations(), 0, "{}", d.log());
}

#[test]
fn eviction_and_shutdown_destroy_every_graph_and_free_every_buffer() {
    let (_t, d) = double();
    let before: Vec<i64> = ["device_buffers", "graphs", "streams", "contexts"]
        .iter()
        .map(|k| d.live(k))
        .collect();
    {
        let s = Session::new(&opts(&[
            ("ge.device", "acl"),
            ("ge.graphCacheCapacity", "2"),
        ]))
        .unwrap();
        s.add_graph(1, model(), &BTreeMap::new()).unwrap();
        for n in [1, 2, 3, 4, 1] {
            s.run_graph(1, vec![x(n, 0.5)]).unwrap();
        }
        let st = s.graph_cache_stats(1).unwrap();
        assert_eq!(
            (st.misses, st.captures, st.evictions, st.size),
            (5, 5, 3, 2)
        );
        assert_eq!(d.calls("aclmdlRIDestroy"), 3);
        assert_eq!(d.live("graphs"), before[1] + 2);
        // Removing the graph destroys its plans.
        s.remove_graph(1).unwrap();
        assert_eq!(d.live("graphs"), before[1]);
        s.add_graph(2, model(), &BTreeMap::new()).unwrap();
        s.run_graph(2, vec![x(2, 0.5)]).unwrap();
        assert_eq!(d.live("graphs"), before[1] + 1);
    }
    // The session is gone: every graph, buffer, stream and context with it.
    let after: Vec<i64> = ["device_buffers", "graphs", "streams", "contexts"]
        .iter()
        .map(|k| d.live(k))
        .collect();
    assert_eq!(after, before);
    for kind in [
        "tensors",
        "scalars",
        "int_arrays",
        "executors",
        "host_buffers",
    ] {
        assert_eq!(d.live(kind), 0, "{kind} left");
    }
    assert_eq!(d.calls("aclmdlRIDestroy"), 3 + 2 + 1);
    assert_eq!(d.violations(), 0, "{}", d.log());
}

#[test]
fn eager_mode_launches_every_run_and_never_captures() {
    let (_t, d) = double();
    let s = session(&[("ge.device", "acl"), ("ge.graphMode", "off")], model());
    let cpu = session(&[], model());
    for _ in 0..3 {
        close(
            &s.run_graph(1, vec![x(3, 0.2)]).unwrap(),
            &cpu.run_graph(1, vec![x(3, 0.2)]).unwrap(),
        );
    }
    assert_eq!(d.calls("aclmdlRICaptureBegin"), 0);
    assert_eq!(d.calls("aclmdlRIExecuteAsync"), 0);
    assert_eq!(d.calls("aclnnMatmul"), 3);
    assert_eq!(d.calls("aclnnSoftmax"), 3);
    assert_eq!(d.calls("aclnnPermute"), 3);
    assert_eq!(d.calls("aclnnMean"), 3);
    assert_eq!(d.calls("aclnnCast"), 3);
    close_leaves_none(d, s, "device_buffers");
    assert_eq!(d.violations(), 0, "{}", d.log());
}

#[test]
fn operators_without_an_acl_implementation_are_listed_in_one_error() {
    let (_t, _d) = double();
    let mut b = GraphBuilder::new("g");
    let xin = input(&mut b, 0, vec![2, 3]);
    let y = op(&mut b, "Log", &[Some(xin)], &[]);
    let y = op(&mut b, "Relu", &[Some(y)], &[]);
    let y = op(&mut b, "Sin", &[Some(y)], &[]);
    b.set_output(y, 0).unwrap();
    let g = b.build_and_reset().unwrap();
    let s = session(&[("ge.device", "acl")], g);
    let e = s.run_graph(1, vec![x(2, 0.0)]).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, Error::Unsupported(_)), "{m}");
    assert!(m.contains("cannot run 2 node(s)"), "{m}");
    assert!(m.contains("(Log)") && m.contains("(Sin)"), "{m}");
    assert!(m.contains("it runs: Abs, Add"), "{m}");
}

#[test]
fn acl_error_codes_become_errors_naming_the_node() {
    let (_t, d) = double();
    let s = session(&[("ge.device", "acl"), ("ge.graphMode", "off")], model());
    d.fail_next(
        "aclnnSoftmax",
        361001,
        "injected: the AI core reported an exception",
    );
    let e = s.run_graph(1, vec![x(2, 0.0)]).unwrap_err();
    match &e {
        Error::Execution { op, message, .. } => {
            assert_eq!(op, "SoftmaxV2");
            assert!(message.contains("361001"), "{message}");
            assert!(
                message.contains("the AI core reported an exception"),
                "{message}"
            );
        }
        e => panic!("expected an execution error, got {e:?}"),
    }
    d.fail_next("aclrtMalloc", 207001, "injected: out of device memory");
    let e = s.run_graph(1, vec![x(2, 0.0)]).unwrap_err();
    assert!(matches!(e, Error::Device(_)), "{e:?}");
    assert!(e.to_string().contains("out of device memory"), "{e}");
    // After failures the session still works and nothing leaked.
    s.run_graph(1, vec![x(2, 0.0)]).unwrap();
    close_leaves_none(d, s, "device_buffers");
}

#[test]
fn a_failed_capture_leaves_no_graph_and_the_next_run_recovers() {
    let (_t, d) = double();
    let s = session(&[("ge.device", "acl")], model());
    d.fail_next("aclnnRelu", 361001, "injected: launch refused");
    assert!(s.run_graph(1, vec![x(2, 0.0)]).is_err());
    assert_eq!(d.live("capturing"), 0);
    let cpu = session(&[], model());
    close(
        &s.run_graph(1, vec![x(2, 0.0)]).unwrap(),
        &cpu.run_graph(1, vec![x(2, 0.0)]).unwrap(),
    );
    assert_eq!(d.violations(), 0, "{}", d.log());
}

#[test]
fn auto_picks_acl_when_it_loads_and_device_ids_are_checked() {
    let (_t, d) = double();
    let s = session(&[("ge.device", "auto")], model());
    assert!(s.runs_on_acl(1).unwrap());
    s.add_graph(2, model(), &opts(&[("ge.device", "cpu")]))
        .unwrap();
    assert!(!s.runs_on_acl(2).unwrap());
    drop(s);
    let e = Session::new(&opts(&[("ge.device", "acl"), ("ge.exec.deviceId", "3")])).unwrap_err();
    assert!(e.to_string().contains("ACL reports 1 device(s)"), "{e}");
    d.set_device_count(4);
    let s = Session::new(&opts(&[("ge.device", "acl"), ("ge.exec.deviceId", "3")])).unwrap();
    close_leaves_none(d, s, "contexts");
}

#[test]
fn shutdown_releases_in_a_legal_order() {
    let (_t, d) = double();
    {
        let s = session(&[("ge.device", "acl")], model());
        s.run_graph(1, vec![x(2, 0.0)]).unwrap();
        d.reset();
    }
    let names = d.call_names();
    let last = |n: &str| names.iter().rposition(|c| c == n);
    let first = |n: &str| names.iter().position(|c| c == n);
    let destroy_graph = last("aclmdlRIDestroy").expect("the captured graph is destroyed");
    let last_free = last("aclrtFree").expect("buffers are freed");
    let stream = first("aclrtDestroyStream").expect("the stream is destroyed");
    let ctx = first("aclrtDestroyContext").expect("the context is destroyed");
    let reset = first("aclrtResetDevice").expect("the device is reset");
    assert!(
        destroy_graph < stream && last_free < ctx && stream < ctx && ctx < reset,
        "{names:?}"
    );
    assert_eq!(d.violations(), 0, "{}", d.log());
}

#[test]
fn runs_from_several_threads_share_the_device() {
    let (_t, d) = double();
    let s = std::sync::Arc::new(session(&[("ge.device", "acl")], model()));
    let cpu = session(&[], model());
    let want: Vec<Vec<Value>> = (0..4)
        .map(|i| cpu.run_graph(1, vec![x(1 + i % 2, i as f32)]).unwrap())
        .collect();
    std::thread::scope(|sc| {
        for (i, w) in want.iter().enumerate() {
            let s = s.clone();
            sc.spawn(move || {
                for _ in 0..5 {
                    close(&s.run_graph(1, vec![x(1 + i % 2, i as f32)]).unwrap(), w);
                }
            });
        }
    });
    let st = s.graph_cache_stats(1).unwrap();
    assert_eq!(st.hits + st.misses, 20);
    assert_eq!(st.size, 2);
    assert_eq!(d.violations(), 0, "{}", d.log());
}

mod random_graphs {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    struct Case {
        a: Vec<usize>,
        b: Vec<usize>,
        binary: &'static str,
        unary: &'static str,
        reduce: &'static str,
        axis: usize,
        keep: bool,
        transpose: bool,
        seed: u64,
    }

    fn case() -> impl Strategy<Value = Case> {
        (
            prop::collection::vec(1usize..4, 1..4),
            any::<u64>(),
            0usize..4,
            0usize..6,
            0usize..4,
            any::<(bool, bool, bool)>(),
            0usize..3,
        )
            .prop_map(
                |(a, seed, bi, ui, ri, (keep, transpose, drop_lead), axis)| {
                    // b broadcasts against a: some dims 1, maybe fewer leading dims.
                    let mut b: Vec<usize> = a
                        .iter()
                        .enumerate()
                        .map(|(i, &d)| if (seed >> i) & 1 == 1 { 1 } else { d })
                        .collect();
                    if drop_lead && b.len() > 1 {
                        b.remove(0);
                    }
                    Case {
                        axis: axis % a.len(),
                        a,
                        b,
                        binary: ["Add", "Sub", "Mul", "RealDiv"][bi],
                        unary: ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp"][ui],
                        reduce: ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"][ri],
                        keep,
                        transpose,
                        seed,
                    }
                },
            )
    }

    fn values(dims: &[usize], seed: u64, lo: f32) -> Value {
        let n: usize = dims.iter().product();
        let v: Vec<f32> = (0..n)
            .map(|i| lo + (((i as u64 * 2654435761 + seed) % 1000) as f32) / 500.0)
            .collect();
        Value::F32(ge_runtime::ndarray::ArrayD::from_shape_vec(dims.to_vec(), v).unwrap())
    }

    fn graph(c: &Case) -> Graph {
        let mut b = GraphBuilder::new("random");
        let dims = |v: &[usize]| v.iter().map(|&d| d as i64).collect::<Vec<_>>();
        let xa = input(&mut b, 0, dims(&c.a));
        let xb = input(&mut b, 1, dims(&c.b));
        let mut y = op(&mut b, c.binary, &[Some(xa), Some(xb)], &[]);
        y = op(&mut b, c.unary, &[Some(y)], &[]);
        if c.transpose && c.a.len() > 1 {
            let mut perm: Vec<i64> = (0..c.a.len() as i64).collect();
            perm.reverse();
            let p = c_i64(&mut b, &perm);
            y = op(&mut b, "Transpose", &[Some(y), Some(p)], &[]);
        }
        let axes = c_i64(&mut b, &[c.axis as i64]);
        let r = op(
            &mut b,
            c.reduce,
            &[Some(y), Some(axes)],
            &[("keep_dims", AttrValue::Bool(c.keep))],
        );
        b.set_output(y, 0).unwrap();
        b.set_output(r, 1).unwrap();
        b.build_and_reset().unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

        /// Random broadcasting element-wise chains, transposes and reductions give the CPU
        /// backend's results through the ACL backend (captured and replayed), with no misuse.
        #[test]
        fn acl_matches_the_cpu(c in case()) {
            let (_t, d) = double();
            let g = graph(&c);
            let ins = || vec![values(&c.a, c.seed, -1.0), values(&c.b, c.seed ^ 7, 0.5)];
            let cpu = session(&[], g.clone());
            let npu = session(&[("ge.device", "acl")], g);
            let want = cpu.run_graph(1, ins()).unwrap();
            close(&npu.run_graph(1, ins()).unwrap(), &want);
            close(&npu.run_graph(1, ins()).unwrap(), &want); // the replay
            prop_assert_eq!(d.violations(), 0, "{}", d.log());
        }
    }
}

#[test]
fn values_share_device_buffers_once_they_are_dead() {
    let (_t, d) = double();
    let mut b = GraphBuilder::new("chain");
    let mut y = input(&mut b, 0, vec![4, 3]);
    let first = y;
    for i in 0..20 {
        y = op(
            &mut b,
            if i % 2 == 0 { "Neg" } else { "Exp" },
            &[Some(y)],
            &[],
        );
        if i == 10 {
            // A value read much later stays alive until then.
            y = op(&mut b, "Add", &[Some(y), Some(first)], &[]);
        }
    }
    b.set_output(y, 0).unwrap();
    let g = b.build_and_reset().unwrap();
    let cpu = session(&[], g.clone());
    let s = session(&[("ge.device", "acl")], g);
    let before = d.live("device_buffers");
    let xs = || vec![x(4, 0.3)];
    close(
        &s.run_graph(1, xs()).unwrap(),
        &cpu.run_graph(1, xs()).unwrap(),
    );
    close(
        &s.run_graph(1, xs()).unwrap(),
        &cpu.run_graph(1, xs()).unwrap(),
    );
    let report = s.compile_report(1).unwrap().unwrap().to_string();
    assert!(report.contains("22 values in 4 device buffers"), "{report}");
    assert_eq!(d.live("device_buffers") - before, 4);
    assert_eq!(d.violations(), 0, "{}", d.log());
}
