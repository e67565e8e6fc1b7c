//! Tests of es-core through its public API: types, attributes, operator prototypes, the graph
//! arena, the builder, serialization and dumps, plus property tests.
//!
//! Only the stable surface is used (`Shape::new`/`dims`/`rank`/`num_elements`, names compared
//! with `==`), so internal representation changes do not break this file.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use es_core::attr::{AttrType, AttrValue};
use es_core::builder::{GraphBuilder, OpArgs};
use es_core::dump;
use es_core::graph::{Graph, InPort, InputSlot, Node, NodeId, OutPort, OutputSlot};
use es_core::ops::{builtin_registry, global_registry, OpProto, OpRegistry, BUILTIN_VERSION};
use es_core::serialize::{self, from_bytes, to_bytes, FORMAT_VERSION, MAGIC};
use es_core::types::{Element, UNKNOWN_DIM, UNKNOWN_RANK};
use es_core::{DataType, Error, Format, Shape, Tensor, TensorDesc};
use proptest::prelude::*;

// =============================================================================================
// Helpers
// =============================================================================================

fn ints(v: i64) -> AttrValue {
    AttrValue::Int(v)
}

/// Every DataType, found through `from_value` (independent of the name of the list constant).
fn all_dtypes() -> Vec<DataType> {
    (-5..200)
        .filter_map(|v| DataType::from_value(v).ok())
        .collect()
}

/// Every Format, found through `from_value`.
fn all_formats() -> Vec<Format> {
    (-5..200)
        .filter_map(|v| Format::from_value(v).ok())
        .collect()
}

/// OpArgs from per-IR-input producers and attributes.
fn args(inputs: Vec<Vec<Option<OutPort>>>, attrs: &[(&str, AttrValue)]) -> OpArgs {
    let mut a = OpArgs {
        inputs,
        ..Default::default()
    };
    for (k, v) in attrs {
        a.attrs.insert((*k).into(), v.clone());
    }
    a
}

fn one(p: OutPort) -> Vec<Option<OutPort>> {
    vec![Some(p)]
}

fn out0(id: NodeId) -> OutPort {
    OutPort { node: id, index: 0 }
}

fn data(b: &mut GraphBuilder, index: i64, dims: &[i64]) -> OutPort {
    b.create_input(
        index,
        None,
        "Data",
        DataType::FLOAT,
        Format::ND,
        Shape::new(dims.to_vec()),
    )
    .expect("create_input")
}

/// A node with `n_in` unconnected inputs and `n_out` outputs, built by hand.
fn raw_node(name: &str, op: &str, n_in: usize, n_out: usize) -> Node {
    let mut n = Node::new(name, op);
    for i in 0..n_in {
        n.inputs.push(InputSlot::new(
            format!("x{i}"),
            i as u32,
            TensorDesc::default(),
        ));
    }
    for i in 0..n_out {
        n.outputs.push(OutputSlot {
            name: format!("y{i}").into(),
            ir_index: i as u32,
            desc: TensorDesc::default(),
            consumers: Vec::new(),
        });
    }
    n
}

fn raw_data(name: &str, index: i64) -> Node {
    let mut n = raw_node(name, "Data", 1, 1);
    n.attrs.insert("index".into(), ints(index));
    n
}

fn names(g: &Graph, ids: &[NodeId]) -> Vec<String> {
    ids.iter()
        .map(|id| g.node(*id).unwrap().name.to_string())
        .collect()
}

fn all_names(g: &Graph) -> Vec<String> {
    names(g, &g.nodes())
}

fn err_text<T: std::fmt::Debug>(r: es_core::Result<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e.to_string(),
    }
}

/// A branch graph for If/Case/While: Data(0) -> Relu -> output 0.
fn branch(name: &str) -> Graph {
    let mut b = GraphBuilder::new(name);
    let x = data(&mut b, 0, &[2, 3]);
    let r = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    b.set_output(out0(r), 0).unwrap();
    b.build_and_reset().unwrap()
}

/// A graph with a bit of everything: inputs, a const, binary/dynamic ops, a control edge, an
/// If node with two subgraphs, private attributes, output-desc attributes, NaN attributes.
fn rich_graph() -> Graph {
    let mut b = GraphBuilder::new("rich");
    let x = data(&mut b, 0, &[2, 3]);
    let y = data(&mut b, 1, &[2, 3]);
    let c = b
        .create_const(
            Tensor::from_values(&[1.0f32, 2.0, 3.0, 4.0, 5.0, f32::NAN], vec![2, 3]).unwrap(),
            None,
        )
        .unwrap();
    let add = b.add_op("Add", args(vec![one(x), one(y)], &[])).unwrap();
    let mul = b
        .add_op("Mul", args(vec![one(out0(add)), one(c)], &[]))
        .unwrap();
    let cat = b
        .add_op(
            "ConcatD",
            args(
                vec![vec![Some(out0(mul)), Some(x), Some(y)]],
                &[("concat_dim", ints(0))],
            ),
        )
        .unwrap();
    let split = b
        .add_op(
            "SplitD",
            args(
                vec![one(out0(cat))],
                &[("split_dim", ints(0)), ("num_split", ints(3))],
            ),
        )
        .unwrap();
    let cond = b
        .create_input(
            2,
            Some("cond".into()),
            "Data",
            DataType::BOOL,
            Format::ND,
            Shape::scalar(),
        )
        .unwrap();
    let mut if_args = args(
        vec![
            one(cond),
            vec![Some(OutPort {
                node: split,
                index: 1,
            })],
        ],
        &[],
    );
    if_args.output_counts.insert("output".into(), 1);
    if_args.subgraphs = vec![vec![branch("then")], vec![branch("else")]];
    if_args.name = Some("branchy".into());
    let iff = b.add_op("If", if_args).unwrap();
    b.add_control_dependency(iff, &[add]).unwrap();
    {
        let g = b.graph_mut();
        let n = g.node_mut(mul).unwrap();
        n.private_attrs
            .insert("_nan".into(), AttrValue::Float(f32::NAN));
        n.private_attrs.insert(
            "_list".into(),
            AttrValue::ListFloat(vec![f32::INFINITY, -0.0, f32::NEG_INFINITY]),
        );
        n.outputs[0]
            .desc
            .attrs
            .insert("_out_attr".into(), AttrValue::String("tag".into()));
        n.outputs[0].desc.format = Format::NCHW;
        g.attrs.insert(
            "graph_attr".into(),
            AttrValue::ListString(vec!["a".into(), "".into()]),
        );
    }
    b.set_output(
        OutPort {
            node: split,
            index: 2,
        },
        0,
    )
    .unwrap();
    b.set_output(out0(iff), 1).unwrap();
    b.build_and_reset().unwrap()
}

/// A small graph: two inputs, Add, Relu, a control edge.
fn small_graph() -> Graph {
    let mut b = GraphBuilder::new("s");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let a = b.add_op("Add", args(vec![one(x), one(y)], &[])).unwrap();
    let r = b.add_op("Relu", args(vec![one(out0(a))], &[])).unwrap();
    b.add_control_dependency(r, &[x.node]).unwrap();
    b.graph_mut()
        .node_mut(r)
        .unwrap()
        .private_attrs
        .insert("_p".into(), ints(7));
    b.set_output(out0(r), 0).unwrap();
    b.build_and_reset().unwrap()
}

/// Everything a caller might do with a graph that loaded; none of it may panic.
fn exercise(g: &Graph) {
    let _ = g.topo_order();
    let _ = g.validate();
    let _ = g.input_nodes();
    let _ = dump::readable(g);
    let _ = dump::txt(g);
    let _ = to_bytes(g);
    let _ = g.check_integrity();
    for id in g.nodes() {
        let _ = g.out_edges(id);
        let _ = g.producer(id, 0);
    }
    let _ = g.clone() == *g;
}

