//! IR semantic compatibility: adapting a graph built against one operator-library version to
//! another (seed 000, §"`IR`语义兼容性处理").
//!
//! A graph records the library version it was built against (`Graph::ops_version`). When it has
//! to be used with another version, every node is compared with the prototypes of its op in both
//! versions ("直构图 IR", the graph's version, and "兼容图 IR", the target version) and adapted by
//! the seed's table, which covers optional attributes and optional inputs only:
//!
//! | row | graph's IR       | target IR        | node                       | result                                   |
//! |-----|------------------|------------------|----------------------------|------------------------------------------|
//! | 1   | has optional attr | lacks it         | attr set (non-default)     | refuse: the graph uses a feature the target lacks |
//! | 2   | has optional attr | lacks it         | attr unset (or default)    | delete the attribute                     |
//! | 3   | lacks optional attr | has it         | attr set                   | refuse: the node does not match its own IR |
//! | 4   | lacks optional attr | has it         | attr unset                 | fill the target's default                |
//! | 5   | has optional input | lacks it        | input connected            | refuse: the graph uses a feature the target lacks |
//! | 6   | has optional input | lacks it        | input unconnected          | delete the input                         |
//! | 7   | lacks optional input | has it        | input connected            | refuse: the node does not match its own IR |
//! | 8   | lacks optional input | has it        | input unconnected          | ignore (leave it unconnected)            |
//!
//! "Set" for an attribute (rows 1 and 3): the builder stores every attribute, defaults included,
//! so an attribute whose value equals the graph version's default (floats within 1e-5, see
//! [`AttrValue::approx_eq`]) counts as unset in row 1/2. Row 3 concerns an attribute the graph's
//! own version does not declare, so any value of it is a mismatch.
//!
//! Consistency check (the seed's "关于兼容性方向的判定说明"): when an op's prototype in the
//! graph's version both has attributes/inputs the target lacks *and* lacks some the target has,
//! the IR was changed incompatibly and every node of that op is refused, used or not.
//!
//! Everything else the seed calls an incompatible change ("除上述情况外，其他任何 IR 定义的变更均属于
//! 不兼容变更") and is refused for nodes of that op: a required attribute or input added or
//! removed, an attribute whose type changed, inputs reordered, any difference in outputs,
//! subgraphs, derived attributes or output-count rules, and any difference in dynamic inputs.
//! Dynamic inputs, dynamic outputs and subgraphs are adapted only when their declarations are
//! identical in both versions: they are neither optional attributes nor optional inputs (the
//! only two kinds of change the table defines), and adding or removing one changes how instances
//! are expanded and counted (`len(x)` derived attributes, output counts), which the graph's
//! nodes cannot be rewritten for without guessing. New supported dtypes are not part of this
//! flow (the seed leaves them to dtype inference and support checks), so type specs are ignored.
//!
//! Differences the seed's table does not name but that leave a node's meaning intact are
//! accepted: an attribute whose default changed keeps the node's stored value; an attribute or
//! input that turned between required and optional is accepted as long as the node carries a
//! value / a connection where the target requires one.
//!
//! Graph-input, constant and variable nodes (`Data`, `RefData`, `AippData`, `AnyData`, `Const`,
//! `Constant`, `Variable`) are made by the builder without a prototype; they are adapted like any
//! node when both libraries define their op, and left as they are otherwise.
//!
//! After adaptation a node's input slots and attributes are exactly those `GraphBuilder::add_op`
//! makes for the same call under the target version: removed slots are dropped, later slots get
//! the target's IR indices, a new optional input is an unconnected slot at the target's position
//! with the description `add_op` gives an absent optional input.

use crate::attr::{AttrMap, AttrValue};
use crate::error::{Error, Result};
use crate::graph::{Graph, InputSlot, Name, NodeId};
use crate::ops::{IoKind, OpProto, OpRegistry};
use crate::types::{DataType, Shape, TensorDesc};
use std::collections::HashMap;
use std::fmt;

