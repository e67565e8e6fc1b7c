//! Operator prototypes and the operator library (`ops/`, GE's history-registry layout).
//!
//! Layout on disk:
//! ```text
//! ops/index.json                          {"format_version": 1, "current": "8.1.0", "versions": ["8.0.0", "8.1.0"]}
//! ops/registry/<version>/metadata.json    {"version": "8.0.0", "release_date": "...", "description": "..."}
//! ops/registry/<version>/operators.json   {"format_version": 1, "version": "8.0.0", "operators": [...]}
//! ```
//! One operator:
//! ```json
//! {"name": "ConcatD", "doc": "...",
//!  "inputs":  [{"name": "x", "kind": "dynamic", "type": "T"}],
//!  "outputs": [{"name": "y", "kind": "required", "type": "T"}],
//!  "attrs":   [{"name": "concat_dim", "type": "Int", "required": true},
//!              {"name": "N", "type": "Int", "default": 1}],
//!  "subgraphs": [],
//!  "type_vars": {"T": ["DT_FLOAT", "DT_FLOAT16", "@RealNumberType"]},
//!  "derived_attrs": {"N": "len(x)"},
//!  "output_counts": {}}
//! ```
//! `type` is a type variable of `type_vars` (shared by every input/output that names it) or an
//! explicit list. A list may name one of GE's type sets with `@` (`@ALL`, `@NumberType`, ...).
//! `derived_attrs` names attributes the generated functions compute instead of asking for
//! (`len(<dynamic input>)`); `output_counts` gives the instance count of a dynamic output
//! (`len(<dynamic input>)` or `attr(<int attribute>)`); without one, callers pass `<output>_num`.

use crate::attr::{AttrType, AttrValue};
use crate::error::{Error, Result};
use crate::types::DataType;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock, RwLock};

/// Required, optional or dynamic (variadic) input; plain or dynamic output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoKind {
    Required,
    Optional,
    Dynamic,
}

impl IoKind {
    pub fn name(self) -> &'static str {
        match self {
            IoKind::Required => "required",
            IoKind::Optional => "optional",
            IoKind::Dynamic => "dynamic",
        }
    }
}