/// Runs `from_bytes` (and, on success, [`exercise`]) catching panics.
fn load_no_panic(bytes: &[u8]) -> std::result::Result<bool, String> {
    catch_unwind(AssertUnwindSafe(|| match from_bytes(bytes) {
        Ok(g) => {
            exercise(&g);
            true
        }
        Err(_) => false,
    }))
    .map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// Deterministic pseudo-random bytes (xorshift64*).
fn pseudo_random(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

// =============================================================================================
// 1. types
// =============================================================================================

#[test]
fn datatype_round_trips_every_member() {
    // The public list of members is every value `from_value` knows, in numeric order.
    assert_eq!(DataType::VALUES, all_dtypes().as_slice());
    assert_eq!(all_dtypes().len(), 43);
    for w in all_dtypes().windows(2) {
        assert!(w[0].value() < w[1].value(), "VALUES is in numeric order");
    }
    for d in all_dtypes() {
        assert_eq!(DataType::from_value(d.value() as i64).unwrap(), d);
        assert_eq!(DataType::from_name(d.name()).unwrap(), d);
        assert!(d.name().starts_with("DT_"), "{}", d.name());
        assert_eq!(
            DataType::from_name(&d.name()[3..]).unwrap(),
            d,
            "bare name of {d}"
        );
        assert_eq!(d.to_string(), d.name());
    }
    for (d, v) in [
        (DataType::FLOAT, 0),
        (DataType::FLOAT16, 1),
        (DataType::INT8, 2),
        (DataType::INT32, 3),
        (DataType::UINT8, 4),
        (DataType::INT64, 9),
        (DataType::DOUBLE, 11),
        (DataType::BOOL, 12),
        (DataType::STRING, 13),
        (DataType::BF16, 27),
        (DataType::UNDEFINED, 28),
    ] {
        assert_eq!(d.value(), v, "{d}");
    }
    assert_eq!(DataType::FLOAT.name(), "DT_FLOAT");
    assert_eq!(DataType::BF16.name(), "DT_BF16");
    for bad in [-1i64, 5, 44, 1000, i64::MAX, i64::MIN] {
        assert!(DataType::from_value(bad).is_err(), "{bad}");
    }
    for bad in ["", "DT_", "DT_NOPE", "FLOAT32", "DT_FLOAT ", "FORMAT_NCHW"] {
        assert!(DataType::from_name(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn format_round_trips_every_member() {
    // `Format::ALL` is the variant FORMAT_ALL, hence the list's name `VALUES`.
    assert_eq!(Format::ALL.value(), 41);
    let all = all_formats();
    assert_eq!(Format::VALUES, all.as_slice());
    assert_eq!(all.len(), 52);
    for (i, f) in all.iter().enumerate() {
        assert_eq!(f.value(), i as i32, "values are 0..=51 without gaps");
    }
    for &f in &all {
        assert_eq!(Format::from_value(f.value() as i64).unwrap(), f);
        assert_eq!(Format::from_name(f.name()).unwrap(), f);
        assert!(f.name().starts_with("FORMAT_"));
        assert_eq!(Format::from_name(&f.name()[7..]).unwrap(), f);
        assert_eq!(f.to_string(), f.name());
    }
    for (f, v) in [
        (Format::NCHW, 0),
        (Format::NHWC, 1),
        (Format::ND, 2),
        (Format::NC1HWC0, 3),
        (Format::FRACTAL_Z, 4),
        (Format::FRACTAL_NZ, 29),
        (Format::NCDHW, 30),
    ] {
        assert_eq!(f.value(), v, "{f}");
    }
    assert_eq!(Format::FRACTAL_NZ.name(), "FORMAT_FRACTAL_NZ");
    for bad in [-1i64, 52, 99, i64::MIN] {
        assert!(Format::from_value(bad).is_err(), "{bad}");
    }
    for bad in ["", "FORMAT_", "FORMAT_XYZ", "DT_FLOAT"] {
        assert!(Format::from_name(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn datatype_sizes_and_classes() {
    assert_eq!(DataType::FLOAT.size(), Some(4));
    assert_eq!(DataType::FLOAT16.size(), Some(2));
    assert_eq!(DataType::BF16.size(), Some(2));
    assert_eq!(DataType::INT64.size(), Some(8));
    assert_eq!(DataType::BOOL.size(), Some(1));
    assert_eq!(DataType::COMPLEX128.size(), Some(16));
    assert_eq!(DataType::STRING.size(), None);
    assert_eq!(DataType::INT4.size(), None);
    assert!(DataType::BF16.is_float() && !DataType::INT32.is_float());
    assert!(DataType::UINT64.is_integer() && !DataType::BOOL.is_integer());
}

#[test]
fn shape_validate_and_accessors() {
    for ok in [
        &[][..],
        &[0],
        &[3, -1],
        &[-2],
        &[1, 2, 3, 4, 5, 6],
        &[-1, -1],
    ] {
        assert!(Shape::validate(ok).is_ok(), "{ok:?}");
    }
    for bad in [
        &[-3][..],
        &[2, -2],
        &[-2, -2],
        &[-2, 3],
        &[i64::MIN],
        &[4, 5, -7],
    ] {
        let e = Shape::validate(bad).unwrap_err();
        assert!(matches!(e, Error::Value(_)), "{e:?}");
        assert!(e.to_string().contains("invalid dim"), "{e}");
    }
    let s = Shape::new(vec![2, 3]);
    assert_eq!(s.dims(), &[2, 3]);
    assert_eq!(s.rank(), Some(2));
    assert_eq!(s.num_elements(), Some(6));
    assert_eq!(Shape::scalar().dims(), &[] as &[i64]);
    assert_eq!(Shape::scalar().rank(), Some(0));
    assert_eq!(Shape::scalar().num_elements(), Some(1));
    assert_eq!(Shape::unknown_rank().dims(), &[UNKNOWN_RANK]);
    assert_eq!(Shape::unknown_rank().rank(), None);
    assert_eq!(Shape::unknown_rank().num_elements(), None);
    assert_eq!(Shape::new(vec![UNKNOWN_DIM, 3]).rank(), Some(2));
    assert_eq!(Shape::new(vec![UNKNOWN_DIM, 3]).num_elements(), None);
    assert_eq!(Shape::new(vec![0, 7]).num_elements(), Some(0));
    assert_eq!(
        Shape::new(vec![i64::MAX, 2]).num_elements(),
        None,
        "overflow is None"
    );
    assert_eq!(Shape::new(vec![2, 3]).to_string(), "[2, 3]");
    assert_eq!(Shape::new(vec![1, 2, 3, 4, 5, 6, 7, 8]).dims().len(), 8);
}

#[test]
fn tensor_new_checks_byte_count() {
    let d = |dims: Vec<i64>| TensorDesc::new(DataType::FLOAT, Shape::new(dims));
    assert!(Tensor::new(d(vec![2, 3]), vec![0; 24]).is_ok());
    assert!(Tensor::new(d(vec![]), vec![0; 4]).is_ok());
    assert!(Tensor::new(d(vec![0, 3]), vec![]).is_ok());
    for (dims, n) in [
        (vec![2, 3], 23),
        (vec![2, 3], 25),
        (vec![2, 3], 0),
        (vec![], 0),
        (vec![], 8),
    ] {
        let e = Tensor::new(d(dims.clone()), vec![0; n]).unwrap_err();
        assert!(e.to_string().contains("bytes"), "{dims:?} {n}: {e}");
    }
    assert!(Tensor::new(d(vec![-1, 3]), vec![0; 12]).is_err());
    assert!(Tensor::new(d(vec![-2]), vec![0; 4]).is_err());
    let d16 = TensorDesc::new(DataType::FLOAT16, Shape::new(vec![3]));
    assert!(Tensor::new(d16.clone(), vec![0; 6]).is_ok());
    assert!(Tensor::new(d16, vec![0; 12]).is_err());
    // from_values validates the shape and the count.
    assert!(Tensor::from_values(&[1.0f32, 2.0], vec![3]).is_err());
    assert!(Tensor::from_values(&[1.0f32, 2.0], vec![-3]).is_err());
    assert!(Tensor::from_values(&[1.0f32, 2.0], vec![-1]).is_err());
    assert!(Tensor::from_values::<f32>(&[], vec![0]).is_ok());
    // Little-endian, row-major bytes.
    let t = Tensor::from_values(&[1i32, 256], vec![2]).unwrap();
    assert_eq!(&t.data[..], &[1, 0, 0, 0, 0, 1, 0, 0]);
}

fn values_round_trip<T: Element + PartialEq + std::fmt::Debug>(vals: &[T]) {
    let t = Tensor::from_values(vals, vec![vals.len() as i64]).unwrap();
    assert_eq!(t.desc.dtype, T::DTYPE);
    assert_eq!(t.desc.shape.dims(), &[vals.len() as i64]);
    assert_eq!(t.data.len(), std::mem::size_of_val(vals));
    assert_eq!(T::DTYPE.size(), Some(std::mem::size_of::<T>()));
    assert_eq!(t.values::<T>().unwrap(), vals);
    // 2-D as well.
    if vals.len().is_multiple_of(2) {
        let t2 = Tensor::from_values(vals, vec![2, vals.len() as i64 / 2]).unwrap();
        assert_eq!(t2.values::<T>().unwrap(), vals);
    }
    let s = Tensor::scalar(vals[0]);
    assert_eq!(s.desc.shape.rank(), Some(0));
    assert_eq!(s.values::<T>().unwrap(), vec![vals[0]]);
}

#[test]
fn tensor_values_round_trip_every_element_type() {
    use half::{bf16, f16};
    values_round_trip(&[
        0.0f32,
        -1.5,
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::INFINITY,
        -0.0,
    ]);
    values_round_trip(&[0.1f64, -2.5, f64::MAX, f64::NEG_INFINITY]);
    values_round_trip(&[i8::MIN, -1, 0, i8::MAX]);
    values_round_trip(&[i16::MIN, -1, 0, i16::MAX]);
    values_round_trip(&[i32::MIN, -1, 0, i32::MAX]);
    values_round_trip(&[i64::MIN, -1, 0, i64::MAX]);
    values_round_trip(&[0u8, 1, 128, u8::MAX]);
    values_round_trip(&[0u16, 1, 40000, u16::MAX]);
    values_round_trip(&[0u32, 1, 3_000_000_000, u32::MAX]);
    values_round_trip(&[0u64, 1, 1 << 63, u64::MAX]);
    values_round_trip(&[
        f16::from_f32(1.5),
        f16::from_f32(-0.25),
        f16::MAX,
        f16::INFINITY,
    ]);
    values_round_trip(&[
        bf16::from_f32(1.5),
        bf16::from_f32(-3.0),
        bf16::MAX,
        bf16::NEG_INFINITY,
    ]);
    values_round_trip(&[true, false, true, true]);
    // The wrong element type is a type error.
    let t = Tensor::from_values(&[1i32, 2], vec![2]).unwrap();
    assert!(matches!(t.values::<f32>(), Err(Error::Type(_))));
    assert!(matches!(t.values::<i64>(), Err(Error::Type(_))));
}

#[test]
fn tensor_to_i64_and_f64() {
    let v = Tensor::from_values(&[-3i8, 4], vec![2]).unwrap();
    assert_eq!(v.to_i64_vec().unwrap(), vec![-3, 4]);
    assert_eq!(v.to_f64_vec().unwrap(), vec![-3.0, 4.0]);
    assert_eq!(
        Tensor::from_values(&[-3i16, 4], vec![2])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![-3, 4]
    );
    assert_eq!(
        Tensor::from_values(&[-3i32, 4], vec![2])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![-3, 4]
    );
    assert_eq!(
        Tensor::from_values(&[i64::MIN, i64::MAX], vec![2])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![i64::MIN, i64::MAX]
    );
    assert_eq!(
        Tensor::from_values(&[200u8], vec![1])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![200]
    );
    assert_eq!(
        Tensor::from_values(&[60000u16], vec![1])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![60000]
    );
    assert_eq!(
        Tensor::from_values(&[u32::MAX], vec![1])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![u32::MAX as i64]
    );
    assert_eq!(
        Tensor::from_values(&[7u64], vec![1])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![7]
    );
    assert_eq!(
        Tensor::from_values(&[true, false], vec![2])
            .unwrap()
            .to_i64_vec()
            .unwrap(),
        vec![1, 0]
    );
    assert_eq!(
        Tensor::from_values(&[true, false], vec![2])
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![1.0, 0.0]
    );
    let f = Tensor::from_values(&[1.5f32, -2.0], vec![2]).unwrap();
    assert_eq!(f.to_f64_vec().unwrap(), vec![1.5, -2.0]);
    assert!(matches!(f.to_i64_vec(), Err(Error::Type(_))));
    assert_eq!(
        Tensor::from_values(&[0.1f64], vec![1])
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![0.1]
    );
    assert_eq!(
        Tensor::from_values(&[half::f16::from_f32(0.5)], vec![1])
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![0.5]
    );
    assert_eq!(
        Tensor::from_values(&[half::bf16::from_f32(-4.0)], vec![1])
            .unwrap()
            .to_f64_vec()
            .unwrap(),
        vec![-4.0]
    );
    let s = Tensor::new(
        TensorDesc::new(DataType::STRING, Shape::new(vec![1])),
        vec![1, 2, 3],
    )
    .unwrap();
    assert!(s.to_i64_vec().is_err());
    assert!(s.to_f64_vec().is_err());
}

#[test]
fn tensor_desc_defaults() {
    let d = TensorDesc::new(DataType::INT32, Shape::new(vec![4]));
    assert_eq!(d.format, Format::ND);
    assert_eq!(d.origin_format, Format::ND);
    assert_eq!(d.origin_shape, d.shape);
    let d = d.with_format(Format::NHWC);
    assert_eq!((d.format, d.origin_format), (Format::NHWC, Format::NHWC));
    let mut d = TensorDesc::default();
    assert_eq!(d.dtype, DataType::UNDEFINED);
    assert_eq!(d.shape.rank(), None);
    d.set_shape(Shape::new(vec![1, 2]));
    assert_eq!(d.shape.dims(), &[1, 2]);
    assert_eq!(d.origin_shape.dims(), &[1, 2]);
}

// =============================================================================================
// 2. attr
// =============================================================================================

/// Tensors whose JSON form parses back exactly. (The JSON path carries tensor values as f32, so
/// integers beyond 2^24 and f64 values that are not f32 values are left out here.)
fn sample_tensors() -> Vec<Tensor> {
    use half::{bf16, f16};
    vec![
        Tensor::from_values(&[1.0f32, -2.5, 0.1, 3.0e38], vec![2, 2]).unwrap(),
        Tensor::from_values(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN], vec![3]).unwrap(),
        Tensor::from_values(&[0.5f64, -8.0], vec![2]).unwrap(),
        Tensor::from_values(&[f16::from_f32(1.5), f16::from_f32(-0.125)], vec![2]).unwrap(),
        Tensor::from_values(&[bf16::from_f32(2.0), bf16::from_f32(-1.0)], vec![1, 2]).unwrap(),
        Tensor::from_values(&[i8::MIN, i8::MAX], vec![2]).unwrap(),
        Tensor::from_values(&[i16::MIN, i16::MAX], vec![2]).unwrap(),
        Tensor::from_values(&[-(1i32 << 24), 1 << 24, -123_456], vec![3]).unwrap(),
        Tensor::from_values(&[-(1i64 << 24), 1 << 24, 99_999], vec![3]).unwrap(),
        Tensor::from_values(&[0u8, 255], vec![2]).unwrap(),
        Tensor::from_values(&[0u16, 65535], vec![2]).unwrap(),
        Tensor::from_values(&[0u32, 1 << 24, 77_777], vec![3]).unwrap(),
        Tensor::from_values(&[0u64, 1 << 24, 55_555], vec![3]).unwrap(),
        Tensor::from_values(&[true, false, true], vec![3]).unwrap(),
        Tensor::from_values::<f32>(&[], vec![0]).unwrap(),
        Tensor::from_values::<i32>(&[], vec![2, 0]).unwrap(),
        Tensor::scalar(42i32),
        Tensor::scalar(-0.75f32),
    ]
}

/// Values of every attribute type, with the awkward ones (inf, -inf, nan, extremes, empties).
fn sample_attrs() -> Vec<AttrValue> {
    let mut v = vec![
        AttrValue::Int(0),
        AttrValue::Int(-7),
        AttrValue::Int(i64::MAX),
        AttrValue::Int(i64::MIN),
        AttrValue::Float(0.0),
        AttrValue::Float(-0.0),
        AttrValue::Float(1.5),
        AttrValue::Float(0.1),
        AttrValue::Float(f32::MAX),
        AttrValue::Float(f32::MIN_POSITIVE),
        AttrValue::Float(1e-40),
        AttrValue::Float(f32::INFINITY),
        AttrValue::Float(f32::NEG_INFINITY),
        AttrValue::Float(f32::NAN),
        AttrValue::String(String::new()),
        AttrValue::String("héllo \"quoted\" \n nan".into()),
        AttrValue::String("inf".into()),
        AttrValue::Bool(true),
        AttrValue::Bool(false),
        AttrValue::ListInt(vec![]),
        AttrValue::ListInt(vec![1, -2, i64::MAX, i64::MIN]),
        AttrValue::ListFloat(vec![]),
        AttrValue::ListFloat(vec![
            1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -0.0,
            0.3,
        ]),
        AttrValue::ListBool(vec![]),
        AttrValue::ListBool(vec![true, false]),
        AttrValue::ListType(vec![]),
        AttrValue::ListType(all_dtypes()),
        AttrValue::ListListInt(vec![]),
        AttrValue::ListListInt(vec![vec![], vec![1, 2], vec![-3]]),
        AttrValue::ListString(vec![]),
        AttrValue::ListString(vec!["a".into(), "".into(), "nan".into()]),
    ];
    v.extend(all_dtypes().iter().map(|d| AttrValue::Type(*d)));
    v.extend(sample_tensors().into_iter().map(AttrValue::Tensor));
    v
}

#[test]
fn attr_samples_cover_every_type() {
    let samples = sample_attrs();
    for t in AttrType::ALL {
        assert!(
            samples.iter().any(|a| a.attr_type() == *t),
            "no sample of {t}"
        );
    }
}

#[test]
fn attr_json_round_trip_every_type() {
    for a in sample_attrs() {
        let j = a.to_json();
        let back = AttrValue::from_json(a.attr_type(), &j)
            .unwrap_or_else(|e| panic!("{a:?} -> {j} does not parse back: {e}"));
        assert_eq!(back, a, "json {j}");
        // Through JSON text as well.
        let text = serde_json::to_string(&j).unwrap();
        let j2: serde_json::Value = serde_json::from_str(&text).unwrap();
        let back2 = AttrValue::from_json(a.attr_type(), &j2).unwrap();
        assert_eq!(back2, a, "text {text}");
    }
}

#[test]
fn attr_json_special_floats_are_strings() {
    assert_eq!(
        AttrValue::Float(f32::INFINITY).to_json(),
        serde_json::json!("inf")
    );
    assert_eq!(
        AttrValue::Float(f32::NEG_INFINITY).to_json(),
        serde_json::json!("-inf")
    );
    assert_eq!(
        AttrValue::Float(f32::NAN).to_json(),
        serde_json::json!("nan")
    );
    assert_eq!(
        AttrValue::Type(DataType::BF16).to_json(),
        serde_json::json!("DT_BF16")
    );
    let t = AttrValue::Tensor(Tensor::from_values(&[1i32, 2], vec![2]).unwrap()).to_json();
    assert_eq!(
        t,
        serde_json::json!({"dtype": "DT_INT32", "shape": [2], "values": [1, 2]})
    );
    // Types accept bare names too.
    assert_eq!(
        AttrValue::from_json(AttrType::Type, &serde_json::json!("INT64")).unwrap(),
        AttrValue::Type(DataType::INT64)
    );
}

#[test]
fn attr_from_json_rejects_wrong_shapes() {
    use serde_json::json;
    let bad = [
        (AttrType::Int, json!("1")),
        (AttrType::Int, json!(1.5)),
        (AttrType::Int, json!(null)),
        (AttrType::Float, json!("abc")),
        (AttrType::Float, json!(true)),
        (AttrType::String, json!(3)),
        (AttrType::Bool, json!("true")),
        (AttrType::Type, json!("DT_NOPE")),
        (AttrType::Type, json!(0)),
        (AttrType::ListInt, json!([1, "2"])),
        (AttrType::ListInt, json!(1)),
        (AttrType::ListFloat, json!([1.0, "infinity"])),
        (AttrType::ListBool, json!([true, 0])),
        (AttrType::ListType, json!(["DT_FLOAT", "DT_NOPE"])),
        (AttrType::ListListInt, json!([1, 2])),
        (AttrType::ListListInt, json!([[1], ["x"]])),
        (AttrType::ListString, json!(["a", 1])),
        (AttrType::Tensor, json!([1, 2])),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_FLOAT", "shape": [3], "values": [1, 2]}),
        ),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_FLOAT", "shape": "x", "values": []}),
        ),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_FLOAT", "shape": [-3], "values": []}),
        ),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_NOPE", "shape": [], "values": [1]}),
        ),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_STRING", "shape": [1], "values": [1]}),
        ),
        (
            AttrType::Tensor,
            json!({"dtype": "DT_INT32", "shape": [1], "values": ["a"]}),
        ),
    ];
    for (t, j) in bad {
        assert!(
            AttrValue::from_json(t, &j).is_err(),
            "{t} from {j} should fail"
        );
    }
}

#[test]
fn attr_approx_eq_tolerance() {
    let f = AttrValue::Float;
    assert!(f(1.0).approx_eq(&f(1.0)));
    assert!(f(1.0).approx_eq(&f(1.0 + 5e-6)));
    assert!(!f(1.0).approx_eq(&f(1.0 + 5e-5)));
    assert!(f(0.0).approx_eq(&f(9e-6)));
    assert!(!f(0.0).approx_eq(&f(2e-5)));
    // Relative tolerance for large magnitudes.
    assert!(f(1.0e6).approx_eq(&f(1.0e6 + 5.0)));
    assert!(!f(1.0e6).approx_eq(&f(1.0e6 + 50.0)));
    assert!(f(f32::NAN).approx_eq(&f(f32::NAN)));
    assert!(f(f32::INFINITY).approx_eq(&f(f32::INFINITY)));
    assert!(!f(f32::NAN).approx_eq(&f(1.0)));
    let l = AttrValue::ListFloat;
    assert!(l(vec![1.0, 2.0]).approx_eq(&l(vec![1.0 + 1e-6, 2.0 - 1e-6])));
    assert!(!l(vec![1.0, 2.0]).approx_eq(&l(vec![1.0, 2.001])));
    assert!(!l(vec![1.0, 2.0]).approx_eq(&l(vec![1.0])));
    // Non-float types compare exactly.
    assert!(ints(3).approx_eq(&ints(3)));
    assert!(!ints(3).approx_eq(&ints(4)));
    assert!(!ints(1).approx_eq(&f(1.0)));
    assert!(AttrValue::String("a".into()).approx_eq(&"a".into()));
    // Exact equality: bit patterns (NaN equals itself; 0.0 and -0.0 differ).
    assert_eq!(f(f32::NAN), f(f32::NAN));
    assert_ne!(f(0.0), f(-0.0));
    assert_ne!(f(1.0), f(1.0 + 5e-6));
    assert_ne!(ints(1), AttrValue::ListInt(vec![1]));
}

#[test]
fn attr_type_parse_ge_spellings() {
    let cases = [
        ("Int", AttrType::Int),
        ("INT", AttrType::Int),
        ("int", AttrType::Int),
        ("Float", AttrType::Float),
        ("FLOAT", AttrType::Float),
        ("String", AttrType::String),
        ("Str", AttrType::String),
        ("STR", AttrType::String),
        ("Bool", AttrType::Bool),
        ("Type", AttrType::Type),
        ("DataType", AttrType::Type),
        ("DATA_TYPE", AttrType::Type),
        ("ListInt", AttrType::ListInt),
        ("LIST_INT", AttrType::ListInt),
        ("ListFloat", AttrType::ListFloat),
        ("LIST_FLOAT", AttrType::ListFloat),
        ("ListBool", AttrType::ListBool),
        ("ListType", AttrType::ListType),
        ("ListDataType", AttrType::ListType),
        ("ListListInt", AttrType::ListListInt),
        ("LIST_LIST_INT", AttrType::ListListInt),
        ("Tensor", AttrType::Tensor),
        ("TENSOR", AttrType::Tensor),
        ("ListString", AttrType::ListString),
        ("ListStr", AttrType::ListString),
        ("LIST_STR", AttrType::ListString),
    ];
    for (s, t) in cases {
        assert_eq!(AttrType::parse(s).unwrap(), t, "{s}");
    }
    for t in AttrType::ALL {
        assert_eq!(AttrType::parse(t.name()).unwrap(), *t);
        assert_eq!(t.to_string(), t.name());
    }
    for bad in [
        "",
        "Integer",
        "List",
        "ListListFloat",
        "NamedAttrs",
        "Tensors",
    ] {
        assert!(AttrType::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn attr_accessors_and_from() {
    assert_eq!(AttrValue::from(3i64).as_int(), Some(3));
    assert_eq!(AttrValue::from(1.5f32).as_float(), Some(1.5));
    assert_eq!(AttrValue::from(true).as_bool(), Some(true));
    assert_eq!(AttrValue::from("s").as_str(), Some("s"));
    assert_eq!(
        AttrValue::from(vec![1i64, 2]).as_list_int(),
        Some(&[1i64, 2][..])
    );
    assert_eq!(
        AttrValue::from(DataType::INT8).as_type(),
        Some(DataType::INT8)
    );
    assert!(AttrValue::from(Tensor::scalar(1.0f32))
        .as_tensor()
        .is_some());
    assert_eq!(AttrValue::from(3i64).as_float(), None);
    assert_eq!(AttrValue::from(1.5f32).as_int(), None);
}

// =============================================================================================
// 3. ops
// =============================================================================================

#[test]
fn builtin_registry_parses_and_checks() {
    let reg = builtin_registry().expect("built-in operator library parses");
    assert!(reg.len() >= 54, "{}", reg.len());
    assert!(!reg.is_empty());
    assert_eq!(reg.version, BUILTIN_VERSION);
    assert_eq!(reg.iter().count(), reg.len());
    for p in reg.iter() {
        p.check().unwrap_or_else(|e| panic!("{}: {e}", p.name));
    }
    for name in [
        "Data",
        "Const",
        "Add",
        "ConcatD",
        "SplitD",
        "IdentityN",
        "If",
        "Case",
        "While",
    ] {
        assert!(reg.get(name).is_some(), "{name}");
    }
    assert!(reg.get("NoSuchOp").is_none());
    // The global registry starts from the built-in library.
    let g = global_registry();
    for p in reg.iter() {
        assert_eq!(**g.get(&p.name).unwrap(), **p);
    }
}

#[test]
fn every_prototype_json_round_trips() {
    let reg = builtin_registry().unwrap();
    for p in reg.iter() {
        let j = p.to_json();
        let back = OpProto::from_json(&j).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(back, **p, "{}", p.name);
        // And through text.
        let text = serde_json::to_string(&j).unwrap();
        let back2 = OpProto::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back2, **p, "{}", p.name);
    }
    // The whole registry.
    let text = serde_json::to_string(&reg.to_json()).unwrap();
    let reg2 = OpRegistry::from_json_str(&text).unwrap();
    assert_eq!(reg2.version, reg.version);
    let a: Vec<_> = reg.iter().map(|p| (**p).clone()).collect();
    let b: Vec<_> = reg2.iter().map(|p| (**p).clone()).collect();
    assert_eq!(a, b);
}

#[test]
fn prototype_details() {
    let reg = builtin_registry().unwrap();
    let concat = reg.get("ConcatD").unwrap();
    assert_eq!(concat.input("x").unwrap().0, 0);
    assert!(concat.attr("concat_dim").unwrap().required());
    assert!(!concat.attr("N").unwrap().required());
    // Derived attributes are not asked for; required ones come first.
    let user: Vec<String> = concat
        .user_attrs()
        .iter()
        .map(|a| a.name.to_string())
        .collect();
    assert_eq!(user, vec!["concat_dim".to_string()]);
    assert!(reg.get("Add").unwrap().commutative);
    assert!(!reg.get("Relu").unwrap().commutative);
}

/// A valid operator definition to break in different ways.
fn foo_op() -> serde_json::Value {
    serde_json::json!({
        "name": "Foo",
        "inputs": [{"name": "x", "kind": "dynamic", "type": "T"},
                   {"name": "w", "kind": "optional", "type": ["DT_FLOAT"]}],
        "outputs": [{"name": "y", "kind": "dynamic", "type": "T"}],
        "attrs": [{"name": "n", "type": "Int", "default": 1},
                  {"name": "axis", "type": "Int", "required": true}],
        "type_vars": {"T": ["DT_FLOAT", "@IndexNumberType"]},
        "derived_attrs": {"n": "len(x)"},
        "output_counts": {"y": "attr(axis)"}
    })
}

fn foo_err(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut j = foo_op();
    edit(&mut j);
    let e = OpProto::from_json(&j).expect_err("malformed operator must not parse");
    let s = e.to_string();
    assert!(s.contains("Foo"), "error does not name the operator: {s}");
    s
}

#[test]
fn malformed_operator_json_errors_name_the_operator() {
    use serde_json::json;
    let p = OpProto::from_json(&foo_op()).expect("the base definition is valid");
    assert_eq!(
        p.type_vars["T"],
        vec![DataType::FLOAT, DataType::INT32, DataType::INT64]
    );

    let e = foo_err(|j| j["inputs"][0]["type"] = json!("U"));
    assert!(e.contains("'U'"), "{e}");
    let e = foo_err(|j| j["inputs"][0]["kind"] = json!("variadic"));
    assert!(e.contains("variadic"), "{e}");
    let e = foo_err(|j| j["outputs"][0]["kind"] = json!("optional"));
    assert!(e.contains("optional"), "{e}");
    let e = foo_err(|j| j["inputs"][0]["kind"] = json!("required"));
    assert!(e.contains("not a dynamic input"), "{e}");
    let e = foo_err(|j| j["derived_attrs"] = json!({"n": "len(w)"}));
    assert!(e.contains("not a dynamic input"), "{e}");
    let e = foo_err(|j| j["derived_attrs"] = json!({"n": "count(x)"}));
    assert!(e.contains("count(x)"), "{e}");
    let e = foo_err(|j| j["derived_attrs"] = json!({"missing": "len(x)"}));
    assert!(e.contains("missing"), "{e}");
    let e = foo_err(|j| j["output_counts"] = json!({"y": "attr(nope)"}));
    assert!(e.contains("nope"), "{e}");
    let e = foo_err(|j| j["outputs"][0]["kind"] = json!("required"));
    assert!(e.contains("not a dynamic output"), "{e}");
    let e = foo_err(|j| j["attrs"][0] = json!({"name": "n", "type": "Int"}));
    assert!(e.contains("neither required nor defaulted"), "{e}");
    let e = foo_err(|j| j["attrs"][0]["type"] = json!("Integer"));
    assert!(e.contains("Integer"), "{e}");
    let e = foo_err(|j| j["attrs"][0]["default"] = json!("one"));
    assert!(e.contains("attribute n"), "{e}");
    let e = foo_err(|j| j["attrs"][1]["name"] = json!("x"));
    assert!(e.contains("used twice"), "{e}");
    let e = foo_err(|j| j["type_vars"]["T"] = json!(["@Nope"]));
    assert!(e.contains("@Nope"), "{e}");
    let e = foo_err(|j| j["type_vars"]["T"] = json!(["DT_FLAOT"]));
    assert!(e.contains("DT_FLAOT"), "{e}");
    foo_err(|j| j["type_vars"] = json!([]));
    foo_err(|j| j["inputs"][1] = json!({"name": "w", "kind": "optional"}));
    foo_err(|j| j["inputs"][1] = json!({"kind": "optional", "type": ["DT_FLOAT"]}));
    foo_err(|j| j["subgraphs"] = json!([{"name": "body", "kind": "sometimes"}]));

    assert!(OpProto::from_json(&json!({"inputs": []})).is_err());
    assert!(OpProto::from_json(&json!([1, 2])).is_err());
}

#[test]
fn malformed_operator_library_errors() {
    let one_op =
        |p: &serde_json::Value| serde_json::json!({"version": "9", "operators": [p]}).to_string();
    let reg = OpRegistry::from_json_str(&one_op(&foo_op())).unwrap();
    assert_eq!(reg.version, "9");
    assert_eq!(reg.len(), 1);

    let dup = serde_json::json!({"operators": [foo_op(), foo_op()]}).to_string();
    let e = OpRegistry::from_json_str(&dup).unwrap_err().to_string();
    assert!(e.contains("Foo") && e.contains("twice"), "{e}");

    let mut broken = foo_op();
    broken["inputs"][0]["type"] = serde_json::json!("U");
    let e = OpRegistry::from_json_str(&one_op(&broken))
        .unwrap_err()
        .to_string();
    assert!(e.contains("Foo"), "{e}");

    assert!(OpRegistry::from_json_str("not json").is_err());
    assert!(OpRegistry::from_json_str("{}").is_err());
    assert!(OpRegistry::from_json_str(r#"{"operators": {}}"#).is_err());
}

// =============================================================================================
// 4. graph
// =============================================================================================

/// a -> b -> c by data edges, a => b => c by control edges, graph output b:0.
fn chain() -> (Graph, NodeId, NodeId, NodeId) {
    let mut g = Graph::new("chain");
    let a = g.add_node(raw_node("a", "Relu", 0, 1)).unwrap();
    let b = g.add_node(raw_node("b", "Relu", 1, 1)).unwrap();
    let c = g.add_node(raw_node("c", "Relu", 1, 1)).unwrap();
    g.add_data_edge(out0(a), InPort { node: b, index: 0 })
        .unwrap();
    g.add_data_edge(out0(b), InPort { node: c, index: 0 })
        .unwrap();
    g.add_control_edge(a, b).unwrap();
    g.add_control_edge(b, c).unwrap();
    g.set_output(0, out0(b)).unwrap();
    g.set_output(1, out0(c)).unwrap();
    (g, a, b, c)
}

#[test]
fn graph_add_and_query_edges() {
    let (mut g, a, b, c) = chain();
    assert_eq!(g.node_count(), 3);
    assert_eq!(all_names(&g), vec!["a", "b", "c"]);
    assert_eq!(g.find("b"), Some(b));
    assert_eq!(g.find("zz"), None);
    assert_eq!(g.producer(b, 0).unwrap(), Some(out0(a)));
    assert!(g.producer(a, 0).is_err(), "a has no inputs");
    assert_eq!(
        g.out_edges(a).unwrap(),
        vec![(0, InPort { node: b, index: 0 })]
    );
    assert!(g.node(b).unwrap().in_control.contains(&a));
    assert!(g.node(a).unwrap().out_control.contains(&b));
    assert!(g.check_integrity().is_ok());
    // A second consumer on the same output keeps edge order.
    let d = g.add_node(raw_node("d", "Add", 2, 1)).unwrap();
    g.add_data_edge(out0(a), InPort { node: d, index: 1 })
        .unwrap();
    g.add_data_edge(out0(a), InPort { node: d, index: 0 })
        .unwrap();
    assert_eq!(
        g.out_edges(a).unwrap(),
        vec![
            (0, InPort { node: b, index: 0 }),
            (0, InPort { node: d, index: 1 }),
            (0, InPort { node: d, index: 0 })
        ]
    );
    // Connected input, bad ports.
    let e = err_text(g.add_data_edge(out0(c), InPort { node: d, index: 0 }));
    assert!(e.contains("already connected"), "{e}");
    assert!(g
        .add_data_edge(OutPort { node: a, index: 1 }, InPort { node: c, index: 0 })
        .is_err());
    assert!(g
        .add_data_edge(out0(c), InPort { node: d, index: 2 })
        .is_err());
    // Remove edge.
    g.remove_data_edge(out0(a), InPort { node: d, index: 1 })
        .unwrap();
    assert_eq!(g.producer(d, 1).unwrap(), None);
    assert!(g
        .remove_data_edge(out0(a), InPort { node: d, index: 1 })
        .is_err());
    assert!(g
        .remove_data_edge(out0(c), InPort { node: d, index: 0 })
        .is_err());
    assert_eq!(g.out_edges(a).unwrap().len(), 2);
    assert!(g.check_integrity().is_ok());
    assert!(g.out_desc(out0(a)).is_ok());
    assert!(g.out_desc(OutPort { node: a, index: 3 }).is_err());
}

#[test]
fn graph_remove_node_clears_everything() {
    let (mut g, a, b, c) = chain();
    let removed = g.remove_node(b).unwrap();
    assert!(removed.name == "b");
    assert_eq!(g.node_count(), 2);
    assert!(g.out_edges(a).unwrap().is_empty(), "consumer list of a");
    assert_eq!(g.producer(c, 0).unwrap(), None, "input of c");
    assert!(g.node(a).unwrap().out_control.is_empty());
    assert!(g.node(c).unwrap().in_control.is_empty());
    assert_eq!(g.outputs, vec![out0(c)], "graph output b:0 dropped");
    assert_eq!(g.find("b"), None);
    assert!(!g.contains(b));
    assert!(g.check_integrity().is_ok());
    assert_eq!(names(&g, &g.topo_order().unwrap()), vec!["a", "c"]);
}

#[test]
fn graph_stale_node_id_is_an_error() {
    let (mut g, a, b, c) = chain();
    g.remove_node(b).unwrap();
    // The slot is reused by a new node with the same name; the old id must still be stale.
    let b2 = g.add_node(raw_node("b", "Relu", 1, 1)).unwrap();
    assert_ne!(b, b2);
    assert_eq!(g.find("b"), Some(b2));
    assert!(g.node(b).is_err());
    assert!(g.node_mut(b).is_err());
    assert!(g.remove_node(b).is_err());
    assert!(g
        .add_data_edge(out0(b), InPort { node: c, index: 0 })
        .is_err());
    assert!(g
        .add_data_edge(out0(a), InPort { node: b, index: 0 })
        .is_err());
    assert!(g
        .remove_data_edge(out0(a), InPort { node: b, index: 0 })
        .is_err());
    assert!(g.add_control_edge(b, c).is_err());
    assert!(g.add_control_edge(a, b).is_err());
    assert!(g.remove_control_edge(a, b).is_err());
    assert!(g.rename_node(b, "zz").is_err());
    assert!(g.out_edges(b).is_err());
    assert!(g.producer(b, 0).is_err());
    assert!(g.out_desc(out0(b)).is_err());
    assert!(g.set_output(0, out0(b)).is_err());
    assert!(!g.contains(b));
    // Nothing changed by the failed calls.
    assert_eq!(all_names(&g), vec!["a", "c", "b"]);
    assert!(g.check_integrity().is_ok());
    // Ids from another graph are not followed either (they may be valid keys there).
    let other = Graph::new("other");
    assert!(other.node(a).is_err());
}

#[test]
fn graph_names_unique_and_rename() {
    let mut g = Graph::new("g");
    let a = g.add_node(raw_node("a", "Relu", 0, 1)).unwrap();
    let e = err_text(g.add_node(raw_node("a", "Add", 0, 1)));
    assert!(e.contains("'a'"), "{e}");
    assert!(g.add_node(raw_node("", "Add", 0, 1)).is_err());
    assert_eq!(g.node_count(), 1);
    let b = g.add_node(raw_node("b", "Relu", 0, 1)).unwrap();
    assert!(g.rename_node(b, "a").is_err());
    g.rename_node(b, "b").unwrap();
    g.rename_node(b, "bee").unwrap();
    assert_eq!(g.find("bee"), Some(b));
    assert_eq!(g.find("b"), None);
    assert!(g.node(b).unwrap().name == "bee");
    // The old name is free again.
    g.add_node(raw_node("b", "Relu", 0, 1)).unwrap();
    assert_eq!(g.unique_name("a"), "a_1");
    assert_eq!(g.unique_name("fresh"), "fresh");
    g.add_node(raw_node("a_1", "Relu", 0, 1)).unwrap();
    assert_eq!(g.unique_name("a"), "a_2");
    assert_eq!(g.find("a"), Some(a));
    assert!(g.check_integrity().is_ok());
}

#[test]
fn graph_add_node_ignores_stored_edges() {
    let mut g = Graph::new("g");
    let a = g.add_node(raw_node("a", "Relu", 0, 1)).unwrap();
    let mut n = raw_node("b", "Relu", 1, 1);
    n.inputs[0].source = Some(out0(a));
    n.outputs[0].consumers.push(InPort { node: a, index: 0 });
    n.in_control.push(a);
    let b = g.add_node(n).unwrap();
    let nb = g.node(b).unwrap();
    assert!(
        nb.inputs[0].source.is_none()
            && nb.outputs[0].consumers.is_empty()
            && nb.in_control.is_empty()
    );
    assert!(g.check_integrity().is_ok());
}

#[test]
fn graph_control_edges() {
    let mut g = Graph::new("g");
    let a = g.add_node(raw_node("a", "Relu", 0, 1)).unwrap();
    let b = g.add_node(raw_node("b", "Relu", 0, 1)).unwrap();
    let e = err_text(g.add_control_edge(a, a));
    assert!(e.contains("itself"), "{e}");
    g.add_control_edge(a, b).unwrap();
    g.add_control_edge(a, b).unwrap();
    assert_eq!(
        g.node(b).unwrap().in_control,
        vec![a],
        "no duplicate control edge"
    );
    assert_eq!(g.node(a).unwrap().out_control, vec![b]);
    assert!(g.remove_control_edge(b, a).is_err());
    g.remove_control_edge(a, b).unwrap();
    assert!(g.node(b).unwrap().in_control.is_empty());
    assert!(g.node(a).unwrap().out_control.is_empty());
    assert!(g.remove_control_edge(a, b).is_err());
    // Control edges order topologically.
    g.add_control_edge(b, a).unwrap();
    assert_eq!(names(&g, &g.topo_order().unwrap()), vec!["b", "a"]);
}

#[test]
fn graph_topo_order_is_stable() {
    let mut g = Graph::new("g");
    // Created: z (consumes s), m (independent), s (source), k (independent).
    let z = g.add_node(raw_node("z", "Relu", 1, 1)).unwrap();
    let _m = g.add_node(raw_node("m", "Relu", 0, 1)).unwrap();
    let s = g.add_node(raw_node("s", "Relu", 0, 1)).unwrap();
    let _k = g.add_node(raw_node("k", "Relu", 0, 1)).unwrap();
    g.add_data_edge(out0(s), InPort { node: z, index: 0 })
        .unwrap();
    // Ties in creation order: z becomes ready after s and goes before k (its seq is lower).
    assert_eq!(
        names(&g, &g.topo_order().unwrap()),
        vec!["m", "s", "z", "k"]
    );
    // Same answer every time.
    for _ in 0..5 {
        assert_eq!(
            names(&g, &g.topo_order().unwrap()),
            vec!["m", "s", "z", "k"]
        );
    }
    // Without edges: creation order.
    let mut h = Graph::new("h");
    for n in ["d", "c", "b", "a"] {
        h.add_node(raw_node(n, "Relu", 0, 1)).unwrap();
    }
    assert_eq!(
        names(&h, &h.topo_order().unwrap()),
        vec!["d", "c", "b", "a"]
    );
    assert_eq!(all_names(&h), vec!["d", "c", "b", "a"]);
}

#[test]
fn graph_cycle_detection_names_nodes() {
    let mut g = Graph::new("cyc");
    let free = g.add_node(raw_node("free_node", "Relu", 0, 1)).unwrap();
    let a = g.add_node(raw_node("cyc_a", "Relu", 1, 1)).unwrap();
    let b = g.add_node(raw_node("cyc_b", "Relu", 1, 1)).unwrap();
    let after = g.add_node(raw_node("after_cycle", "Relu", 1, 1)).unwrap();
    g.add_data_edge(out0(a), InPort { node: b, index: 0 })
        .unwrap();
    g.add_data_edge(out0(b), InPort { node: a, index: 0 })
        .unwrap();
    g.add_data_edge(
        out0(free),
        InPort {
            node: after,
            index: 0,
        },
    )
    .unwrap();
    let e = err_text(g.topo_order());
    assert!(
        e.contains("cycle") && e.contains("cyc_a") && e.contains("cyc_b"),
        "{e}"
    );
    assert!(
        !e.contains("free_node") && !e.contains("after_cycle"),
        "{e}"
    );
    assert!(g.validate().is_err());
    // A control-edge cycle too.
    let mut h = Graph::new("ctl");
    let x = h.add_node(raw_node("x", "Relu", 0, 1)).unwrap();
    let y = h.add_node(raw_node("y", "Relu", 0, 1)).unwrap();
    h.add_control_edge(x, y).unwrap();
    h.add_control_edge(y, x).unwrap();
    let e = err_text(h.topo_order());
    assert!(e.contains("x") && e.contains("y"), "{e}");
    // Dumps of a cyclic graph do not fail.
    assert!(dump::readable(&g).contains("cyc_a"));
    assert!(dump::txt(&h).contains("control_input"));
}

#[test]
fn graph_validate_errors() {
    // A valid graph: Data(0) -> Relu -> output.
    let valid = || {
        let mut g = Graph::new("v");
        let d = g.add_node(raw_data("d0", 0)).unwrap();
        let r = g.add_node(raw_node("r", "Relu", 1, 1)).unwrap();
        g.add_data_edge(out0(d), InPort { node: r, index: 0 })
            .unwrap();
        g.set_output(0, out0(r)).unwrap();
        (g, d, r)
    };
    let (g, _, _) = valid();
    g.validate().unwrap();

    // Unconnected required input.
    let (mut g, d, r) = valid();
    g.remove_data_edge(out0(d), InPort { node: r, index: 0 })
        .unwrap();
    let e = err_text(g.validate());
    assert!(e.contains("not connected") && e.contains("'r'"), "{e}");

    // Unconnected optional input is fine (BatchNorm-like: use a prototype with an optional input).
    let reg = global_registry();
    if let Some((op, ir)) = reg.iter().find_map(|p| {
        p.inputs
            .iter()
            .position(|i| i.kind == es_core::ops::IoKind::Optional)
            .map(|ir| (p.name.to_string(), ir))
    }) {
        let mut g = Graph::new("opt");
        let mut n = raw_node("o", &op, 0, 1);
        n.inputs
            .push(InputSlot::new("opt", ir as u32, TensorDesc::default()));
        for a in &reg.get(&op).unwrap().attrs {
            n.attrs
                .insert(a.name.to_string(), a.default.clone().unwrap_or(ints(0)));
        }
        g.add_node(n).unwrap();
        g.validate().unwrap();
    }

    // Missing required attribute.
    let (mut g, d, _) = valid();
    let c = g.add_node(raw_node("cat", "ConcatD", 1, 1)).unwrap();
    g.add_data_edge(out0(d), InPort { node: c, index: 0 })
        .unwrap();
    let e = err_text(g.validate());
    assert!(e.contains("concat_dim") && e.contains("'cat'"), "{e}");
    g.node_mut(c)
        .unwrap()
        .attrs
        .insert("concat_dim".into(), ints(0));
    g.validate().unwrap();

    // Data index gap.
    let (mut g, _, _) = valid();
    g.add_node(raw_data("d2", 2)).unwrap();
    let e = err_text(g.validate());
    assert!(e.contains("gaps") && e.contains("d2"), "{e}");
    g.add_node(raw_data("d1", 1)).unwrap();
    g.validate().unwrap();

    // Data index repeated.
    let (mut g, _, _) = valid();
    g.add_node(raw_data("again", 0)).unwrap();
    let e = err_text(g.validate());
    assert!(e.contains("both have index 0"), "{e}");
    assert!(e.contains("d0") && e.contains("again"), "{e}");

    // Unset output.
    let (mut g, _, r) = valid();
    g.set_output(3, out0(r)).unwrap();
    let e = err_text(g.validate());
    assert!(e.contains("output 1 is not set"), "{e}");
    g.set_output(1, out0(r)).unwrap();
    g.set_output(2, out0(r)).unwrap();
    g.validate().unwrap();
    assert_eq!(g.outputs.len(), 4);
    assert!(g.set_output(10_000_000, out0(r)).is_err());
    assert!(g.set_output(0, OutPort { node: r, index: 9 }).is_err());

    // A broken subgraph fails the parent, naming the subgraph.
    let (mut g, _, r) = valid();
    let (mut sub, sd, sr) = valid();
    sub.remove_data_edge(out0(sd), InPort { node: sr, index: 0 })
        .unwrap();
    g.node_mut(r)
        .unwrap()
        .subgraphs
        .push(es_core::graph::SubgraphSlot {
            name: "body".into(),
            ir_index: 0,
            graph: sub,
        });
    let e = err_text(g.validate());
    assert!(e.contains("body"), "{e}");
}

#[test]
fn graph_input_nodes_sorted_by_index() {
    let mut g = Graph::new("g");
    g.add_node(raw_data("i2", 2)).unwrap();
    g.add_node(raw_node("not_input", "Relu", 0, 1)).unwrap();
    g.add_node(raw_data("i0", 0)).unwrap();
    let mut v = raw_node("i1", "RefData", 1, 1);
    v.attrs.insert("index".into(), ints(1));
    g.add_node(v).unwrap();
    assert_eq!(names(&g, &g.input_nodes()), vec!["i0", "i1", "i2"]);
}

// =============================================================================================
// 5. builder
// =============================================================================================

#[test]
fn builder_failed_add_op_leaves_graph_unchanged() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2, 3]);
    let y = data(&mut b, 1, &[4, 5]);
    let i = b
        .create_input(
            2,
            None,
            "Data",
            DataType::INT32,
            Format::ND,
            Shape::new(vec![2, 3]),
        )
        .unwrap();
    let ok = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    let before = b.graph().clone();
    let before_names = all_names(&before);

    let mut named = args(vec![one(x)], &[]);
    named.name = Some(b.graph().node(ok).unwrap().name.to_string());
    let mut if_no_count = args(vec![one(i), vec![Some(x)]], &[]);
    if_no_count.subgraphs = vec![vec![branch("t")], vec![branch("e")]];
    let mut if_missing_branch = args(vec![one(i), vec![Some(x)]], &[]);
    if_missing_branch.output_counts.insert("output".into(), 1);
    if_missing_branch.subgraphs = vec![vec![branch("t")]];
    let stale = OutPort {
        node: NodeId::default(),
        index: 0,
    };

    let failures: Vec<(&str, OpArgs)> = vec![
        ("NoSuchOp", args(vec![], &[])),
        ("Add", args(vec![one(x)], &[])),
        ("Add", args(vec![one(x), vec![None]], &[])),
        ("Add", args(vec![one(x), vec![Some(x), Some(x)]], &[])),
        ("Pow", args(vec![one(x), one(i)], &[])),
        ("Add", args(vec![one(x), one(y)], &[])),
        (
            "Add",
            args(
                vec![
                    one(x),
                    one(OutPort {
                        node: x.node,
                        index: 7,
                    }),
                ],
                &[],
            ),
        ),
        ("Add", args(vec![one(x), one(stale)], &[])),
        ("Relu", args(vec![one(x)], &[("bogus", ints(1))])),
        ("Relu", named),
        ("ConcatD", args(vec![vec![Some(x), Some(x)]], &[])),
        (
            "ConcatD",
            args(
                vec![vec![Some(x), Some(x)]],
                &[("concat_dim", AttrValue::Float(0.0))],
            ),
        ),
        (
            "ConcatD",
            args(
                vec![vec![Some(x), Some(x)]],
                &[("concat_dim", ints(0)), ("N", ints(3))],
            ),
        ),
        (
            "ConcatD",
            args(vec![vec![Some(x), None]], &[("concat_dim", ints(0))]),
        ),
        (
            "ConcatD",
            args(vec![vec![Some(x), Some(x)]], &[("concat_dim", ints(5))]),
        ),
        (
            "ConcatD",
            args(vec![vec![Some(x), Some(y)]], &[("concat_dim", ints(0))]),
        ),
        (
            "SplitD",
            args(
                vec![one(x)],
                &[("split_dim", ints(0)), ("num_split", ints(-1))],
            ),
        ),
        (
            "SplitD",
            args(
                vec![one(x)],
                &[("split_dim", ints(0)), ("num_split", ints(2_000_000))],
            ),
        ),
        (
            "SplitD",
            args(
                vec![one(x)],
                &[("split_dim", ints(1)), ("num_split", ints(2))],
            ),
        ),
        ("If", if_no_count),
        ("If", if_missing_branch),
    ];
    for (op, a) in failures {
        let dbg = format!("{op} {:?}", a.inputs);
        assert!(b.add_op(op, a).is_err(), "{dbg} should fail");
        assert_eq!(b.graph().node_count(), before.node_count(), "{dbg}");
        assert_eq!(all_names(b.graph()), before_names, "{dbg}");
        assert!(*b.graph() == before, "{dbg}: graph changed");
        for id in b.graph().nodes() {
            assert_eq!(
                b.graph().out_edges(id).unwrap(),
                before.out_edges(id).unwrap(),
                "{dbg}"
            );
        }
    }
    // The builder still works afterwards. (A call that fails after naming, e.g. in inference,
    // currently uses up an auto name, so only the prefix is checked.)
    let a = b.add_op("Add", args(vec![one(x), one(x)], &[])).unwrap();
    let name = b.graph().node(a).unwrap().name.to_string();
    assert!(
        name.starts_with("Add_") && !before_names.contains(&name),
        "{name}"
    );
    assert_eq!(b.graph().node_count(), before.node_count() + 1);
}

#[test]
fn builder_auto_names_and_collisions() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[4]);
    assert!(b.graph().node(x.node).unwrap().name == "input_0");
    let mut made = Vec::new();
    for _ in 0..3 {
        made.push(b.add_op("Relu", args(vec![one(x)], &[])).unwrap());
    }
    let a0 = b.add_op("Add", args(vec![one(x), one(x)], &[])).unwrap();
    assert_eq!(names(b.graph(), &made), vec!["Relu_0", "Relu_1", "Relu_2"]);
    assert!(b.graph().node(a0).unwrap().name == "Add_0");
    // An explicit name that the counter would produce next is skipped over.
    let mut a = args(vec![one(x)], &[]);
    a.name = Some("Relu_3".into());
    b.add_op("Relu", a).unwrap();
    let r = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    assert!(b.graph().node(r).unwrap().name == "Relu_4");
    // Explicit collisions are errors, for ops, inputs and consts.
    let mut a = args(vec![one(x)], &[]);
    a.name = Some("Add_0".into());
    let e = err_text(b.add_op("Relu", a));
    assert!(e.contains("Add_0"), "{e}");
    assert!(b
        .create_input(
            1,
            Some("Relu_0".into()),
            "Data",
            DataType::FLOAT,
            Format::ND,
            Shape::scalar()
        )
        .is_err());
    assert!(b
        .create_const(Tensor::scalar(1i32), Some("input_0".into()))
        .is_err());
    let c0 = b.create_const(Tensor::scalar(1i32), None).unwrap();
    assert!(b.graph().node(c0.node).unwrap().name == "Const_0");
    assert_eq!(
        b.graph().node(c0.node).unwrap().const_value(),
        Some(&Tensor::scalar(1i32))
    );
    // build_and_reset empties the builder and restarts the counters.
    b.set_output(out0(r), 0).unwrap();
    let g = b.build_and_reset().unwrap();
    assert_eq!(g.node_count(), 8);
    assert_eq!(b.graph().node_count(), 0);
    assert!(b.graph().name == "g");
    let x = data(&mut b, 0, &[4]);
    let r = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    assert!(b.graph().node(r).unwrap().name == "Relu_0");
}

#[test]
fn builder_create_input_checks() {
    let mut b = GraphBuilder::new("g");
    data(&mut b, 0, &[2]);
    assert!(b
        .create_input(
            -1,
            None,
            "Data",
            DataType::FLOAT,
            Format::ND,
            Shape::scalar()
        )
        .is_err());
    assert!(b
        .create_input(
            0,
            Some("other".into()),
            "Data",
            DataType::FLOAT,
            Format::ND,
            Shape::scalar()
        )
        .is_err());
    assert!(b
        .create_input(
            1,
            None,
            "Relu",
            DataType::FLOAT,
            Format::ND,
            Shape::scalar()
        )
        .is_err());
    assert!(b
        .create_input(
            1,
            None,
            "Data",
            DataType::FLOAT,
            Format::ND,
            Shape::new(vec![-5])
        )
        .is_err());
    assert_eq!(b.graph().node_count(), 1);
    let p = b
        .create_input(
            1,
            Some("nhwc".into()),
            "RefData",
            DataType::FLOAT16,
            Format::NHWC,
            Shape::new(vec![1, 2, 2, 3]),
        )
        .unwrap();
    let d = b.graph().out_desc(p).unwrap();
    assert_eq!((d.dtype, d.format), (DataType::FLOAT16, Format::NHWC));
    assert_eq!(d.shape.dims(), &[1, 2, 2, 3]);
    assert_eq!(b.graph().input_nodes().len(), 2);
}

#[test]
fn builder_derived_attrs_and_dynamic_outputs() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2, 3]);
    let y = data(&mut b, 1, &[4, 3]);
    // ConcatD: N is derived from the number of inputs.
    let cat = b
        .add_op(
            "ConcatD",
            args(
                vec![vec![Some(x), Some(y), Some(x)]],
                &[("concat_dim", ints(0))],
            ),
        )
        .unwrap();
    let n = b.graph().node(cat).unwrap();
    assert_eq!(n.attr("N"), Some(&ints(3)));
    assert_eq!(n.inputs.len(), 3);
    let in_names: Vec<String> = n.inputs.iter().map(|i| i.name.to_string()).collect();
    assert_eq!(in_names, vec!["x0", "x1", "x2"]);
    assert_eq!(b.graph().out_desc(out0(cat)).unwrap().shape.dims(), &[8, 3]);
    // Giving the right N is fine.
    b.add_op(
        "ConcatD",
        args(
            vec![vec![Some(x), Some(y)]],
            &[("concat_dim", ints(0)), ("N", ints(2))],
        ),
    )
    .unwrap();

    // SplitD: output count from the num_split attribute.
    let sp = b
        .add_op(
            "SplitD",
            args(
                vec![one(out0(cat))],
                &[("split_dim", ints(0)), ("num_split", ints(4))],
            ),
        )
        .unwrap();
    let n = b.graph().node(sp).unwrap();
    let out_names: Vec<String> = n.outputs.iter().map(|o| o.name.to_string()).collect();
    assert_eq!(out_names, vec!["y0", "y1", "y2", "y3"]);
    for o in &n.outputs {
        assert_eq!(o.desc.shape.dims(), &[2, 3]);
        assert_eq!(o.desc.dtype, DataType::FLOAT);
    }
    let sp0 = b
        .add_op(
            "SplitD",
            args(
                vec![one(out0(cat))],
                &[("split_dim", ints(0)), ("num_split", ints(1))],
            ),
        )
        .unwrap();
    assert_eq!(b.graph().node(sp0).unwrap().outputs.len(), 1);

    // IdentityN: output count = number of inputs.
    let idn = b
        .add_op(
            "IdentityN",
            args(
                vec![vec![Some(x), Some(y), Some(OutPort { node: sp, index: 3 })]],
                &[],
            ),
        )
        .unwrap();
    let n = b.graph().node(idn).unwrap();
    assert_eq!(n.outputs.len(), 3);
    assert_eq!(n.outputs[1].desc.shape.dims(), &[4, 3]);

    // If: output count has to be given; subgraphs attach with their parent set.
    let cond = b
        .create_input(2, None, "Data", DataType::BOOL, Format::ND, Shape::scalar())
        .unwrap();
    let e = err_text(b.add_op("If", {
        let mut a = args(vec![one(cond), vec![Some(x)]], &[]);
        a.subgraphs = vec![vec![branch("t")], vec![branch("e")]];
        a
    }));
    assert!(e.contains("output_num"), "{e}");
    let mut a = args(vec![one(cond), vec![Some(x), Some(y)]], &[]);
    a.output_counts.insert("output".into(), 2);
    a.subgraphs = vec![vec![branch("t")], vec![branch("e")]];
    a.name = Some("iff".into());
    let iff = b.add_op("If", a).unwrap();
    let n = b.graph().node(iff).unwrap();
    assert_eq!(n.outputs.len(), 2);
    let sub_names: Vec<String> = n.subgraphs.iter().map(|s| s.name.to_string()).collect();
    assert_eq!(sub_names, vec!["then_branch", "else_branch"]);
    for s in &n.subgraphs {
        assert_eq!(s.graph.parent_node.as_deref(), Some("iff"));
    }
    assert!(n.subgraph("then_branch").unwrap().name == "t");
    assert!(n.subgraph("nope").is_none());

    // Case: a dynamic subgraph list, instances named branches0, branches1, ...
    let bi = b.create_const(Tensor::scalar(0i32), None).unwrap();
    let mut a = args(vec![one(bi), vec![Some(x)]], &[]);
    a.output_counts.insert("output".into(), 1);
    a.subgraphs = vec![vec![branch("b0"), branch("b1"), branch("b2")]];
    let case = b.add_op("Case", a).unwrap();
    let n = b.graph().node(case).unwrap();
    let sub_names: Vec<String> = n.subgraphs.iter().map(|s| s.name.to_string()).collect();
    assert_eq!(sub_names, vec!["branches0", "branches1", "branches2"]);
    let parent = n.name.to_string();
    for s in &n.subgraphs {
        assert_eq!(s.graph.parent_node.as_deref(), Some(parent.as_str()));
    }

    // While: one output per loop variable.
    let mut a = args(vec![vec![Some(x), Some(y)]], &[]);
    a.output_counts.insert("output".into(), 2);
    a.subgraphs = vec![vec![branch("cond")], vec![branch("body")]];
    let w = b.add_op("While", a).unwrap();
    assert_eq!(
        b.graph().node(w).unwrap().attr("parallel_iterations"),
        Some(&ints(10))
    );

    b.set_output(out0(iff), 0).unwrap();
    let g = b.build_and_reset().unwrap();
    assert_eq!(g.all_subgraphs().len(), 7);
    g.validate().unwrap();
}

