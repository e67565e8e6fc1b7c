//! Making GE's implicit dtype promotion explicit: after inference, every operand of a
//! [`promotes`](super::promotes) operator whose dtype differs from the promoted one gets a `Cast`
//! in front of it, so that kernels see operands of one dtype (as GE inserts casts for the
//! kernels it selects).

use super::{infer_node, promotes};
use crate::attr::AttrValue;
use crate::error::Result;
use crate::graph::{Graph, InPort, InputSlot, Node, OutputSlot};
use crate::types::DataType;

/// Inserts the casts; returns how many. The graph must have been inferred.
pub fn insert_promotion_casts(graph: &mut Graph) -> Result<usize> {
    let mut added = 0;
    for id in graph.topo_order()? {
        let (name, sources, target) = {
            let n = graph.node(id)?;
            if !promotes(&n.op_type) {
                continue;
            }
            let dtypes: Vec<DataType> = n
                .inputs
                .iter()
                .filter(|s| s.source.is_some())
                .map(|s| s.desc.dtype)
                .collect();
            if dtypes.contains(&DataType::UNDEFINED) || dtypes.windows(2).all(|w| w[0] == w[1]) {
                continue;
            }
            let mut target = dtypes[0];
            for &d in &dtypes[1..] {
                match target.promote(d) {
                    Some(p) => target = p,
                    None => continue,
                }
            }
            let sources: Vec<_> = n
                .inputs
                .iter()
                .map(|s| (s.source, s.desc.clone()))
                .collect();
            (n.name.clone(), sources, target)
        };
        for (i, (src, desc)) in sources.into_iter().enumerate() {
            let Some(src) = src else { continue };
            if desc.dtype == target {
                continue;
            }
            let cast_name = graph.unique_name(&format!("{name}_promote{i}"));
            let mut cast = Node::new(cast_name, "Cast");
            cast.attrs
                .insert("dst_type".into(), AttrValue::Int(target.value() as i64));
            cast.inputs.push(InputSlot::new("x", 0, desc.clone()));
            let mut out = desc.clone();
            out.dtype = target;
            cast.outputs.push(OutputSlot {
                name: "y".into(),
                ir_index: 0,
                desc: out,
                consumers: Vec::new(),
            });
            let cast_id = graph.add_node(cast)?;
            let dst = InPort {
                node: id,
                index: i as u32,
            };
            graph.remove_data_edge(src, dst)?;
            graph.add_data_edge(
                src,
                InPort {
                    node: cast_id,
                    index: 0,
                },
            )?;
            graph.add_data_edge(
                crate::graph::OutPort {
                    node: cast_id,
                    index: 0,
                },
                dst,
            )?;
            infer_node(graph, cast_id)?;
            added += 1;
        }
        infer_node(graph, id)?;
    }
    Ok(added)
}