/// The allowed dtypes of an input or output.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeSpec {
    /// A type variable: every input/output naming it has the same dtype.
    Var(String),
    /// An explicit list, independent of the others.
    List(Vec<DataType>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct IoDef {
    pub name: String,
    pub kind: IoKind,
    pub ty: TypeSpec,
    /// Library version this input/output first appeared in.
    pub since: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AttrDef {
    pub name: String,
    pub ty: AttrType,
    /// None: a required attribute.
    pub default: Option<AttrValue>,
    pub since: Option<String>,
}

impl AttrDef {
    pub fn required(&self) -> bool {
        self.default.is_none()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubgraphKind {
    Static,
    Dynamic,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SubgraphDef {
    pub name: String,
    pub kind: SubgraphKind,
}

/// How a dynamic output's instance count, or a redundant attribute, is derived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CountRule {
    /// The number of instances of a dynamic input.
    LenOf(String),
    /// The value of an Int attribute.
    Attr(String),
}

impl CountRule {
    pub fn parse(s: &str) -> Result<Self> {
        let s = s.trim();
        if let Some(inner) = s.strip_prefix("len(").and_then(|r| r.strip_suffix(')')) {
            return Ok(CountRule::LenOf(inner.trim().to_string()));
        }
        if let Some(inner) = s.strip_prefix("attr(").and_then(|r| r.strip_suffix(')')) {
            return Ok(CountRule::Attr(inner.trim().to_string()));
        }
        Err(Error::value(format!(
            "bad count rule '{s}': expected len(<input>) or attr(<attr>)"
        )))
    }
    pub fn to_text(&self) -> String {
        match self {
            CountRule::LenOf(n) => format!("len({n})"),
            CountRule::Attr(n) => format!("attr({n})"),
        }
    }
}

fn comma_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

/// One operator prototype.
#[derive(Debug, Clone, PartialEq)]
pub struct OpProto {
    pub name: String,
    pub doc: String,
    pub inputs: Vec<IoDef>,
    pub outputs: Vec<IoDef>,
    pub attrs: Vec<AttrDef>,
    pub subgraphs: Vec<SubgraphDef>,
    pub type_vars: BTreeMap<String, Vec<DataType>>,
    /// Binary ops whose two inputs may be swapped (for the pattern matcher).
    pub commutative: bool,
    pub derived_attrs: BTreeMap<String, CountRule>,
    pub output_counts: BTreeMap<String, CountRule>,
}

/// The array under `key` of a JSON object (empty when absent or not an array).
fn json_list<'v>(obj: &'v serde_json::Map<String, Value>, key: &str) -> &'v [Value] {
    obj.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The string under `key` of a JSON value (None when absent or not a string).
fn json_str<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

impl OpProto {
    pub fn input(&self, name: &str) -> Option<(usize, &IoDef)> {
        self.inputs.iter().enumerate().find(|(_, d)| d.name == name)
    }
    pub fn attr(&self, name: &str) -> Option<&AttrDef> {
        self.attrs.iter().find(|a| a.name == name)
    }
    /// The inputs' names, comma-separated (for messages).
    pub fn input_names(&self) -> String {
        comma_list(self.inputs.iter().map(|d| d.name.as_str()))
    }
    /// The attributes' names, comma-separated (for messages).
    pub fn attr_names(&self) -> String {
        comma_list(self.attrs.iter().map(|a| a.name.as_str()))
    }
    /// The subgraphs' names, comma-separated (for messages).
    pub fn subgraph_names(&self) -> String {
        comma_list(self.subgraphs.iter().map(|s| s.name.as_str()))
    }
    /// Allowed dtypes of an input/output type spec.
    pub fn allowed<'a>(&'a self, ty: &'a TypeSpec) -> Option<&'a [DataType]> {
        match ty {
            TypeSpec::Var(v) => self.type_vars.get(v).map(Vec::as_slice),
            TypeSpec::List(l) => Some(l),
        }
    }
    /// Attributes a caller supplies (not derived), in prototype order: required ones first,
    /// then those with defaults (GE's generated-function rule).
    pub fn user_attrs(&self) -> Vec<&AttrDef> {
        let mut v: Vec<&AttrDef> = self
            .attrs
            .iter()
            .filter(|a| !self.derived_attrs.contains_key(&a.name))
            .collect();
        v.sort_by_key(|a| !a.required());
        v
    }

    /// Parses one operator from its JSON object.
    pub fn from_json(v: &Value) -> Result<OpProto> {
        let obj = v
            .as_object()
            .ok_or_else(|| Error::value("an operator must be a JSON object"))?;
        let name = obj
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::value("operator without a \"name\""))?
            .to_string();
        let ctx = |m: String| Error::value(format!("operator {name}: {m}"));
        let mut type_vars = BTreeMap::new();
        if let Some(tv) = obj.get("type_vars") {
            let tv = tv
                .as_object()
                .ok_or_else(|| ctx("type_vars must be an object".into()))?;
            for (k, l) in tv {
                type_vars.insert(
                    k.clone(),
                    parse_type_list(l).map_err(|e| ctx(e.to_string()))?,
                );
            }
        }
        let io = |key: &str, output: bool| -> Result<Vec<IoDef>> {
            let mut out = Vec::new();
            for item in json_list(obj, key) {
                let n = json_str(item, "name")
                    .ok_or_else(|| ctx(format!("an entry of {key} has no name")))?;
                let kind = match json_str(item, "kind").unwrap_or("required") {
                    "required" => IoKind::Required,
                    "optional" if !output => IoKind::Optional,
                    "dynamic" => IoKind::Dynamic,
                    k => return Err(ctx(format!("{key} '{n}' has an invalid kind '{k}'"))),
                };
                let ty = match item.get("type") {
                    Some(Value::String(s)) => {
                        if !type_vars.contains_key(s) {
                            return Err(ctx(format!(
                                "{key} '{n}' names undeclared type var '{s}'"
                            )));
                        }
                        TypeSpec::Var(s.clone())
                    }
                    Some(l @ Value::Array(_)) => {
                        TypeSpec::List(parse_type_list(l).map_err(|e| ctx(e.to_string()))?)
                    }
                    _ => return Err(ctx(format!("{key} '{n}' needs a \"type\""))),
                };
                let since = json_str(item, "since").map(str::to_string);
                out.push(IoDef {
                    name: n.to_string(),
                    kind,
                    ty,
                    since,
                });
            }
            Ok(out)
        };
        let inputs = io("inputs", false)?;
        let outputs = io("outputs", true)?;
        let mut attrs = Vec::new();
        for a in json_list(obj, "attrs") {
            let an = json_str(a, "name").ok_or_else(|| ctx("an attribute has no name".into()))?;
            let ty = AttrType::parse(a.get("type").and_then(Value::as_str).unwrap_or(""))
                .map_err(|e| ctx(format!("attribute {an}: {e}")))?;
            let required = a.get("required").and_then(Value::as_bool).unwrap_or(false);
            let default = match a.get("default") {
                Some(d) if !required => Some(
                    AttrValue::from_json(ty, d).map_err(|e| ctx(format!("attribute {an}: {e}")))?,
                ),
                None if !required => {
                    return Err(ctx(format!(
                        "attribute {an} is neither required nor defaulted"
                    )))
                }
                _ => None,
            };
            let since = json_str(a, "since").map(str::to_string);
            attrs.push(AttrDef {
                name: an.to_string(),
                ty,
                default,
                since,
            });
        }
        let mut subgraphs = Vec::new();
        for s in json_list(obj, "subgraphs") {
            let sn = json_str(s, "name").ok_or_else(|| ctx("subgraph without name".into()))?;
            let kind = match json_str(s, "kind").unwrap_or("static") {
                "static" => SubgraphKind::Static,
                "dynamic" => SubgraphKind::Dynamic,
                k => return Err(ctx(format!("subgraph {sn} has an invalid kind '{k}'"))),
            };
            subgraphs.push(SubgraphDef {
                name: sn.to_string(),
                kind,
            });
        }
        let rules = |key: &str| -> Result<BTreeMap<String, CountRule>> {
            let mut m = BTreeMap::new();
            if let Some(o) = obj.get(key).and_then(Value::as_object) {
                for (k, r) in o {
                    let r = CountRule::parse(r.as_str().unwrap_or(""))
                        .map_err(|e| ctx(e.to_string()))?;
                    m.insert(k.clone(), r);
                }
            }
            Ok(m)
        };
        let proto = OpProto {
            doc: obj
                .get("doc")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            commutative: obj
                .get("commutative")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            derived_attrs: rules("derived_attrs")?,
            output_counts: rules("output_counts")?,
            name,
            inputs,
            outputs,
            attrs,
            subgraphs,
            type_vars,
        };
        proto.check()?;
        Ok(proto)
    }

    /// Internal consistency: unique names, rules that point at things that exist.
    pub fn check(&self) -> Result<()> {
        let ctx = |m: String| Error::value(format!("operator {}: {m}", self.name));
        let mut seen = std::collections::HashSet::new();
        for n in self
            .inputs
            .iter()
            .map(|d| &d.name)
            .chain(self.outputs.iter().map(|d| &d.name))
            .chain(self.attrs.iter().map(|a| &a.name))
            .chain(self.subgraphs.iter().map(|s| &s.name))
        {
            if !seen.insert(n.clone()) && self.outputs.iter().all(|o| &o.name != n) {
                return Err(ctx(format!("the name '{n}' is used twice")));
            }
        }
        for (a, r) in self.derived_attrs.iter().chain(self.output_counts.iter()) {
            let (named, ok, what) = match r {
                CountRule::LenOf(i) => (
                    i,
                    self.inputs
                        .iter()
                        .any(|d| &d.name == i && d.kind == IoKind::Dynamic),
                    "a dynamic input",
                ),
                CountRule::Attr(at) => (
                    at,
                    self.attrs
                        .iter()
                        .any(|d| &d.name == at && d.ty == AttrType::Int),
                    "an Int attribute",
                ),
            };
            if !ok {
                return Err(ctx(format!("rule for '{a}' names '{named}', not {what}")));
            }
        }
        for a in self.derived_attrs.keys() {
            if self.attr(a).is_none() {
                return Err(ctx(format!("derived attribute '{a}' is not an attribute")));
            }
        }
        for o in self.output_counts.keys() {
            if !self
                .outputs
                .iter()
                .any(|d| &d.name == o && d.kind == IoKind::Dynamic)
            {
                return Err(ctx(format!(
                    "output count rule for '{o}', not a dynamic output"
                )));
            }
        }
        Ok(())
    }

    /// The JSON object of this operator (inverse of [`OpProto::from_json`]).
    pub fn to_json(&self) -> Value {
        use serde_json::json;
        let ty = |t: &TypeSpec| match t {
            TypeSpec::Var(v) => json!(v),
            TypeSpec::List(l) => json!(l.iter().map(|d| d.name()).collect::<Vec<_>>()),
        };
        let io = |l: &[IoDef]| {
            l.iter()
                .map(|d| {
                    let mut o = json!({"name": d.name, "kind": d.kind.name(), "type": ty(&d.ty)});
                    if let Some(s) = &d.since {
                        o["since"] = json!(s);
                    }
                    o
                })
                .collect::<Vec<_>>()
        };
        let attrs: Vec<Value> = self
            .attrs
            .iter()
            .map(|a| {
                let mut o = json!({"name": a.name, "type": a.ty.name()});
                match &a.default {
                    Some(d) => o["default"] = d.to_json(),
                    None => o["required"] = json!(true),
                }
                if let Some(s) = &a.since {
                    o["since"] = json!(s);
                }
                o
            })
            .collect();
        let rules = |m: &BTreeMap<String, CountRule>| {
            m.iter()
                .map(|(k, r)| (k.clone(), json!(r.to_text())))
                .collect::<serde_json::Map<_, _>>()
        };
        json!({
            "name": self.name,
            "doc": self.doc,
            "inputs": io(&self.inputs),
            "outputs": io(&self.outputs),
            "attrs": attrs,
            "subgraphs": self.subgraphs.iter().map(|s| json!({"name": s.name,
                "kind": if s.kind == SubgraphKind::Static {"static"} else {"dynamic"}})).collect::<Vec<_>>(),
            "type_vars": self.type_vars.iter().map(|(k, l)| (k.clone(),
                json!(l.iter().map(|d| d.name()).collect::<Vec<_>>()))).collect::<serde_json::Map<_, _>>(),
            "commutative": self.commutative,
            "derived_attrs": rules(&self.derived_attrs),
            "output_counts": rules(&self.output_counts),
        })
    }
}

/// GE's named type sets (`TensorType::ALL()`, `NumberType()`, ...), by name.
pub fn named_type_set(name: &str) -> Option<Vec<DataType>> {
    use DataType::*;
    let l: &[DataType] = match name {
        "ALL" => &[
            BOOL, COMPLEX128, COMPLEX64, DOUBLE, FLOAT, FLOAT16, INT16, INT32, INT64, INT8, QINT16,
            QINT32, QINT8, QUINT16, QUINT8, RESOURCE, STRING, UINT16, UINT32, UINT64, UINT8, BF16,
        ],
        "NumberType" => &[
            COMPLEX128, COMPLEX64, DOUBLE, FLOAT, FLOAT16, INT16, INT32, INT64, INT8, QINT32,
            QINT8, QUINT8, UINT16, UINT32, UINT64, UINT8, BF16,
        ],
        "RealNumberType" => &[
            DOUBLE, FLOAT, FLOAT16, INT16, INT32, INT64, INT8, UINT16, UINT32, UINT64, UINT8, BF16,
        ],
        "BasicType" => &[
            COMPLEX128, COMPLEX64, DOUBLE, FLOAT, FLOAT16, INT16, INT32, INT64, INT8, QINT16,
            QINT32, QINT8, QUINT16, QUINT8, UINT16, UINT32, UINT64, UINT8, BF16,
        ],
        "IndexNumberType" => &[INT32, INT64],
        "FloatingDataType" => &[DOUBLE, FLOAT, FLOAT16],
        "IntegerDataType" => &[INT16, INT32, INT64, INT8, UINT16, UINT32, UINT64, UINT8],
        "UnaryDataType" => &[COMPLEX128, COMPLEX64, DOUBLE, FLOAT, FLOAT16, BF16],
        "FLOAT" => &[FLOAT, FLOAT16, BF16],
        _ => return None,
    };
    Some(l.to_vec())
}

fn parse_type_list(v: &Value) -> Result<Vec<DataType>> {
    let arr = v
        .as_array()
        .ok_or_else(|| Error::value(format!("type list {v} is not an array")))?;
    let mut out: Vec<DataType> = Vec::new();
    for x in arr {
        let s = x
            .as_str()
            .ok_or_else(|| Error::value(format!("type {x} is not a string")))?;
        let add: Vec<DataType> = if let Some(set) = s.strip_prefix('@') {
            named_type_set(set).ok_or_else(|| Error::value(format!("unknown type set '@{set}'")))?
        } else {
            vec![DataType::from_name(s)?]
        };
        for d in add {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    Ok(out)
}

/// A set of operator prototypes of one library version.
#[derive(Debug, Clone, Default)]
pub struct OpRegistry {
    pub version: String,
    ops: rustc_hash::FxHashMap<String, Arc<OpProto>>,
    order: Vec<String>,
}

impl OpRegistry {
    pub fn new(version: impl Into<String>) -> Self {
        OpRegistry {
            version: version.into(),
            ops: Default::default(),
            order: Vec::new(),
        }
    }

    /// Parses an `operators.json` document.
    pub fn from_json_str(text: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::value(format!("operator library is not valid JSON: {e}")))?;
        let version = v
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("custom")
            .to_string();
        let mut reg = OpRegistry::new(version);
        let ops = v
            .get("operators")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::value("operator library has no \"operators\" array"))?;
        for o in ops {
            let p = OpProto::from_json(o)?;
            if reg.ops.contains_key(&p.name) {
                return Err(Error::value(format!(
                    "operator {} is defined twice",
                    p.name
                )));
            }
            reg.insert(p);
        }
        Ok(reg)
    }

    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "format_version": 1,
            "version": self.version,
            "operators": self.iter().map(|p| p.to_json()).collect::<Vec<_>>(),
        })
    }

    /// Adds or replaces a prototype.
    pub fn insert(&mut self, p: OpProto) {
        if !self.ops.contains_key(&p.name) {
            self.order.push(p.name.clone());
        }
        self.ops.insert(p.name.clone(), Arc::new(p));
    }

    pub fn get(&self, name: &str) -> Option<&Arc<OpProto>> {
        self.ops.get(name)
    }

    /// Prototypes in definition order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<OpProto>> {
        self.order.iter().filter_map(|n| self.ops.get(n))
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// Every built-in library version, oldest first, with its `operators.json`
/// (`ops/index.json` lists the same; a test checks it).
pub const BUILTIN_LIBRARIES: &[(&str, &str)] = &[
    (
        "8.0.0",
        include_str!("../../../ops/registry/8.0.0/operators.json"),
    ),
    (
        "8.1.0",
        include_str!("../../../ops/registry/8.1.0/operators.json"),
    ),
];

