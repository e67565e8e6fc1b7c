//! The C ABI called from Rust: error paths, ownership rules, graphs, sessions, attributes.

use crate::*;
use std::ffi::{c_char, CStr};
use std::ptr::{null, null_mut};

fn last() -> String {
    unsafe { CStr::from_ptr(EsGetLastErrorMessage()) }
        .to_string_lossy()
        .into_owned()
}

fn builder(name: &CStr) -> *mut EsCGraphBuilder {
    let b = unsafe { EsCreateGraphBuilder(name.as_ptr()) };
    assert!(!b.is_null());
    b
}

#[test]
fn null_and_bad_arguments_fail_with_messages() {
    unsafe {
        assert!(EsCreateGraphInput(null_mut(), 0).is_null());
        assert_eq!(last(), "the graph builder is NULL");
        // Cleaning up leaves the message to read.
        EsDestroyGraph(null_mut());
        EsDestroyEsCTensor(null_mut());
        assert_eq!(last(), "the graph builder is NULL");
        assert_eq!(EsGetLastErrorCode(), ES_ERR_INVALID_ARGUMENT);
        assert_eq!(EsSetGraphOutput(null_mut(), 0), ES_ERR_INVALID_ARGUMENT);
        let b = builder(c"g");
        let x = EsCreateGraphInput(b, 0);
        assert!(!x.is_null());
        assert_eq!(last(), "");
        assert!(EsCreateGraphInput(b, 0).is_null());
        assert!(last().contains("already has input 0"), "{}", last());
        assert!(EsCreateGraphInput(b, -1).is_null());
        assert!(last().contains(">= 0"), "{}", last());
        assert_eq!(EsSetGraphOutput(x, -1), ES_ERR_INVALID_ARGUMENT);
        assert!(EsCreateConstFloat(b, null(), [2i64].as_ptr(), 1).is_null());
        assert!(
            last().contains("value is NULL but its count is 2"),
            "{}",
            last()
        );
        assert!(EsCreateGraphInputWithDetails(b, 1, null(), null(), 999, 2, null(), 0).is_null());
        assert_eq!(last(), "unknown C_DataType 999");
        let o = EsSplitD(x, -1, 0, 2);
        assert!(o.y.is_null() && o.y_num == 0);
        assert!(last().contains("y_num must be >= 0"), "{}", last());
        EsDestroyGraphBuilder(b);
    }
}

#[test]
fn a_failed_call_is_named_by_the_call_it_broke() {
    unsafe {
        let b = builder(c"g");
        let x = EsCreateGraphInputWithDetails(b, 0, null(), null(), 0, 2, [2i64, 3].as_ptr(), 2);
        let w = EsCreateGraphInputWithDetails(b, 1, null(), null(), 0, 2, [4i64, 5].as_ptr(), 2);
        let bad = EsMatMulV2(x, w, null_mut(), null_mut(), false, false, 0);
        assert!(bad.is_null());
        let first = last();
        assert!(first.contains("MatMulV2"), "{first}");
        assert!(EsRelu(bad).is_null());
        assert!(last().contains("EsRelu: every input is NULL"), "{}", last());
        assert!(
            last().contains(&format!("the call before failed: {first}")),
            "{}",
            last()
        );
        EsDestroyGraphBuilder(b);
    }
}

#[test]
fn holders_are_refused_after_the_build_and_across_builders() {
    unsafe {
        let b = builder(c"g");
        let other = builder(c"h");
        let x = EsCreateGraphInput(b, 0);
        let y = EsCreateGraphInput(other, 0);
        assert!(EsAdd(x, y).is_null());
        assert!(last().contains("another graph builder"), "{}", last());
        let r = EsRelu(x);
        assert_eq!(EsSetGraphOutput(r, 0), ES_SUCCESS);
        assert_eq!(EsGetOwnerBuilder(r), b);
        let g = EsBuildGraphAndReset(b);
        assert!(!g.is_null());
        assert!(EsRelu(x).is_null());
        assert!(last().contains("already built"), "{}", last());
        // The builder starts a new graph.
        let x2 = EsCreateGraphInput(b, 0);
        assert!(!EsRelu(x2).is_null());
        EsDestroyGraph(g);
        EsDestroyGraphBuilder(b);
        EsDestroyGraphBuilder(other);
    }
}

