//! Tests of the built-in shape/dtype inference rules, through the builder (so prototype
//! validation runs too): for each operator a known-shape case, an unknown-dim/rank case and,
//! where the rule can reject something, a wrong-input case.

use es_core::attr::AttrValue;
use es_core::builder::OpArgs;
use es_core::infer::{builtin_rule, infer, InferCtx};
use es_core::ops::{global_registry, IoKind};
use es_core::{
    DataType, Error, Format, Graph, GraphBuilder, NodeId, OutPort, Shape, Tensor, TensorDesc,
};

use DataType::{BOOL, FLOAT, FLOAT16, INT32, INT64, INT8, UNDEFINED};

const U: i64 = -1;

fn i(v: i64) -> AttrValue {
    AttrValue::Int(v)
}
fn b(v: bool) -> AttrValue {
    AttrValue::Bool(v)
}
fn li(v: &[i64]) -> AttrValue {
    AttrValue::ListInt(v.to_vec())
}
fn s(v: &str) -> AttrValue {
    AttrValue::String(v.to_string())
}

/// A builder with helpers to make inputs and call operators by input name.
struct T {
    b: GraphBuilder,
    next: i64,
}

type Ins<'a> = &'a [(&'a str, &'a [OutPort])];
type Attrs<'a> = &'a [(&'a str, AttrValue)];

impl T {
    fn new() -> Self {
        T {
            b: GraphBuilder::new("g"),
            next: 0,
        }
    }
    fn input_fmt(&mut self, dt: DataType, fmt: Format, dims: &[i64]) -> OutPort {
        let k = self.next;
        self.next += 1;
        self.b
            .create_input(k, None, "Data", dt, fmt, Shape::from_slice(dims))
            .unwrap()
    }
    fn input(&mut self, dt: DataType, dims: &[i64]) -> OutPort {
        self.input_fmt(dt, Format::ND, dims)
    }
    fn f(&mut self, dims: &[i64]) -> OutPort {
        self.input(FLOAT, dims)
    }
    /// A 1-D int32 constant.
    fn ints(&mut self, v: &[i32]) -> OutPort {
        self.b
            .create_const(Tensor::from_values(v, vec![v.len() as i64]).unwrap(), None)
            .unwrap()
    }
    fn ints64(&mut self, v: &[i64]) -> OutPort {
        self.b
            .create_const(Tensor::from_values(v, vec![v.len() as i64]).unwrap(), None)
            .unwrap()
    }
    fn scalar_i32(&mut self, v: i32) -> OutPort {
        self.b.create_const(Tensor::scalar(v), None).unwrap()
    }
    fn scalar_f(&mut self, v: f32) -> OutPort {
        self.b.create_const(Tensor::scalar(v), None).unwrap()
    }
    fn call_full(
        &mut self,
        ty: &str,
        ins: Ins,
        attrs: Attrs,
        counts: &[(&str, usize)],
        subgraphs: Vec<Vec<Graph>>,
    ) -> es_core::Result<NodeId> {
        let p = self.b.proto(ty).unwrap_or_else(|e| panic!("{ty}: {e}"));
        for (n, _) in ins {
            assert!(p.input(n).is_some(), "{ty} has no input '{n}'");
        }
        let inputs = p
            .inputs
            .iter()
            .map(|d| match (ins.iter().find(|(n, _)| *n == d.name), d.kind) {
                (Some((_, v)), IoKind::Dynamic) => v.iter().map(|x| Some(*x)).collect(),
                (Some((_, v)), _) => vec![v.first().copied()],
                (None, IoKind::Dynamic) => vec![],
                (None, _) => vec![None],
            })
            .collect();
        let mut args = OpArgs {
            inputs,
            subgraphs,
            ..Default::default()
        };
        for (k, v) in attrs {
            args.attrs.insert(k.to_string(), v.clone());
        }
        for (k, n) in counts {
            args.output_counts.insert(k.to_string(), *n);
        }
        self.b.add_op(ty, args)
    }
    fn call(&mut self, ty: &str, ins: Ins, attrs: Attrs) -> es_core::Result<NodeId> {
        self.call_full(ty, ins, attrs, &[], Vec::new())
    }
    fn out(&self, id: NodeId, k: usize) -> TensorDesc {
        self.b.graph().node(id).unwrap().outputs[k].desc.clone()
    }
    fn outs(&self, id: NodeId) -> Vec<(DataType, Vec<i64>)> {
        self.b
            .graph()
            .node(id)
            .unwrap()
            .outputs
            .iter()
            .map(|o| (o.desc.dtype, o.desc.shape.to_vec()))
            .collect()
    }
    /// Calls an op that must succeed; returns output 0's dtype and dims.
    fn ok(&mut self, ty: &str, ins: Ins, attrs: Attrs) -> (DataType, Vec<i64>) {
        let id = self
            .call(ty, ins, attrs)
            .unwrap_or_else(|e| panic!("{ty}: unexpected error: {e}"));
        let d = self.out(id, 0);
        (d.dtype, d.shape.to_vec())
    }
    /// Output 0's dims of an op that must succeed.
    fn dims(&mut self, ty: &str, ins: Ins, attrs: Attrs) -> Vec<i64> {
        self.ok(ty, ins, attrs).1
    }
    /// Calls an op that must fail in inference; returns the message. The graph must not change.
    fn err(&mut self, ty: &str, ins: Ins, attrs: Attrs) -> String {
        let before = self.b.graph().nodes().len();
        let e = match self.call(ty, ins, attrs) {
            Ok(id) => panic!("{ty}: expected an error, got outputs {:?}", self.outs(id)),
            Err(e) => e,
        };
        assert_eq!(
            self.b.graph().nodes().len(),
            before,
            "a failed call must not add a node"
        );
        match e {
            Error::ShapeInference(m) => m,
            other => panic!("{ty}: expected a shape inference error, got {other:?}"),
        }
    }
}

fn has(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} lacks {p:?}");
    }
}

/// Runs a rule on a hand-made context (for cases the builder cannot produce).
fn infer_raw(
    ty: &str,
    inputs: Vec<Option<&TensorDesc>>,
    input_ir: Vec<u32>,
    output_ir: Vec<u32>,
    attrs: &es_core::AttrMap,
) -> es_core::Result<Vec<TensorDesc>> {
    let reg = global_registry();
    let proto = reg.get(ty).unwrap().clone();
    let consts = vec![None; inputs.len()];
    let ctx = InferCtx {
        proto: &proto,
        node_name: "n",
        attrs,
        inputs,
        input_ir,
        consts,
        output_ir,
        bound: Default::default(),
    };
    infer(&ctx)
}

const ALL_OPS: &[&str] = &[
    "Data",
    "RefData",
    "Const",
    "Variable",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "RealDiv",
    "Neg",
    "Relu",
    "Relu6",
    "Sigmoid",
    "Exp",
    "Sqrt",
    "Maximum",
    "Minimum",
    "Cast",
    "MatMul",
    "MatMulV2",
    "BatchMatMul",
    "BatchMatMulV2",
    "GEMM",
    "FusedMulAdd",
    "Reshape",
    "Transpose",
    "Unsqueeze",
    "Squeeze",
    "ConcatV2",
    "ConcatD",
    "Pack",
    "Split",
    "SplitD",
    "SplitV",
    "IdentityN",
    "Identity",
    "TensorMove",
    "ReduceSum",
    "ReduceSumD",
    "Fill",
    "ZerosLike",
    "Shape",
    "BroadcastTo",
    "Tile",
    "TopKV2",
    "ScatterElements",
    "GatherElements",
    "MaskedFill",
    "LogicalNot",
    "Conv2D",
    "BatchNorm",
    "If",
    "Case",
    "While",
];

#[test]
fn every_operator_has_a_rule_and_a_prototype() {
    let reg = global_registry();
    for op in ALL_OPS {
        assert!(builtin_rule(op).is_some(), "{op} has no built-in rule");
        assert!(reg.get(op).is_some(), "{op} is not in the operator library");
    }
    assert!(builtin_rule("NoSuchOp").is_none());
}

// ------------------------------------------------------------------------------------ sources

#[test]
fn data_like_ops_pass_their_input_through() {
    for ty in ["Data", "RefData", "Variable"] {
        let mut t = T::new();
        let x = t.input_fmt(FLOAT16, Format::NCHW, &[2, U, 4]);
        let id = t.call(ty, &[("x", &[x])], &[]).unwrap();
        let d = t.out(id, 0);
        assert_eq!(
            (d.dtype, d.shape.to_vec(), d.format),
            (FLOAT16, vec![2, U, 4], Format::NCHW),
            "{ty}"
        );
        let x = t.input(INT32, &[-2]);
        let id = t.call(ty, &[("x", &[x])], &[]).unwrap();
        assert_eq!(t.outs(id), vec![(INT32, vec![-2])], "{ty}");
    }
}

