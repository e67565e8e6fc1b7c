//! Builds a two-layer MLP with the typed builders, runs it through a `Session` in graph mode
//! (a captured plan replayed from the cache) and in eager mode, and prints the outputs, the
//! compile report and the cache counters.
use es_core::{es, DataType, Format, GraphBuilder, Shape, Tensor};
use ge_runtime::ndarray::{ArrayD, IxDyn};
use ge_runtime::{Session, Value};
use std::collections::BTreeMap;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut b = GraphBuilder::new("mlp");
    let x = b.create_input(
        0,
        None,
        "Data",
        DataType::FLOAT,
        Format::ND,
        Shape::new(vec![-1, 4]),
    )?;
    let w1: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) / 16.0).collect();
    let w1 = b.create_const(Tensor::from_values(&w1, vec![4, 8])?, None)?;
    let w2: Vec<f32> = (0..16).map(|i| (i as f32) / 16.0).collect();
    let w2 = b.create_const(Tensor::from_values(&w2, vec![8, 2])?, None)?;
    let h = es::mat_mul_v2(&mut b, x, w1, None, None, Default::default())?;
    let h = es::relu(&mut b, h)?;
    let y = es::mat_mul_v2(&mut b, h, w2, None, None, Default::default())?;
    let y = es::sigmoid(&mut b, y)?;
    b.set_output(y, 0)?;
    let graph = b.build_and_reset()?;

    let input = Value::F32(ArrayD::from_shape_vec(
        IxDyn(&[3, 4]),
        (0..12).map(|i| i as f32 / 6.0).collect(),
    )?);
    let mut results = Vec::new();
    for mode in ["on", "off"] {
        let options = BTreeMap::from([("ge.graphMode".to_string(), mode.to_string())]);
        let session = Session::new(&options)?;
        session.add_graph(1, graph.clone(), &BTreeMap::new())?;
        for _ in 0..3 {
            results.push(session.run_graph(1, vec![input.clone()])?);
        }
        println!("graph mode {mode}: {:?}", session.graph_cache_stats(1)?);
        if mode == "on" {
            if let Some(report) = session.compile_report(1)? {
                println!("{report}");
            }
        }
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]), "both modes agree");
    println!("outputs: {:?}", results[0][0].to_f64_vec());
    Ok(())
}
