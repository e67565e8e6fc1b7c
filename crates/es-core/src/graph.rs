//! The graph IR: nodes in a generational arena, data edges both ways, control edges,
//! attributes (IR and private), named subgraphs owned by their parent node.

use crate::attr::{AttrMap, AttrValue};
use crate::error::{Error, Result};
use crate::types::{SharedDesc, Tensor, TensorDesc};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use slotmap::{new_key_type, SlotMap};
use smol_str::format_smolstr;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Names of nodes, ports and subgraph slots: up to 23 bytes inline, O(1) clone.
pub type Name = smol_str::SmolStr;

new_key_type! {
    /// A handle to a node of one graph. A handle to a removed node is detected, never followed.
    pub struct NodeId;
}

/// An output of a node: (node, output index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OutPort {
    pub node: NodeId,
    pub index: u32,
}

/// An input of a node: (node, input index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InPort {
    pub node: NodeId,
    pub index: u32,
}

/// One input instance (dynamic inputs are expanded: `x0`, `x1`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputSlot {
    /// Instance name (`x1`, or `x0`/`x1`/... for a dynamic input named `x`).
    pub name: Name,
    /// Index of the IR input (prototype order) this instance belongs to.
    pub ir_index: u32,
    /// The producer, or None for an unconnected optional input.
    pub source: Option<OutPort>,
    /// The input's description: its producer's when connected and not changed since (shared,
    /// copy-on-write: see [`SharedDesc`]).
    pub desc: SharedDesc,
    /// Where this input stands in its producer's consumer list (0 when unconnected), so that
    /// an edge is removed in O(1) however many consumers the producer has. Kept by the graph;
    /// not saved (rebuilt on load).
    #[serde(skip)]
    pub(crate) consumer_pos: u32,
}

impl InputSlot {
    /// An unconnected input instance.
    pub fn new(name: impl Into<Name>, ir_index: u32, desc: impl Into<SharedDesc>) -> Self {
        InputSlot {
            name: name.into(),
            ir_index,
            source: None,
            desc: desc.into(),
            consumer_pos: 0,
        }
    }
}

/// One output instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSlot {
    pub name: Name,
    pub ir_index: u32,
    /// The output's description (shared copy-on-write with the consumers' input
    /// descriptions taken from it: see [`SharedDesc`]).
    pub desc: SharedDesc,
    /// Consumers, in the order the edges were made, except that removing an edge moves the
    /// last consumer into the removed one's place (O(1) removal; the order stays
    /// deterministic).
    pub consumers: Vec<InPort>,
}

impl OutputSlot {
    /// An output instance without consumers.
    pub fn new(name: impl Into<Name>, ir_index: u32, desc: impl Into<SharedDesc>) -> Self {
        OutputSlot {
            name: name.into(),
            ir_index,
            desc: desc.into(),
            consumers: Vec::new(),
        }
    }
}

/// A named subgraph instance of a node (`then_branch`, or `branches0`, `branches1`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubgraphSlot {
    pub name: Name,
    /// Index of the prototype's subgraph declaration.
    pub ir_index: u32,
    pub graph: Graph,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub name: Name,
    pub op_type: Name,
    pub inputs: Vec<InputSlot>,
    pub outputs: Vec<OutputSlot>,
    pub in_control: Vec<NodeId>,
    pub out_control: Vec<NodeId>,
    /// IR attributes (those of the prototype).
    pub attrs: AttrMap,
    /// Private attributes (not in the IR).
    pub private_attrs: AttrMap,
    pub subgraphs: Vec<SubgraphSlot>,
    /// Creation sequence number: the stable order of `Graph::nodes`.
    pub seq: u64,
    /// Where the user's program built the node (`file:line`), recorded by the front end for
    /// nodes whose checks wait for the fed tensors, so that an error found at compile names
    /// the line. Not saved; ignored by graph equality.
    #[serde(skip)]
    pub built_at: Option<std::sync::Arc<str>>,
}

impl Node {
    pub fn new(name: impl Into<Name>, op_type: impl Into<Name>) -> Self {
        Node {
            name: name.into(),
            op_type: op_type.into(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            in_control: Vec::new(),
            out_control: Vec::new(),
            attrs: AttrMap::new(),
            private_attrs: AttrMap::new(),
            subgraphs: Vec::new(),
            seq: 0,
            built_at: None,
        }
    }
    /// Looks an attribute up among IR attributes, then private ones.
    pub fn attr(&self, name: &str) -> Option<&AttrValue> {
        self.attrs
            .get(name)
            .or_else(|| self.private_attrs.get(name))
    }
    pub fn subgraph(&self, name: &str) -> Option<&Graph> {
        self.subgraphs
            .iter()
            .find(|s| s.name == name)
            .map(|s| &s.graph)
    }
    pub fn subgraph_mut(&mut self, name: &str) -> Option<&mut Graph> {
        self.subgraphs
            .iter_mut()
            .find(|s| s.name == name)
            .map(|s| &mut s.graph)
    }
    /// For a Const node, its value.
    pub fn const_value(&self) -> Option<&Tensor> {
        if self.op_type == "Const" || self.op_type == "Constant" {
            self.attrs.get("value").and_then(AttrValue::as_tensor)
        } else {
            None
        }
    }
}

/// A node record shared copy-on-write between clones of a graph: cloning a graph copies a
/// pointer per node, and the first change to a shared record (`DerefMut`) copies that record
/// for the graph making it (`Arc::make_mut`), so every clone keeps value semantics. A
/// pattern pass's undo copy of the graph then costs a pointer per node, and only the nodes
/// the pass changes are copied. `Debug` and the saved form are the node's.
#[derive(Clone)]
pub(crate) struct SharedNode(Arc<Node>);

impl SharedNode {
    fn new(node: Node) -> Self {
        SharedNode(Arc::new(node))
    }
    /// The node, moved out when no other graph shares it.
    pub(crate) fn into_inner(self) -> Node {
        Arc::unwrap_or_clone(self.0)
    }
}

impl std::ops::Deref for SharedNode {
    type Target = Node;
    fn deref(&self) -> &Node {
        &self.0
    }
}

impl std::ops::DerefMut for SharedNode {
    fn deref_mut(&mut self) -> &mut Node {
        Arc::make_mut(&mut self.0)
    }
}

impl std::fmt::Debug for SharedNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl Serialize for SharedNode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SharedNode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Node::deserialize(d).map(SharedNode::new)
    }
}

/// A computation graph.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Graph {
    pub name: String,
    /// Node records behind pointers: the arena's slots stay small, so growing it moves
    /// pointers, not node records (a node record is ~260 bytes; copying them at every doubling
    /// of the arena was a fifth of an op call's time when building large graphs). The records
    /// are shared copy-on-write ([`SharedNode`]), so cloning a graph copies pointers, and a
    /// node is copied when one of the clones changes it.
    nodes: SlotMap<NodeId, SharedNode>,
    /// Which node has which name (completed lazily: see [`NameIndex`]).
    #[serde(skip)]
    names: NameIndex,
    /// Per op type, the number after the last automatic name `<op_type>_<n>` given here (see
    /// [`Graph::next_auto_name`]); automatic names are unique by construction.
    #[serde(skip)]
    auto_counters: FxHashMap<Name, u64>,
    next_seq: u64,
    /// Graph outputs, in order.
    pub outputs: Vec<OutPort>,
    /// Graph attributes (private to ge-rs and GE; not part of any IR).
    pub attrs: AttrMap,
    /// Operator-library version the graph was built against.
    pub ops_version: String,
    /// Name of the parent node, for a subgraph owned by a node.
    pub parent_node: Option<Name>,
    /// Output indexes skipped over by `set_output` and not set yet.
    #[serde(default)]
    missing_outputs: BTreeSet<usize>,
}

