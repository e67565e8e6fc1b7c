//! Oversized shapes (issue 21: `Fill` of `[2**31, 2**31]`): building, inference, re-inference,
//! validation, dumps and serialisation never compute such a tensor and never panic; what needs
//! the size (a tensor's bytes) is an error naming the shape.

use super::*;

fn oversized_graph(op: &str, dims: &[i64]) -> Graph {
    let mut b = GraphBuilder::new("g");
    let d = b
        .create_const(
            Tensor::from_values(dims, vec![dims.len() as i64]).unwrap(),
            None,
        )
        .unwrap();
    let v = b.create_const(Tensor::scalar(1.0f32), None).unwrap();
    let ins = match op {
        "Fill" => vec![one(d), one(v)],
        _ => vec![one(v), one(d)], // BroadcastTo(x, shape), Tile(x, multiples)
    };
    let id = b.add_op(op, args(ins, &[])).unwrap();
    b.set_output(out0(id), 0).unwrap();
    b.build_and_reset().unwrap()
}

#[test]
fn oversized_outputs_build_infer_dump_and_serialise() {
    let cases: &[(&str, &[i64])] = &[
        ("Fill", &[1 << 31, 1 << 31]),
        ("Fill", &[(1 << 31) - 1, (1 << 31) - 1]),
        ("Fill", &[1 << 40, 1 << 30]),
        ("Fill", &[1 << 62, 4]),
        ("Fill", &[i64::MAX, i64::MAX, i64::MAX]),
        ("BroadcastTo", &[1 << 31, 1 << 31]),
        ("Tile", &[1 << 62]),
    ];
    for &(op, dims) in cases {
        let mut g = oversized_graph(op, dims);
        let out = g.out_desc(g.outputs[0]).unwrap().clone();
        let n = es_core::opmath::element_count(op, &out.shape);
        let bytes = es_core::opmath::byte_size(op, out.dtype, &out.shape);
        assert!(bytes.is_err(), "{op} {dims:?}: {out} {n:?}");
        es_core::infer::infer_graph(&mut g).unwrap();
        g.validate().unwrap();
        assert!(dump::readable(&g).contains(op));
        assert!(dump::txt(&g).contains(op));
        let back = from_bytes(&to_bytes(&g).unwrap()).unwrap();
        assert_eq!(back.out_desc(back.outputs[0]).unwrap().shape, out.shape);
    }
}

#[test]
fn a_tensor_of_an_oversized_shape_is_a_value_error() {
    for dims in [
        vec![1i64 << 31, 1 << 31],
        vec![1 << 62, 1 << 62, 4],
        vec![i64::MAX, 2],
    ] {
        let desc = TensorDesc::new(DataType::FLOAT, Shape::new(dims.clone()));
        let e = Tensor::new(desc, vec![0; 16]).unwrap_err();
        assert!(matches!(e, Error::Value(_)), "{e}");
        let m = e.to_string();
        assert!(
            m.contains("bytes") || m.contains("more elements than can be stored"),
            "{m}"
        );
        assert!(m.contains(&Shape::new(dims).to_string()), "{m}");
    }
}
