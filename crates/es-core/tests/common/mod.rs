//! The test harness shared by the inference-rule tests (`infer/`) and the other tests that call
//! operators: a builder over the built-in library, input/constant makers, and op calls that
//! return the inferred descriptions or the error text.

#![allow(dead_code)] // each test file uses part of it

use es_core::attr::AttrValue;
use es_core::builder::OpArgs;
use es_core::ops::{IoKind, OpProto, OpRegistry};
use es_core::{
    DataType, Error, Format, Graph, GraphBuilder, NodeId, OutPort, Shape, Tensor, TensorDesc,
};
use std::sync::{Arc, OnceLock};

use DataType::FLOAT;

pub const U: i64 = -1;
/// The built-in library.
pub fn registry() -> Arc<OpRegistry> {
    static REG: OnceLock<Arc<OpRegistry>> = OnceLock::new();
    REG.get_or_init(|| Arc::new(es_core::ops::builtin_registry().unwrap()))
        .clone()
}

pub fn i(v: i64) -> AttrValue {
    AttrValue::Int(v)
}
pub fn b(v: bool) -> AttrValue {
    AttrValue::Bool(v)
}
pub fn li(v: &[i64]) -> AttrValue {
    AttrValue::ListInt(v.to_vec())
}
pub fn f(v: f32) -> AttrValue {
    AttrValue::Float(v)
}
pub fn s(v: &str) -> AttrValue {
    AttrValue::String(v.to_string())
}
pub fn ty(v: DataType) -> AttrValue {
    AttrValue::Type(v)
}