/// The name index of a graph. A node added with an automatic name (`<op_type>_<n>`, from
/// [`Graph::next_auto_name`]) is not hashed into the index when it is added: it waits in
/// `pending` until a lookup needs the whole index ([`Graph::find`], an explicitly named node
/// added, a rename). Building a large graph from automatically named ops then inserts no name
/// into a hash table per node. Lookups take `&self`, hence the lock (never contended: a graph
/// is changed by one owner at a time); changes go through `get_mut` without locking.
#[derive(Debug, Default)]
struct NameIndex(std::sync::Mutex<Names>);

#[derive(Debug, Default, Clone)]
struct Names {
    /// Name -> node. Removing a node leaves its entry (a hash-table removal per node was the
    /// largest part of a large graph's rewrite: cache misses): an entry whose node is gone is
    /// stale, read as absent ([`Names::live`]), overwritten when the name is used again, and
    /// dropped instead of growing the map once a quarter of it is stale ([`Names::compact`]).
    map: FxHashMap<Name, NodeId>,
    /// Automatically named nodes not in `map` yet, in creation order (removed ones are
    /// skipped when they are indexed). Names are unique over `map` and `pending` together.
    pending: Vec<NodeId>,
}

impl Clone for NameIndex {
    fn clone(&self) -> Self {
        NameIndex(std::sync::Mutex::new(self.lock().clone()))
    }
}

impl NameIndex {
    fn lock(&self) -> std::sync::MutexGuard<'_, Names> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    fn get_mut(&mut self) -> &mut Names {
        self.0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Names {
    /// Indexes the pending nodes: `map` then holds every node of `nodes`.
    fn complete(&mut self, nodes: &SlotMap<NodeId, SharedNode>) {
        if self.pending.is_empty() {
            return;
        }
        self.map.reserve(self.pending.len());
        for id in self.pending.drain(..) {
            if let Some(n) = nodes.get(id) {
                self.map.insert(n.name.clone(), id);
            }
        }
    }
    /// The node of `nodes` named `name`, if any (a stale entry is no node).
    fn live(&self, name: &str, nodes: &SlotMap<NodeId, SharedNode>) -> Option<NodeId> {
        self.map
            .get(name)
            .copied()
            .filter(|&id| nodes.contains_key(id))
    }
    /// Drops the stale entries instead of growing the map when at least a quarter of it is
    /// stale (live entries are at most the node count). The map then holds at most 4/3 of
    /// the nodes when it grows, and a compaction frees at least a quarter of what it scans.
    fn compact(&mut self, nodes: &SlotMap<NodeId, SharedNode>) {
        let len = self.map.len();
        if len >= self.map.capacity() && len.saturating_sub(nodes.len()) * 4 >= len {
            self.map.retain(|_, id| nodes.contains_key(*id));
        }
    }
}

/// Puts a node into the arena with no edges and the next creation number (its name is the
/// caller's to index).
fn insert_record(
    nodes: &mut SlotMap<NodeId, SharedNode>,
    next_seq: &mut u64,
    mut record: SharedNode,
) -> NodeId {
    let node: &mut Node = &mut record;
    for i in &mut node.inputs {
        i.source = None;
        i.consumer_pos = 0;
    }
    for o in &mut node.outputs {
        o.consumers.clear();
    }
    node.in_control.clear();
    node.out_control.clear();
    node.seq = *next_seq;
    *next_seq += 1;
    nodes.insert(record)
}

impl PartialEq for Graph {
    fn eq(&self, other: &Self) -> bool {
        if self.name != other.name
            || self.attrs != other.attrs
            || self.ops_version != other.ops_version
            || self.parent_node != other.parent_node
            || self.nodes.len() != other.nodes.len()
        {
            return false;
        }
        // Structural equality by names (ids may differ between two equal graphs).
        let a = self.nodes();
        let b = other.nodes();
        let port = |g: &Graph, p: &OutPort| g.nodes.get(p.node).map(|n| (n.name.clone(), p.index));
        let outs_a: Vec<_> = self.outputs.iter().map(|p| port(self, p)).collect();
        let outs_b: Vec<_> = other.outputs.iter().map(|p| port(other, p)).collect();
        if outs_a != outs_b {
            return false;
        }
        a.iter().zip(b.iter()).all(|(&ia, &ib)| {
            let (na, nb) = (&self.nodes[ia], &other.nodes[ib]);
            let ctl = |g: &Graph, l: &[NodeId]| -> Vec<Name> {
                l.iter()
                    .filter_map(|i| g.nodes.get(*i).map(|n| n.name.clone()))
                    .collect()
            };
            na.name == nb.name
                && na.op_type == nb.op_type
                && na.attrs == nb.attrs
                && na.private_attrs == nb.private_attrs
                && na.subgraphs.len() == nb.subgraphs.len()
                && na.subgraphs.iter().zip(&nb.subgraphs).all(|(x, y)| x == y)
                && na.inputs.len() == nb.inputs.len()
                && na.inputs.iter().zip(&nb.inputs).all(|(x, y)| {
                    x.name == y.name
                        && x.ir_index == y.ir_index
                        && x.desc == y.desc
                        && x.source.and_then(|p| port(self, &p))
                            == y.source.and_then(|p| port(other, &p))
                })
                && na.outputs.len() == nb.outputs.len()
                && na
                    .outputs
                    .iter()
                    .zip(&nb.outputs)
                    .all(|(x, y)| x.name == y.name && x.ir_index == y.ir_index && x.desc == y.desc)
                && ctl(self, &na.in_control) == ctl(other, &nb.in_control)
        })
    }
}

impl Graph {
    pub fn new(name: impl Into<String>) -> Self {
        Graph {
            name: name.into(),
            nodes: SlotMap::with_key(),
            names: NameIndex::default(),
            auto_counters: FxHashMap::default(),
            next_seq: 0,
            outputs: Vec::new(),
            attrs: AttrMap::new(),
            ops_version: crate::ops::BUILTIN_VERSION.to_string(),
            parent_node: None,
            missing_outputs: BTreeSet::new(),
        }
    }

    /// Rebuilds the name index (after deserialization).
    pub(crate) fn reindex(&mut self) {
        if let Some(m) = self.nodes.values().map(|n| n.seq).max() {
            self.next_seq = self.next_seq.max(m.saturating_add(1));
        }
        *self.names.get_mut() = Names {
            map: self
                .nodes
                .iter()
                .map(|(id, n)| (n.name.clone(), id))
                .collect(),
            ..Names::default()
        };
        // Each input's place in its producer's consumer list (a damaged file's dangling
        // entries are skipped here and reported by `check_integrity`).
        let places: Vec<(InPort, u32)> = self
            .nodes
            .values()
            .flat_map(|n| &n.outputs)
            .flat_map(|o| o.consumers.iter().enumerate())
            .map(|(k, c)| (*c, k as u32))
            .collect();
        for (c, k) in places {
            if let Some(slot) = self
                .nodes
                .get_mut(c.node)
                .and_then(|n| n.inputs.get_mut(c.index as usize))
            {
                slot.consumer_pos = k;
            }
        }
        for n in self.nodes.values_mut() {
            if n.subgraphs.is_empty() {
                continue; // not copied when shared
            }
            for s in &mut n.subgraphs {
                s.graph.reindex();
            }
        }
    }