#[test]
fn data_without_input_is_undefined_unknown_rank() {
    for ty in ["Data", "RefData", "Variable"] {
        let out = infer_raw(ty, vec![None], vec![0], vec![0], &Default::default()).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].dtype, out[0].shape.clone()),
            (UNDEFINED, Shape::unknown_rank()),
            "{ty}"
        );
    }
}

#[test]
fn create_input_sets_data_desc() {
    let mut t = T::new();
    let x = t.input(INT64, &[3, U]);
    let d = t.b.graph().out_desc(x).unwrap();
    assert_eq!((d.dtype, d.shape.to_vec()), (INT64, vec![3, U]));
}

#[test]
fn const_takes_the_value_desc() {
    let mut t = T::new();
    let v = Tensor::from_values(&[1i64, 2, 3, 4, 5, 6], vec![2, 3]).unwrap();
    let (dt, dims) = t.ok("Const", &[], &[("value", AttrValue::Tensor(v))]);
    assert_eq!((dt, dims), (INT64, vec![2, 3]));
    let (dt, dims) = t.ok(
        "Const",
        &[],
        &[("value", AttrValue::Tensor(Tensor::scalar(true)))],
    );
    assert_eq!((dt, dims), (BOOL, vec![]));
    // create_const agrees with the rule.
    let p = t.scalar_f(1.5);
    let d = t.b.graph().out_desc(p).unwrap();
    assert_eq!((d.dtype, d.shape.to_vec()), (FLOAT, vec![]));
}

#[test]
fn const_without_a_tensor_value_fails() {
    let mut attrs = es_core::AttrMap::new();
    attrs.insert("value".into(), i(3));
    let e = infer_raw("Const", vec![], vec![], vec![0], &attrs).unwrap_err();
    has(&e.to_string(), &["Const 'n'", "'value'", "Tensor"]);
}

// -------------------------------------------------------------------------------- elementwise

const BINARY: &[&str] = &["Add", "Sub", "Mul", "Div", "RealDiv", "Maximum", "Minimum"];

#[test]
fn binary_broadcast_known() {
    for ty in BINARY {
        let mut t = T::new();
        let a = t.f(&[2, 1, 3]);
        let c = t.f(&[4, 1]);
        assert_eq!(
            t.ok(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            (FLOAT, vec![2, 4, 3]),
            "{ty}"
        );
        let a = t.input(INT32, &[]);
        let c = t.input(INT32, &[5]);
        assert_eq!(
            t.ok(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            (INT32, vec![5]),
            "{ty}"
        );
    }
}

#[test]
fn binary_broadcast_unknown() {
    for ty in BINARY {
        let mut t = T::new();
        let a = t.f(&[U, 3]);
        let c = t.f(&[1, 3]);
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![U, 3],
            "{ty}"
        );
        let a = t.f(&[U, 1]);
        let c = t.f(&[5, 4]);
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![5, 4],
            "{ty}"
        );
        let a = t.f(&[-2]);
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![-2],
            "{ty}"
        );
    }
}

#[test]
fn binary_broadcast_mismatch() {
    for ty in BINARY {
        let mut t = T::new();
        let a = t.f(&[2, 3]);
        let c = t.f(&[4, 3]);
        let m = t.err(ty, &[("x1", &[a]), ("x2", &[c])], &[]);
        has(
            &m,
            &[
                &format!("{ty} '{ty}_0'"),
                "'x1' [2, 3]",
                "'x2' [4, 3]",
                "cannot be broadcast",
            ],
        );
    }
}

const UNARY: &[&str] = &[
    "Neg",
    "Relu",
    "Relu6",
    "Sigmoid",
    "Exp",
    "Sqrt",
    "Identity",
    "TensorMove",
    "ZerosLike",
];

#[test]
fn unary_keeps_shape_and_dtype() {
    for ty in UNARY {
        let mut t = T::new();
        let x = t.input(FLOAT16, &[2, 3]);
        assert_eq!(t.ok(ty, &[("x", &[x])], &[]), (FLOAT16, vec![2, 3]), "{ty}");
        let x = t.f(&[U, 3, U]);
        assert_eq!(
            t.ok(ty, &[("x", &[x])], &[]),
            (FLOAT, vec![U, 3, U]),
            "{ty}"
        );
        let x = t.f(&[-2]);
        assert_eq!(t.ok(ty, &[("x", &[x])], &[]), (FLOAT, vec![-2]), "{ty}");
    }
}

#[test]
fn logical_not() {
    let mut t = T::new();
    let x = t.input(BOOL, &[4]);
    assert_eq!(t.ok("LogicalNot", &[("x", &[x])], &[]), (BOOL, vec![4]));
    let x = t.input(BOOL, &[U, 2]);
    assert_eq!(t.ok("LogicalNot", &[("x", &[x])], &[]), (BOOL, vec![U, 2]));
    // A float input is rejected by the prototype's dtype check.
    let x = t.f(&[4]);
    let e = t.call("LogicalNot", &[("x", &[x])], &[]).unwrap_err();
    has(&e.to_string(), &["'x'", "DT_FLOAT", "DT_BOOL"]);
}

#[test]
fn cast() {
    let mut t = T::new();
    let x = t.f(&[2, U]);
    assert_eq!(
        t.ok("Cast", &[("x", &[x])], &[("dst_type", i(FLOAT16 as i64))]),
        (FLOAT16, vec![2, U])
    );
    assert_eq!(
        t.ok("Cast", &[("x", &[x])], &[("dst_type", i(INT64 as i64))]),
        (INT64, vec![2, U])
    );
    let x = t.input(INT32, &[-2]);
    assert_eq!(
        t.ok("Cast", &[("x", &[x])], &[("dst_type", i(BOOL as i64))]),
        (BOOL, vec![-2])
    );
    let m = t.err("Cast", &[("x", &[x])], &[("dst_type", i(999))]);
    has(&m, &["'dst_type'", "999"]);
    let m = t.err("Cast", &[("x", &[x])], &[("dst_type", i(UNDEFINED as i64))]);
    has(&m, &["'dst_type'", "DT_UNDEFINED"]);
    // DT_UINT1 is an allowed input dtype of Cast but not an output dtype.
    let m = t.err(
        "Cast",
        &[("x", &[x])],
        &[("dst_type", i(DataType::UINT1 as i64))],
    );
    has(&m, &["'dst_type'", "DT_UINT1"]);
}

#[test]
fn fused_mul_add() {
    let mut t = T::new();
    let (a, c, d) = (t.f(&[2, 3]), t.f(&[3]), t.f(&[4, 1, 1]));
    assert_eq!(
        t.ok(
            "FusedMulAdd",
            &[("x1", &[a]), ("x2", &[c]), ("x3", &[d])],
            &[]
        ),
        (FLOAT, vec![4, 2, 3])
    );
    let (a, c, d) = (t.f(&[U, 3]), t.f(&[2, U]), t.f(&[1]));
    assert_eq!(
        t.dims(
            "FusedMulAdd",
            &[("x1", &[a]), ("x2", &[c]), ("x3", &[d])],
            &[]
        ),
        vec![2, 3]
    );
    let (a, c, d) = (t.f(&[2, 3]), t.f(&[3]), t.f(&[4]));
    let m = t.err(
        "FusedMulAdd",
        &[("x1", &[a]), ("x2", &[c]), ("x3", &[d])],
        &[],
    );
    has(&m, &["'x3' [4]", "cannot be broadcast"]);
    let (a, c) = (t.f(&[2, 3]), t.f(&[2]));
    let m = t.err(
        "FusedMulAdd",
        &[("x1", &[a]), ("x2", &[c]), ("x3", &[d])],
        &[],
    );
    has(&m, &["'x1' [2, 3]", "'x2' [2]"]);
}

#[test]
fn masked_fill() {
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    let mask = t.input(BOOL, &[1, 3]);
    let v = t.scalar_f(0.0);
    assert_eq!(
        t.ok(
            "MaskedFill",
            &[("x", &[x]), ("mask", &[mask]), ("value", &[v])],
            &[]
        ),
        (FLOAT, vec![2, 3])
    );
    let xu = t.f(&[U, 3]);
    assert_eq!(
        t.dims(
            "MaskedFill",
            &[("x", &[xu]), ("mask", &[mask]), ("value", &[v])],
            &[]
        ),
        vec![U, 3]
    );
    let bad = t.input(BOOL, &[4]);
    let m = t.err(
        "MaskedFill",
        &[("x", &[x]), ("mask", &[bad]), ("value", &[v])],
        &[],
    );
    has(&m, &["'x' [2, 3]", "'mask' [4]"]);
    let v2 = t.f(&[2]);
    let m = t.err(
        "MaskedFill",
        &[("x", &[x]), ("mask", &[mask]), ("value", &[v2])],
        &[],
    );
    has(&m, &["'value'", "scalar", "[2]"]);
}

// ---------------------------------------------------------------------------- matrix products

