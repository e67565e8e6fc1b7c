//! Import speed: an ONNX model of N Add/Relu layers with weights (protobuf decoding, tensor
//! reading, translation, inference), `cargo bench -p ge-onnx --bench load`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ge_onnx::proto::{
    tensor_shape_proto, type_proto, ElemType, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use prost::Message;

fn value_info(name: &str, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            denotation: None,
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(ElemType::Float as i32),
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| tensor_shape_proto::Dimension {
                            denotation: None,
                            value: Some(tensor_shape_proto::dimension::Value::DimValue(d)),
                        })
                        .collect(),
                }),
            })),
        }),
        ..Default::default()
    }
}

/// `layers` × (Add of a [64] weight, Relu) on a [8, 64] input.
fn model(layers: usize) -> Vec<u8> {
    let mut g = GraphProto {
        name: Some("chain".into()),
        input: vec![value_info("x", &[8, 64])],
        ..Default::default()
    };
    let mut cur = "x".to_string();
    for i in 0..layers {
        let w = format!("w{i}");
        g.initializer.push(TensorProto {
            name: Some(w.clone()),
            dims: vec![64],
            data_type: Some(ElemType::Float as i32),
            raw_data: Some(vec![0u8; 256]),
            ..Default::default()
        });
        let (a, r) = (format!("a{i}"), format!("r{i}"));
        g.node.push(NodeProto {
            op_type: Some("Add".into()),
            input: vec![cur.clone(), w],
            output: vec![a.clone()],
            ..Default::default()
        });
        g.node.push(NodeProto {
            op_type: Some("Relu".into()),
            input: vec![a],
            output: vec![r.clone()],
            ..Default::default()
        });
        cur = r;
    }
    g.output.push(value_info(&cur, &[8, 64]));
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(g),
        ..Default::default()
    }
    .encode_to_vec()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("onnx_load");
    for layers in [100usize, 1000] {
        let bytes = model(layers);
        group.throughput(Throughput::Elements(2 * layers as u64));
        group.bench_with_input(
            BenchmarkId::new("add_relu_chain", layers),
            &bytes,
            |b, m| b.iter(|| ge_onnx::load_bytes(m, &ge_onnx::Options::default()).expect("loads")),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