    /// Reserves room for `additional` more nodes.
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
        self.names.get_mut().map.reserve(additional);
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Node ids in creation order.
    pub fn nodes(&self) -> Vec<NodeId> {
        let mut v: Vec<(u64, NodeId)> = self.nodes.iter().map(|(id, n)| (n.seq, id)).collect();
        v.sort_unstable();
        v.into_iter().map(|p| p.1).collect()
    }

    /// Every node with its id, in arena order (not creation order; see [`Graph::nodes`]).
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.nodes.iter().map(|(id, n)| (id, &**n))
    }

    pub fn contains(&self, id: NodeId) -> bool {
        self.nodes.contains_key(id)
    }

    pub fn node(&self, id: NodeId) -> Result<&Node> {
        self.nodes
            .get(id)
            .map(|n| &**n)
            .ok_or_else(|| Error::value("the node has been removed from the graph"))
    }

    pub fn node_mut(&mut self, id: NodeId) -> Result<&mut Node> {
        self.nodes
            .get_mut(id)
            .map(|n| &mut **n)
            .ok_or_else(|| Error::value("the node has been removed from the graph"))
    }

    pub fn find(&self, name: &str) -> Option<NodeId> {
        let mut names = self.names.lock();
        names.complete(&self.nodes);
        names.live(name, &self.nodes)
    }

    /// A name not used yet in this graph: `base`, else `base_1`, `base_2`, ...
    pub fn unique_name(&self, base: &str) -> String {
        let mut names = self.names.lock();
        names.complete(&self.nodes);
        if names.live(base, &self.nodes).is_none() {
            return base.to_string();
        }
        let mut i = 1usize;
        loop {
            let cand = format!("{base}_{i}");
            if names.live(&cand, &self.nodes).is_none() {
                return cand;
            }
            i += 1;
        }
    }

    /// The next automatic name `<op_type>_<n>` free in this graph, and the counter value to
    /// hand to [`Graph::add_auto_named`] with the node (the counter moves only when the node
    /// is added). Numbers already given here to `op_type` are never given again, so the name
    /// differs from every automatically named node without looking them up; only the indexed
    /// (explicitly named or already looked-up) nodes are probed.
    pub fn next_auto_name(&mut self, op_type: &str) -> (Name, u64) {
        let mut c = self.auto_counters.get(op_type).copied().unwrap_or(0);
        let names = self.names.get_mut();
        loop {
            let name = numbered_name(op_type, c);
            c += 1;
            if names.live(&name, &self.nodes).is_none() {
                return (name, c);
            }
        }
    }

    /// Adds a node named by [`Graph::next_auto_name`] (`next` is the counter value it
    /// returned, the node's name the one it gave) without indexing its name: it is indexed
    /// when a lookup needs it. A node whose number was given already, or whose name was taken
    /// since, is added as [`Graph::add_node`] adds it.
    pub(crate) fn add_auto_named(&mut self, node: Node, next: u64) -> Result<NodeId> {
        debug_assert_eq!(
            numbered_name(&node.op_type, next.saturating_sub(1)),
            node.name
        );
        let given = self.auto_counters.get(node.op_type.as_str()).copied();
        let fresh = next > given.unwrap_or(0)
            && self.names.get_mut().live(&node.name, &self.nodes).is_none();
        if !fresh {
            return self.add_node(node);
        }
        match self.auto_counters.get_mut(node.op_type.as_str()) {
            Some(c) => *c = next,
            None => {
                self.auto_counters.insert(node.op_type.clone(), next);
            }
        }
        let id = insert_record(&mut self.nodes, &mut self.next_seq, SharedNode::new(node));
        self.names.get_mut().pending.push(id);
        Ok(id)
    }

    /// Adds a node; its name must be unique in the graph. Edges stored in `node` are ignored:
    /// connect with [`Graph::add_data_edge`].
    pub fn add_node(&mut self, node: Node) -> Result<NodeId> {
        self.add_record(SharedNode::new(node))
    }

    /// [`Graph::add_node`] for a node record taken out of another graph (by
    /// [`Graph::take_record`]) or shared with one: the record is not copied here.
    pub(crate) fn add_record(&mut self, node: SharedNode) -> Result<NodeId> {
        self.insert_named(node, false)
    }

    /// [`Graph::add_record`] that renames the node when its name is taken: to the first free
    /// of `<name>_1`, `<name>_2`, ... ([`Graph::unique_name`]). One name-index probe when the
    /// name is free.
    pub(crate) fn add_record_renaming(&mut self, node: SharedNode) -> Result<NodeId> {
        self.insert_named(node, true)
    }

    fn insert_named(&mut self, mut node: SharedNode, rename: bool) -> Result<NodeId> {
        use std::collections::hash_map::Entry;
        if node.name.is_empty() {
            return Err(Error::build("a node needs a name"));
        }
        let names = self.names.get_mut();
        names.complete(&self.nodes);
        names.compact(&self.nodes);
        match names.map.entry(node.name.clone()) {
            Entry::Occupied(e) if self.nodes.contains_key(*e.get()) => {}
            Entry::Occupied(mut stale) => {
                let id = insert_record(&mut self.nodes, &mut self.next_seq, node);
                stale.insert(id);
                return Ok(id);
            }
            Entry::Vacant(slot) => {
                return Ok(*slot.insert(insert_record(&mut self.nodes, &mut self.next_seq, node)));
            }
        }
        if !rename {
            return Err(Error::build(format!(
                "graph '{}' already has a node named '{}'",
                self.name, node.name
            )));
        }
        node.name = Name::new(self.unique_name(&node.name));
        self.insert_named(node, false)
    }

    /// Node `id`'s record, shared (copied when either graph changes it).
    pub(crate) fn shared_record(&self, id: NodeId) -> Result<SharedNode> {
        self.nodes
            .get(id)
            .cloned()
            .ok_or_else(|| Error::value("the node has been removed from the graph"))
    }

    /// Takes node `id` out of the arena as it is, with its edge lists, and out of the name
    /// index, without touching the nodes it is connected to (they keep pointing at it). Only
    /// for a graph whose nodes are all being moved elsewhere before it is dropped (a
    /// replacement consumed by [`crate::pattern::rewrite_owned`]).
    pub(crate) fn take_record(&mut self, id: NodeId) -> Option<SharedNode> {
        // Its name-index entry goes stale (see `Names::map`).
        self.nodes.remove(id)
    }

    /// Clears an input's source (its producer is being removed); a stale port is ignored.
    fn unhook_input(&mut self, c: InPort) {
        if let Some(slot) = self
            .nodes
            .get_mut(c.node)
            .and_then(|n| n.inputs.get_mut(c.index as usize))
        {
            slot.source = None;
            slot.consumer_pos = 0;
        }
    }

    fn check_out(&self, p: OutPort) -> Result<()> {
        let n = self.node(p.node)?;
        check_slot(n, "output", n.outputs.len(), p.index)
    }