/// One change adaptation made to one node.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Row 2: an optional attribute the target lacks, unset (at its default), was deleted.
    RemovedAttr {
        graph: String,
        node: String,
        op: String,
        attr: String,
        /// The value the node had (the graph version's default, within tolerance).
        value: AttrValue,
    },
    /// Row 4: an optional attribute only the target has was filled with its default.
    FilledAttr {
        graph: String,
        node: String,
        op: String,
        attr: String,
        value: AttrValue,
    },
    /// Row 6: an unconnected optional input the target lacks was deleted.
    RemovedInput {
        graph: String,
        node: String,
        op: String,
        input: String,
    },
    /// Row 8: an optional input only the target has was added, unconnected, at `index`.
    AddedInput {
        graph: String,
        node: String,
        op: String,
        input: String,
        index: u32,
    },
}

impl Change {
    /// The row of the seed's table this change applies.
    pub fn row(&self) -> u8 {
        match self {
            Change::RemovedAttr { .. } => 2,
            Change::FilledAttr { .. } => 4,
            Change::RemovedInput { .. } => 6,
            Change::AddedInput { .. } => 8,
        }
    }
    /// The name of the node changed.
    pub fn node(&self) -> &str {
        self.site().1
    }
    /// Where the change is: the graph's name, the node's name and its op type.
    fn site(&self) -> (&str, &str, &str) {
        match self {
            Change::RemovedAttr {
                graph, node, op, ..
            }
            | Change::FilledAttr {
                graph, node, op, ..
            }
            | Change::RemovedInput {
                graph, node, op, ..
            }
            | Change::AddedInput {
                graph, node, op, ..
            } => (graph, node, op),
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (graph, node, op) = self.site();
        write!(f, "graph '{graph}', node '{node}' ({op}): ")?;
        match self {
            Change::RemovedAttr { attr, value, .. } => {
                write!(f, "removed unset attribute '{attr}' ({value})")
            }
            Change::FilledAttr { attr, value, .. } => {
                write!(f, "added attribute '{attr}' with its default {value}")
            }
            Change::RemovedInput { input, .. } => {
                write!(f, "removed unconnected optional input '{input}'")
            }
            Change::AddedInput { input, index, .. } => {
                write!(f, "added unconnected optional input '{input}' at {index}")
            }
        }
    }
}

/// What adaptation did, per node, in graph order (subgraphs after their parent node).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdaptReport {
    pub changes: Vec<Change>,
}

impl AdaptReport {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

impl fmt::Display for AdaptReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.changes.is_empty() {
            return write!(f, "no changes");
        }
        for (i, c) in self.changes.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// Adapts `graph` (built against `from`) to `to`, recursively into subgraphs, and sets
/// `ops_version` (of the graph and of every subgraph) to `to.version`.
///
/// A refusal is an [`Error::Compatibility`] naming the node, its op, the attribute or input, and
/// both versions. On error the graph is left unchanged (the work is done on a clone).
pub fn adapt(graph: &mut Graph, from: &OpRegistry, to: &OpRegistry) -> Result<AdaptReport> {
    if graph.ops_version != from.version {
        return Err(Error::Compatibility(format!(
            "graph '{}' records operator library {} but was to be adapted from library {}",
            graph.name, graph.ops_version, from.version
        )));
    }
    let mut work = graph.clone();
    let mut cx = Cx {
        from,
        to,
        plans: HashMap::new(),
        changes: Vec::new(),
    };
    cx.graph(&mut work, "")?;
    let changes = std::mem::take(&mut cx.changes);
    *graph = work;
    Ok(AdaptReport { changes })
}

/// Op types the builder makes without a prototype.
fn is_builtin_kind(op: &str) -> bool {
    matches!(
        op,
        "Data" | "RefData" | "AippData" | "AnyData" | "Const" | "Constant" | "Variable"
    )
}

/// How the prototypes of one op in the two versions relate (independent of any node).
struct Plan {
    /// Nothing to change in a node (same attributes and inputs in both versions).
    trivial: bool,
    /// For each target input, the graph version's input of the same name.
    in_map: Vec<Option<usize>>,
    /// For each graph-version input, whether the target has it.
    in_kept: Vec<bool>,
}

struct Cx<'a> {
    from: &'a OpRegistry,
    to: &'a OpRegistry,
    /// Per op: its plan, or why its nodes are refused.
    plans: HashMap<Name, std::result::Result<Plan, String>>,
    changes: Vec<Change>,
}

fn names<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = it.collect();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

fn is_instance_of(slot: &str, def: &crate::ops::IoDef) -> bool {
    match def.kind {
        IoKind::Dynamic => slot
            .strip_prefix(def.name.as_str())
            .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit())),
        _ => slot == def.name,
    }
}