#[test]
fn matmul_known_and_transposed() {
    for ty in ["MatMul", "MatMulV2"] {
        let mut t = T::new();
        let (a, c) = (t.f(&[2, 3]), t.f(&[3, 5]));
        assert_eq!(
            t.ok(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            (FLOAT, vec![2, 5]),
            "{ty}"
        );
        let (a, c) = (t.f(&[3, 2]), t.f(&[5, 3]));
        let at = [("transpose_x1", b(true)), ("transpose_x2", b(true))];
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &at),
            vec![2, 5],
            "{ty}"
        );
        let (a, c, bias) = (t.f(&[2, 3]), t.f(&[3, 5]), t.f(&[5]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c]), ("bias", &[bias])], &[]),
            vec![2, 5],
            "{ty}"
        );
    }
}

#[test]
fn matmul_unknown() {
    for ty in ["MatMul", "MatMulV2"] {
        let mut t = T::new();
        let (a, c) = (t.f(&[U, 3]), t.f(&[U, U]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![U, U],
            "{ty}"
        );
        let (a, c) = (t.f(&[-2]), t.f(&[3, 7]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![U, 7],
            "{ty}"
        );
    }
}

#[test]
fn matmul_errors() {
    let mut t = T::new();
    let (a, c) = (t.f(&[2, 3]), t.f(&[4, 5]));
    let m = t.err("MatMulV2", &[("x1", &[a]), ("x2", &[c])], &[]);
    assert_eq!(
        m,
        "MatMulV2 'MatMulV2_0': inner dimensions differ: x1 [2, 3] (k=3) vs x2 [4, 5] (k=4)"
    );
    let (a, c) = (t.f(&[2, 3]), t.f(&[3, 5]));
    let m = t.err(
        "MatMul",
        &[("x1", &[a]), ("x2", &[c])],
        &[("transpose_x2", b(true))],
    );
    has(
        &m,
        &["inner dimensions differ", "(k=5)", "transpose_x2=true"],
    );
    let (a3, c) = (t.f(&[2, 2, 3]), t.f(&[3, 5]));
    let m = t.err("MatMul", &[("x1", &[a3]), ("x2", &[c])], &[]);
    has(&m, &["'x1' must be 2-D", "[2, 2, 3]"]);
    let bias = t.f(&[4]);
    let m = t.err(
        "MatMulV2",
        &[("x1", &[a]), ("x2", &[c]), ("bias", &[bias])],
        &[],
    );
    has(&m, &["'bias' [4]", "[2, 5]"]);
}

#[test]
fn matmul_int8_gives_int32() {
    let mut t = T::new();
    let (a, c) = (t.input(INT8, &[2, 3]), t.input(INT8, &[3, 4]));
    assert_eq!(
        t.ok("MatMulV2", &[("x1", &[a]), ("x2", &[c])], &[]),
        (INT32, vec![2, 4])
    );
    let (a, c) = (t.input(FLOAT16, &[2, 3]), t.input(FLOAT16, &[3, 4]));
    assert_eq!(
        t.ok("MatMulV2", &[("x1", &[a]), ("x2", &[c])], &[]),
        (FLOAT16, vec![2, 4])
    );
}

#[test]
fn batch_matmul_known() {
    for ty in ["BatchMatMul", "BatchMatMulV2"] {
        let mut t = T::new();
        let (a, c) = (t.f(&[2, 3, 4]), t.f(&[4, 5]));
        assert_eq!(
            t.ok(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            (FLOAT, vec![2, 3, 5]),
            "{ty}"
        );
        let (a, c) = (t.f(&[2, 1, 3, 4]), t.f(&[5, 4, 6]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![2, 5, 3, 6],
            "{ty}"
        );
        let (a, c) = (t.f(&[7, 4, 3]), t.f(&[7, 6, 4]));
        let adj = [("adj_x1", b(true)), ("adj_x2", b(true))];
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &adj),
            vec![7, 3, 6],
            "{ty}"
        );
    }
}

#[test]
fn batch_matmul_unknown() {
    for ty in ["BatchMatMul", "BatchMatMulV2"] {
        let mut t = T::new();
        let (a, c) = (t.f(&[U, 3, 4]), t.f(&[1, 4, U]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![U, 3, U],
            "{ty}"
        );
        let (a, c) = (t.f(&[-2]), t.f(&[4, 5]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![-2],
            "{ty}"
        );
    }
}

#[test]
fn batch_matmul_errors() {
    for ty in ["BatchMatMul", "BatchMatMulV2"] {
        let mut t = T::new();
        let (a, c) = (t.f(&[2, 3, 4]), t.f(&[2, 5, 6]));
        let m = t.err(ty, &[("x1", &[a]), ("x2", &[c])], &[]);
        has(
            &m,
            &[
                "inner dimensions differ",
                "x1 [2, 3, 4] (k=4)",
                "x2 [2, 5, 6] (k=5)",
            ],
        );
        let (a, c) = (t.f(&[2, 3, 4]), t.f(&[3, 4, 6]));
        let m = t.err(ty, &[("x1", &[a]), ("x2", &[c])], &[]);
        has(&m, &["batch dimensions", "cannot be broadcast"]);
        let (a, c) = (t.f(&[4]), t.f(&[4, 6]));
        let m = t.err(ty, &[("x1", &[a]), ("x2", &[c])], &[]);
        has(&m, &["'x1' must have rank >= 2"]);
    }
}

#[test]
fn gemm() {
    let mut t = T::new();
    let (a, bb, c) = (t.f(&[2, 3]), t.f(&[3, 4]), t.f(&[2, 4]));
    let (al, be) = (t.f(&[1]), t.f(&[1]));
    let ins = |a, bb, c| {
        [
            ("a", vec![a]),
            ("b", vec![bb]),
            ("c", vec![c]),
            ("alpha", vec![al]),
            ("beta", vec![be]),
        ]
    };
    let run = |t: &mut T, a, bb, c, attrs: Attrs| {
        let v = ins(a, bb, c);
        let r: Vec<(&str, &[OutPort])> = v.iter().map(|(n, p)| (*n, p.as_slice())).collect();
        t.call("GEMM", &r, attrs)
    };
    let id = run(&mut t, a, bb, c, &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, 4])]);
    let (at, bt) = (t.f(&[3, 2]), t.f(&[4, 3]));
    let id = run(
        &mut t,
        at,
        bt,
        c,
        &[("transpose_a", b(true)), ("transpose_b", b(true))],
    )
    .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, 4])]);
    let (au, cu) = (t.f(&[U, 3]), t.f(&[U, U]));
    let id = run(&mut t, au, bb, cu, &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![U, 4])]);
    let b5 = t.f(&[5, 4]);
    let m = run(&mut t, a, b5, c, &[]).unwrap_err().to_string();
    has(
        &m,
        &[
            "inner dimensions differ",
            "a [2, 3] (k=3)",
            "b [5, 4] (k=5)",
        ],
    );
    let c_bad = t.f(&[3, 4]);
    let m = run(&mut t, a, bb, c_bad, &[]).unwrap_err().to_string();
    has(&m, &["'c' [3, 4]", "[2, 4]"]);
    let al2 = t.f(&[2]);
    let v = [
        ("a", [a]),
        ("b", [bb]),
        ("c", [c]),
        ("alpha", [al2]),
        ("beta", [be]),
    ];
    let r: Vec<(&str, &[OutPort])> = v.iter().map(|(n, p)| (*n, p.as_slice())).collect();
    let m = t.err("GEMM", &r, &[]);
    has(&m, &["'alpha'", "scalar", "[2]"]);
}

// ----------------------------------------------------------------------- shape manipulation

#[test]
fn reshape_const_shape() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    let s = t.ints(&[3, -1]);
    assert_eq!(
        t.ok("Reshape", &[("x", &[x]), ("shape", &[s])], &[]),
        (FLOAT, vec![3, 8])
    );
    let s = t.ints64(&[0, -1]);
    assert_eq!(
        t.dims("Reshape", &[("x", &[x]), ("shape", &[s])], &[]),
        vec![2, 12]
    );
    let s = t.ints(&[24]);
    assert_eq!(
        t.dims("Reshape", &[("x", &[x]), ("shape", &[s])], &[]),
        vec![24]
    );
    // Caffe-style partial reshape of dims [1, 2).
    let s = t.ints(&[3, 1]);
    assert_eq!(
        t.dims(
            "Reshape",
            &[("x", &[x]), ("shape", &[s])],
            &[("axis", i(1)), ("num_axes", i(1))]
        ),
        vec![2, 3, 1, 4]
    );
    let one = t.f(&[1]);
    let s =
        t.b.create_const(Tensor::from_values::<i32>(&[], vec![0]).unwrap(), None)
            .unwrap();
    assert_eq!(
        t.dims("Reshape", &[("x", &[one]), ("shape", &[s])], &[]),
        Vec::<i64>::new()
    );
}