    fn check_in(&self, p: InPort) -> Result<()> {
        let n = self.node(p.node)?;
        check_slot(n, "input", n.inputs.len(), p.index)
    }

    /// Connects an output to an unconnected input.
    pub fn add_data_edge(&mut self, src: OutPort, dst: InPort) -> Result<()> {
        self.check_out(src)?;
        self.check_in(dst)?;
        let slot = &self.nodes[dst.node].inputs[dst.index as usize];
        if let Some(old) = slot.source {
            let from = self
                .nodes
                .get(old.node)
                .map(|n| n.name.as_str())
                .unwrap_or("?");
            return Err(Error::build(format!(
                "input {} of node '{}' is already connected (to output {} of '{}'); remove that edge first",
                dst.index, self.nodes[dst.node].name, old.index, from
            )));
        }
        let list = &mut self.nodes[src.node].outputs[src.index as usize].consumers;
        let pos = list.len() as u32;
        list.push(dst);
        let slot = &mut self.nodes[dst.node].inputs[dst.index as usize];
        slot.source = Some(src);
        slot.consumer_pos = pos;
        Ok(())
    }

    /// Takes `dst` out of the consumer list of `src` in O(1) (the last consumer moves into its
    /// place) and marks `dst` unconnected. Both nodes must be in the arena and the edge must
    /// exist.
    fn unlink(&mut self, src: OutPort, dst: InPort) {
        let recorded = self.nodes[dst.node].inputs[dst.index as usize].consumer_pos as usize;
        let list = &mut self.nodes[src.node].outputs[src.index as usize].consumers;
        let pos = if list.get(recorded) == Some(&dst) {
            recorded
        } else {
            // Only a graph whose slots were edited by hand gets here.
            match list.iter().position(|c| *c == dst) {
                Some(p) => p,
                None => return,
            }
        };
        list.swap_remove(pos);
        if let Some(&moved) = list.get(pos) {
            if let Some(slot) = self
                .nodes
                .get_mut(moved.node)
                .and_then(|n| n.inputs.get_mut(moved.index as usize))
            {
                slot.consumer_pos = pos as u32;
            }
        }
        let slot = &mut self.nodes[dst.node].inputs[dst.index as usize];
        slot.source = None;
        slot.consumer_pos = 0;
    }

    /// Removes the data edge src → dst.
    pub fn remove_data_edge(&mut self, src: OutPort, dst: InPort) -> Result<()> {
        self.check_out(src)?;
        self.check_in(dst)?;
        if self.nodes[dst.node].inputs[dst.index as usize].source != Some(src) {
            return Err(Error::build(format!(
                "there is no data edge from output {} of '{}' to input {} of '{}'",
                src.index, self.nodes[src.node].name, dst.index, self.nodes[dst.node].name
            )));
        }
        self.unlink(src, dst);
        Ok(())
    }

    pub fn add_control_edge(&mut self, src: NodeId, dst: NodeId) -> Result<()> {
        self.node(src)?;
        self.node(dst)?;
        if src == dst {
            return Err(Error::build(format!(
                "a control edge from node '{}' to itself would be a cycle",
                self.nodes[src].name
            )));
        }
        if !self.nodes[dst].in_control.contains(&src) {
            self.nodes[dst].in_control.push(src);
            self.nodes[src].out_control.push(dst);
        }
        Ok(())
    }

    pub fn remove_control_edge(&mut self, src: NodeId, dst: NodeId) -> Result<()> {
        self.node(src)?;
        self.node(dst)?;
        if !self.nodes[dst].in_control.contains(&src) {
            return Err(Error::build(format!(
                "there is no control edge from '{}' to '{}'",
                self.nodes[src].name, self.nodes[dst].name
            )));
        }
        self.nodes[dst].in_control.retain(|n| *n != src);
        self.nodes[src].out_control.retain(|n| *n != dst);
        Ok(())
    }

    /// Removes a node with all its edges; graph outputs that pointed at it are dropped.
    pub fn remove_node(&mut self, id: NodeId) -> Result<Node> {
        self.node(id)?;
        self.unlink_inputs(id, |_| false);
        let node = self
            .nodes
            .remove(id)
            .ok_or_else(|| Error::value("node already removed"))?;
        for out in &node.outputs {
            for c in &out.consumers {
                self.unhook_input(*c);
            }
        }
        for c in &node.in_control {
            if let Some(n) = self.nodes.get_mut(*c) {
                n.out_control.retain(|x| *x != id);
            }
        }
        for c in &node.out_control {
            if let Some(n) = self.nodes.get_mut(*c) {
                n.in_control.retain(|x| *x != id);
            }
        }
        self.outputs.retain(|p| p.node != id);
        let len = self.outputs.len();
        self.missing_outputs.retain(|&i| i < len);
        Ok(node.into_inner())
    }

    /// Takes node `id`'s inputs out of their producers' consumer lists, except those whose
    /// producer `skip` names; O(1) per input.
    fn unlink_inputs(&mut self, id: NodeId, skip: impl Fn(NodeId) -> bool) {
        let n_in = self.nodes[id].inputs.len();
        for i in 0..n_in {
            if let Some(src) = self.nodes[id].inputs[i].source {
                if !skip(src.node) && self.nodes.contains_key(src.node) {
                    self.unlink(
                        src,
                        InPort {
                            node: id,
                            index: i as u32,
                        },
                    );
                }
            }
        }
    }

    /// Removes several nodes with all their edges, in time linear in their edges, however many
    /// consumers their producers have. Graph outputs that pointed at them are dropped.
    pub fn remove_nodes(&mut self, ids: &[NodeId]) -> Result<Vec<Node>> {
        let mut removed = Vec::with_capacity(ids.len());
        self.remove_nodes_with(ids, |n| removed.push(n.into_inner()))?;
        Ok(removed)
    }

    /// [`Graph::remove_nodes`] that drops the removed nodes instead of returning them.
    pub fn delete_nodes(&mut self, ids: &[NodeId]) -> Result<()> {
        self.remove_nodes_with(ids, drop)
    }

    /// [`Graph::remove_nodes`], handing each removed node to `take`.
    fn remove_nodes_with(
        &mut self,
        ids: &[NodeId],
        mut take: impl FnMut(SharedNode),
    ) -> Result<()> {
        // A few nodes (a rewrite's match) are scanned; many are hashed.
        let hashed: Option<rustc_hash::FxHashSet<NodeId>> =
            (ids.len() > 16).then(|| ids.iter().copied().collect());
        let set = |n: &NodeId| match &hashed {
            Some(h) => h.contains(n),
            None => ids.contains(n),
        };
        let twice = match &hashed {
            Some(h) => h.len() != ids.len(),
            None => ids.iter().enumerate().any(|(i, n)| ids[..i].contains(n)),
        };
        if twice {
            return Err(Error::value("remove_nodes: a node is listed twice"));
        }
        for &id in ids {
            self.node(id)?;
        }
        // Edges from producers that stay: unlinked while every node is still in the arena, so
        // that a consumer moved by a removal (possibly one being removed) gets its new place.
        for &id in ids {
            self.unlink_inputs(id, |p| set(&p));
        }
        let mut neighbours: Vec<NodeId> = Vec::new();
        for &id in ids {
            let Some(node) = self.nodes.remove(id) else {
                continue;
            };
            for out in &node.outputs {
                for c in out.consumers.iter().filter(|c| !set(&c.node)) {
                    self.unhook_input(*c);
                }
            }
            neighbours.extend(
                node.in_control
                    .iter()
                    .chain(&node.out_control)
                    .filter(|c| !set(c)),
            );
            take(node);
        }
        neighbours.sort_unstable();
        neighbours.dedup();
        for c in neighbours {
            if let Some(n) = self.nodes.get_mut(c) {
                n.in_control.retain(|x| !set(x));
                n.out_control.retain(|x| !set(x));
            }
        }
        self.outputs.retain(|p| !set(&p.node));
        let len = self.outputs.len();
        self.missing_outputs.retain(|&i| i < len);
        Ok(())
    }

