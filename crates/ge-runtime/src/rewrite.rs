//! Graph-editing steps shared by the rewrites of the compile pipeline (optimize.rs and fuse.rs):
//! moving consumers, telling a freely movable node, making a Const node.

use crate::error::Result;
use es_core::attr::AttrValue;
use es_core::graph::OutputSlot;
use es_core::{Graph, InPort, Node, OutPort};

/// Moves every consumer of `old` (and graph outputs equal to it) to `new`.
pub(crate) fn redirect(g: &mut Graph, old: OutPort, new: OutPort) -> Result<()> {
    let consumers: Vec<InPort> = g.node(old.node)?.outputs[old.index as usize]
        .consumers
        .clone();
    for c in consumers {
        g.remove_data_edge(old, c)?;
        g.add_data_edge(new, c)?;
    }
    for i in 0..g.outputs.len() {
        if g.outputs[i] == old {
            g.set_output(i, new)?;
        }
    }
    Ok(())
}

/// A node without control edges or subgraphs: one a rewrite may move or merge freely.
pub(crate) fn plain(n: &Node) -> bool {
    n.in_control.is_empty() && n.out_control.is_empty() && n.subgraphs.is_empty()
}

/// A Const node (named from `base`, unique in `g`) holding `t`.
pub(crate) fn tensor_const(g: &Graph, base: &str, t: es_core::Tensor) -> Node {
    let mut n = Node::new(g.unique_name(base), "Const");
    n.outputs.push(OutputSlot {
        name: "y".into(),
        ir_index: 0,
        desc: t.desc.clone().into(),
        consumers: Vec::new(),
    });
    n.attrs.insert("value".into(), AttrValue::Tensor(t));
    n
}