/// The description `GraphBuilder::add_op` gives an absent optional input.
fn absent_desc() -> TensorDesc {
    TensorDesc::new(DataType::UNDEFINED, Shape::scalar())
}

/// Compares the two prototypes of an op. `Err` is the reason every node of the op is refused.
fn plan(f: &OpProto, t: &OpProto, va: &str, vb: &str) -> std::result::Result<Plan, String> {
    let incompatible = |what: String| {
        format!(
            "operator {} changed incompatibly between library {va} (graph) and library {vb}: {what}; \
             only optional attributes and optional inputs can be adapted",
            f.name
        )
    };
    // Outputs (plain and dynamic) must be declared identically.
    let outs = |p: &OpProto| -> Vec<(String, IoKind)> {
        p.outputs.iter().map(|d| (d.name.clone(), d.kind)).collect()
    };
    if outs(f) != outs(t) {
        let show = |p: &OpProto| {
            names(p.outputs.iter().map(|d| d.name.as_str()))
                + &p.outputs
                    .iter()
                    .filter(|d| d.kind == IoKind::Dynamic)
                    .map(|d| format!(" ({} dynamic)", d.name))
                    .collect::<String>()
        };
        return Err(incompatible(format!(
            "the outputs differ ({va}: {}; {vb}: {})",
            show(f),
            show(t)
        )));
    }
    // Subgraphs (static and dynamic) must be declared identically.
    if f.subgraphs != t.subgraphs {
        return Err(incompatible(format!(
            "the subgraphs differ ({va}: {}; {vb}: {})",
            names(f.subgraphs.iter().map(|s| s.name.as_str())),
            names(t.subgraphs.iter().map(|s| s.name.as_str()))
        )));
    }
    if f.derived_attrs != t.derived_attrs {
        return Err(incompatible("the derived attributes differ".to_string()));
    }
    if f.output_counts != t.output_counts {
        return Err(incompatible("the output-count rules differ".to_string()));
    }
    // Dynamic inputs must be declared identically (same name, dynamic in both).
    for (a, b, va, vb) in [(f, t, va, vb), (t, f, vb, va)] {
        for d in a.inputs.iter().filter(|d| d.kind == IoKind::Dynamic) {
            match b.input(&d.name) {
                None => {
                    return Err(incompatible(format!(
                        "dynamic input '{}' is in library {va} but not in library {vb}",
                        d.name
                    )))
                }
                Some((_, e)) if e.kind != IoKind::Dynamic => {
                    return Err(incompatible(format!(
                        "input '{}' is dynamic in library {va} but {} in library {vb}",
                        d.name,
                        e.kind.name()
                    )))
                }
                Some(_) => {}
            }
        }
    }
    // Inputs both versions have must keep their relative order.
    let mut last: Option<usize> = None;
    for d in &f.inputs {
        if let Some((j, _)) = t.input(&d.name) {
            if last.is_some_and(|l| j < l) {
                return Err(incompatible(format!(
                    "the inputs were reordered ({va}: {}; {vb}: {})",
                    names(f.inputs.iter().map(|d| d.name.as_str())),
                    names(t.inputs.iter().map(|d| d.name.as_str()))
                )));
            }
            last = Some(j);
        }
    }
    // Attributes both versions have must keep their type.
    for a in &f.attrs {
        if let Some(b) = t.attr(&a.name) {
            if a.ty != b.ty {
                return Err(incompatible(format!(
                    "attribute '{}' is {} in library {va} but {} in library {vb}",
                    a.name, a.ty, b.ty
                )));
            }
        }
    }
    // What each version has that the other lacks.
    let extra = |a: &OpProto, b: &OpProto| -> Vec<String> {
        a.attrs
            .iter()
            .filter(|x| b.attr(&x.name).is_none())
            .map(|x| format!("attribute '{}'", x.name))
            .chain(
                a.inputs
                    .iter()
                    .filter(|d| b.input(&d.name).is_none())
                    .map(|d| format!("input '{}'", d.name)),
            )
            .collect()
    };
    let graph_extra = extra(f, t);
    let target_extra = extra(t, f);
    // Consistency check: both added and removed things means an incompatible IR change.
    if !graph_extra.is_empty() && !target_extra.is_empty() {
        return Err(format!(
            "operator {} changed incompatibly: library {va} (graph) has {} that library {vb} \
             lacks, and library {vb} has {} that library {va} lacks; a graph can be adapted only \
             when one version extends the other",
            f.name,
            graph_extra.join(", "),
            target_extra.join(", ")
        ));
    }
    // Removing or adding a required attribute or input is not a compatible change.
    for a in f.attrs.iter().filter(|a| a.required()) {
        if t.attr(&a.name).is_none() {
            return Err(format!(
                "required attribute '{}' of library {va} (graph) is not in library {vb}: \
                 removing a required attribute is an incompatible change",
                a.name
            ));
        }
    }
    for a in t.attrs.iter().filter(|a| a.required()) {
        if f.attr(&a.name).is_none() {
            return Err(format!(
                "library {vb} requires attribute '{}' ({}), which library {va} (graph) does not \
                 have, so the graph has no value for it",
                a.name, a.ty
            ));
        }
    }
    for d in f.inputs.iter().filter(|d| d.kind == IoKind::Required) {
        if t.input(&d.name).is_none() {
            return Err(format!(
                "required input '{}' of library {va} (graph) is not in library {vb}: removing a \
                 required input is an incompatible change",
                d.name
            ));
        }
    }
    for d in t.inputs.iter().filter(|d| d.kind == IoKind::Required) {
        if f.input(&d.name).is_none() {
            return Err(format!(
                "library {vb} requires input '{}', which library {va} (graph) does not have, so \
                 the graph has nothing to connect to it",
                d.name
            ));
        }
    }
    let in_map: Vec<Option<usize>> = t
        .inputs
        .iter()
        .map(|d| f.input(&d.name).map(|(i, _)| i))
        .collect();
    let in_kept: Vec<bool> = f
        .inputs
        .iter()
        .map(|d| t.input(&d.name).is_some())
        .collect();
    let io_sig = |p: &OpProto| -> Vec<(String, IoKind)> {
        p.inputs.iter().map(|d| (d.name.clone(), d.kind)).collect()
    };
    let attr_sig = |p: &OpProto| -> Vec<(String, bool)> {
        let mut v: Vec<(String, bool)> = p
            .attrs
            .iter()
            .map(|a| (a.name.clone(), a.required()))
            .collect();
        v.sort();
        v
    };
    let trivial = io_sig(f) == io_sig(t) && attr_sig(f) == attr_sig(t);
    Ok(Plan {
        trivial,
        in_map,
        in_kept,
    })
}