/// The current built-in library version (the newest): what new graphs are built against.
pub const BUILTIN_VERSION: &str = "8.1.0";
const BUILTIN_JSON: &str = BUILTIN_LIBRARIES[BUILTIN_LIBRARIES.len() - 1].1;

/// The versions of the built-in library, oldest first.
pub fn builtin_versions() -> Vec<&'static str> {
    BUILTIN_LIBRARIES.iter().map(|(v, _)| *v).collect()
}

/// One built-in library version (parsed once). An unknown version is an error that lists the
/// known ones.
pub fn builtin_library(version: &str) -> Result<Arc<OpRegistry>> {
    static CACHE: OnceLock<RwLock<HashMap<String, Arc<OpRegistry>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| RwLock::new(HashMap::new()));
    if let Some(r) = cache.read().ok().and_then(|c| c.get(version).cloned()) {
        return Ok(r);
    }
    let Some((_, text)) = BUILTIN_LIBRARIES.iter().find(|(v, _)| *v == version) else {
        return Err(Error::Compatibility(format!(
            "operator library version {version} is not known (this build has {})",
            builtin_versions().join(", ")
        )));
    };
    let reg = Arc::new(OpRegistry::from_json_str(text)?);
    if let Ok(mut c) = cache.write() {
        c.insert(version.to_string(), reg.clone());
    }
    Ok(reg)
}