#[test]
fn builder_defaults_and_control_dependencies() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let r1 = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    let r2 = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    b.add_control_dependency(r2, &[r1, x.node]).unwrap();
    assert_eq!(b.graph().node(r2).unwrap().in_control, vec![r1, x.node]);
    assert!(b.add_control_dependency(r2, &[r2]).is_err());
    assert!(b.proto("Relu").is_ok());
    assert!(b.proto("Nope").is_err());
    assert!(b.registry().get("Add").is_some());
}

// =============================================================================================
// 6. serialize + dump
// =============================================================================================

#[test]
fn serialize_round_trip_rich_graph() {
    let g = rich_graph();
    g.validate().unwrap();
    let bytes = to_bytes(&g).unwrap();
    assert_eq!(&bytes[..8], MAGIC);
    assert_eq!(&bytes[8..12], &FORMAT_VERSION.to_le_bytes());
    let back = from_bytes(&bytes).unwrap();
    assert!(back == g, "round trip differs");
    back.validate().unwrap();
    back.check_integrity().unwrap();
    // Deterministic: saving the loaded graph gives the same bytes.
    assert_eq!(to_bytes(&back).unwrap(), bytes);
    // Subgraphs, control edges, attributes and descs all came back.
    let iff = back.find("branchy").unwrap();
    let n = back.node(iff).unwrap();
    assert_eq!(n.subgraphs.len(), 2);
    assert_eq!(n.subgraphs[0].graph.parent_node.as_deref(), Some("branchy"));
    assert_eq!(n.in_control, vec![back.find("Add_0").unwrap()]);
    assert_eq!(
        back.node(back.find("Add_0").unwrap()).unwrap().out_control,
        vec![iff]
    );
    let mul = back.node(back.find("Mul_0").unwrap()).unwrap();
    assert_eq!(
        mul.private_attrs.get("_nan"),
        Some(&AttrValue::Float(f32::NAN))
    );
    assert!(matches!(mul.private_attrs.get("_nan"), Some(AttrValue::Float(v)) if v.is_nan()));
    assert_eq!(
        mul.outputs[0].desc.attrs.get("_out_attr"),
        Some(&AttrValue::String("tag".into()))
    );
    assert_eq!(mul.outputs[0].desc.format, Format::NCHW);
    assert_eq!(
        names(&back, &back.topo_order().unwrap()),
        names(&g, &g.topo_order().unwrap())
    );
    assert_eq!(dump::txt(&back), dump::txt(&g));
    assert_eq!(dump::readable(&back), dump::readable(&g));
    // The loaded graph is fully usable: its name index works and ids are live.
    let mut back = back;
    let extra = back.add_node(raw_node("extra", "Relu", 1, 1)).unwrap();
    back.add_data_edge(
        out0(back.find("Add_0").unwrap()),
        InPort {
            node: extra,
            index: 0,
        },
    )
    .unwrap();
    assert!(
        back.add_node(raw_node("Add_0", "Relu", 0, 1)).is_err(),
        "names reindexed"
    );
    assert!(back != g);
}