#[test]
fn reshape_unknown() {
    let mut t = T::new();
    let x = t.f(&[U, 3, 4]);
    let s = t.ints(&[-1, 12]);
    assert_eq!(
        t.dims("Reshape", &[("x", &[x]), ("shape", &[s])], &[]),
        vec![U, 12]
    );
    let s = t.ints(&[0, 0, 2, 2]);
    assert_eq!(
        t.dims("Reshape", &[("x", &[x]), ("shape", &[s])], &[]),
        vec![U, 3, 2, 2]
    );
    let xr = t.f(&[-2]);
    let s = t.ints(&[0, 6]);
    assert_eq!(
        t.dims("Reshape", &[("x", &[xr]), ("shape", &[s])], &[]),
        vec![U, 6]
    );
    let dyn_shape = t.input(INT32, &[3]);
    assert_eq!(
        t.dims("Reshape", &[("x", &[x]), ("shape", &[dyn_shape])], &[]),
        vec![U, U, U]
    );
    // An absurd shape length is reported as unknown rank, not allocated.
    let huge = t.input(INT64, &[1 << 40]);
    assert_eq!(
        t.dims("Reshape", &[("x", &[x]), ("shape", &[huge])], &[]),
        vec![-2]
    );
    let dyn_shape = t.input(INT64, &[U]);
    assert_eq!(
        t.dims("Reshape", &[("x", &[x]), ("shape", &[dyn_shape])], &[]),
        vec![-2]
    );
}

#[test]
fn reshape_errors() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    let s = t.ints(&[5, 5]);
    let m = t.err("Reshape", &[("x", &[x]), ("shape", &[s])], &[]);
    has(
        &m,
        &["Reshape 'Reshape_0'", "element count mismatch", "24", "25"],
    );
    let s = t.ints(&[-1, -1]);
    has(
        &t.err("Reshape", &[("x", &[x]), ("shape", &[s])], &[]),
        &["more than one -1"],
    );
    let s = t.ints(&[-3, 8]);
    has(
        &t.err("Reshape", &[("x", &[x]), ("shape", &[s])], &[]),
        &["invalid value -3"],
    );
    let s = t.ints(&[-1, 5]);
    has(
        &t.err("Reshape", &[("x", &[x]), ("shape", &[s])], &[]),
        &["not a multiple of 5"],
    );
    let s = t.ints(&[0, 0, 0, 0]);
    has(
        &t.err("Reshape", &[("x", &[x]), ("shape", &[s])], &[]),
        &["0 (copy) at index 3"],
    );
    let s2 = t.input(INT32, &[2, 2]);
    has(
        &t.err("Reshape", &[("x", &[x]), ("shape", &[s2])], &[]),
        &["'shape' must be 1-D"],
    );
    let s = t.ints(&[4]);
    has(
        &t.err(
            "Reshape",
            &[("x", &[x]), ("shape", &[s])],
            &[("axis", i(4))],
        ),
        &["'axis' 4"],
    );
}

#[test]
fn transpose() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    let p = t.ints(&[1, 0, 2]);
    assert_eq!(
        t.ok("Transpose", &[("x", &[x]), ("perm", &[p])], &[]),
        (FLOAT, vec![3, 2, 4])
    );
    let p2 = t.ints64(&[2, 0, 1]);
    assert_eq!(
        t.dims("Transpose", &[("x", &[x]), ("perm", &[p2])], &[]),
        vec![4, 2, 3]
    );
    let xu = t.f(&[U, 3, 4]);
    assert_eq!(
        t.dims("Transpose", &[("x", &[xu]), ("perm", &[p])], &[]),
        vec![3, U, 4]
    );
    let xr = t.f(&[-2]);
    assert_eq!(
        t.dims("Transpose", &[("x", &[xr]), ("perm", &[p])], &[]),
        vec![U, U, U]
    );
    let dp = t.input(INT32, &[3]);
    assert_eq!(
        t.dims("Transpose", &[("x", &[x]), ("perm", &[dp])], &[]),
        vec![U, U, U]
    );
    assert_eq!(
        t.dims("Transpose", &[("x", &[xr]), ("perm", &[dp])], &[]),
        vec![U, U, U]
    );
    let p = t.ints(&[1, 0]);
    has(
        &t.err("Transpose", &[("x", &[x]), ("perm", &[p])], &[]),
        &["'perm'", "2 values", "rank 3"],
    );
    let p = t.ints(&[0, 0, 1]);
    has(
        &t.err("Transpose", &[("x", &[x]), ("perm", &[p])], &[]),
        &["not a permutation"],
    );
    let p = t.ints(&[0, 1, 3]);
    has(
        &t.err("Transpose", &[("x", &[x]), ("perm", &[p])], &[]),
        &["perm value 3 is out of range for rank 3"],
    );
}

#[test]
fn unsqueeze() {
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    assert_eq!(
        t.ok("Unsqueeze", &[("x", &[x])], &[("axes", li(&[0, 3]))]),
        (FLOAT, vec![1, 2, 3, 1])
    );
    assert_eq!(
        t.dims("Unsqueeze", &[("x", &[x])], &[("axes", li(&[-1]))]),
        vec![2, 3, 1]
    );
    assert_eq!(
        t.dims("Unsqueeze", &[("x", &[x])], &[("axes", li(&[1]))]),
        vec![2, 1, 3]
    );
    let xu = t.f(&[U, 3]);
    assert_eq!(
        t.dims("Unsqueeze", &[("x", &[xu])], &[("axes", li(&[0]))]),
        vec![1, U, 3]
    );
    let xr = t.f(&[-2]);
    assert_eq!(
        t.dims("Unsqueeze", &[("x", &[xr])], &[("axes", li(&[0]))]),
        vec![-2]
    );
    has(
        &t.err("Unsqueeze", &[("x", &[x])], &[("axes", li(&[5]))]),
        &["'axes' value 5 is out of range for rank 3"],
    );
    has(
        &t.err("Unsqueeze", &[("x", &[x])], &[("axes", li(&[0, -4]))]),
        &["repeated"],
    );
}

#[test]
fn squeeze() {
    let mut t = T::new();
    let x = t.f(&[1, 2, 1, 3]);
    assert_eq!(t.ok("Squeeze", &[("x", &[x])], &[]), (FLOAT, vec![2, 3]));
    assert_eq!(
        t.dims("Squeeze", &[("x", &[x])], &[("axis", li(&[0]))]),
        vec![2, 1, 3]
    );
    assert_eq!(
        t.dims("Squeeze", &[("x", &[x])], &[("axis", li(&[-2, 0]))]),
        vec![2, 3]
    );
    let xu = t.f(&[U, 1]);
    assert_eq!(
        t.dims("Squeeze", &[("x", &[xu])], &[("axis", li(&[1]))]),
        vec![U]
    );
    assert_eq!(
        t.dims("Squeeze", &[("x", &[xu])], &[("axis", li(&[0]))]),
        vec![1]
    );
    assert_eq!(t.dims("Squeeze", &[("x", &[xu])], &[]), vec![-2]);
    let m = t.err("Squeeze", &[("x", &[x])], &[("axis", li(&[1]))]);
    has(&m, &["cannot squeeze axis 1 of x [1, 2, 1, 3]", "dim is 2"]);
    has(
        &t.err("Squeeze", &[("x", &[x])], &[("axis", li(&[4]))]),
        &["out of range for rank 4"],
    );
    let sc = t.f(&[]);
    assert_eq!(t.dims("Squeeze", &[("x", &[sc])], &[]), Vec::<i64>::new());
    has(
        &t.err("Squeeze", &[("x", &[sc])], &[("axis", li(&[0]))]),
        &["cannot squeeze a scalar"],
    );
}

#[test]
fn concat_v2() {
    let mut t = T::new();
    let (a, c) = (t.f(&[2, 3]), t.f(&[2, 5]));
    let ax = t.scalar_i32(1);
    assert_eq!(
        t.ok("ConcatV2", &[("x", &[a, c]), ("concat_dim", &[ax])], &[]),
        (FLOAT, vec![2, 8])
    );
    let axn = t.scalar_i32(-2);
    let d = t.f(&[4, 3]);
    assert_eq!(
        t.dims(
            "ConcatV2",
            &[("x", &[a, d, a]), ("concat_dim", &[axn])],
            &[]
        ),
        vec![8, 3]
    );
    let (u1, u2) = (t.f(&[U, 3]), t.f(&[2, U]));
    assert_eq!(
        t.dims("ConcatV2", &[("x", &[u1, u2]), ("concat_dim", &[ax])], &[]),
        vec![2, U]
    );
    let r = t.f(&[-2]);
    assert_eq!(
        t.dims("ConcatV2", &[("x", &[a, r]), ("concat_dim", &[ax])], &[]),
        vec![2, U]
    );
    assert_eq!(
        t.dims("ConcatV2", &[("x", &[r, r]), ("concat_dim", &[ax])], &[]),
        vec![-2]
    );
    let dyn_ax = t.input(INT32, &[]);
    assert_eq!(
        t.dims(
            "ConcatV2",
            &[("x", &[a, c]), ("concat_dim", &[dyn_ax])],
            &[]
        ),
        vec![U, U]
    );
    // Errors.
    let e3 = t.f(&[2, 3, 1]);
    has(
        &t.err("ConcatV2", &[("x", &[a, e3]), ("concat_dim", &[ax])], &[]),
        &["same rank", "x0 [2, 3]", "x1 [2, 3, 1]"],
    );
    let ax0 = t.scalar_i32(0);
    let m = t.err("ConcatV2", &[("x", &[a, c]), ("concat_dim", &[ax0])], &[]);
    has(
        &m,
        &[
            "x0 [2, 3] and x1 [2, 5] differ at dim 1 (3 vs 5)",
            "concat dim 0",
        ],
    );
    let ax2 = t.scalar_i32(2);
    has(
        &t.err("ConcatV2", &[("x", &[a, c]), ("concat_dim", &[ax2])], &[]),
        &["concat_dim 2 is out of range for rank 2"],
    );
    let two = t.ints(&[0, 1]);
    has(
        &t.err("ConcatV2", &[("x", &[a, c]), ("concat_dim", &[two])], &[]),
        &["'concat_dim'", "scalar"],
    );
}

