//! CPU kernels, selected per node at compile time.
//!
//! A [`Factory`] reads a node once (its attributes, its inputs' descriptions, the values of
//! constant inputs) and returns a [`Kernel`] closure that the execution plan calls on every
//! run; so a replayed plan neither re-reads attributes nor re-selects kernels. Inputs arrive in
//! the node's input order (dynamic inputs expanded), `None` for an unconnected optional input.

mod collective;
pub(crate) use collective::{collective_of, Collective, COLLECTIVE_OPS};
mod common;
mod control;
pub(crate) use control::install_subgraph_compiler;
pub(crate) use control::Subplan;
mod conv;
mod elementwise;
mod image;
pub(crate) use elementwise::Epilogue;
mod index;
mod into;
pub(crate) use crate::arena::Dest;
pub(crate) use into::IntoOp;
mod matmul;
mod norm;
mod pool;
mod reduce;
mod sampling;
mod sequence;
mod shape;
mod source;
mod string;
mod transformer;
mod tree_ensemble;
mod vmath;

use crate::error::{Error, Result};
use crate::value::Value;
use es_core::attr::AttrValue;
use es_core::opmath::{attr_or, FromAttr};
use es_core::{DataType, Node, TensorDesc};
use rustc_hash::FxHashMap;
use std::sync::OnceLock;

/// A selected kernel: computes a node's outputs from its inputs.
pub type Kernel = Box<dyn Fn(&[Option<&Value>]) -> Result<Vec<Value>> + Send + Sync>;

/// What a factory sees of a node at compile time.
pub struct NodeInfo<'a> {
    pub node: &'a Node,
    /// The description of each input (of its producer's output), `None` when unconnected.
    pub inputs: Vec<Option<TensorDesc>>,
    /// The value of each input whose producer is a constant.
    pub const_inputs: Vec<Option<Value>>,
}

impl NodeInfo<'_> {
    pub fn op(&self) -> &str {
        &self.node.op_type
    }
    pub fn attr(&self, name: &str) -> Option<&AttrValue> {
        self.node.attr(name)
    }
    /// Attribute `name` as a `T` (`default` when absent; another type is an error), by
    /// `es_core::opmath`'s typed getter.
    pub(crate) fn typed_attr<'a, T: FromAttr<'a>>(&'a self, name: &str, default: T) -> Result<T> {
        attr_or(self.attr(name), default).map_err(|e| self.bad_attr(name, e.words))
    }
    pub fn int(&self, name: &str, default: i64) -> Result<i64> {
        self.typed_attr(name, default)
    }
    pub fn float(&self, name: &str, default: f32) -> Result<f32> {
        self.typed_attr(name, default)
    }
    pub fn bool(&self, name: &str, default: bool) -> Result<bool> {
        self.typed_attr(name, default)
    }
    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        match self.attr(name) {
            None => Ok(None),
            Some(_) => self
                .typed_attr::<&[i64]>(name, &[])
                .map(|l| Some(l.to_vec())),
        }
    }
    pub fn dtype_attr(&self, name: &str) -> Result<Option<DataType>> {
        match self.attr(name) {
            None => Ok(None),
            Some(v) => v
                .as_type()
                .map(Some)
                .ok_or_else(|| self.bad_attr(name, "a data type")),
        }
    }
    fn bad_attr(&self, name: &str, what: &str) -> Error {
        Error::Compile(format!(
            "node '{}' ({}): attribute '{name}' must be {what}",
            self.node.name, self.node.op_type
        ))
    }
    /// The dtype of the node's output `i` (as inferred for this compile).
    pub fn out_dtype(&self, i: usize) -> Result<DataType> {
        self.node
            .outputs
            .get(i)
            .map(|o| o.desc.dtype)
            .ok_or_else(|| Error::Compile(format!("node '{}' has no output {i}", self.node.name)))
    }
    /// The dtype of each of the node's outputs (as inferred for this compile).
    pub fn out_dtypes(&self) -> Vec<DataType> {
        self.node.outputs.iter().map(|o| o.desc.dtype).collect()
    }
    /// The constant value of input `i`, required (value-dependent parameters such as a
    /// Reshape's shape); the error says the backend needs it constant.
    pub fn const_input(&self, i: usize, what: &str) -> Result<&Value> {
        self.const_inputs
            .get(i)
            .and_then(Option::as_ref)
            .ok_or_else(|| {
                Error::unsupported(format!(
                    "{} with a non-constant {what} (input {i})",
                    self.node.op_type
                ))
            })
    }
}

/// Makes the kernel for one node.
pub type Factory = fn(&NodeInfo) -> Result<Kernel>;