#[test]
fn subgraphs_belong_to_the_call_even_when_it_fails() {
    unsafe {
        let sb = builder(c"then");
        let sx = EsCreateGraphInput(sb, 0);
        assert_eq!(EsSetGraphOutput(EsRelu(sx), 0), ES_SUCCESS);
        let then_g = EsBuildGraphAndReset(sb);
        EsDestroyGraphBuilder(sb);
        let b = builder(c"main");
        let x = EsCreateGraphInput(b, 0);
        // cond is NULL: the call fails, and has freed then_g (the leak checks of the C
        // examples under ASan would see it otherwise).
        let out = EsIf(null_mut(), [x].as_mut_ptr(), 1, 1, then_g, null_mut());
        assert!(out.output.is_null());
        assert!(
            last().contains("subgraph else_branch is NULL") || last().contains("cond"),
            "{}",
            last()
        );
        EsDestroyGraphBuilder(b);
    }
}

#[test]
fn graphs_serialise_dump_and_run() {
    unsafe {
        let b = builder(c"g");
        let x = EsCreateGraphInput(b, 0);
        let two = EsCreateScalarFloat(b, 2.0);
        let y = EsMul(x, two);
        assert_eq!(
            EsSetStringAttrForGraph(b, c"owner".as_ptr(), c"c".as_ptr()),
            ES_SUCCESS
        );
        assert_eq!(EsSetInt64AttrForNode(y, c"_tag".as_ptr(), 7), ES_SUCCESS);
        assert_eq!(
            EsSetBoolAttrForTensor(y, c"_flag".as_ptr(), true),
            ES_SUCCESS
        );
        assert_eq!(EsSetOutput(y, 0), ES_SUCCESS);
        let g = EsBuildGraphAndReset(b);
        EsDestroyGraphBuilder(b);
        let graph = &(*g).0;
        assert_eq!(
            graph.attrs.get("owner"),
            Some(&es_core::AttrValue::String("c".into()))
        );
        let node = graph.node(graph.outputs[0].node).unwrap();
        assert_eq!(
            node.private_attrs.get("_tag"),
            Some(&es_core::AttrValue::Int(7))
        );
        assert_eq!(
            node.outputs[0].desc.attrs.get("_flag"),
            Some(&es_core::AttrValue::Bool(true))
        );

        let mut data = null_mut();
        let mut size = 0;
        assert_eq!(EsGraphSerialize(g, &mut data, &mut size), ES_SUCCESS);
        let copy = EsGraphDeserialize(data, size);
        EsFreeBuffer(data, size);
        assert!(!copy.is_null());
        assert!(EsGraphDeserialize(b"junk".as_ptr(), 4).is_null());
        assert_eq!(EsGetLastErrorCode(), ES_ERR_IO);
        let dir = std::env::temp_dir().join(format!("es_capi_{}.air", std::process::id()));
        let path = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
        assert_eq!(EsGraphSaveToFile(copy, path.as_ptr()), ES_SUCCESS);
        let loaded = EsGraphLoadFromFile(path.as_ptr());
        std::fs::remove_file(&dir).unwrap();
        assert!(!loaded.is_null());
        let text = EsGraphDumpToString(loaded, ES_DUMP_READABLE);
        let s = CStr::from_ptr(text).to_string_lossy().into_owned();
        EsFreeString(text);
        assert!(s.contains("Mul("), "{s}");
        assert!(EsGraphDumpToString(loaded, 0).is_null());
        assert!(last().starts_with("not supported: "), "{}", last());

        let keys: [*const c_char; 1] = [c"ge.graphMode".as_ptr()];
        let vals: [*const c_char; 1] = [c"1".as_ptr()];
        let s = EsCreateSession(keys.as_ptr(), vals.as_ptr(), 1);
        assert!(!s.is_null(), "{}", last());
        assert!(EsCreateSession([c"ge.nope".as_ptr()].as_ptr(), vals.as_ptr(), 1).is_null());
        assert_eq!(EsSessionAddGraph(s, 3, loaded), ES_SUCCESS);
        let t = EsCreateEsCTensor([1f32, -2.].as_ptr().cast(), [2i64].as_ptr(), 1, 0, 2);
        let mut n = 0;
        // Capacity 0 asks for the count.
        assert_ne!(
            EsSessionRunGraph(s, 3, [t as *const _].as_ptr(), 1, null_mut(), 0, &mut n),
            ES_SUCCESS
        );
        assert_eq!(n, 1);
        let mut out = [null_mut()];
        assert_eq!(
            EsSessionRunGraph(
                s,
                3,
                [t as *const _].as_ptr(),
                1,
                out.as_mut_ptr(),
                1,
                &mut n
            ),
            ES_SUCCESS
        );
        assert_eq!(EsGetTensorDataType(out[0]), 0);
        assert_eq!(std::slice::from_raw_parts(EsGetTensorDims(out[0]), 1), [2]);
        assert_eq!(
            std::slice::from_raw_parts(EsGetTensorData(out[0]).cast::<f32>(), 2),
            [2., -4.]
        );
        // A wrong input count is an error, not a crash.
        let bad = EsCreateEsCTensor([1i32].as_ptr().cast(), null(), 0, 3, 2);
        let two = [bad as *const EsCTensor, bad];
        let st = EsSessionRunGraph(s, 3, two.as_ptr(), 2, out.as_mut_ptr(), 1, &mut n);
        assert_ne!(st, ES_SUCCESS);
        assert_ne!(last(), "");
        assert_ne!(
            EsSessionRunGraph(s, 9, null(), 0, out.as_mut_ptr(), 1, &mut n),
            ES_SUCCESS
        );
        for t in [t, bad, out[0]] {
            EsDestroyEsCTensor(t);
        }
        EsDestroySession(s);
        for g in [g, copy, loaded] {
            EsDestroyGraph(g);
        }
    }
}