#[test]
fn concat_d() {
    let mut t = T::new();
    let (a, c) = (t.f(&[2, 3]), t.f(&[4, 3]));
    let id = t
        .call("ConcatD", &[("x", &[a, c])], &[("concat_dim", i(0))])
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![6, 3])]);
    assert_eq!(t.b.graph().node(id).unwrap().attrs.get("N"), Some(&i(2)));
    let u = t.f(&[U, 3]);
    assert_eq!(
        t.dims("ConcatD", &[("x", &[a, u])], &[("concat_dim", i(0))]),
        vec![U, 3]
    );
    assert_eq!(
        t.dims("ConcatD", &[("x", &[c, u])], &[("concat_dim", i(-1))]),
        vec![4, 6]
    );
    has(
        &t.err("ConcatD", &[("x", &[a, c])], &[("concat_dim", i(1))]),
        &["differ at dim 0 (2 vs 4)"],
    );
    has(
        &t.err("ConcatD", &[("x", &[a, c])], &[("concat_dim", i(-3))]),
        &["out of range"],
    );
    let s0 = t.f(&[]);
    has(
        &t.err("ConcatD", &[("x", &[s0, s0])], &[("concat_dim", i(0))]),
        &["scalars"],
    );
}

#[test]
fn pack() {
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    assert_eq!(
        t.ok("Pack", &[("x", &[x, x, x])], &[]),
        (FLOAT, vec![3, 2, 3])
    );
    assert_eq!(
        t.dims("Pack", &[("x", &[x, x, x])], &[("axis", i(-1))]),
        vec![2, 3, 3]
    );
    assert_eq!(
        t.dims("Pack", &[("x", &[x, x])], &[("axis", i(1))]),
        vec![2, 2, 3]
    );
    let (u1, u2) = (t.f(&[U, 3]), t.f(&[2, U]));
    assert_eq!(t.dims("Pack", &[("x", &[u1, u2])], &[]), vec![2, 2, 3]);
    let r = t.f(&[-2]);
    assert_eq!(t.dims("Pack", &[("x", &[r, r])], &[]), vec![-2]);
    let y = t.f(&[2, 4]);
    has(
        &t.err("Pack", &[("x", &[x, y])], &[]),
        &["same shape", "x0 [2, 3] vs x1 [2, 4]"],
    );
    has(
        &t.err("Pack", &[("x", &[x, x])], &[("axis", i(3))]),
        &["'axis' 3 is out of range for rank 3"],
    );
}

#[test]
fn split_and_split_d() {
    let mut t = T::new();
    let x = t.f(&[2, 6]);
    let one = t.scalar_i32(1);
    let id = t
        .call(
            "Split",
            &[("split_dim", &[one]), ("x", &[x])],
            &[("num_split", i(3))],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, 2]); 3]);
    let id = t
        .call(
            "SplitD",
            &[("x", &[x])],
            &[("split_dim", i(-1)), ("num_split", i(2))],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, 3]); 2]);
    // Unknown dims and unknown split_dim.
    let xu = t.f(&[U, 6]);
    let id = t
        .call(
            "SplitD",
            &[("x", &[xu])],
            &[("split_dim", i(0)), ("num_split", i(2))],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![U, 6]); 2]);
    let dyn_dim = t.input(INT32, &[]);
    let id = t
        .call(
            "Split",
            &[("split_dim", &[dyn_dim]), ("x", &[x])],
            &[("num_split", i(2))],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![U, U]); 2]);
    let xr = t.f(&[-2]);
    let id = t
        .call(
            "Split",
            &[("split_dim", &[one]), ("x", &[xr])],
            &[("num_split", i(2))],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![-2]); 2]);
    // Errors.
    has(
        &t.err(
            "SplitD",
            &[("x", &[x])],
            &[("split_dim", i(1)), ("num_split", i(4))],
        ),
        &["dim 1 of x [2, 6] is 6", "num_split 4"],
    );
    has(
        &t.err(
            "Split",
            &[("split_dim", &[one]), ("x", &[x])],
            &[("num_split", i(5))],
        ),
        &["num_split 5"],
    );
    has(
        &t.err(
            "SplitD",
            &[("x", &[x])],
            &[("split_dim", i(2)), ("num_split", i(2))],
        ),
        &["split_dim 2 is out of range for rank 2"],
    );
    has(
        &t.err(
            "SplitD",
            &[("x", &[x])],
            &[("split_dim", i(0)), ("num_split", i(0))],
        ),
        &["'num_split' must be >= 1"],
    );
}

#[test]
fn split_v() {
    let mut t = T::new();
    let x = t.f(&[2, 10]);
    let sizes = t.ints(&[3, -1, 2]);
    let one = t.scalar_i32(1);
    let ins = |x, s| [("x", [x]), ("size_splits", [s]), ("split_dim", [one])];
    let run = |t: &mut T, x, s, n: i64| {
        let v = ins(x, s);
        let r: Vec<(&str, &[OutPort])> = v.iter().map(|(n, p)| (*n, p.as_slice())).collect();
        t.call("SplitV", &r, &[("num_split", i(n))])
    };
    let id = run(&mut t, x, sizes, 3).unwrap();
    assert_eq!(
        t.outs(id),
        vec![
            (FLOAT, vec![2, 3]),
            (FLOAT, vec![2, 5]),
            (FLOAT, vec![2, 2])
        ]
    );
    let xu = t.f(&[2, U]);
    let id = run(&mut t, xu, sizes, 3).unwrap();
    assert_eq!(
        t.outs(id),
        vec![
            (FLOAT, vec![2, 3]),
            (FLOAT, vec![2, U]),
            (FLOAT, vec![2, 2])
        ]
    );
    let dyn_sizes = t.input(INT32, &[3]);
    let id = run(&mut t, x, dyn_sizes, 3).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, U]); 3]);
    let bad = t.ints(&[3, 3, 3]);
    has(
        &run(&mut t, x, bad, 3).unwrap_err().to_string(),
        &["sums to 9", "is 10"],
    );
    let two = t.ints(&[-1, -1, 2]);
    has(
        &run(&mut t, x, two, 3).unwrap_err().to_string(),
        &["more than one -1"],
    );
    has(
        &run(&mut t, x, sizes, 2).unwrap_err().to_string(),
        &["'size_splits' has 3 values, num_split is 2"],
    );
    let big = t.ints(&[8, -1, 4]);
    has(
        &run(&mut t, x, big, 3).unwrap_err().to_string(),
        &["sums to 12, more than dim 1"],
    );
}

#[test]
fn identity_n() {
    let mut t = T::new();
    let (a, c) = (t.f(&[2, 3]), t.input(INT64, &[U]));
    let id = t.call("IdentityN", &[("x", &[a, c])], &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, 3]), (INT64, vec![U])]);
    let r = t.input(BOOL, &[-2]);
    let id = t.call("IdentityN", &[("x", &[r])], &[]).unwrap();
    assert_eq!(t.outs(id), vec![(BOOL, vec![-2])]);
    // A node whose output count differs from its input count.
    let d = TensorDesc::new(FLOAT, Shape::new(vec![2]));
    let e = infer_raw(
        "IdentityN",
        vec![Some(&d)],
        vec![0],
        vec![0, 0],
        &Default::default(),
    )
    .unwrap_err();
    has(&e.to_string(), &["1 inputs 'x' but 2 outputs 'y'"]);
}