/// A family's kernels: the op types each factory serves.
type Kernels = &'static [(&'static [&'static str], Factory)];

/// The kernel families' tables.
const FAMILIES: &[Kernels] = &[
    elementwise::KERNELS,
    shape::KERNELS,
    source::KERNELS,
    matmul::KERNELS,
    reduce::KERNELS,
    pool::KERNELS,
    index::KERNELS,
    control::KERNELS,
    sampling::KERNELS,
    norm::KERNELS,
    transformer::KERNELS,
    collective::KERNELS,
    conv::KERNELS,
    string::KERNELS,
    sequence::KERNELS,
    tree_ensemble::KERNELS,
    image::KERNELS,
];

/// The kernels, by op type.
pub fn registry() -> &'static FxHashMap<&'static str, Factory> {
    static REG: OnceLock<FxHashMap<&'static str, Factory>> = OnceLock::new();
    REG.get_or_init(|| {
        let mut m: FxHashMap<&'static str, Factory> = FxHashMap::default();
        for &(ops, f) in FAMILIES.iter().copied().flatten() {
            for &op in ops {
                m.insert(op, f);
            }
        }
        m
    })
}

/// A kernel factory registered at run time (for operators registered at run time, or to
/// replace a built-in kernel).
pub type CustomFactory = std::sync::Arc<dyn Fn(&NodeInfo) -> Result<Kernel> + Send + Sync>;

fn custom() -> &'static std::sync::RwLock<FxHashMap<String, CustomFactory>> {
    static CUSTOM: OnceLock<std::sync::RwLock<FxHashMap<String, CustomFactory>>> = OnceLock::new();
    CUSTOM.get_or_init(Default::default)
}

/// Registers (or replaces) the kernel of `op_type`; it takes precedence over a built-in one.
pub fn register_custom(op_type: &str, factory: CustomFactory) {
    custom()
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(op_type.to_string(), factory);
}

/// Removes a kernel registered with [`register_custom`]; returns whether there was one.
pub fn unregister_custom(op_type: &str) -> bool {
    custom()
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(op_type)
        .is_some()
}

/// Whether a kernel was registered for `op_type` at run time (it replaces the built-in one).
pub(crate) fn is_custom(op_type: &str) -> bool {
    custom()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .contains_key(op_type)
}

/// The factory for `op_type`: a registered one first, then the built-in one.
pub fn lookup(op_type: &str) -> Option<CustomFactory> {
    if let Some(f) = custom()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(op_type)
    {
        return Some(f.clone());
    }
    registry().get(op_type).map(|&f| -> CustomFactory {
        std::sync::Arc::new(move |info: &NodeInfo| {
            // Inputs first; outputs after the factory, whose own refusal (a dst_type it does not
            // produce) is the more precise error.
            check_low_precision(info, info.inputs.iter().flatten().map(|d| d.dtype))?;
            check_strings(info)?;
            check_variants(info)?;
            let k = f(info)?;
            check_low_precision(info, info.out_dtypes())?;
            Ok(k)
        })
    })
}

/// The built-in kernels that take the low-precision types ([`es_core::DataType::is_low_precision`],
/// held as bit patterns): Cast converts them, these others only move elements or read shapes.
const LOW_PRECISION_OPS: &[&str] = &[
    "Cast",
    "Identity",
    "IdentityN",
    "TensorMove",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "ExpandDims",
    "Flatten",
    "FlattenV2",
    "Transpose",
    "GatherV2",
    "Shape",
    "Size",
    "Rank",
];

/// "not supported: <op> on <dtype>" where a built-in kernel that computes with its elements
/// would see a low-precision input or output.
fn check_low_precision(info: &NodeInfo, dtypes: impl IntoIterator<Item = DataType>) -> Result<()> {
    if LOW_PRECISION_OPS.contains(&info.op()) {
        return Ok(());
    }
    match dtypes.into_iter().find(|d| d.is_low_precision()) {
        Some(dt) => Err(Error::unsupported(format!(
            "{} on {dt} (low-precision types are converted by Cast)",
            info.op()
        ))),
        None => Ok(()),
    }
}

/// The built-in kernels that take string tensors (`DT_STRING`, [`Value::Str`]) besides
/// [`LOW_PRECISION_OPS`] (which only move elements, read shapes, or Cast): these move elements
/// too, compare them, or are the string ops. Every other built-in kernel is numeric.
const STRING_OPS: &[&str] = &[
    "ConcatV2",
    "ConcatD",
    "Concat",
    "Pack",
    "Tile",
    "BroadcastTo",
    "Expand",
    "Equal",
    "NotEqual",
    "Split",
    "SplitD",
    "SplitV",
    "ReverseV2",
    "Slice",
    "SliceD",
    "Select",
    "SelectV2",
];

