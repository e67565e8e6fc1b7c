//! Assembling a parsed REG_OP block into an [`OpProto`]: type variables resolved, the
//! prototype checked.

use super::lex::at;
use crate::error::{Error, Result};
use crate::ops::{AttrDef, IoDef, OpProto, SubgraphDef};
use crate::types::DataType;
use std::collections::BTreeMap;

type VarRef = Option<(String, usize, usize)>;

#[derive(Default)]
pub(super) struct Block {
    pub(super) name: String,
    pub(super) line: usize,
    pub(super) inputs: Vec<(IoDef, VarRef)>,
    pub(super) outputs: Vec<(IoDef, VarRef)>,
    pub(super) attrs: Vec<AttrDef>,
    pub(super) subgraphs: Vec<SubgraphDef>,
    pub(super) type_vars: BTreeMap<String, Vec<DataType>>,
}

impl Block {
    pub(super) fn finish(self) -> Result<OpProto> {
        for (what, list) in [("input", &self.inputs), ("output", &self.outputs)] {
            for (d, var) in list {
                if let Some((v, l, c)) = var {
                    if !self.type_vars.contains_key(v) {
                        return Err(at(
                            *l,
                            *c,
                            format!(
                                "type variable \"{v}\" of {what} '{}' is not declared by a \
                                 DATATYPE({v}, ...) in REG_OP({})",
                                d.name, self.name
                            ),
                        ));
                    }
                }
            }
        }
        let proto = OpProto {
            name: self.name.clone(),
            doc: String::new(),
            inputs: self.inputs.into_iter().map(|(d, _)| d).collect(),
            outputs: self.outputs.into_iter().map(|(d, _)| d).collect(),
            attrs: self.attrs,
            subgraphs: self.subgraphs,
            type_vars: self.type_vars,
            commutative: false,
            derived_attrs: BTreeMap::new(),
            output_counts: BTreeMap::new(),
        };
        proto.check().map_err(|e| {
            let msg = e.to_string();
            let prefix = format!("operator {}: ", self.name);
            let msg = msg.strip_prefix(&prefix).unwrap_or(&msg);
            Error::value(format!("line {}: REG_OP({}): {msg}", self.line, self.name))
        })?;
        Ok(proto)
    }
}