#[test]
fn serialize_equality_sees_differences() {
    let g = rich_graph();
    let mut h = g.clone();
    assert!(h == g);
    let id = h.find("Mul_0").unwrap();
    h.node_mut(id)
        .unwrap()
        .private_attrs
        .insert("_nan".into(), AttrValue::Float(1.0));
    assert!(h != g);
    let mut h = g.clone();
    h.node_mut(id).unwrap().outputs[0].desc.attrs.clear();
    assert!(h != g);
    let mut h = g.clone();
    let iff = h.find("branchy").unwrap();
    h.node_mut(iff).unwrap().subgraphs[0]
        .graph
        .attrs
        .insert("x".into(), ints(1));
    assert!(h != g);
    let mut h = g.clone();
    let add = h.find("Add_0").unwrap();
    h.remove_control_edge(add, iff).unwrap();
    assert!(h != g);
    let mut h = g.clone();
    h.outputs.swap(0, 1);
    assert!(h != g);
}

#[test]
fn serialize_round_trip_after_removals() {
    let (mut g, _, b, _) = chain();
    g.remove_node(b).unwrap();
    g.add_node(raw_node("new", "Relu", 0, 1)).unwrap();
    let back = from_bytes(&to_bytes(&g).unwrap()).unwrap();
    assert!(back == g);
    assert_eq!(all_names(&back), vec!["a", "c", "new"]);
    // Creation order continues after loading.
    let mut back = back;
    back.add_node(raw_node("later", "Relu", 0, 1)).unwrap();
    assert_eq!(all_names(&back), vec!["a", "c", "new", "later"]);
}