impl Cx<'_> {
    fn versions(&self) -> (&str, &str) {
        (self.from.version.as_str(), self.to.version.as_str())
    }

    /// Adapts every node of `g` and, after each node, its subgraphs. `prefix` locates `g`.
    fn graph(&mut self, g: &mut Graph, prefix: &str) -> Result<()> {
        let (va, vb) = self.versions();
        let (va, vb) = (va.to_string(), vb.to_string());
        for id in g.nodes() {
            let (name, op) = {
                let n = g.node(id)?;
                (n.name.clone(), n.op_type.clone())
            };
            let refuse =
                |m: String| Error::Compatibility(format!("{prefix}node '{name}' ({op}): {m}"));
            match (self.from.get(&op).cloned(), self.to.get(&op).cloned()) {
                (Some(fp), Some(tp)) => {
                    let plan = self
                        .plans
                        .entry(op.clone())
                        .or_insert_with(|| plan(&fp, &tp, &va, &vb));
                    let plan = match plan {
                        Ok(p) => p,
                        Err(m) => return Err(refuse(m.clone())),
                    };
                    if !plan.trivial {
                        let changes = adapt_node(g, id, &fp, &tp, plan, &va, &vb, prefix)?;
                        self.changes.extend(changes);
                    }
                }
                _ if is_builtin_kind(&op) => {}
                (Some(_), None) => {
                    return Err(refuse(format!(
                        "library {vb} does not have operator {op} (graph built against {va})"
                    )))
                }
                (None, Some(_)) => {
                    return Err(refuse(format!(
                        "library {va}, which the graph was built against, does not have operator \
                         {op}, so the node cannot be interpreted (target library {vb})"
                    )))
                }
                (None, None) => {
                    return Err(refuse(format!(
                        "neither library {va} (graph) nor library {vb} has operator {op}"
                    )))
                }
            }
            let n = g.node_mut(id)?;
            let parent = n.name.clone();
            for s in &mut n.subgraphs {
                let sub = format!("{prefix}subgraph '{}' of node '{parent}': ", s.name);
                self.graph(&mut s.graph, &sub)?;
            }
        }
        g.ops_version = vb;
        Ok(())
    }
}