#[test]
fn reduce_sum() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    let ax = t.ints(&[1]);
    assert_eq!(
        t.ok("ReduceSum", &[("x", &[x]), ("axes", &[ax])], &[]),
        (FLOAT, vec![2, 4])
    );
    assert_eq!(
        t.dims(
            "ReduceSum",
            &[("x", &[x]), ("axes", &[ax])],
            &[("keep_dims", b(true))]
        ),
        vec![2, 1, 4]
    );
    let ax2 = t.ints64(&[-1, 0, 2]);
    assert_eq!(
        t.dims("ReduceSum", &[("x", &[x]), ("axes", &[ax2])], &[]),
        vec![3]
    );
    let sc = t.scalar_i32(0);
    assert_eq!(
        t.dims("ReduceSum", &[("x", &[x]), ("axes", &[sc])], &[]),
        vec![3, 4]
    );
    let empty =
        t.b.create_const(Tensor::from_values::<i32>(&[], vec![0]).unwrap(), None)
            .unwrap();
    assert_eq!(
        t.dims("ReduceSum", &[("x", &[x]), ("axes", &[empty])], &[]),
        vec![2, 3, 4]
    );
    assert_eq!(
        t.dims(
            "ReduceSum",
            &[("x", &[x]), ("axes", &[empty])],
            &[("noop_with_empty_axes", b(false))]
        ),
        Vec::<i64>::new()
    );
    // Unknown dims / unknown axes.
    let xu = t.f(&[U, 1, 4]);
    assert_eq!(
        t.dims("ReduceSum", &[("x", &[xu]), ("axes", &[ax])], &[]),
        vec![U, 4]
    );
    let dyn_ax = t.input(INT32, &[1]);
    assert_eq!(
        t.dims(
            "ReduceSum",
            &[("x", &[xu]), ("axes", &[dyn_ax])],
            &[("keep_dims", b(true))]
        ),
        vec![U, 1, U]
    );
    assert_eq!(
        t.dims("ReduceSum", &[("x", &[xu]), ("axes", &[dyn_ax])], &[]),
        vec![-2]
    );
    let xr = t.f(&[-2]);
    assert_eq!(
        t.dims("ReduceSum", &[("x", &[xr]), ("axes", &[ax])], &[]),
        vec![-2]
    );
    // Errors.
    let bad = t.ints(&[3]);
    has(
        &t.err("ReduceSum", &[("x", &[x]), ("axes", &[bad])], &[]),
        &["'axes' value 3 is out of range for rank 3"],
    );
    let ax2d = t.input(INT32, &[1, 1]);
    has(
        &t.err("ReduceSum", &[("x", &[x]), ("axes", &[ax2d])], &[]),
        &["'axes' must be 1-D"],
    );
}

#[test]
fn reduce_sum_d() {
    let mut t = T::new();
    let x = t.f(&[2, 3, 4]);
    assert_eq!(
        t.ok("ReduceSumD", &[("x", &[x])], &[("axes", li(&[0, 2]))]),
        (FLOAT, vec![3])
    );
    assert_eq!(
        t.dims(
            "ReduceSumD",
            &[("x", &[x])],
            &[("axes", li(&[0, 2])), ("keep_dims", b(true))]
        ),
        vec![1, 3, 1]
    );
    assert_eq!(
        t.dims("ReduceSumD", &[("x", &[x])], &[("axes", li(&[]))]),
        Vec::<i64>::new()
    );
    let xu = t.f(&[U, U]);
    assert_eq!(
        t.dims("ReduceSumD", &[("x", &[xu])], &[("axes", li(&[-1]))]),
        vec![U]
    );
    has(
        &t.err("ReduceSumD", &[("x", &[x])], &[("axes", li(&[-4]))]),
        &["'axes' value -4 is out of range"],
    );
}

#[test]
fn fill() {
    let mut t = T::new();
    let d = t.ints(&[2, 3]);
    let v = t.scalar_f(1.0);
    assert_eq!(
        t.ok("Fill", &[("dims", &[d]), ("value", &[v])], &[]),
        (FLOAT, vec![2, 3])
    );
    let vi = t.b.create_const(Tensor::scalar(7i64), None).unwrap();
    let d64 = t.ints64(&[4]);
    assert_eq!(
        t.ok("Fill", &[("dims", &[d64]), ("value", &[vi])], &[]),
        (INT64, vec![4])
    );
    let dd = t.input(INT32, &[3]);
    assert_eq!(
        t.dims("Fill", &[("dims", &[dd]), ("value", &[v])], &[]),
        vec![U, U, U]
    );
    let du = t.input(INT32, &[U]);
    assert_eq!(
        t.dims("Fill", &[("dims", &[du]), ("value", &[v])], &[]),
        vec![-2]
    );
    let neg = t.ints(&[2, -1]);
    has(
        &t.err("Fill", &[("dims", &[neg]), ("value", &[v])], &[]),
        &["negative dim -1"],
    );
    let v2 = t.f(&[2]);
    has(
        &t.err("Fill", &[("dims", &[d]), ("value", &[v2])], &[]),
        &["'value'", "scalar"],
    );
}

#[test]
fn shape_op() {
    let mut t = T::new();
    let x = t.f(&[2, U, 3]);
    assert_eq!(t.ok("Shape", &[("x", &[x])], &[]), (INT32, vec![3]));
    assert_eq!(
        t.ok("Shape", &[("x", &[x])], &[("dtype", i(INT64 as i64))]),
        (INT64, vec![3])
    );
    let s = t.f(&[]);
    assert_eq!(t.ok("Shape", &[("x", &[s])], &[]), (INT32, vec![0]));
    let r = t.f(&[-2]);
    assert_eq!(t.ok("Shape", &[("x", &[r])], &[]), (INT32, vec![U]));
    has(
        &t.err("Shape", &[("x", &[x])], &[("dtype", i(FLOAT as i64))]),
        &["'dtype'", "DT_FLOAT"],
    );
}

#[test]
fn broadcast_to() {
    let mut t = T::new();
    let x = t.f(&[3, 1]);
    let s = t.ints(&[2, 3, 4]);
    assert_eq!(
        t.ok("BroadcastTo", &[("x", &[x]), ("shape", &[s])], &[]),
        (FLOAT, vec![2, 3, 4])
    );
    let xu = t.f(&[U, 1]);
    assert_eq!(
        t.dims("BroadcastTo", &[("x", &[xu]), ("shape", &[s])], &[]),
        vec![2, 3, 4]
    );
    let ds = t.input(INT64, &[3]);
    assert_eq!(
        t.dims("BroadcastTo", &[("x", &[x]), ("shape", &[ds])], &[]),
        vec![U, 3, U]
    );
    let du = t.input(INT64, &[U]);
    assert_eq!(
        t.dims("BroadcastTo", &[("x", &[x]), ("shape", &[du])], &[]),
        vec![-2]
    );
    let bad = t.f(&[3, 2]);
    has(
        &t.err("BroadcastTo", &[("x", &[bad]), ("shape", &[s])], &[]),
        &["x [3, 2] cannot be broadcast to [2, 3, 4]"],
    );
    let big = t.f(&[1, 1, 1, 1]);
    has(
        &t.err("BroadcastTo", &[("x", &[big]), ("shape", &[s])], &[]),
        &["rank 4"],
    );
}

#[test]
fn tile() {
    let mut t = T::new();
    let x = t.f(&[2, 3]);
    let m = t.ints(&[2, 1]);
    assert_eq!(
        t.ok("Tile", &[("x", &[x]), ("multiples", &[m])], &[]),
        (FLOAT, vec![4, 3])
    );
    let m3 = t.ints64(&[2, 1, 3]);
    assert_eq!(
        t.dims("Tile", &[("x", &[x]), ("multiples", &[m3])], &[]),
        vec![2, 2, 9]
    );
    let xu = t.f(&[U, 3]);
    assert_eq!(
        t.dims("Tile", &[("x", &[xu]), ("multiples", &[m])], &[]),
        vec![U, 3]
    );
    let m0 = t.ints(&[0, 2]);
    assert_eq!(
        t.dims("Tile", &[("x", &[xu]), ("multiples", &[m0])], &[]),
        vec![0, 6]
    );
    let dm = t.input(INT32, &[2]);
    assert_eq!(
        t.dims("Tile", &[("x", &[x]), ("multiples", &[dm])], &[]),
        vec![U, U]
    );
    let x3 = t.f(&[1, 2, 3]);
    has(
        &t.err("Tile", &[("x", &[x3]), ("multiples", &[m])], &[]),
        &["2 values, fewer than the rank 3"],
    );
    let neg = t.ints(&[1, -2]);
    has(
        &t.err("Tile", &[("x", &[x]), ("multiples", &[neg])], &[]),
        &["negative value -2"],
    );
}

#[test]
fn top_k_v2() {
    let mut t = T::new();
    let x = t.f(&[4, 10]);
    let k = t.scalar_i32(3);
    let id = t.call("TopKV2", &[("x", &[x]), ("k", &[k])], &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![4, 3]), (INT32, vec![4, 3])]);
    let id = t
        .call("TopKV2", &[("x", &[x]), ("k", &[k])], &[("dim", i(0))])
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![3, 10]), (INT32, vec![3, 10])]);
    let id = t
        .call(
            "TopKV2",
            &[("x", &[x]), ("k", &[k])],
            &[("indices_dtype", i(INT64 as i64))],
        )
        .unwrap();
    assert_eq!(t.outs(id)[1], (INT64, vec![4, 3]));
    let dk = t.input(INT32, &[]);
    let id = t.call("TopKV2", &[("x", &[x]), ("k", &[dk])], &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![4, U]), (INT32, vec![4, U])]);
    let xu = t.f(&[U, U]);
    let id = t.call("TopKV2", &[("x", &[xu]), ("k", &[k])], &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![U, 3]), (INT32, vec![U, 3])]);
    let k20 = t.scalar_i32(20);
    has(
        &t.err("TopKV2", &[("x", &[x]), ("k", &[k20])], &[]),
        &["'k' is 20, more than dim 1 of x [4, 10] (10)"],
    );
    let kn = t.scalar_i32(-1);
    has(
        &t.err("TopKV2", &[("x", &[x]), ("k", &[kn])], &[]),
        &["'k' must be >= 0"],
    );
    has(
        &t.err("TopKV2", &[("x", &[x]), ("k", &[k])], &[("dim", i(2))]),
        &["'dim' 2 is out of range"],
    );
    let s = t.f(&[]);
    has(
        &t.err("TopKV2", &[("x", &[s]), ("k", &[k])], &[]),
        &["rank >= 1"],
    );
}