#[test]
fn attributes_of_every_kind_reach_the_node() {
    unsafe {
        let b = builder(c"g");
        let x = EsCreateGraphInputWithDetails(b, 0, null(), null(), 0, 2, [2i64, 3].as_ptr(), 2);
        let y = EsTranspose(x, EsCreateVectorInt64(b, [1i64, 0].as_ptr(), 2));
        assert!(!y.is_null(), "{}", last());
        let c = EsCast(y, 9);
        assert!(!c.is_null(), "{}", last());
        // Type attribute rejects unknown values.
        assert!(EsCast(y, 12345).is_null());
        assert!(
            last().contains("attribute 'dst_type'") || last().contains("C_DataType"),
            "{}",
            last()
        );
        // A Tensor attribute: Const's value, handed over.
        let t = EsCreateEsCTensor([4i32, 5].as_ptr().cast(), [2i64].as_ptr(), 1, 3, 2);
        let k = EsConst(b, t);
        assert!(!k.is_null(), "{}", last());
        let graph = (*b).b.graph();
        let n = graph.node((*k).node).unwrap();
        assert_eq!(n.outputs[0].desc.dtype, es_core::DataType::INT32);
        EsDestroyGraphBuilder(b);
    }
}

#[test]
fn dynamic_inputs_and_the_default_equal_rule() {
    unsafe {
        let b = builder(c"g");
        let x = EsCreateGraphInputWithDetails(b, 0, null(), null(), 0, 2, [2i64].as_ptr(), 1);
        let y = EsCreateGraphInputWithDetails(b, 1, null(), null(), 0, 2, [3i64].as_ptr(), 1);
        let mut xs = [x, y];
        // N given as its default (1) counts as not set: derived from x_num.
        let c = EsConcatD(xs.as_mut_ptr(), 2, 0, 1);
        assert!(!c.is_null(), "{}", last());
        let graph = (*b).b.graph();
        let n = graph.node((*c).node).unwrap();
        assert_eq!(n.attrs.get("N"), Some(&es_core::AttrValue::Int(2)));
        assert_eq!(n.outputs[0].desc.shape.dims(), [5]);
        // N given otherwise must agree.
        assert!(EsConcatD(xs.as_mut_ptr(), 2, 0, 3).is_null());
        assert!(last().contains("'N' is 3"), "{}", last());
        assert!(EsConcatD(null_mut(), 2, 0, 1).is_null());
        assert!(last().contains("x is NULL"), "{}", last());
        let idn = EsIdentityN(xs.as_mut_ptr(), 2, 2);
        assert_eq!(idn.y_num, 2, "{}", last());
        assert!(!(*idn.y.add(1)).is_null());
        EsDestroyGraphBuilder(b);
    }
}