    /// Renames a node (names stay unique).
    pub fn rename_node(&mut self, id: NodeId, new_name: &str) -> Result<()> {
        self.node(id)?;
        let names = self.names.get_mut();
        names.complete(&self.nodes);
        if let Some(other) = names.live(new_name, &self.nodes) {
            if other != id {
                return Err(Error::build(format!(
                    "graph '{}' already has a node named '{new_name}'",
                    self.name
                )));
            }
            return Ok(());
        }
        let old = std::mem::replace(&mut self.nodes[id].name, Name::new(new_name));
        names.map.remove(&old);
        names.map.insert(Name::new(new_name), id);
        Ok(())
    }

    /// Every consumer of every output of `id`, as (output index, consumer input).
    pub fn out_edges(&self, id: NodeId) -> Result<Vec<(u32, InPort)>> {
        let n = self.node(id)?;
        Ok(n.outputs
            .iter()
            .enumerate()
            .flat_map(|(i, o)| o.consumers.iter().map(move |c| (i as u32, *c)))
            .collect())
    }

    pub fn set_output(&mut self, index: usize, port: OutPort) -> Result<()> {
        self.check_out(port)?;
        if index > 1_000_000 {
            return Err(Error::value(format!(
                "graph output index {index} is too large"
            )));
        }
        while self.outputs.len() < index {
            self.missing_outputs.insert(self.outputs.len());
            self.outputs.push(port);
        }
        if self.outputs.len() == index {
            self.outputs.push(port);
        } else {
            self.outputs[index] = port;
        }
        self.missing_outputs.remove(&index);
        Ok(())
    }