#[test]
fn serialize_save_and_load_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.gers");
    let g = rich_graph();
    serialize::save(&g, &path).unwrap();
    let back = serialize::load(&path).unwrap();
    assert!(back == g);
    assert!(matches!(
        serialize::load(&dir.path().join("missing")),
        Err(Error::Serialization(_))
    ));
    std::fs::write(&path, b"GERSGRPH").unwrap();
    assert!(serialize::load(&path).is_err());
}

#[test]
fn from_bytes_rejects_bad_headers() {
    let bytes = to_bytes(&small_graph()).unwrap();
    assert!(from_bytes(&bytes).is_ok());
    assert!(matches!(from_bytes(&[]), Err(Error::Serialization(_))));
    assert!(from_bytes(b"GERSGRPH").is_err());
    let mut bad_magic = bytes.clone();
    bad_magic[0] = b'X';
    assert!(from_bytes(&bad_magic)
        .unwrap_err()
        .to_string()
        .contains("magic"));
    for v in [0u32, FORMAT_VERSION + 1, 255, u32::MAX] {
        let mut b = bytes.clone();
        b[8..12].copy_from_slice(&v.to_le_bytes());
        let e = from_bytes(&b).unwrap_err();
        assert!(
            matches!(e, Error::Serialization(_)) && e.to_string().contains("version"),
            "{v}: {e}"
        );
    }
    let mut trailing_junk = MAGIC.to_vec();
    trailing_junk.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    trailing_junk.extend_from_slice(b"\xc1\xc1\xc1");
    assert!(from_bytes(&trailing_junk).is_err());
}