#[test]
fn scatter_elements() {
    let mut t = T::new();
    let data = t.f(&[4, 5]);
    let idx = t.input(INT32, &[2, 5]);
    let upd = t.f(&[2, 5]);
    let ins = |d, i, u| [("data", [d]), ("indices", [i]), ("updates", [u])];
    let run = |t: &mut T, d, ii, u, attrs: Attrs| {
        let v = ins(d, ii, u);
        let r: Vec<(&str, &[OutPort])> = v.iter().map(|(n, p)| (*n, p.as_slice())).collect();
        t.call("ScatterElements", &r, attrs)
    };
    let id = run(
        &mut t,
        data,
        idx,
        upd,
        &[("axis", i(0)), ("reduction", s("add"))],
    )
    .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![4, 5])]);
    let du = t.f(&[U, 5]);
    let iu = t.input(INT64, &[U, 5]);
    let id = run(&mut t, du, iu, upd, &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![U, 5])]);
    let i3 = t.input(INT32, &[2, 5, 1]);
    has(
        &run(&mut t, data, i3, upd, &[]).unwrap_err().to_string(),
        &["'indices' [2, 5, 1] must have the rank of data [4, 5]"],
    );
    let u_bad = t.f(&[3, 5]);
    has(
        &run(&mut t, data, idx, u_bad, &[]).unwrap_err().to_string(),
        &["indices [2, 5] and updates [3, 5]"],
    );
    has(
        &run(&mut t, data, idx, upd, &[("reduction", s("foo"))])
            .unwrap_err()
            .to_string(),
        &["'reduction'", "\"foo\""],
    );
    has(
        &run(&mut t, data, idx, upd, &[("axis", i(2))])
            .unwrap_err()
            .to_string(),
        &["'axis' 2 is out of range"],
    );
}

#[test]
fn gather_elements() {
    let mut t = T::new();
    let x = t.f(&[4, 5]);
    let idx = t.input(INT32, &[4, 2]);
    assert_eq!(
        t.ok(
            "GatherElements",
            &[("x", &[x]), ("index", &[idx])],
            &[("dim", i(1))]
        ),
        (FLOAT, vec![4, 2])
    );
    let iu = t.input(INT64, &[U, 7]);
    assert_eq!(
        t.dims(
            "GatherElements",
            &[("x", &[x]), ("index", &[iu])],
            &[("dim", i(-1))]
        ),
        vec![U, 7]
    );
    let ir = t.input(INT64, &[-2]);
    assert_eq!(
        t.dims("GatherElements", &[("x", &[x]), ("index", &[ir])], &[]),
        vec![U, U]
    );
    let i3 = t.input(INT32, &[4, 2, 1]);
    has(
        &t.err("GatherElements", &[("x", &[x]), ("index", &[i3])], &[]),
        &["same rank (2 vs 3)"],
    );
    let i_big = t.input(INT32, &[6, 5]);
    has(
        &t.err(
            "GatherElements",
            &[("x", &[x]), ("index", &[i_big])],
            &[("dim", i(1))],
        ),
        &["larger than x [4, 5] at dim 0"],
    );
    has(
        &t.err(
            "GatherElements",
            &[("x", &[x]), ("index", &[idx])],
            &[("dim", i(2))],
        ),
        &["'dim' 2 is out of range"],
    );
}

// ------------------------------------------------------------------------------------- conv

fn conv_attrs<'a>(fmt: &'a str, strides: &[i64], pads: &[i64]) -> Vec<(&'a str, AttrValue)> {
    vec![
        ("data_format", s(fmt)),
        ("strides", li(strides)),
        ("pads", li(pads)),
    ]
}

