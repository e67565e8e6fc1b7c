//! The general handler: ONNX operators that are one GE operator, described declaratively in
//! `ops/onnx_mapping.json` by a `direct` spec:
//!
//! ```json
//! "ai.onnx::LeakyRelu": {"ge": ["LeakyRelu"], "direct": {"attrs": {"alpha": "negative_slope"},
//!                        "defaults": {"negative_slope": 0.01}}}
//! ```
//!
//! - the GE operator is the entry's first `ge` name;
//! - ONNX inputs map in order onto the GE operator's IR inputs (a dynamic GE input takes every
//!   remaining ONNX input), outputs likewise;
//! - `attrs`: ONNX attribute → GE attribute, coerced to the GE attribute's type; an ONNX
//!   attribute not listed (and not in `ignore`) is an error rather than silently dropped;
//! - `defaults`: GE attribute values used where ONNX's default differs from GE's;
//! - `const_attrs`: ONNX input position → GE attribute, for inputs GE takes as attributes
//!   (they must be constants at import).

use crate::attrs::{coerce, OnnxAttr};
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, OpTranslator, Registry};
use es_core::ops::IoKind;
use es_core::{AttrType, AttrValue, OutPort};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

const TABLE: &str = include_str!("../../../../ops/onnx_mapping.json");

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct DirectSpec {
    #[serde(default)]
    attrs: BTreeMap<String, String>,
    #[serde(default)]
    defaults: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    const_attrs: BTreeMap<String, String>,
    #[serde(default)]
    ignore: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    ge: Vec<String>,
    direct: Option<DirectSpec>,
}

struct Direct {
    op: String,
    spec: DirectSpec,
    const_attrs: Vec<(usize, String)>,
}

/// A JSON default as a GE attribute of type `ty`.
fn json_attr(v: &serde_json::Value, ty: AttrType) -> Option<AttrValue> {
    use serde_json::Value as J;
    Some(match (ty, v) {
        (AttrType::Int, J::Number(n)) => AttrValue::Int(n.as_i64()?),
        (AttrType::Float, J::Number(n)) => AttrValue::Float(n.as_f64()? as f32),
        (AttrType::Bool, J::Bool(b)) => AttrValue::Bool(*b),
        (AttrType::String, J::String(s)) => AttrValue::String(s.clone()),
        (AttrType::ListInt, J::Array(a)) => {
            AttrValue::ListInt(a.iter().map(|x| x.as_i64()).collect::<Option<_>>()?)
        }
        (AttrType::ListFloat, J::Array(a)) => AttrValue::ListFloat(
            a.iter()
                .map(|x| x.as_f64().map(|f| f as f32))
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

impl OpTranslator for Direct {
    fn translate(&self, ctx: &mut NodeCtx<'_>) -> Result<Vec<Option<OutPort>>> {
        let proto = ctx.graph_op_proto(&self.op)?;
        for a in &ctx.node.attribute {
            let name = a.name.as_deref().unwrap_or("");
            if !self.spec.attrs.contains_key(name) && !self.spec.ignore.iter().any(|i| i == name) {
                return Err(Error::unsupported(format!(
                    "attribute '{name}' of {} (the translation to {} has no place for it)",
                    ctx.op_type(),
                    self.op
                )));
            }
        }
        let mut attrs: Vec<(&str, AttrValue)> = Vec::new();
        for (g, v) in &self.spec.defaults {
            let def = proto.attr(g).ok_or_else(|| {
                Error::tr(format!("internal: {} has no attribute '{g}'", self.op))
            })?;
            let v = json_attr(v, def.ty).ok_or_else(|| {
                Error::tr(format!(
                    "internal: default of {}.{g} is not a {}",
                    self.op, def.ty
                ))
            })?;
            attrs.push((g.as_str(), v));
        }
        for (o, g) in &self.spec.attrs {
            if let Some(v) = ctx.attr_for(o, &self.op, g)? {
                attrs.retain(|(k, _)| k != g);
                attrs.push((g.as_str(), v));
            }
        }
        for (i, g) in &self.const_attrs {
            let Some(vals) = ctx.const_ints(*i, g)? else {
                continue;
            };
            let def = proto.attr(g).ok_or_else(|| {
                Error::tr(format!("internal: {} has no attribute '{g}'", self.op))
            })?;
            attrs.retain(|(k, _)| k != g);
            attrs.push((g.as_str(), coerce(&OnnxAttr::Ints(&vals), def.ty, g)?));
        }
        // ONNX inputs in order onto the IR inputs.
        let positions: Vec<usize> = (0..ctx.num_inputs())
            .filter(|i| !self.const_attrs.iter().any(|(c, _)| c == i))
            .collect();
        let mut next = 0usize;
        let mut ins: Vec<Vec<Option<OutPort>>> = Vec::with_capacity(proto.inputs.len());
        for def in &proto.inputs {
            if def.kind == IoKind::Dynamic {
                let mut group = Vec::new();
                while next < positions.len() {
                    if let Some(p) = ctx.opt_input(positions[next])? {
                        group.push(Some(p));
                    }
                    next += 1;
                }
                ins.push(group);
            } else {
                let p = match positions.get(next) {
                    Some(&k) => ctx.opt_input(k)?,
                    None => None,
                };
                next += 1;
                ins.push(vec![p]);
            }
        }
        if next < positions.len() {
            return Err(Error::tr(format!(
                "{} takes at most {} inputs here, the node has {}",
                ctx.op_type(),
                proto.inputs.len(),
                positions.len()
            )));
        }
        let outs = ctx.op(&self.op, ins, attrs)?;
        Ok(outs.into_iter().map(Some).collect())
    }
}

/// Registers every table entry with a `direct` spec.
pub(crate) fn register(r: &mut Registry) {
    let table: BTreeMap<String, Entry> =
        serde_json::from_str(TABLE).expect("ops/onnx_mapping.json is valid (tested)");
    for (key, e) in table {
        let Some(spec) = e.direct else { continue };
        let Some(op) = e.ge.first().cloned() else {
            continue;
        };
        let const_attrs = spec
            .const_attrs
            .iter()
            .filter_map(|(k, v)| k.parse::<usize>().ok().map(|i| (i, v.clone())))
            .collect();
        r.register(
            &key,
            Arc::new(Direct {
                op,
                spec,
                const_attrs,
            }),
        );
    }
}