#[test]
fn descriptions_control_edges_variables_and_tensor_files() {
    unsafe {
        let b = builder(c"g");
        let x = EsCreateGraphInput(b, 0);
        assert_eq!(EsSetDataType(x, 9), ES_SUCCESS);
        assert_eq!(EsSetFormat(x, 0), ES_SUCCESS);
        assert_eq!(EsSetShape(x, [2i64, 3].as_ptr(), 2), ES_SUCCESS);
        assert_eq!(EsSetShape(x, [-5i64].as_ptr(), 1), ES_ERR_INVALID_ARGUMENT);
        let d = &(*b).b.graph().node((*x).node).unwrap().outputs[0].desc;
        assert_eq!(d.dtype, es_core::DataType::INT64);
        assert_eq!(d.format, es_core::Format::NCHW);
        assert_eq!(d.shape.dims(), [2, 3]);
        let v = EsCreateVariable(b, 1, c"v".as_ptr());
        assert!(!v.is_null(), "{}", last());
        let r = EsRelu(x);
        let mut srcs = [v];
        assert_eq!(EsAddControlEdge(r, srcs.as_mut_ptr(), 1), ES_SUCCESS);
        let other = builder(c"h");
        let mut foreign = [EsCreateGraphInput(other, 0)];
        assert_eq!(
            EsAddControlEdge(r, foreign.as_mut_ptr(), 1),
            ES_ERR_INVALID_ARGUMENT
        );
        assert!(last().contains("another graph builder"), "{}", last());
        let g = (*b).b.graph();
        assert_eq!(g.node((*r).node).unwrap().in_control, [(*v).node]);

        let path = std::env::temp_dir().join(format!("es_capi_t_{}.bin", std::process::id()));
        std::fs::write(&path, 7i64.to_le_bytes().repeat(2)).unwrap();
        let p = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        let t = EsCreateEsCTensorFromFile(p.as_ptr(), [2i64].as_ptr(), 1, 9, 2);
        assert!(!t.is_null(), "{}", last());
        assert_eq!(EsGetTensorDataSize(t), 16);
        assert!(EsCreateEsCTensorFromFile(p.as_ptr(), [3i64].as_ptr(), 1, 9, 2).is_null());
        assert!(
            last().contains("has 16 bytes, the tensor needs 24"),
            "{}",
            last()
        );
        std::fs::remove_file(&path).unwrap();
        EsDestroyEsCTensor(t);
        EsDestroyGraphBuilder(other);
        EsDestroyGraphBuilder(b);
    }
}

/// The C API builds the same graph as es-core's typed builder (the path the Python API shares):
/// the MLP of the examples, compared by their complete text dumps.
#[test]
fn the_c_api_builds_what_the_typed_builder_builds() {
    use es_core::{es, DataType, Format, GraphBuilder, Shape, Tensor};
    let typed = {
        let mut b = GraphBuilder::new("mlp");
        let x = b
            .create_input(
                0,
                None,
                "Data",
                DataType::FLOAT,
                Format::ND,
                Shape::unknown_rank(),
            )
            .unwrap();
        let w = b
            .create_const(
                Tensor::from_values(&[1f32, 0., 0., 1., 1., 1.], vec![3, 2]).unwrap(),
                None,
            )
            .unwrap();
        let bias = b
            .create_const(
                Tensor::from_values(&[-2f32, 0., -4.], vec![3]).unwrap(),
                None,
            )
            .unwrap();
        let attrs = es::MatMulV2Attrs {
            transpose_x2: Some(true),
            ..Default::default()
        };
        let h = es::mat_mul_v2(&mut b, x, w, Some(bias), None, attrs).unwrap();
        let h = es::relu(&mut b, h).unwrap();
        let parts = es::split_d(&mut b, h, 1, 3).unwrap();
        for (i, p) in parts.into_iter().enumerate() {
            b.set_output(p, i).unwrap();
        }
        b.build_and_reset().unwrap()
    };
    let via_c = unsafe {
        let b = builder(c"mlp");
        let x = EsCreateGraphInput(b, 0);
        let w = EsCreateConstFloat(
            b,
            [1f32, 0., 0., 1., 1., 1.].as_ptr(),
            [3i64, 2].as_ptr(),
            2,
        );
        let bias = EsCreateVectorFloat(b, [-2f32, 0., -4.].as_ptr(), 3);
        let h = EsRelu(EsMatMulV2(x, w, bias, null_mut(), false, true, 0));
        let parts = EsSplitD(h, 3, 1, 3);
        assert_eq!(parts.y_num, 3, "{}", last());
        for i in 0..3 {
            assert_eq!(EsSetGraphOutput(*parts.y.add(i), i as i64), ES_SUCCESS);
        }
        let g = EsBuildGraphAndReset(b);
        EsDestroyGraphBuilder(b);
        Box::from_raw(g).0
    };
    assert_eq!(es_core::dump::txt(&via_c), es_core::dump::txt(&typed));
}