static GLOBAL: OnceLock<RwLock<Arc<OpRegistry>>> = OnceLock::new();

fn global_lock() -> &'static RwLock<Arc<OpRegistry>> {
    GLOBAL.get_or_init(|| {
        // The built-in library is checked by a unit test; a broken file would fail it.
        let reg = OpRegistry::from_json_str(BUILTIN_JSON)
            .unwrap_or_else(|_| OpRegistry::new(BUILTIN_VERSION));
        RwLock::new(Arc::new(reg))
    })
}

/// The process-wide registry: the built-in library plus operators registered at run time.
/// Returns a snapshot; registering later makes a new snapshot (copy on write).
pub fn global_registry() -> Arc<OpRegistry> {
    match global_lock().read() {
        Ok(g) => g.clone(),
        Err(p) => p.into_inner().clone(),
    }
}

/// Adds (or replaces) prototypes in the process-wide registry.
pub fn register_global(protos: Vec<OpProto>) -> Result<()> {
    for p in &protos {
        p.check()?;
    }
    let mut g = match global_lock().write() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let mut next = (**g).clone();
    for p in protos {
        next.insert(p);
    }
    *g = Arc::new(next);
    Ok(())
}

/// Parses the built-in library, reporting errors (the global registry falls back to empty).
pub fn builtin_registry() -> Result<OpRegistry> {
    OpRegistry::from_json_str(BUILTIN_JSON)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_libraries_match_the_index() {
        let index: Value =
            serde_json::from_str(include_str!("../../../ops/index.json")).expect("index");
        let listed: Vec<&str> = index["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(listed, builtin_versions());
        assert_eq!(index["current"].as_str(), Some(BUILTIN_VERSION));
        for v in builtin_versions() {
            let reg = builtin_library(v).expect("parses");
            assert_eq!(reg.version, v);
            assert!(reg.len() >= 54);
        }
        assert_eq!(global_registry().version, BUILTIN_VERSION);
        assert!(builtin_library("7.0.0").is_err());
    }

    #[test]
    fn later_version_only_adds_optional_things_at_the_end() {
        let (old, new) = (
            builtin_library("8.0.0").expect("8.0.0"),
            builtin_library("8.1.0").expect("8.1.0"),
        );
        let mut additions = 0;
        for p in new.iter() {
            let Some(o) = old.get(&p.name) else { continue };
            // The inputs keep their order, names and kinds; a type list may only grow (a later
            // version accepting more dtypes, as 8.1.0's Cast does, keeps every old graph valid).
            assert!(
                p.inputs.len() >= o.inputs.len(),
                "{}: inputs removed",
                p.name
            );
            for (n, o) in p.inputs.iter().zip(&o.inputs) {
                assert_eq!(
                    (&n.name, n.kind, &n.since),
                    (&o.name, o.kind, &o.since),
                    "{}: inputs keep their order",
                    p.name
                );
                match (&n.ty, &o.ty) {
                    (TypeSpec::List(nl), TypeSpec::List(ol)) => assert!(
                        ol.iter().all(|d| nl.contains(d)),
                        "{}.{}: a later version may only add dtypes",
                        p.name,
                        n.name
                    ),
                    (nt, ot) => assert_eq!(nt, ot, "{}.{}: type", p.name, n.name),
                }
            }
            for i in &p.inputs[o.inputs.len()..] {
                assert_eq!(
                    i.kind,
                    IoKind::Optional,
                    "{}: new input {} must be optional",
                    p.name,
                    i.name
                );
                assert_eq!(i.since.as_deref(), Some("8.1.0"));
                additions += 1;
            }
            for a in &p.attrs {
                if o.attr(&a.name).is_none() {
                    assert!(
                        a.default.is_some() && a.since.as_deref() == Some("8.1.0"),
                        "{}.{}",
                        p.name,
                        a.name
                    );
                    additions += 1;
                }
            }
        }
        assert!(additions >= 4);
    }
}