#[test]
fn from_bytes_every_truncation_is_an_error() {
    let bytes = to_bytes(&small_graph()).unwrap();
    for len in 0..bytes.len() {
        match load_no_panic(&bytes[..len]) {
            Ok(false) => {}
            Ok(true) => panic!("truncation to {len} of {} bytes loaded", bytes.len()),
            Err(msg) => panic!("truncation to {len} panicked: {msg}"),
        }
    }
}

#[test]
fn from_bytes_every_byte_flip_never_panics() {
    let bytes = to_bytes(&small_graph()).unwrap();
    let mut panics = Vec::new();
    let mut loaded = 0;
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xFF, 0x10] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            match load_no_panic(&b) {
                Ok(ok) => loaded += ok as usize,
                Err(msg) => panics.push(format!("byte {i} ^ {mask:#x}: {msg}")),
            }
        }
    }
    assert!(
        panics.is_empty(),
        "{} panics, first: {:?}",
        panics.len(),
        &panics[..panics.len().min(5)]
    );
    // Some flips (in names, attribute values) still give a valid graph; that is fine.
    assert!(loaded > 0);
}

#[test]
fn from_bytes_random_garbage_is_an_error() {
    for seed in 0..200u64 {
        let n = (seed as usize * 37) % 600;
        let mut junk = pseudo_random(seed + 1, n);
        assert!(matches!(load_no_panic(&junk), Ok(false)), "seed {seed}");
        // With a valid header, the body is garbage.
        let mut with_header = MAGIC.to_vec();
        with_header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        with_header.append(&mut junk);
        assert!(load_no_panic(&with_header).is_ok(), "seed {seed} panicked");
    }
}