/// Adapts one node whose op's prototypes differ (the plan accepted them). Returns its changes.
#[allow(clippy::too_many_arguments)]
fn adapt_node(
    g: &mut Graph,
    id: NodeId,
    fp: &OpProto,
    tp: &OpProto,
    plan: &Plan,
    va: &str,
    vb: &str,
    prefix: &str,
) -> Result<Vec<Change>> {
    let node = g.node(id)?;
    let gname = g.name.clone();
    let (name, op) = (node.name.to_string(), node.op_type.to_string());
    let refuse = |m: String| Error::Compatibility(format!("{prefix}node '{name}' ({op}): {m}"));
    let mut changes = Vec::new();

    // ---- Attributes.
    let mut attrs = AttrMap::new();
    for (k, v) in &node.attrs {
        match (fp.attr(k), tp.attr(k)) {
            (Some(_), Some(_)) => {
                attrs.insert(k.clone(), v.clone());
            }
            (Some(fd), None) => match &fd.default {
                // Row 2: the graph's version has the optional attribute, the target does not,
                // and the node leaves it unset (at its default): delete it.
                Some(d) if v.approx_eq(d) => changes.push(Change::RemovedAttr {
                    graph: gname.clone(),
                    node: name.clone(),
                    op: op.clone(),
                    attr: k.clone(),
                    value: v.clone(),
                }),
                // Row 1: ... and the node sets it: the graph uses a feature the target lacks.
                Some(d) => {
                    return Err(refuse(format!(
                        "attribute '{k}' is set to {v} but library {vb} does not have it \
                         (graph built against {va}); its default in {va} is {d}"
                    )))
                }
                None => {
                    return Err(refuse(format!(
                        "required attribute '{k}' of library {va} (graph) is not in library {vb}"
                    )))
                }
            },
            // Row 3: the target has the optional attribute, the graph's version does not, yet
            // the node has it: the node does not match the version it was built against.
            (None, Some(_)) => {
                return Err(refuse(format!(
                    "attribute '{k}' is set to {v} but library {va}, which the graph was built \
                     against, does not have it (only target library {vb} does): the node does \
                     not match its recorded version"
                )))
            }
            (None, None) => {
                return Err(refuse(format!(
                    "attribute '{k}' is in neither library {va} (graph) nor library {vb}"
                )))
            }
        }
    }
    for td in &tp.attrs {
        if fp.attr(&td.name).is_some() {
            if td.required() && !attrs.contains_key(&td.name) {
                return Err(refuse(format!(
                    "library {vb} requires attribute '{}' but the node does not have it \
                     (graph built against {va})",
                    td.name
                )));
            }
            continue;
        }
        // Row 4: the target has the optional attribute, the graph's version does not, and the
        // node does not have it (row 3 refused otherwise): fill the target's default.
        let Some(d) = &td.default else {
            return Err(refuse(format!(
                "library {vb} requires attribute '{}', which library {va} (graph) does not have",
                td.name
            )));
        };
        attrs.insert(td.name.clone(), d.clone());
        changes.push(Change::FilledAttr {
            graph: gname.clone(),
            node: name.clone(),
            op: op.clone(),
            attr: td.name.clone(),
            value: d.clone(),
        });
    }

    // ---- Inputs: which graph-version input each slot belongs to.
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); fp.inputs.len()];
    let mut stale: Vec<&str> = Vec::new();
    for (pos, slot) in node.inputs.iter().enumerate() {
        let ir = slot.ir_index as usize;
        if let Some(def) = fp.inputs.get(ir).filter(|d| is_instance_of(&slot.name, d)) {
            if def.kind != IoKind::Dynamic && !groups[ir].is_empty() {
                return Err(refuse(format!(
                    "input '{}' has two slots; the node does not match library {va}",
                    def.name
                )));
            }
            groups[ir].push(pos);
            continue;
        }
        let target_only = fp.input(&slot.name).is_none()
            && tp
                .input(&slot.name)
                .is_some_and(|(_, d)| d.kind != IoKind::Dynamic);
        if target_only {
            if let Some(src) = slot.source {
                // Row 7: the target has the optional input, the graph's version does not, yet
                // the node has it connected: the node does not match its recorded version.
                let from = node_name_or_unknown(g, src.node);
                return Err(refuse(format!(
                    "input '{}' is connected (to output {} of '{from}') but library {va}, which \
                     the graph was built against, does not have it (only target library {vb} \
                     does): the node does not match its recorded version",
                    slot.name, src.index
                )));
            }
            // Row 8 (unconnected): ignored; the slot is made afresh at the target's position.
            stale.push(slot.name.as_str());
            continue;
        }
        return Err(refuse(format!(
            "input slot {pos} ('{}', IR index {ir}) does not match the prototype of {op} in \
             library {va}, which the graph was built against",
            slot.name
        )));
    }
    for (i, fd) in fp.inputs.iter().enumerate() {
        if plan.in_kept[i] {
            continue;
        }
        for &pos in &groups[i] {
            let slot = &node.inputs[pos];
            if let Some(src) = slot.source {
                // Row 5: the graph's version has the optional input, the target does not, and
                // the node has it connected: the graph uses a feature the target lacks.
                let from = node_name_or_unknown(g, src.node);
                return Err(refuse(format!(
                    "optional input '{}' is connected (to output {} of '{from}') but library {vb} \
                     does not have it (graph built against {va})",
                    fd.name, src.index
                )));
            }
            // Row 6: ... and the node leaves it unconnected: delete the input.
            changes.push(Change::RemovedInput {
                graph: gname.clone(),
                node: name.clone(),
                op: op.clone(),
                input: fd.name.clone(),
            });
        }
    }
    // New slots in target order; `remap` moves the edges of connected slots.
    let mut slots: Vec<InputSlot> = Vec::with_capacity(tp.inputs.len());
    let mut remap: HashMap<u32, u32> = HashMap::new();
    for (j, td) in tp.inputs.iter().enumerate() {
        let j32 = j as u32;
        match plan.in_map[j] {
            Some(i) => {
                let fd = &fp.inputs[i];
                if groups[i].is_empty() && td.kind != IoKind::Dynamic {
                    if td.kind == IoKind::Required {
                        return Err(refuse(format!(
                            "the node has no slot for input '{}', which library {vb} requires",
                            td.name
                        )));
                    }
                    slots.push(InputSlot::new(Name::new(&td.name), j32, absent_desc()));
                }
                for &pos in &groups[i] {
                    let mut slot = node.inputs[pos].clone();
                    if slot.source.is_none()
                        && fd.kind == IoKind::Optional
                        && td.kind == IoKind::Required
                    {
                        return Err(refuse(format!(
                            "input '{}' is optional in library {va} (graph) but required in \
                             library {vb}, and the node leaves it unconnected",
                            td.name
                        )));
                    }
                    slot.ir_index = j32;
                    remap.insert(pos as u32, slots.len() as u32);
                    slots.push(slot);
                }
            }
            None => {
                // Row 8: the target has the optional input, the graph's version does not, and
                // the node does not use it: ignore it, i.e. leave the new slot unconnected.
                slots.push(InputSlot::new(Name::new(&td.name), j32, absent_desc()));
                if !stale.contains(&td.name.as_str()) {
                    changes.push(Change::AddedInput {
                        graph: gname.clone(),
                        node: name.clone(),
                        op: op.clone(),
                        input: td.name.clone(),
                        index: j32,
                    });
                }
            }
        }
    }
    let mut producers: Vec<NodeId> = Vec::new();
    for (pos, slot) in node.inputs.iter().enumerate() {
        if let Some(src) = slot.source {
            if remap.get(&(pos as u32)) != Some(&(pos as u32)) && !producers.contains(&src.node) {
                producers.push(src.node);
            }
        }
    }

    // ---- Commit (nothing below fails for a consistent graph; the caller works on a clone).
    let n = g.node_mut(id)?;
    n.attrs = attrs;
    n.inputs = slots;
    for p in producers {
        let pn = g.node_mut(p)?;
        for out in &mut pn.outputs {
            for c in &mut out.consumers {
                if c.node == id {
                    if let Some(&new) = remap.get(&c.index) {
                        c.index = new;
                    }
                }
            }
        }
    }
    Ok(changes)
}

/// A node's name for a message, `?` when the id is stale.
fn node_name_or_unknown(g: &Graph, id: NodeId) -> String {
    g.node(id)
        .map(|p| p.name.to_string())
        .unwrap_or_else(|_| "?".to_string())
}