pub type Ins<'a> = &'a [(&'a str, &'a [OutPort])];
pub type Attrs<'a> = &'a [(&'a str, AttrValue)];
/// One input of an op call made by the `*_in` calls: a fresh graph input (FLOAT, FLOAT in
/// NCHW, of a dtype, or of a dtype and format) of the given dims, a 1-D int32 / int64 constant,
/// or a port made before.
#[derive(Clone, Copy)]
pub enum In<'a> {
    F(&'a [i64]),
    Nchw(&'a [i64]),
    Typed(DataType, &'a [i64]),
    Fmt(DataType, Format, &'a [i64]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    Port(OutPort),
}
#[allow(unused_imports)] // each test file uses part of it
pub use In::{Fmt, Nchw, Port, Typed, F, I32, I64};
/// An output's expected dtype and dims, for the `ok_each*` tables.
pub type Want<'a> = (DataType, &'a [i64]);
/// Inputs by name, for the `*_in` calls.
pub type InSpec<'a, 'b> = &'b [(&'b str, In<'a>)];

/// The cases of a `*_each*` table, one a line: `inputs, attributes => expected;` (each becomes
/// the tuple `(inputs, attributes, expected)`).
#[allow(unused_macros)] // each test file uses part of it
macro_rules! rows {
    ($($ins:expr, $attrs:expr => $want:expr);+ $(;)?) => {
        &[$(($ins, $attrs, $want)),+]
    };
}
#[allow(unused_imports)] // each test file uses part of it
pub(crate) use rows;

/// The inputs x1 and x2 of a binary operator, for the `*_in` calls.
pub fn x12<'a>(x1: In<'a>, x2: In<'a>) -> [(&'static str, In<'a>); 2] {
    [("x1", x1), ("x2", x2)]
}

/// A builder with helpers to make inputs and call operators by input name.
pub struct T {
    pub b: GraphBuilder,
    next: i64,
}

impl T {
    pub fn new() -> Self {
        T {
            b: GraphBuilder::with_registry("g", registry()),
            next: 0,
        }
    }
    /// The prototype of `ty` (panics when the library has none).
    pub fn proto(&self, ty: &str) -> Arc<OpProto> {
        self.b.proto(ty).unwrap_or_else(|e| panic!("{ty}: {e}"))
    }
    pub fn input_fmt(&mut self, dt: DataType, fmt: Format, dims: &[i64]) -> OutPort {
        let k = self.next;
        self.next += 1;
        self.b
            .create_input(k, None, "Data", dt, fmt, Shape::from_slice(dims))
            .unwrap()
    }
    pub fn input(&mut self, dt: DataType, dims: &[i64]) -> OutPort {
        self.input_fmt(dt, Format::ND, dims)
    }
    pub fn f(&mut self, dims: &[i64]) -> OutPort {
        self.input(FLOAT, dims)
    }
    pub fn nchw(&mut self, dims: &[i64]) -> OutPort {
        self.input_fmt(FLOAT, Format::NCHW, dims)
    }
    /// A constant of the given value.
    pub fn konst(&mut self, t: Tensor) -> OutPort {
        self.b.create_const(t, None).unwrap()
    }
    /// A 1-D int32 constant.
    pub fn ints(&mut self, v: &[i32]) -> OutPort {
        self.ints_shaped(v, &[v.len() as i64])
    }
    /// An int32 constant of the given shape.
    pub fn ints_shaped(&mut self, v: &[i32], shape: &[i64]) -> OutPort {
        self.konst(Tensor::from_values(v, shape.to_vec()).unwrap())
    }
    pub fn ints64(&mut self, v: &[i64]) -> OutPort {
        self.konst(Tensor::from_values(v, vec![v.len() as i64]).unwrap())
    }
    pub fn floats(&mut self, v: &[f32]) -> OutPort {
        self.konst(Tensor::from_values(v, vec![v.len() as i64]).unwrap())
    }
    pub fn scalar_i32(&mut self, v: i32) -> OutPort {
        self.konst(Tensor::scalar(v))
    }
    pub fn scalar_i64(&mut self, v: i64) -> OutPort {
        self.konst(Tensor::scalar(v))
    }
    pub fn scalar_f(&mut self, v: f32) -> OutPort {
        self.konst(Tensor::scalar(v))
    }
    pub fn call_full(
        &mut self,
        ty: &str,
        ins: Ins,
        attrs: Attrs,
        counts: &[(&str, usize)],
        subgraphs: Vec<Vec<Graph>>,
    ) -> es_core::Result<NodeId> {
        let p = self.proto(ty);
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
    pub fn call(&mut self, ty: &str, ins: Ins, attrs: Attrs) -> es_core::Result<NodeId> {
        self.call_full(ty, ins, attrs, &[], Vec::new())
    }
    pub fn out(&self, id: NodeId, k: usize) -> TensorDesc {
        self.b.graph().node(id).unwrap().outputs[k]
            .desc
            .clone()
            .into_inner()
    }
    pub fn outs(&self, id: NodeId) -> Vec<(DataType, Vec<i64>)> {
        self.b
            .graph()
            .node(id)
            .unwrap()
            .outputs
            .iter()
            .map(|o| (o.desc.dtype, o.desc.shape.to_vec()))
            .collect()
    }
    /// Calls an op that must succeed; returns every output's dtype and dims.
    pub fn all(&mut self, ty: &str, ins: Ins, attrs: Attrs) -> Vec<(DataType, Vec<i64>)> {
        let id = self
            .call(ty, ins, attrs)
            .unwrap_or_else(|e| panic!("{ty}: unexpected error: {e}"));
        self.outs(id)
    }
    /// Calls an op that must succeed; returns output 0's dtype and dims.
    pub fn ok(&mut self, ty: &str, ins: Ins, attrs: Attrs) -> (DataType, Vec<i64>) {
        let id = self
            .call(ty, ins, attrs)
            .unwrap_or_else(|e| panic!("{ty}: unexpected error: {e}"));
        let d = self.out(id, 0);
        (d.dtype, d.shape.to_vec())
    }
    /// Output 0's dims of an op that must succeed.
    pub fn dims(&mut self, ty: &str, ins: Ins, attrs: Attrs) -> Vec<i64> {
        self.ok(ty, ins, attrs).1
    }
    /// [`T::dims`] for each case: (inputs, attributes, expected dims); a failure names the case.
    pub fn dims_each(&mut self, ty: &str, cases: &[(Ins, Attrs, &[i64])]) {
        for (k, &(ins, attrs, want)) in cases.iter().enumerate() {
            assert_eq!(self.dims(ty, ins, attrs), want, "{ty}: case {k}");
        }
    }
    /// [`T::dims_in`] for each case: (inputs, attributes, expected dims).
    pub fn dims_each_in(&mut self, ty: &str, cases: &[(InSpec, Attrs, &[i64])]) {
        for (k, &(spec, attrs, want)) in cases.iter().enumerate() {
            assert_eq!(self.dims_in(ty, spec, attrs), want, "{ty}: case {k}");
        }
    }
    /// [`T::ok`] for each case: (inputs, attributes, expected dtype and dims).
    pub fn ok_each(&mut self, ty: &str, cases: &[(Ins, Attrs, Want)]) {
        for (k, &(ins, attrs, want)) in cases.iter().enumerate() {
            let (dt, dims) = self.ok(ty, ins, attrs);
            assert_eq!((dt, &dims[..]), want, "{ty}: case {k}");
        }
    }
    /// [`T::ok_in`] for each case: (inputs, attributes, expected dtype and dims).
    pub fn ok_each_in(&mut self, ty: &str, cases: &[(InSpec, Attrs, Want)]) {
        for (k, &(spec, attrs, want)) in cases.iter().enumerate() {
            let (dt, dims) = self.ok_in(ty, spec, attrs);
            assert_eq!((dt, &dims[..]), want, "{ty}: case {k}");
        }
    }
    /// Calls an op that must fail in inference with a message containing each of `parts`.
    pub fn rejects(&mut self, ty: &str, ins: Ins, attrs: Attrs, parts: &[&str]) {
        has(&self.err(ty, ins, attrs), parts);
    }
    /// Calls an op that must fail (with any error, see [`T::fail`]) with a message containing
    /// each of `parts`.
    pub fn fails(&mut self, ty: &str, ins: Ins, attrs: Attrs, parts: &[&str]) {
        has(&self.fail(ty, ins, attrs).to_string(), parts);
    }
    /// [`T::fails`] on inputs given by [`In`].
    pub fn fails_in(&mut self, ty: &str, spec: InSpec, attrs: Attrs, parts: &[&str]) {
        let e = self.with_inputs(spec, |t, ins| t.fail(ty, ins, attrs));
        has(&e.to_string(), parts);
    }
    /// [`T::rejects`] for each case: (inputs, attributes, parts of the expected message).
    pub fn rejects_each(&mut self, ty: &str, cases: &[(Ins, Attrs, &[&str])]) {
        for &(ins, attrs, parts) in cases {
            self.rejects(ty, ins, attrs, parts);
        }
    }
    /// [`T::rejects_in`] for each case: (inputs, attributes, parts of the expected message).
    pub fn rejects_each_in(&mut self, ty: &str, cases: &[(InSpec, Attrs, &[&str])]) {
        for &(spec, attrs, parts) in cases {
            self.rejects_in(ty, spec, attrs, parts);
        }
    }
    /// Runs `f` with the inputs `spec` describes made (see [`In`]).
    fn with_inputs<R>(&mut self, spec: InSpec, f: impl FnOnce(&mut Self, Ins) -> R) -> R {
        let ports: Vec<[OutPort; 1]> = spec.iter().map(|(_, d)| [self.make(d)]).collect();
        let ins: Vec<(&str, &[OutPort])> = spec
            .iter()
            .zip(&ports)
            .map(|((n, _), p)| (*n, &p[..]))
            .collect();
        f(self, &ins)
    }
    /// The port an [`In`] stands for, made now.
    fn make(&mut self, d: &In) -> OutPort {
        match *d {
            In::F(dims) => self.f(dims),
            In::Nchw(dims) => self.nchw(dims),
            In::Typed(dt, dims) => self.input(dt, dims),
            In::Fmt(dt, fmt, dims) => self.input_fmt(dt, fmt, dims),
            In::I32(v) => self.ints(v),
            In::I64(v) => self.ints64(v),
            In::Port(p) => p,
        }
    }
    /// [`T::all`] on inputs given by [`In`].
    pub fn all_in(&mut self, ty: &str, spec: InSpec, attrs: Attrs) -> Vec<(DataType, Vec<i64>)> {
        self.with_inputs(spec, |t, ins| t.all(ty, ins, attrs))
    }
    /// [`T::ok`] on inputs given by [`In`].
    pub fn ok_in(&mut self, ty: &str, spec: InSpec, attrs: Attrs) -> (DataType, Vec<i64>) {
        self.with_inputs(spec, |t, ins| t.ok(ty, ins, attrs))
    }
    /// [`T::dims`] on inputs given by [`In`].
    pub fn dims_in(&mut self, ty: &str, spec: InSpec, attrs: Attrs) -> Vec<i64> {
        self.with_inputs(spec, |t, ins| t.dims(ty, ins, attrs))
    }
    /// [`T::err`] on inputs given by [`In`].
    pub fn err_in(&mut self, ty: &str, spec: InSpec, attrs: Attrs) -> String {
        self.with_inputs(spec, |t, ins| t.err(ty, ins, attrs))
    }
    /// Calls an op on inputs given by [`In`] that must fail in inference with a message
    /// containing each of `parts`.
    pub fn rejects_in(&mut self, ty: &str, spec: InSpec, attrs: Attrs, parts: &[&str]) {
        has(&self.err_in(ty, spec, attrs), parts);
    }
    /// Calls an op that must fail; returns the error. The graph must not change.
    pub fn fail(&mut self, ty: &str, ins: Ins, attrs: Attrs) -> Error {
        let before = self.b.graph().nodes().len();
        let e = match self.call(ty, ins, attrs) {
            Ok(id) => panic!("{ty}: expected an error, got outputs {:?}", self.outs(id)),
            Err(e) => e,
        };
        assert_eq!(
            self.b.graph().nodes().len(),
            before,
            "{ty}: a failed call must not add a node"
        );
        e
    }
    /// Calls an op that must fail in inference; returns the message. The graph must not change.
    pub fn err(&mut self, ty: &str, ins: Ins, attrs: Attrs) -> String {
        match self.fail(ty, ins, attrs) {
            Error::ShapeInference(m) => m,
            other => panic!("{ty}: expected a shape inference error, got {other:?}"),
        }
    }
}

/// Attributes by name, as a list the caller owns.
pub fn attrs<const N: usize>(names: [&str; N], values: [AttrValue; N]) -> Vec<(&str, AttrValue)> {
    names.into_iter().zip(values).collect()
}

/// A float Data input of `b` (unnamed, FORMAT_ND) with the given dims.
pub fn float_data(b: &mut GraphBuilder, index: i64, dims: &[i64]) -> OutPort {
    b.create_input(
        index,
        None,
        "Data",
        FLOAT,
        Format::ND,
        Shape::from_slice(dims),
    )
    .expect("create_input")
}

/// A builder `name` over the global library with the inputs `make` gives for index 0.. and
/// the given dims.
pub fn inputs_with<const N: usize>(
    name: &str,
    dims: [&[i64]; N],
    mut make: impl FnMut(&mut GraphBuilder, i64, &[i64]) -> OutPort,
) -> (GraphBuilder, [OutPort; N]) {
    let mut b = GraphBuilder::new(name);
    let mut k = 0;
    let xs = dims.map(|d| {
        k += 1;
        make(&mut b, k - 1, d)
    });
    (b, xs)
}

/// [`inputs_with`] float Data inputs ([`float_data`]).
pub fn float_inputs<const N: usize>(name: &str, dims: [&[i64]; N]) -> (GraphBuilder, [OutPort; N]) {
    inputs_with(name, dims, float_data)
}

/// Pairs input names with their ports.
pub fn named<'a, const N: usize>(
    names: [&'a str; N],
    ports: [&'a [OutPort]; N],
) -> [(&'a str, &'a [OutPort]); N] {
    std::array::from_fn(|k| (names[k], ports[k]))
}

/// Each of `ops` is in the built-in library (with a doc when `need_doc`) and comes back the same
/// from the library's JSON form.
pub fn assert_built_in_and_round_trip<S: AsRef<str>>(ops: &[S], need_doc: bool) {
    let reg = registry();
    let again = OpRegistry::from_json_str(&reg.to_json().to_string()).unwrap();
    for op in ops.iter().map(AsRef::as_ref) {
        let p = reg
            .get(op)
            .unwrap_or_else(|| panic!("{op} is not in the built-in library"));
        assert!(!need_doc || !p.doc.is_empty(), "{op} has no doc");
        assert_eq!(**again.get(op).unwrap(), **p, "{op}");
    }
}

pub fn has(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} lacks {p:?}");
    }
}