/// "not supported: <op> on DT_STRING" where a built-in numeric kernel would see a string input.
fn check_strings(info: &NodeInfo) -> Result<()> {
    let op = info.op();
    let string_op = string::KERNELS.iter().any(|(ops, _)| ops.contains(&op));
    if string_op || STRING_OPS.contains(&op) || LOW_PRECISION_OPS.contains(&op) {
        return Ok(());
    }
    match info
        .inputs
        .iter()
        .flatten()
        .any(|d| d.dtype == DataType::STRING)
    {
        true => Err(Error::unsupported(format!(
            "{} on DT_STRING (node '{}')",
            info.op(),
            info.node.name
        ))),
        false => Ok(()),
    }
}

/// The built-in kernels that take lists and optionals (`DT_VARIANT`, [`Value::Variant`])
/// besides the list and optional ops: they pass values through unchanged.
const VARIANT_OPS: &[&str] = &["Identity", "IdentityN", "If", "Case", "While"];

/// "not supported: <op> on a sequence or optional" where a built-in tensor kernel would see a
/// list or optional input or output.
fn check_variants(info: &NodeInfo) -> Result<()> {
    let op = info.op();
    if VARIANT_OPS.contains(&op) || sequence::KERNELS.iter().any(|(ops, _)| ops.contains(&op)) {
        return Ok(());
    }
    let outs = info.node.outputs.iter().map(|o| &*o.desc);
    match info
        .inputs
        .iter()
        .flatten()
        .chain(outs)
        .any(|d| d.dtype == DataType::VARIANT)
    {
        true => Err(Error::unsupported(format!(
            "{op} on a sequence or optional (DT_VARIANT) (node '{}')",
            info.node.name
        ))),
        false => Ok(()),
    }
}

/// The op types with a kernel (built-in or registered), sorted.
pub fn kernel_op_types() -> Vec<String> {
    let mut v: Vec<String> = registry().keys().map(|k| k.to_string()).collect();
    v.extend(
        custom()
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .filter(|k| !registry().contains_key(k.as_str()))
            .cloned(),
    );
    v.sort_unstable();
    v
}

/// The position of the output-channel dim in a convolution filter of format `f`.
pub(crate) fn filter_out_channel(f: es_core::Format) -> Option<usize> {
    conv::filter_positions(f).map(|p| p[0])
}

/// Input `i`, required.
pub(crate) fn input<'a>(inputs: &[Option<&'a Value>], i: usize) -> Result<&'a Value> {
    inputs
        .get(i)
        .copied()
        .flatten()
        .ok_or_else(|| Error::kernel(format!("input {i} is missing")))
}

/// Normalises each of `axes` for rank `rank` ([`norm_axis`]): sorted, each once.
pub(crate) fn norm_axes(axes: &[i64], rank: usize) -> Result<Vec<usize>> {
    let mut v: Vec<usize> = axes
        .iter()
        .map(|&a| norm_axis(a, rank))
        .collect::<Result<_>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Normalises axis `a` for rank `rank` (negative counts from the end).
pub fn norm_axis(a: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    let x = if a < 0 { a + r } else { a };
    if x < 0 || x >= r.max(1) {
        return Err(Error::kernel(format!(
            "axis {a} is out of range for rank {rank}"
        )));
    }
    Ok(x as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_op_type_has_one_kernel_table_entry() {
        let mut seen = rustc_hash::FxHashSet::default();
        let tables = FAMILIES.iter().copied().flatten();
        for op in tables.flat_map(|&(ops, _)| ops.iter().copied()) {
            assert!(seen.insert(op), "{op} is registered twice");
        }
        assert_eq!(seen.len(), registry().len());
    }

    #[test]
    fn numeric_kernels_refuse_string_inputs_at_lookup() {
        use es_core::Shape;
        let strings = Value::strings(&[2], vec!["a".into(), "b".into()]).unwrap();
        fn info(n: &es_core::Node) -> NodeInfo<'_> {
            NodeInfo {
                node: n,
                inputs: vec![Some(TensorDesc::new(DataType::STRING, Shape::new(vec![2])))],
                const_inputs: Vec::new(),
            }
        }
        let relu = common::testing::node("Relu", &[]);
        let e = match lookup("Relu").unwrap()(&info(&relu)) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("Relu took a string input"),
        };
        assert!(e.contains("not supported: Relu on DT_STRING"), "{e}");
        // Data movement takes strings, at lookup and at run time.
        let n = common::testing::node("Transpose", &[]);
        let k = lookup("Transpose").unwrap()(&info(&n)).unwrap();
        let perm = Value::I64(ndarray::ArrayD::from_elem(ndarray::IxDyn(&[1]), 0));
        assert_eq!(
            k(&[Some(&strings), Some(&perm)]).unwrap(),
            vec![strings.clone()]
        );
        let tiled = common::testing::run1(
            "Tile",
            &[],
            &[
                &strings,
                &Value::I64(ndarray::ArrayD::from_elem(ndarray::IxDyn(&[1]), 2)),
            ],
        )
        .unwrap();
        assert_eq!(
            tiled.to_tensor().unwrap().strings().unwrap(),
            ["a", "b", "a", "b"]
        );
    }
}