    /// Data and control predecessors of a node.
    fn preds<'a>(&self, n: &'a Node) -> impl Iterator<Item = NodeId> + 'a {
        n.inputs
            .iter()
            .filter_map(|i| i.source.map(|s| s.node))
            .chain(n.in_control.iter().copied())
    }

    /// Topological order over data and control edges (stable: ties in creation order).
    /// A cycle is an error naming the nodes on it.
    pub fn topo_order(&self) -> Result<Vec<NodeId>> {
        use std::cmp::Reverse;
        let order = self.nodes();
        let n = order.len();
        let mut pos: slotmap::SecondaryMap<NodeId, usize> =
            slotmap::SecondaryMap::with_capacity(self.nodes.capacity());
        for (i, id) in order.iter().enumerate() {
            pos.insert(*id, i);
        }
        // Edges come from each node's predecessor lists only, so in- and out-counts agree even
        // for a graph whose two edge directions disagree. Successors in one flat list (per
        // node, in the order of `order`): `succs[start[j]..start[j + 1]]`.
        let mut indeg = vec![0usize; n];
        let mut start = vec![0usize; n + 1];
        for (i, &id) in order.iter().enumerate() {
            for p in self.preds(&self.nodes[id]) {
                if let Some(&j) = pos.get(p) {
                    indeg[i] += 1;
                    start[j + 1] += 1;
                }
            }
        }
        for j in 0..n {
            start[j + 1] += start[j];
        }
        let mut fill = start.clone();
        let mut flat = vec![0usize; start[n]];
        for (i, &id) in order.iter().enumerate() {
            for p in self.preds(&self.nodes[id]) {
                if let Some(&j) = pos.get(p) {
                    flat[fill[j]] = i;
                    fill[j] += 1;
                }
            }
        }
        let succs = |j: usize| &flat[start[j]..start[j + 1]];
        let mut ready: std::collections::BinaryHeap<Reverse<usize>> =
            (0..n).filter(|&i| indeg[i] == 0).map(Reverse).collect();
        let mut out = Vec::with_capacity(n);
        while let Some(Reverse(i)) = ready.pop() {
            out.push(order[i]);
            for &s in succs(i) {
                indeg[s] -= 1;
                if indeg[s] == 0 {
                    ready.push(Reverse(s));
                }
            }
        }
        if out.len() != n {
            // Peel off stuck nodes that lead to no other stuck node: what remains is on a cycle.
            let mut stuck: Vec<bool> = indeg.iter().map(|&d| d > 0).collect();
            loop {
                let mut changed = false;
                for i in 0..n {
                    if stuck[i] && !succs(i).iter().any(|&s| stuck[s]) {
                        stuck[i] = false;
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
            let mut names: Vec<&str> = (0..n)
                .filter(|&i| stuck[i])
                .map(|i| self.nodes[order[i]].name.as_str())
                .collect();
            names.truncate(10);
            return Err(Error::build(format!(
                "graph '{}' has a cycle through nodes {}",
                self.name,
                names.join(", ")
            )));
        }
        Ok(out)
    }

    /// The first-made data node (Data, RefData, AippData, AnyData) whose `index` attribute is
    /// `index`, found without collecting or sorting the inputs.
    pub fn input_with_index(&self, index: i64) -> Option<NodeId> {
        self.nodes
            .iter()
            .filter(|(_, n)| {
                is_data_op(&n.op_type)
                    && n.attrs.get("index").and_then(AttrValue::as_int) == Some(index)
            })
            .min_by_key(|(_, n)| n.seq)
            .map(|(id, _)| id)
    }

    /// Data nodes (op types Data, RefData, AippData, AnyData) sorted by their `index` attribute.
    pub fn input_nodes(&self) -> Vec<NodeId> {
        let mut v: Vec<(i64, NodeId)> = self
            .nodes
            .iter()
            .filter(|(_, n)| is_data_op(&n.op_type))
            .map(|(id, n)| {
                (
                    n.attrs
                        .get("index")
                        .and_then(AttrValue::as_int)
                        .unwrap_or(0),
                    id,
                )
            })
            .collect();
        v.sort_by_key(|p| (p.0, self.nodes[p.1].seq));
        v.into_iter().map(|p| p.1).collect()
    }

    /// Checks the graph: edges point at live nodes, required inputs are connected, outputs set,
    /// Data indexes are 0..n without gaps or repeats, no cycle; recursively for subgraphs.
    pub fn validate(&self) -> Result<()> {
        let reg = crate::ops::global_registry();
        // Prototypes of the op types seen so far (a graph has few): no registry hashing per node.
        let mut protos: Vec<(Name, Option<&std::sync::Arc<crate::ops::OpProto>>)> = Vec::new();
        let mut check = |n: &Node| -> Result<()> {
            let t = n.op_type.as_str();
            let proto = match protos.iter().find(|(k, _)| *k == t) {
                Some(&(_, p)) => p,
                None => {
                    let p = reg.get(t);
                    if protos.len() < 64 {
                        protos.push((n.op_type.clone(), p));
                    }
                    p
                }
            };
            for (i, inp) in n.inputs.iter().enumerate() {
                match inp.source {
                    Some(src) => {
                        let p = self.nodes.get(src.node).ok_or_else(|| {
                            Error::build(format!(
                                "input {i} of '{}' comes from a removed node",
                                n.name
                            ))
                        })?;
                        if src.index as usize >= p.outputs.len() {
                            return Err(Error::build(format!(
                                "input {i} of '{}' comes from output {} of '{}', which has {} outputs",
                                n.name, src.index, p.name, p.outputs.len()
                            )));
                        }
                    }
                    None if is_data_op(&n.op_type) || n.op_type == "Variable" => {}
                    None => {
                        let optional = proto
                            .and_then(|p| p.inputs.get(inp.ir_index as usize))
                            .map(|d| d.kind == crate::ops::IoKind::Optional)
                            .unwrap_or(false);
                        if !optional {
                            return Err(Error::build(format!(
                                "input {} ('{}') of node '{}' ({}) is not connected",
                                i, inp.name, n.name, n.op_type
                            )));
                        }
                    }
                }
            }
            if let Some(p) = proto {
                for a in &p.attrs {
                    if a.required() && !n.attrs.contains_key(&a.name) {
                        return Err(Error::build(format!(
                            "node '{}' ({}) lacks required attribute '{}'",
                            n.name, n.op_type, a.name
                        )));
                    }
                }
            }
            for s in &n.subgraphs {
                s.graph.validate().map_err(|e| {
                    Error::build(format!("subgraph '{}' of node '{}': {e}", s.name, n.name))
                })?;
            }
            Ok(())
        };
        // Arena order (no sort); on a failure, again in creation order, so that the error
        // reported is the first in creation order.
        if self.nodes.values().try_for_each(|n| check(n)).is_err() {
            for id in self.nodes() {
                check(&self.nodes[id])?;
            }
        }
        if let Some(i) = self.missing_outputs.iter().next() {
            return Err(Error::build(format!(
                "graph '{}': output {i} is not set (outputs 0..{} must all be set)",
                self.name,
                self.outputs.len()
            )));
        }
        for (i, p) in self.outputs.iter().enumerate() {
            self.check_out(*p)
                .map_err(|e| Error::build(format!("graph output {i}: {e}")))?;
        }
        let mut seen = std::collections::BTreeMap::new();
        for id in self.input_nodes() {
            let n = &self.nodes[id];
            let idx = n
                .attrs
                .get("index")
                .and_then(AttrValue::as_int)
                .unwrap_or(0);
            if let Some(other) = seen.insert(idx, n.name.clone()) {
                return Err(Error::build(format!(
                    "graph '{}': inputs '{}' and '{}' both have index {idx}",
                    self.name, other, n.name
                )));
            }
        }
        for (expect, (&idx, name)) in seen.iter().enumerate() {
            if idx != expect as i64 {
                return Err(Error::build(format!(
                    "graph '{}': input indexes must be 0..{} without gaps; '{}' has index {idx}",
                    self.name,
                    seen.len(),
                    name
                )));
            }
        }
        // Acyclic for sure when every edge goes from an older node to a newer one (the creation
        // order is then a topological order), which is how a builder makes them; otherwise the
        // full sort decides (and names a cycle).
        if !self.edges_follow_creation_order() {
            self.topo_order()?;
        }
        Ok(())
    }

    /// Whether every data and control edge goes from a node made earlier to one made later.
    fn edges_follow_creation_order(&self) -> bool {
        self.nodes.values().all(|n| {
            self.preds(n)
                .all(|p| self.nodes.get(p).is_some_and(|m| m.seq < n.seq))
        })
    }

    /// The producer of input `index` of `id`.
    pub fn producer(&self, id: NodeId, index: usize) -> Result<Option<OutPort>> {
        let n = self.node(id)?;
        n.inputs.get(index).map(|i| i.source).ok_or_else(|| {
            Error::value(format!(
                "node '{}' has {} inputs, no input {index}",
                n.name,
                n.inputs.len()
            ))
        })
    }

    /// The description of an output.
    pub fn out_desc(&self, p: OutPort) -> Result<&TensorDesc> {
        self.check_out(p)?;
        Ok(&self.nodes[p.node].outputs[p.index as usize].desc)
    }

    /// The description of an output as shared (cloning it shares the allocation).
    pub fn out_desc_shared(&self, p: OutPort) -> Result<&SharedDesc> {
        self.check_out(p)?;
        Ok(&self.nodes[p.node].outputs[p.index as usize].desc)
    }

    /// Every subgraph of every node, recursively, as (path of names, graph).
    pub fn all_subgraphs(&self) -> Vec<&Graph> {
        let mut out = Vec::new();
        for id in self.nodes() {
            for s in &self.nodes[id].subgraphs {
                out.push(&s.graph);
                out.extend(s.graph.all_subgraphs());
            }
        }
        out
    }
}

/// Op types that are graph inputs.
pub fn is_data_op(op_type: &str) -> bool {
    matches!(op_type, "Data" | "RefData" | "AippData" | "AnyData")
}

impl Graph {
    /// Checks the internal invariants a file could break: edges point at live nodes and real
    /// ports, both directions agree, names are unique, outputs are real.
    pub fn check_integrity(&self) -> Result<()> {
        let bad = |m: String| Error::serial(format!("damaged graph '{}': {m}", self.name));
        let indexed = {
            let mut names = self.names.lock();
            names.complete(&self.nodes);
            names
                .map
                .values()
                .filter(|&&id| self.nodes.contains_key(id))
                .count()
        };
        if indexed != self.nodes.len() {
            return Err(bad("node names are not unique".into()));
        }
        for (id, n) in &self.nodes {
            for (i, inp) in n.inputs.iter().enumerate() {
                if let Some(src) = inp.source {
                    let p = self.nodes.get(src.node).ok_or_else(|| {
                        bad(format!("input {i} of '{}' points at no node", n.name))
                    })?;
                    let o = p.outputs.get(src.index as usize).ok_or_else(|| {
                        bad(format!(
                            "input {i} of '{}' points at a missing output",
                            n.name
                        ))
                    })?;
                    if o.consumers.get(inp.consumer_pos as usize)
                        != Some(&InPort {
                            node: id,
                            index: i as u32,
                        })
                    {
                        return Err(bad(format!(
                            "edge into input {i} of '{}' is one-sided",
                            n.name
                        )));
                    }
                }
            }
            for (oi, o) in n.outputs.iter().enumerate() {
                for c in &o.consumers {
                    let cn = self
                        .nodes
                        .get(c.node)
                        .ok_or_else(|| bad(format!("output {oi} of '{}' feeds no node", n.name)))?;
                    let slot = cn.inputs.get(c.index as usize).ok_or_else(|| {
                        bad(format!("output {oi} of '{}' feeds a missing input", n.name))
                    })?;
                    if slot.source
                        != Some(OutPort {
                            node: id,
                            index: oi as u32,
                        })
                    {
                        return Err(bad(format!(
                            "edge from output {oi} of '{}' is one-sided",
                            n.name
                        )));
                    }
                }
            }
            for c in n.in_control.iter().chain(&n.out_control) {
                if !self.nodes.contains_key(*c) {
                    return Err(bad(format!(
                        "control edge of '{}' points at no node",
                        n.name
                    )));
                }
                if *c == id {
                    return Err(bad(format!(
                        "node '{}' has a control edge to itself",
                        n.name
                    )));
                }
            }
            if n.in_control
                .iter()
                .any(|c| !self.nodes[*c].out_control.contains(&id))
                || n.out_control
                    .iter()
                    .any(|c| !self.nodes[*c].in_control.contains(&id))
            {
                return Err(bad(format!("a control edge of '{}' is one-sided", n.name)));
            }
            let unique =
                |v: &[NodeId]| v.iter().collect::<std::collections::HashSet<_>>().len() == v.len();
            if !unique(&n.in_control) || !unique(&n.out_control) {
                return Err(bad(format!("node '{}' lists a control edge twice", n.name)));
            }
            let tensors = n
                .attrs
                .values()
                .chain(n.private_attrs.values())
                .chain(n.inputs.iter().flat_map(|i| i.desc.attrs.values()))
                .chain(n.outputs.iter().flat_map(|o| o.desc.attrs.values()));
            for a in tensors {
                if let AttrValue::Tensor(t) = a {
                    let what = format!("a tensor attribute of '{}'", n.name);
                    let want = crate::opmath::byte_size(&what, t.desc.dtype, &t.desc.shape)
                        .map_err(|e| bad(e.to_string()))?;
                    if want != Some(t.data.len()) && t.desc.dtype.size().is_some() {
                        return Err(bad(format!(
                            "a tensor attribute of '{}' ({}) holds {} bytes",
                            n.name,
                            t.desc,
                            t.data.len()
                        )));
                    }
                }
            }
            for o in &n.outputs {
                if o.consumers
                    .iter()
                    .collect::<std::collections::HashSet<_>>()
                    .len()
                    != o.consumers.len()
                {
                    return Err(bad(format!(
                        "an output of '{}' lists a consumer twice",
                        n.name
                    )));
                }
            }
            for s in &n.subgraphs {
                s.graph.check_integrity()?;
            }
        }
        for (i, p) in self.outputs.iter().enumerate() {
            let n = self
                .nodes
                .get(p.node)
                .ok_or_else(|| bad(format!("output {i} points at no node")))?;
            if p.index as usize >= n.outputs.len() {
                return Err(bad(format!("output {i} points at a missing port")));
            }
        }
        if self
            .missing_outputs
            .iter()
            .any(|&i| i >= self.outputs.len())
        {
            return Err(bad("missing-output list is out of range".into()));
        }
        Ok(())
    }
}

/// `index` names one of a node's `count` inputs or outputs (`what`).
fn check_slot(n: &Node, what: &str, count: usize, index: u32) -> Result<()> {
    if index as usize >= count {
        return Err(Error::build(format!(
            "node '{}' ({}) has {count} {what}s, no {what} {index}",
            n.name, n.op_type
        )));
    }
    Ok(())
}

#[cfg(test)]
mod order_tests {
    use super::*;

    fn relu(g: &mut Graph, name: &str, inputs: usize) -> NodeId {
        let mut n = Node::new(name, "Relu");
        for k in 0..inputs {
            n.inputs
                .push(InputSlot::new(format!("x{k}"), 0, TensorDesc::default()));
        }
        n.outputs
            .push(OutputSlot::new("y", 0, TensorDesc::default()));
        g.add_node(n).unwrap()
    }

    fn edge(g: &mut Graph, src: NodeId, dst: NodeId) {
        g.add_data_edge(
            OutPort {
                node: src,
                index: 0,
            },
            InPort {
                node: dst,
                index: 0,
            },
        )
        .unwrap();
    }

    #[test]
    fn an_edge_against_creation_order_is_sorted_not_refused() {
        // `late` is made after its consumer: validation cannot rely on the creation order.
        let mut g = Graph::new("g");
        let first = relu(&mut g, "first", 1);
        let late = relu(&mut g, "late", 0);
        edge(&mut g, late, first);
        assert!(!g.edges_follow_creation_order());
        g.validate().unwrap();
        assert_eq!(g.topo_order().unwrap(), vec![late, first]);
    }

    #[test]
    fn validation_names_the_cycle_as_the_sort_does() {
        let mut g = Graph::new("g");
        let a = relu(&mut g, "a", 1);
        let b = relu(&mut g, "b", 1);
        edge(&mut g, a, b);
        assert!(g.edges_follow_creation_order());
        edge(&mut g, b, a);
        assert!(!g.edges_follow_creation_order());
        let sorted = g.topo_order().unwrap_err().to_string();
        assert!(sorted.contains("cycle"), "{sorted}");
        assert_eq!(g.validate().unwrap_err().to_string(), sorted);
    }

    #[test]
    fn the_sort_keeps_creation_order_among_ready_nodes() {
        let mut g = Graph::new("g");
        let c = relu(&mut g, "c", 1);
        let a = relu(&mut g, "a", 0);
        let b = relu(&mut g, "b", 1);
        edge(&mut g, a, b);
        edge(&mut g, b, c);
        let d = relu(&mut g, "d", 0);
        assert_eq!(g.topo_order().unwrap(), vec![a, b, c, d]);
    }
}

/// `<base>_<n>` (an automatic node name), written without the formatting machinery when it
/// fits a small buffer.
pub(crate) fn numbered_name(base: &str, n: u64) -> Name {
    let mut digits = [0u8; 20];
    let mut k = digits.len();
    let mut v = n;
    loop {
        k -= 1;
        digits[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut buf = [0u8; 64];
    let len = base.len() + 1 + (digits.len() - k);
    if len > buf.len() {
        return format_smolstr!("{base}_{n}");
    }
    buf[..base.len()].copy_from_slice(base.as_bytes());
    buf[base.len()] = b'_';
    buf[base.len() + 1..len].copy_from_slice(&digits[k..]);
    // `base` is UTF-8 and the rest ASCII: the buffer is valid UTF-8.
    std::str::from_utf8(&buf[..len]).map_or_else(|_| format_smolstr!("{base}_{n}"), Name::new)
}

#[cfg(test)]
mod naming_tests {
    use super::numbered_name;

    #[test]
    fn numbered_names_match_the_formatted_ones() {
        let long = "L".repeat(70);
        for base in ["Add", "Relu", "", "Ünïcode", long.as_str()] {
            for n in [0u64, 1, 9, 10, 99, 100, 12345, u64::MAX] {
                assert_eq!(numbered_name(base, n), format!("{base}_{n}"));
            }
        }
    }
}

#[cfg(test)]
mod name_index_tests {
    use super::{numbered_name, Graph, Node, NodeId};
    use proptest::prelude::*;
    use std::collections::hash_map::Entry;
    use std::collections::HashMap;

    #[derive(Debug, Clone)]
    enum Step {
        /// An automatically named node of op type `ops[k]`.
        Auto(usize),
        /// A node named explicitly (automatic-looking names included).
        Named(String),
        /// Removes the live node at this position (modulo the count).
        Remove(usize),
        /// Renames the live node at this position.
        Rename(usize, String),
        /// Looks a name up.
        Find(String),
        /// Clones the graph and goes on with the clone.
        Clone,
    }

    const OPS: [&str; 3] = ["Add", "Relu", "Add_1"];

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            (0usize..3, 0u64..6).prop_map(|(k, n)| numbered_name(OPS[k], n).to_string()),
            "[a-c]{1,2}",
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0usize..3).prop_map(Step::Auto),
            2 => name().prop_map(Step::Named),
            2 => any::<usize>().prop_map(Step::Remove),
            1 => (any::<usize>(), name()).prop_map(|(i, n)| Step::Rename(i, n)),
            2 => name().prop_map(Step::Find),
            1 => Just(Step::Clone),
        ]
    }

    proptest! {
        /// The lazily completed index answers as an index kept complete at every step would:
        /// names stay unique, every live node is found by its name, removed and renamed-away
        /// names are not found, duplicates are refused, and automatic names are the first
        /// free `<op>_<n>` after the numbers given before (as a builder's counters gave them).
        #[test]
        fn lazy_index_matches_an_eager_one(steps in proptest::collection::vec(step(), 1..60)) {
            let mut g = Graph::new("g");
            let mut model: HashMap<String, NodeId> = HashMap::new();
            let mut counters: HashMap<&str, u64> = HashMap::new();
            for s in steps {
                match s {
                    Step::Auto(k) => {
                        let op = OPS[k];
                        let mut c = counters.get(op).copied().unwrap_or(0);
                        let expect = loop {
                            let n = numbered_name(op, c).to_string();
                            c += 1;
                            if !model.contains_key(&n) {
                                break n;
                            }
                        };
                        let (name, next) = g.next_auto_name(op);
                        prop_assert_eq!(name.as_str(), expect.as_str());
                        prop_assert_eq!(next, c);
                        let id = g.add_auto_named(Node::new(name, op), next).unwrap();
                        counters.insert(op, c);
                        model.insert(expect, id);
                    }
                    Step::Named(n) => {
                        let r = g.add_node(Node::new(n.as_str(), "Relu"));
                        match model.entry(n) {
                            Entry::Occupied(_) => prop_assert!(r.is_err()),
                            Entry::Vacant(e) => {
                                e.insert(r.unwrap());
                            }
                        }
                    }
                    Step::Remove(i) if !model.is_empty() => {
                        let mut live: Vec<_> = model.keys().cloned().collect();
                        live.sort();
                        let n = live[i % live.len()].clone();
                        let id = model.remove(&n).unwrap();
                        g.remove_node(id).unwrap();
                    }
                    Step::Rename(i, to) if !model.is_empty() => {
                        let mut live: Vec<_> = model.keys().cloned().collect();
                        live.sort();
                        let from = live[i % live.len()].clone();
                        let id = model[&from];
                        let r = g.rename_node(id, &to);
                        match model.get(&to) {
                            Some(&other) if other != id => prop_assert!(r.is_err()),
                            _ => {
                                r.unwrap();
                                model.remove(&from);
                                model.insert(to, id);
                            }
                        }
                    }
                    Step::Find(n) => prop_assert_eq!(g.find(&n), model.get(&n).copied()),
                    Step::Clone => g = g.clone(),
                    Step::Remove(_) | Step::Rename(..) => {}
                }
            }
            prop_assert_eq!(g.node_count(), model.len());
            for (n, id) in &model {
                prop_assert_eq!(g.find(n), Some(*id));
                prop_assert_eq!(g.node(*id).unwrap().name.as_str(), n.as_str());
            }
            g.check_integrity().unwrap();
        }
    }

    #[test]
    fn removed_names_are_free_again_after_a_compaction() {
        let mut g = Graph::new("g");
        let ids: Vec<NodeId> = (0..50)
            .map(|i| g.add_node(Node::new(format!("n{i}"), "Relu")).unwrap())
            .collect();
        assert_eq!(g.find("n7"), Some(ids[7]));
        g.delete_nodes(&ids[..45]).unwrap();
        // Fill the map up to its capacity: most of it is stale (the 45 removed names).
        let cap = g.names.lock().map.capacity();
        let mut i = 0;
        while g.names.lock().map.len() < cap {
            g.add_node(Node::new(format!("m{i}"), "Relu")).unwrap();
            i += 1;
        }
        // This add drops the stale entries (instead of growing the map).
        let again = g.add_node(Node::new("n7", "Relu")).unwrap();
        assert_eq!(g.names.lock().map.len(), g.node_count());
        assert_eq!(g.find("n7"), Some(again));
        assert_eq!(g.find("n8"), None);
        assert_eq!(g.find("n49"), Some(ids[49]));
        assert_eq!(g.unique_name("n8"), "n8");
        assert_eq!(g.unique_name("n49"), "n49_1");
        assert!(g.add_node(Node::new("n49", "Relu")).is_err());
        g.check_integrity().unwrap();
    }

    #[test]
    fn a_number_given_twice_falls_back_to_the_checked_add() {
        let mut g = Graph::new("g");
        let (name, next) = g.next_auto_name("Add");
        let a = g
            .add_auto_named(Node::new(name.clone(), "Add"), next)
            .unwrap();
        // The same number again: refused as a duplicate, not added unindexed.
        assert!(g.add_auto_named(Node::new(name, "Add"), next).is_err());
        assert_eq!(g.find("Add_0"), Some(a));
        assert_eq!(g.next_auto_name("Add").0, "Add_1");
    }
}

#[cfg(test)]
mod shared_node_tests {
    use super::{Graph, InPort, InputSlot, Node, NodeId, OutPort, OutputSlot};
    use crate::types::TensorDesc;
    use std::sync::Arc;

    #[test]
    fn clones_share_node_records_until_one_changes() {
        let mut g = Graph::new("g");
        let a = g.add_node(Node::new("a", "Relu")).unwrap();
        let b = g.add_node(Node::new("b", "Relu")).unwrap();
        g.node_mut(a)
            .unwrap()
            .outputs
            .push(OutputSlot::new("y", 0, TensorDesc::default()));
        g.node_mut(b)
            .unwrap()
            .inputs
            .push(InputSlot::new("x", 0, TensorDesc::default()));
        let backup = g.clone();
        let same = |x: &Graph, y: &Graph, id: NodeId| Arc::ptr_eq(&x.nodes[id].0, &y.nodes[id].0);
        assert!(same(&g, &backup, a) && same(&g, &backup, b));
        // An edge changes both ends: those two records are copied, in `g` only.
        g.add_data_edge(OutPort { node: a, index: 0 }, InPort { node: b, index: 0 })
            .unwrap();
        assert!(!same(&g, &backup, a) && !same(&g, &backup, b));
        assert_eq!(backup.node(a).unwrap().outputs[0].consumers, vec![]);
        assert_eq!(backup.node(b).unwrap().inputs[0].source, None);
        // A removal in the clone leaves the original's record whole.
        let c = g.add_node(Node::new("c", "Relu")).unwrap();
        let before = g.clone();
        g.remove_node(a).unwrap();
        assert_eq!(g.node(b).unwrap().inputs[0].source, None);
        assert_eq!(
            before.node(b).unwrap().inputs[0].source,
            Some(OutPort { node: a, index: 0 })
        );
        assert!(same(&g, &before, c));
        // The removed node is moved out of `g`, copied only because `before` still holds it.
        assert_eq!(before.node(a).unwrap().outputs[0].consumers.len(), 1);
        for x in [&g, &backup, &before] {
            x.check_integrity().unwrap();
        }
    }
}