/// Edits the JSON form of a graph (serde's form, the same structure the file holds), writes it
/// back with `to_bytes` and loads it.
fn load_edited(g: &Graph, edit: impl FnOnce(&mut serde_json::Value)) -> es_core::Result<Graph> {
    let mut j = serde_json::to_value(g).unwrap();
    edit(&mut j);
    let crafted: Graph = serde_json::from_value(j).expect("the edited JSON is still a Graph");
    from_bytes(&to_bytes(&crafted).unwrap())
}

/// The JSON object of the node named `name` in serde's form of a graph.
fn node_json<'a>(j: &'a mut serde_json::Value, name: &str) -> &'a mut serde_json::Value {
    let slots = j["nodes"]
        .as_array_mut()
        .expect("nodes serialize as a list of slots");
    slots
        .iter_mut()
        .filter_map(|s| s.get_mut("value"))
        .find(|v| v.get("name").and_then(|n| n.as_str()) == Some(name))
        .expect("node in JSON")
}

#[test]
fn check_integrity_catches_crafted_graphs() {
    let g = small_graph();
    // Unedited: loads.
    assert!(load_edited(&g, |_| {}).unwrap() == g);
    // A one-sided data edge: Add's consumer list emptied.
    let e = load_edited(&g, |j| {
        node_json(j, "Add_0")["outputs"][0]["consumers"] = serde_json::json!([]);
    })
    .unwrap_err();
    assert!(
        matches!(e, Error::Serialization(_)) && e.to_string().contains("one-sided"),
        "{e}"
    );
    // An input that points at a missing output port.
    let e = load_edited(&g, |j| {
        node_json(j, "Relu_0")["inputs"][0]["source"]["index"] = serde_json::json!(5);
    })
    .unwrap_err();
    assert!(matches!(e, Error::Serialization(_)), "{e}");
    assert!(
        e.to_string().contains("Relu_0") || e.to_string().contains("Add_0"),
        "{e}"
    );
    // A consumer entry that points at a missing input.
    let e = load_edited(&g, |j| {
        node_json(j, "Add_0")["outputs"][0]["consumers"][0]["index"] = serde_json::json!(3);
    })
    .unwrap_err();
    assert!(matches!(e, Error::Serialization(_)), "{e}");
    assert!(e.to_string().contains("Add_0"), "{e}");
    // Two nodes with the same name.
    let e = load_edited(&g, |j| {
        node_json(j, "Relu_0")["name"] = serde_json::json!("Add_0");
    })
    .unwrap_err();
    assert!(e.to_string().contains("unique"), "{e}");
    // A graph output at a missing port.
    let e = load_edited(&g, |j| {
        j["outputs"][0]["index"] = serde_json::json!(9);
    })
    .unwrap_err();
    assert!(e.to_string().contains("output 0"), "{e}");
    // A control edge to a node that does not exist.
    let e = load_edited(&g, |j| {
        let n = node_json(j, "Relu_0");
        let mut bogus = n["in_control"][0].clone();
        bogus["idx"] = serde_json::json!(999);
        n["in_control"][0] = bogus;
    })
    .unwrap_err();
    assert!(e.to_string().contains("control"), "{e}");
}

#[test]
fn dumps_mention_everything() {
    let g = rich_graph();
    let r = dump::readable(&g);
    assert!(r.starts_with("graph rich("), "{r}");
    for s in [
        "%input_0",
        "Add(",
        "ConcatD(",
        "SplitD(",
        "subgraph then_branch",
        "after[^Add_0]",
        "return",
        "_nan",
    ] {
        assert!(r.contains(s), "readable dump lacks {s:?}:\n{r}");
    }
    let t = dump::txt(&g);
    for s in [
        "name: \"rich\"",
        "type: \"If\"",
        "control_input: \"Add_0\"",
        "private_attr { key: \"_nan\"",
        "key: \"_out_attr\"",
        "parent_node: \"branchy\"",
        "output { index: 1",
        "key: \"graph_attr\"",
    ] {
        assert!(t.contains(s), "txt dump lacks {s:?}:\n{t}");
    }
    // Removed producers are shown, not followed.
    let (mut c, _, b, _) = chain();
    c.remove_node(b).unwrap();
    assert!(dump::txt(&c).contains("source: None"));
    let _ = dump::readable(&Graph::new("empty"));
}

// =============================================================================================
// 7. proptest
// =============================================================================================

/// One op of a random DAG: kind (0 Add, 1 Relu, 2 Mul, 3 ConcatD), operand picks, concat axis,
/// and an optional control edge back to an earlier op.
#[derive(Debug, Clone)]
struct OpSpec {
    kind: u8,
    picks: Vec<usize>,
    axis: i64,
    ctl: Option<usize>,
}

fn op_spec() -> impl Strategy<Value = OpSpec> {
    (
        0u8..4,
        prop::collection::vec(any::<usize>(), 1..4),
        prop_oneof![4 => Just(0i64), 1 => Just(1i64)],
        prop::option::of(any::<usize>()),
    )
        .prop_map(|(kind, picks, axis, ctl)| OpSpec {
            kind,
            picks,
            axis,
            ctl,
        })
}

/// Builds the DAG; add_op failures (concat on axis 1 changes shapes, so later broadcasts can
/// fail) must leave the graph unchanged.
fn build_dag(n_inputs: usize, ops: &[OpSpec], n_outputs: usize) -> Graph {
    let mut b = GraphBuilder::new("dag");
    let mut pool: Vec<OutPort> = (0..n_inputs)
        .map(|i| data(&mut b, i as i64, &[UNKNOWN_DIM, 3]))
        .collect();
    let mut made: Vec<NodeId> = Vec::new();
    for op in ops {
        let pick = |k: usize| pool[op.picks[k % op.picks.len()] % pool.len()];
        let (ty, a) = match op.kind {
            0 => ("Add", args(vec![one(pick(0)), one(pick(1))], &[])),
            1 => ("Relu", args(vec![one(pick(0))], &[])),
            2 => ("Mul", args(vec![one(pick(0)), one(pick(1))], &[])),
            _ => (
                "ConcatD",
                args(
                    vec![(0..op.picks.len()).map(|k| Some(pick(k))).collect()],
                    &[("concat_dim", ints(op.axis))],
                ),
            ),
        };
        let before = b.graph().node_count();
        match b.add_op(ty, a) {
            Ok(id) => {
                if let (Some(c), false) = (op.ctl, made.is_empty()) {
                    b.add_control_dependency(id, &[made[c % made.len()]])
                        .unwrap();
                }
                made.push(id);
                pool.push(out0(id));
            }
            Err(_) => assert_eq!(b.graph().node_count(), before),
        }
    }
    for k in 0..n_outputs {
        let p = pool[pool.len() - 1 - (k % pool.len())];
        b.set_output(p, k).unwrap();
    }
    b.build_and_reset()
        .expect("a DAG built by the builder validates")
}

fn finite_or_special_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        8 => prop::num::f32::NORMAL | prop::num::f32::SUBNORMAL | prop::num::f32::ZERO,
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(f32::NAN),
    ]
}

fn dtype_strategy() -> impl Strategy<Value = DataType> {
    prop::sample::select(all_dtypes())
}

/// Tensors whose JSON form parses back exactly (integers within 2^24; see `sample_tensors`).
fn tensor_strategy() -> impl Strategy<Value = Tensor> {
    prop_oneof![
        prop::collection::vec(finite_or_special_f32(), 0..6).prop_map(|v| Tensor::from_values(
            &v,
            vec![v.len() as i64]
        )
        .unwrap()),
        prop::collection::vec(-(1i32 << 24)..=(1 << 24), 0..6).prop_map(|v| Tensor::from_values(
            &v,
            vec![v.len() as i64]
        )
        .unwrap()),
        prop::collection::vec(-(1i64 << 24)..=(1 << 24), 0..6).prop_map(|v| Tensor::from_values(
            &v,
            vec![1, v.len() as i64]
        )
        .unwrap()),
        prop::collection::vec(any::<u8>(), 0..6).prop_map(|v| Tensor::from_values(
            &v,
            vec![v.len() as i64]
        )
        .unwrap()),
        prop::collection::vec(any::<bool>(), 0..6).prop_map(|v| Tensor::from_values(
            &v,
            vec![v.len() as i64]
        )
        .unwrap()),
        any::<i16>().prop_map(Tensor::scalar),
    ]
}

fn attr_strategy() -> impl Strategy<Value = AttrValue> {
    let s = || "[a-zA-Z0-9 _\\-\"\\\\é]{0,12}";
    prop_oneof![
        any::<i64>().prop_map(AttrValue::Int),
        finite_or_special_f32().prop_map(AttrValue::Float),
        s().prop_map(AttrValue::String),
        any::<bool>().prop_map(AttrValue::Bool),
        dtype_strategy().prop_map(AttrValue::Type),
        prop::collection::vec(any::<i64>(), 0..6).prop_map(AttrValue::ListInt),
        prop::collection::vec(finite_or_special_f32(), 0..6).prop_map(AttrValue::ListFloat),
        prop::collection::vec(any::<bool>(), 0..6).prop_map(AttrValue::ListBool),
        prop::collection::vec(dtype_strategy(), 0..6).prop_map(AttrValue::ListType),
        prop::collection::vec(prop::collection::vec(any::<i64>(), 0..4), 0..4)
            .prop_map(AttrValue::ListListInt),
        tensor_strategy().prop_map(AttrValue::Tensor),
        prop::collection::vec(s(), 0..4).prop_map(AttrValue::ListString),
    ]
}