#[test]
fn conv2d_known() {
    let mut t = T::new();
    // NCHW x, NCHW filter [out, in, kh, kw].
    let x = t.f(&[1, 3, 32, 32]);
    let w = t.input_fmt(FLOAT, Format::NCHW, &[16, 3, 3, 3]);
    let a = conv_attrs("NCHW", &[1, 1, 1, 1], &[1, 1, 1, 1]);
    assert_eq!(
        t.ok("Conv2D", &[("x", &[x]), ("filter", &[w])], &a),
        (FLOAT, vec![1, 16, 32, 32])
    );
    // Stride 2, no padding: (32 - 3) / 2 + 1 = 15.
    let a = conv_attrs("NCHW", &[1, 1, 2, 2], &[0, 0, 0, 0]);
    assert_eq!(
        t.dims("Conv2D", &[("x", &[x]), ("filter", &[w])], &a),
        vec![1, 16, 15, 15]
    );
    // Dilation 2: effective kernel 5, (32 + 2 - 5) / 1 + 1 = 30; asymmetric pads on W.
    let mut a = conv_attrs("NCHW", &[1, 1, 1, 1], &[1, 1, 0, 2]);
    a.push(("dilations", li(&[1, 1, 2, 2])));
    assert_eq!(
        t.dims("Conv2D", &[("x", &[x]), ("filter", &[w])], &a),
        vec![1, 16, 30, 30]
    );
    // NHWC x with an HWCN filter [kh, kw, in, out], and a bias.
    let xh = t.input(FLOAT16, &[2, 28, 28, 8]);
    let wh = t.input_fmt(FLOAT16, Format::HWCN, &[5, 5, 8, 4]);
    let bias = t.input(FLOAT16, &[4]);
    let a = conv_attrs("NHWC", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    assert_eq!(
        t.ok(
            "Conv2D",
            &[("x", &[xh]), ("filter", &[wh]), ("bias", &[bias])],
            &a
        ),
        (FLOAT16, vec![2, 24, 24, 4])
    );
    // NHWC filter [out, kh, kw, in], NHWC strides.
    let wn = t.input_fmt(FLOAT16, Format::NHWC, &[6, 3, 3, 8]);
    let a = conv_attrs("NHWC", &[1, 2, 2, 1], &[1, 1, 1, 1]);
    assert_eq!(
        t.dims("Conv2D", &[("x", &[xh]), ("filter", &[wn])], &a),
        vec![2, 14, 14, 6]
    );
    // Groups: 8 input channels, 4 groups, 2 per group; an ND (constant-like) filter is NCHW.
    let xg = t.f(&[1, 8, 10, 10]);
    let wg = t.f(&[12, 2, 3, 3]);
    let mut a = conv_attrs("NCHW", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    a.push(("groups", i(4)));
    assert_eq!(
        t.dims("Conv2D", &[("x", &[xg]), ("filter", &[wg])], &a),
        vec![1, 12, 8, 8]
    );
    // int8 convolution accumulates in int32.
    let x8 = t.input(INT8, &[1, 3, 8, 8]);
    let w8 = t.input(INT8, &[4, 3, 1, 1]);
    let a = conv_attrs("NCHW", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    assert_eq!(
        t.ok("Conv2D", &[("x", &[x8]), ("filter", &[w8])], &a),
        (INT32, vec![1, 4, 8, 8])
    );
}

#[test]
fn conv2d_unknown() {
    let mut t = T::new();
    let x = t.f(&[U, 3, U, 32]);
    let w = t.f(&[16, 3, 3, 3]);
    let a = conv_attrs("NCHW", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    assert_eq!(
        t.dims("Conv2D", &[("x", &[x]), ("filter", &[w])], &a),
        vec![U, 16, U, 30]
    );
    let xr = t.f(&[-2]);
    assert_eq!(
        t.dims("Conv2D", &[("x", &[xr]), ("filter", &[w])], &a),
        vec![U, 16, U, U]
    );
    let x2 = t.f(&[1, 3, 32, 32]);
    let wu = t.f(&[U, U, 3, U]);
    assert_eq!(
        t.dims("Conv2D", &[("x", &[x2]), ("filter", &[wu])], &a),
        vec![1, U, 30, U]
    );
}

#[test]
fn conv2d_errors() {
    let mut t = T::new();
    let x = t.f(&[1, 3, 32, 32]);
    let w = t.f(&[16, 4, 3, 3]);
    let a = conv_attrs("NCHW", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    let m = t.err("Conv2D", &[("x", &[x]), ("filter", &[w])], &a);
    has(
        &m,
        &[
            "Conv2D 'Conv2D_0'",
            "channel mismatch",
            "3 input channels",
            "4 per group",
        ],
    );
    // Output channels not divisible by groups.
    let xg = t.f(&[1, 4, 8, 8]);
    let wg = t.f(&[6, 1, 3, 3]);
    let mut ag = a.clone();
    ag.push(("groups", i(4)));
    has(
        &t.err("Conv2D", &[("x", &[xg]), ("filter", &[wg])], &ag),
        &["6 output channels", "groups 4"],
    );
    let w_ok = t.f(&[16, 3, 3, 3]);
    has(
        &t.err(
            "Conv2D",
            &[("x", &[x]), ("filter", &[w_ok])],
            &conv_attrs("NCHW", &[1, 1, 1], &[0, 0, 0, 0]),
        ),
        &["'strides' must have 4 values"],
    );
    has(
        &t.err(
            "Conv2D",
            &[("x", &[x]), ("filter", &[w_ok])],
            &conv_attrs("NCHW", &[1, 1, 0, 1], &[0, 0, 0, 0]),
        ),
        &["'strides'", ">= 1"],
    );
    has(
        &t.err(
            "Conv2D",
            &[("x", &[x]), ("filter", &[w_ok])],
            &conv_attrs("NCWH", &[1, 1, 1, 1], &[0, 0, 0, 0]),
        ),
        &["'data_format'", "NCWH"],
    );
    let small = t.f(&[1, 3, 2, 2]);
    has(
        &t.err("Conv2D", &[("x", &[small]), ("filter", &[w_ok])], &a),
        &["output height would be empty"],
    );
    let bias = t.f(&[8]);
    has(
        &t.err(
            "Conv2D",
            &[("x", &[x]), ("filter", &[w_ok]), ("bias", &[bias])],
            &a,
        ),
        &["'bias' [8]", "16 output channels"],
    );
    let x3 = t.f(&[3, 32, 32]);
    has(
        &t.err("Conv2D", &[("x", &[x3]), ("filter", &[w_ok])], &a),
        &["'x' must be 4-D"],
    );
    let w_fz = t.input_fmt(FLOAT, Format::FRACTAL_Z, &[16, 3, 3, 3]);
    has(
        &t.err("Conv2D", &[("x", &[x]), ("filter", &[w_fz])], &a),
        &["input filter format should be NCHW, NHWC or HWCN. actual is: FRACTAL_Z"],
    );
    let w0 = t.f(&[16, 3, 0, 3]);
    has(
        &t.err("Conv2D", &[("x", &[x]), ("filter", &[w0])], &a),
        &["kernel height 0"],
    );
    // Huge attribute values give an error, not an arithmetic overflow.
    let mut big = conv_attrs("NCHW", &[1, 1, 1, 1], &[0, 0, 0, 0]);
    big.push(("dilations", li(&[1, 1, i64::MAX, 1])));
    has(
        &t.err("Conv2D", &[("x", &[x]), ("filter", &[w_ok])], &big),
        &["output height would be empty"],
    );
    let huge_pads = conv_attrs("NCHW", &[1, 1, 1, 1], &[i64::MAX, i64::MAX, 0, 0]);
    has(
        &t.err("Conv2D", &[("x", &[x]), ("filter", &[w_ok])], &huge_pads),
        &["output height", "too large"],
    );
}

#[test]
fn batch_norm() {
    let mut t = T::new();
    let x = t.f(&[2, 4, 4, 8]);
    let (sc, of) = (t.f(&[8]), t.f(&[8]));
    let id = t
        .call(
            "BatchNorm",
            &[("x", &[x]), ("scale", &[sc]), ("offset", &[of])],
            &[],
        )
        .unwrap();
    assert_eq!(
        t.outs(id),
        vec![
            (FLOAT, vec![2, 4, 4, 8]),
            (FLOAT, vec![8]),
            (FLOAT, vec![8]),
            (FLOAT, vec![8]),
            (FLOAT, vec![8]),
            (FLOAT, vec![1])
        ]
    );
    // NCHW, fp16 x, inference with mean/variance.
    let xh = t.input(FLOAT16, &[2, 3, 5, 5]);
    let (s3, o3, m3, v3) = (t.f(&[3]), t.f(&[3]), t.f(&[3]), t.f(&[3]));
    let id = t
        .call(
            "BatchNorm",
            &[
                ("x", &[xh]),
                ("scale", &[s3]),
                ("offset", &[o3]),
                ("mean", &[m3]),
                ("variance", &[v3]),
            ],
            &[("data_format", s("NCHW")), ("is_training", b(false))],
        )
        .unwrap();
    assert_eq!(t.outs(id)[0], (FLOAT16, vec![2, 3, 5, 5]));
    assert_eq!(t.outs(id)[1], (FLOAT, vec![3]));
    // Unknown channel dim, known from scale.
    let xu = t.f(&[U, U, U, U]);
    let id = t
        .call(
            "BatchNorm",
            &[("x", &[xu]), ("scale", &[sc]), ("offset", &[of])],
            &[],
        )
        .unwrap();
    assert_eq!(t.outs(id)[0], (FLOAT, vec![U, U, U, U]));
    assert_eq!(t.outs(id)[1], (FLOAT, vec![8]));
    let xr = t.f(&[-2]);
    let su = t.f(&[U]);
    let id = t
        .call(
            "BatchNorm",
            &[("x", &[xr]), ("scale", &[su]), ("offset", &[su])],
            &[],
        )
        .unwrap();
    assert_eq!(t.outs(id)[0], (FLOAT, vec![-2]));
    assert_eq!(t.outs(id)[2], (FLOAT, vec![U]));
    // Errors.
    let s7 = t.f(&[7]);
    let m = t.err(
        "BatchNorm",
        &[("x", &[x]), ("scale", &[s7]), ("offset", &[of])],
        &[],
    );
    has(&m, &["'scale' has 7 values", "8 channels"]);
    let m = t.err(
        "BatchNorm",
        &[("x", &[x]), ("scale", &[sc]), ("offset", &[s7])],
        &[],
    );
    has(&m, &["'offset' has 7 values"]);
    let x3 = t.f(&[2, 4, 8]);
    has(
        &t.err(
            "BatchNorm",
            &[("x", &[x3]), ("scale", &[sc]), ("offset", &[of])],
            &[],
        ),
        &["4-D or 5-D"],
    );
    has(
        &t.err(
            "BatchNorm",
            &[("x", &[x]), ("scale", &[sc]), ("offset", &[of])],
            &[("data_format", s("HWCN"))],
        ),
        &["'data_format'", "HWCN"],
    );
}

// ------------------------------------------------------------------------------ control flow

#[test]
fn if_outputs_are_unknown() {
    let mut t = T::new();
    let c = t.input(BOOL, &[]);
    let (a, d) = (t.f(&[2, 3]), t.input(INT32, &[U]));
    let id = t
        .call_full(
            "If",
            &[("cond", &[c]), ("input", &[a, d])],
            &[],
            &[("output", 3)],
            vec![vec![Graph::new("then")], vec![Graph::new("else")]],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(UNDEFINED, vec![-2]); 3]);
}

#[test]
fn case_outputs_are_unknown_and_index_is_scalar() {
    let mut t = T::new();
    let k = t.input(INT32, &[]);
    let a = t.f(&[2]);
    let id = t
        .call_full(
            "Case",
            &[("branch_index", &[k]), ("input", &[a])],
            &[],
            &[("output", 2)],
            vec![vec![Graph::new("b0"), Graph::new("b1")]],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(UNDEFINED, vec![-2]); 2]);
    let ku = t.input(INT32, &[U]);
    let id = t
        .call_full(
            "Case",
            &[("branch_index", &[ku]), ("input", &[a])],
            &[],
            &[("output", 1)],
            vec![vec![Graph::new("b0")]],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(UNDEFINED, vec![-2])]);
    let k2 = t.input(INT32, &[2]);
    let e = t
        .call_full(
            "Case",
            &[("branch_index", &[k2]), ("input", &[a])],
            &[],
            &[("output", 1)],
            vec![vec![Graph::new("b0")]],
        )
        .unwrap_err();
    has(&e.to_string(), &["'branch_index'", "scalar", "[2]"]);
}

#[test]
fn while_outputs_are_its_inputs() {
    let mut t = T::new();
    let (a, d) = (t.f(&[2, 3]), t.input(INT32, &[U]));
    let r = t.input(BOOL, &[-2]);
    let sub = || vec![vec![Graph::new("cond")], vec![Graph::new("body")]];
    let id = t
        .call_full(
            "While",
            &[("input", &[a, d, r])],
            &[],
            &[("output", 3)],
            sub(),
        )
        .unwrap();
    assert_eq!(
        t.outs(id),
        vec![(FLOAT, vec![2, 3]), (INT32, vec![U]), (BOOL, vec![-2])]
    );
    let e = t
        .call_full("While", &[("input", &[a, d])], &[], &[("output", 3)], sub())
        .unwrap_err();
    assert!(matches!(e, Error::ShapeInference(_)));
    has(&e.to_string(), &["While 'While_", "2 inputs, 3 outputs"]);
}