fn text(p: *const c_char) -> String {
    assert!(!p.is_null(), "{}", last());
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[test]
fn get_producer_names_the_node_once_per_node() {
    unsafe {
        let b = builder(c"g");
        let x = EsCreateGraphInput(b, 0);
        let parts = EsSplitD(x, 2, 0, 2);
        assert_eq!(parts.y_num, 2);
        let (p0, p1) = (*parts.y, *parts.y.add(1));
        let n = EsGetProducer(p0);
        assert!(!n.is_null(), "{}", last());
        // Both outputs of the SplitD: the same node, the same handle.
        assert_eq!(EsGetProducer(p1), n);
        assert_eq!(text(EsGetNodeType(n)), "SplitD");
        assert_eq!(text(EsGetNodeName(n)), "SplitD_0");
        let input = EsGetProducer(x);
        assert_ne!(input, n);
        assert_eq!(text(EsGetNodeType(input)), "Data");
        assert_eq!(text(EsGetNodeName(input)), "input_0");
        assert!(EsGetProducer(null_mut()).is_null());
        assert_eq!(last(), "tensor is NULL");
        assert!(EsGetNodeName(null()).is_null());
        assert_eq!(last(), "node is NULL");
        assert_eq!(EsSetGraphOutput(p0, 0), ES_SUCCESS);
        let g = EsBuildGraphAndReset(b);
        assert!(!g.is_null());
        // The node handles go with the built graph, as the holders do.
        assert!(EsGetNodeType(n).is_null());
        assert!(last().contains("already built"), "{}", last());
        assert!(EsGetProducer(p1).is_null());
        assert!(last().contains("already built"), "{}", last());
        // A new graph of the builder gives new handles.
        let x2 = EsCreateGraphInput(b, 0);
        let n2 = EsGetProducer(EsRelu(x2));
        assert_eq!(text(EsGetNodeType(n2)), "Relu");
        EsDestroyGraph(g);
        EsDestroyGraphBuilder(b);
    }
}

#[test]
fn origin_symbol_shape_is_refused_as_not_supported() {
    unsafe {
        let b = builder(c"g");
        let x = EsCreateGraphInput(b, 0);
        let dims: [*const c_char; 2] = [c"s0".as_ptr(), c"s1".as_ptr()];
        assert_eq!(
            EsSetOriginSymbolShape(x, dims.as_ptr(), 2),
            ES_ERR_NOT_SUPPORTED
        );
        assert!(
            last().starts_with("not supported: EsSetOriginSymbolShape"),
            "{}",
            last()
        );
        // Bad arguments are named first.
        assert_eq!(
            EsSetOriginSymbolShape(null_mut(), dims.as_ptr(), 2),
            ES_ERR_INVALID_ARGUMENT
        );
        assert!(last().starts_with("tensor is NULL"), "{}", last());
        assert_eq!(
            EsSetOriginSymbolShape(x, null(), 2),
            ES_ERR_INVALID_ARGUMENT
        );
        assert!(last().contains("shape is NULL"), "{}", last());
        let with_null: [*const c_char; 2] = [c"s0".as_ptr(), null()];
        assert_eq!(
            EsSetOriginSymbolShape(x, with_null.as_ptr(), 2),
            ES_ERR_INVALID_ARGUMENT
        );
        assert_eq!(last(), "shape[1] is NULL");
        EsDestroyGraphBuilder(b);
    }
}