fn small_graph_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| to_bytes(&small_graph()).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_random_dag_round_trips_and_orders(
        n_inputs in 1usize..4,
        ops in prop::collection::vec(op_spec(), 1..16),
        n_outputs in 1usize..3,
    ) {
        let g = build_dag(n_inputs, &ops, n_outputs);
        let bytes = to_bytes(&g).unwrap();
        let back = from_bytes(&bytes).unwrap();
        prop_assert!(back == g);
        prop_assert_eq!(to_bytes(&back).unwrap(), bytes);
        for graph in [&g, &back] {
            let order = graph.topo_order().unwrap();
            prop_assert_eq!(order.len(), graph.node_count());
            let pos: HashMap<NodeId, usize> = order.iter().enumerate().map(|(i, id)| (*id, i)).collect();
            for &id in &order {
                let n = graph.node(id).unwrap();
                for inp in &n.inputs {
                    if let Some(src) = inp.source {
                        prop_assert!(pos[&src.node] < pos[&id], "data edge {:?} -> {:?}", src.node, id);
                    }
                }
                for c in &n.in_control {
                    prop_assert!(pos[c] < pos[&id]);
                }
            }
            // Stable: with the creation order as tie-break, a graph whose edges all go forward
            // in creation order is ordered exactly in creation order.
            prop_assert_eq!(order, graph.nodes());
        }
        prop_assert_eq!(dump::txt(&back), dump::txt(&g));
    }

    #[test]
    fn prop_byte_corruption_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut b = small_graph_bytes().to_vec();
        for (i, v) in &edits {
            let k = i.index(b.len());
            b[k] = *v;
        }
        if let Some(c) = cut {
            b.truncate(c.index(b.len() + 1));
        }
        let r = load_no_panic(&b);
        prop_assert!(r.is_ok(), "panicked: {:?}", r);
    }

    #[test]
    fn prop_attr_json_round_trip(a in attr_strategy()) {
        let j = a.to_json();
        let back = AttrValue::from_json(a.attr_type(), &j).unwrap();
        prop_assert_eq!(&back, &a);
        let text = serde_json::to_string(&j).unwrap();
        let back2 = AttrValue::from_json(a.attr_type(), &serde_json::from_str(&text).unwrap()).unwrap();
        prop_assert_eq!(&back2, &a);
        prop_assert!(back.approx_eq(&a));
    }

    #[test]
    fn prop_attrs_survive_graph_files_bit_exact(
        bits in prop::collection::vec(any::<u32>(), 1..5),
        a in attr_strategy(),
    ) {
        // Any f32 bit pattern (NaN payloads included) survives the binary file format.
        let mut g = small_graph();
        let id = g.find("Relu_0").unwrap();
        let floats: Vec<f32> = bits.iter().map(|b| f32::from_bits(*b)).collect();
        g.node_mut(id).unwrap().private_attrs.insert("_bits".into(), AttrValue::ListFloat(floats));
        g.node_mut(id).unwrap().attrs.insert("_any".into(), a);
        let back = from_bytes(&to_bytes(&g).unwrap()).unwrap();
        prop_assert!(back == g);
    }
}

// ---------------------------------------------------------------------------------------------
// Regression tests for bugs found by this suite (each failed before its fix).

/// Re-encodes a graph after editing its serde JSON form, as a hostile file could.
fn tampered(g: &Graph, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v = serde_json::to_value(g).expect("graph to json");
    edit(&mut v);
    let g2: Graph = serde_json::from_value(v).expect("json to graph");
    to_bytes(&g2).expect("encode")
}

fn control_pair() -> Graph {
    let mut b = GraphBuilder::new("ctl");
    let x = data(&mut b, 0, &[2]);
    let a = b.add_op("Relu", args(vec![one(x)], &[])).expect("relu a");
    let c = b.add_op("Relu", args(vec![one(x)], &[])).expect("relu c");
    b.add_control_dependency(c, &[a]).expect("ctl");
    b.set_output(out0(c), 0).expect("out");
    b.build_and_reset().expect("build")
}

fn nodes_json(v: &mut serde_json::Value) -> &mut Vec<serde_json::Value> {
    // SlotMap serializes as a sequence of slots: {"value": node, "version": n} (or null values).
    v["nodes"].as_array_mut().expect("nodes array")
}

#[test]
fn one_sided_control_edge_in_a_file_is_rejected() {
    let g = control_pair();
    let bytes = tampered(&g, |v| {
        for slot in nodes_json(v) {
            if let Some(node) = slot.get_mut("value").filter(|n| n.is_object()) {
                if node["name"] == "Relu_1" {
                    node["in_control"] = serde_json::json!([]);
                }
            }
        }
    });
    let r = catch_unwind(|| from_bytes(&bytes).map(|g| g.topo_order().map(|_| ())));
    let r = r.expect("must not panic");
    assert!(
        matches!(r, Err(Error::Serialization(ref m)) if m.contains("one-sided")),
        "{r:?}"
    );
}

#[test]
fn duplicate_consumer_in_a_file_is_rejected() {
    let g = control_pair();
    let bytes = tampered(&g, |v| {
        for slot in nodes_json(v) {
            if let Some(node) = slot.get_mut("value").filter(|n| n.is_object()) {
                if node["name"] == "input_0" {
                    let c = node["outputs"][0]["consumers"][0].clone();
                    node["outputs"][0]["consumers"]
                        .as_array_mut()
                        .expect("consumers")
                        .push(c);
                }
            }
        }
    });
    let r = catch_unwind(|| from_bytes(&bytes).map(|g| g.topo_order().map(|_| ())))
        .expect("must not panic");
    assert!(r.is_err());
}

#[test]
fn sequence_counter_is_repaired_on_load() {
    let g = control_pair();
    let bytes = tampered(&g, |v| v["next_seq"] = serde_json::json!(0));
    let mut g2 = from_bytes(&bytes).expect("loads");
    let id = g2.add_node(Node::new("late", "NoOp")).expect("add");
    assert_eq!(
        g2.nodes().last().copied(),
        Some(id),
        "a new node comes last"
    );
}

#[test]
fn approx_eq_does_not_match_infinity_with_numbers() {
    let inf = AttrValue::Float(f32::INFINITY);
    assert!(inf.approx_eq(&AttrValue::Float(f32::INFINITY)));
    assert!(!inf.approx_eq(&AttrValue::Float(f32::NEG_INFINITY)));
    assert!(!inf.approx_eq(&AttrValue::Float(1.0)));
    assert!(!AttrValue::Float(f32::NAN).approx_eq(&AttrValue::Float(0.0)));
}

#[test]
fn tensor_attribute_json_is_exact() {
    let cases = vec![
        Tensor::from_values(&[16_777_217i32, -2_147_483_648], vec![2]).expect("i32"),
        Tensor::from_values(&[i64::MAX, i64::MIN, 9_007_199_254_740_993], vec![3]).expect("i64"),
        Tensor::from_values(&[u64::MAX, 0], vec![2]).expect("u64"),
        Tensor::from_values(&[0.1f64, 1e300, f64::INFINITY], vec![3]).expect("f64"),
        Tensor::from_values(&[0.1f32, -0.0], vec![2]).expect("f32"),
    ];
    for t in cases {
        let a = AttrValue::Tensor(t);
        let back = AttrValue::from_json(AttrType::Tensor, &a.to_json()).expect("parse");
        assert_eq!(back, a, "{}", a.to_json());
    }
    let out_of_range = serde_json::json!({"dtype": "DT_INT8", "shape": [1], "values": [300]});
    assert!(AttrValue::from_json(AttrType::Tensor, &out_of_range).is_err());
}

#[test]
fn tensor_with_overflowing_element_count_is_rejected() {
    let desc = TensorDesc::new(DataType::FLOAT, Shape::new(vec![i64::MAX, 2]));
    assert!(Tensor::new(desc, Vec::new()).is_err());
}

#[test]
fn failed_op_does_not_use_up_an_auto_name() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2, 3]);
    let y = data(&mut b, 1, &[4, 5]);
    assert!(b.add_op("Add", args(vec![one(x), one(y)], &[])).is_err());
    let ok = b
        .add_op("Add", args(vec![one(x), one(x)], &[]))
        .expect("add");
    assert_eq!(b.graph().node(ok).expect("node").name, "Add_0");
}

#[test]
fn remove_nodes_matches_removing_one_by_one() {
    // Many consumers of one shared constant: batch removal leaves the same graph as one-by-one.
    let build = || {
        let mut b = GraphBuilder::new("shared");
        let x = data(&mut b, 0, &[2]);
        let c = b.create_const(Tensor::scalar(1.0f32), None).expect("const");
        let mut adds = Vec::new();
        for _ in 0..50 {
            adds.push(
                b.add_op("Add", args(vec![one(x), one(c)], &[]))
                    .expect("add"),
            );
        }
        let keep = b
            .add_op("Relu", args(vec![one(out0(adds[0]))], &[]))
            .expect("relu");
        b.add_control_dependency(keep, &[adds[1]]).expect("ctl");
        b.set_output(out0(keep), 0).expect("out");
        b.set_output(out0(adds[2]), 1).expect("out");
        (b.build_and_reset().expect("build"), adds)
    };
    let (mut one_by_one, adds) = build();
    for &id in &adds[1..] {
        one_by_one.remove_node(id).expect("remove");
    }
    let (mut batch, adds2) = build();
    batch.remove_nodes(&adds2[1..]).expect("remove_nodes");
    assert_eq!(batch, one_by_one);
    batch.check_integrity().expect("integrity");
    assert!(
        batch.remove_nodes(&[adds2[0], adds2[0]]).is_err(),
        "duplicates are refused"
    );
    assert!(
        batch.remove_nodes(&[adds2[1]]).is_err(),
        "a removed node is refused"
    );
}

/// One step of [`prop_edge_edits_keep_consumer_lists_exact`].
#[derive(Debug, Clone)]
enum EdgeEdit {
    Connect(usize, usize, usize),
    Disconnect(usize),
    RemoveNode(usize),
    RemoveNodes(Vec<usize>),
}

fn edge_edit() -> impl Strategy<Value = EdgeEdit> {
    prop_oneof![
        4 => (0usize..8, 0usize..8, 0usize..3).prop_map(|(a, b, i)| EdgeEdit::Connect(a, b, i)),
        2 => (0usize..64).prop_map(EdgeEdit::Disconnect),
        1 => (0usize..8).prop_map(EdgeEdit::RemoveNode),
        1 => prop::collection::vec(0usize..8, 1..4).prop_map(EdgeEdit::RemoveNodes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Edges removed in O(1) by their recorded place: after any sequence of connects,
    /// disconnects and node removals, every consumer list holds exactly the live edges into it
    /// and every input knows its place (`check_integrity`), and a save/load round trip agrees.
    #[test]
    fn prop_edge_edits_keep_consumer_lists_exact(edits in prop::collection::vec(edge_edit(), 1..40)) {
        let mut g = Graph::new("edits");
        let ids: Vec<NodeId> = (0..8)
            .map(|k| g.add_node(raw_node(&format!("n{k}"), "Op", 3, 1)).unwrap())
            .collect();
        // (consumer node index, input) -> producer node index: the reference edge set.
        let mut edges: HashMap<(usize, usize), usize> = HashMap::new();
        let mut alive = [true; 8];
        for e in edits {
            match e {
                EdgeEdit::Connect(a, b, i) => {
                    if a != b && alive[a] && alive[b] && !edges.contains_key(&(b, i)) {
                        g.add_data_edge(out0(ids[a]), InPort { node: ids[b], index: i as u32 }).unwrap();
                        edges.insert((b, i), a);
                    }
                }
                EdgeEdit::Disconnect(k) => {
                    let mut keys: Vec<_> = edges.keys().copied().collect();
                    keys.sort();
                    if !keys.is_empty() {
                        let (b, i) = keys[k % keys.len()];
                        let a = edges.remove(&(b, i)).unwrap();
                        g.remove_data_edge(out0(ids[a]), InPort { node: ids[b], index: i as u32 }).unwrap();
                    }
                }
                EdgeEdit::RemoveNode(a) => {
                    if alive[a] {
                        g.remove_node(ids[a]).unwrap();
                        alive[a] = false;
                        edges.retain(|&(b, _), p| b != a && *p != a);
                    }
                }
                EdgeEdit::RemoveNodes(list) => {
                    let mut set: Vec<usize> = list.into_iter().filter(|&a| alive[a]).collect();
                    set.sort();
                    set.dedup();
                    let batch: Vec<NodeId> = set.iter().map(|&a| ids[a]).collect();
                    g.remove_nodes(&batch).unwrap();
                    for &a in &set {
                        alive[a] = false;
                    }
                    edges.retain(|&(b, _), p| !set.contains(&b) && !set.contains(p));
                }
            }
            g.check_integrity().unwrap();
            for (a, &id) in ids.iter().enumerate().filter(|(a, _)| alive[*a]) {
                let mut got: Vec<(usize, u32)> = g.node(id).unwrap().outputs[0]
                    .consumers
                    .iter()
                    .map(|c| (ids.iter().position(|&x| x == c.node).unwrap(), c.index))
                    .collect();
                got.sort();
                let mut want: Vec<(usize, u32)> = edges
                    .iter()
                    .filter(|(_, &p)| p == a)
                    .map(|(&(b, i), _)| (b, i as u32))
                    .collect();
                want.sort();
                prop_assert_eq!(got, want);
            }
        }
        let back = from_bytes(&to_bytes(&g).unwrap()).unwrap();
        prop_assert!(back == g);
    }
}
