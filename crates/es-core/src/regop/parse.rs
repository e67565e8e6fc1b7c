//! The parser of REG_OP blocks: chained methods, type expressions and default values.

use crate::attr::AttrType;
use crate::error::{Error, Result};
use crate::ops::{
    named_type_set, AttrDef, IoDef, IoKind, OpProto, SubgraphDef, SubgraphKind, TypeSpec,
};
use crate::types::DataType;
use std::collections::HashMap;

use super::doc::doc_before;
use super::lex::{at, lex, Tok, Token};
use super::proto::Block;
use super::value::{convert, parse_number, Val, V};

/// Deepest nesting of braces / type expressions accepted (deeper input is an error, never a
/// stack overflow).
const MAX_DEPTH: usize = 32;

/// Parses every `REG_OP(...)...OP_END_FACTORY_REG(...)` block in `text`, in text order.
pub fn parse_regop(text: &str) -> Result<Vec<OpProto>> {
    let lexed = lex(text);
    if let Some((line, col)) = lexed.unterminated_comment {
        return Err(at(
            line,
            col,
            "unterminated block comment ('/*' without '*/')",
        ));
    }
    let toks = &lexed.toks;
    let mut out: Vec<OpProto> = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    let mut i = 0;
    while i < toks.len() {
        let is_call = matches!(toks.get(i + 1), Some(Token { tok: Tok::Sym(s), .. }) if s == "(");
        match &toks[i].tok {
            Tok::Ident(w) if w == "REG_OP" && is_call => {
                let mut p = Parser {
                    toks,
                    pos: i,
                    eof: lexed.eof,
                };
                let mut proto = p.block()?;
                proto.doc = doc_before(&lexed, i);
                if let Some(l) = first_line.get(&proto.name) {
                    return Err(Error::value(format!(
                        "line {}: REG_OP({}) is defined twice (first on line {l})",
                        toks[i].line, proto.name
                    )));
                }
                first_line.insert(proto.name.clone(), toks[i].line);
                out.push(proto);
                i = p.pos.max(i + 1);
            }
            Tok::Ident(w) if w == "OP_END_FACTORY_REG" && is_call => {
                let name = match toks.get(i + 2) {
                    Some(Token {
                        tok: Tok::Ident(n), ..
                    }) => n.as_str(),
                    _ => "...",
                };
                return Err(Error::value(format!(
                    "line {}: OP_END_FACTORY_REG({name}) has no matching REG_OP({name})",
                    toks[i].line
                )));
            }
            _ => i += 1,
        }
    }
    Ok(out)
}

fn describe(t: Option<&Token>) -> String {
    match t {
        None => "end of input".into(),
        Some(t) => match &t.tok {
            Tok::Ident(s) | Tok::Num(s) | Tok::Sym(s) => format!("'{s}'"),
            Tok::Str(s) => {
                let short: String = s.chars().take(40).collect();
                format!("string \"{short}\"")
            }
            Tok::Bad(m) => m.clone(),
        },
    }
}

/// How an input/output names its dtypes before type variables are resolved.
enum IoType {
    Var(String),
    List(Vec<DataType>),
}

struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
    eof: (usize, usize),
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a Token> {
        self.toks.get(self.pos)
    }
    fn bump(&mut self) -> Option<&'a Token> {
        let t = self.toks.get(self.pos);
        if t.is_some() {
            self.pos += 1;
        }
        t
    }
    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Sym(x), .. }) if x == s)
    }
    fn ident(&self) -> Option<&'a str> {
        match self.peek() {
            Some(Token {
                tok: Tok::Ident(w), ..
            }) => Some(w.as_str()),
            _ => None,
        }
    }
    fn here(&self) -> (usize, usize) {
        self.peek().map_or(self.eof, |t| (t.line, t.col))
    }
    /// Type expressions nest at most [`MAX_DEPTH`] deep (an error here, never a stack overflow).
    fn check_depth(&self, depth: usize, ctx: &str) -> Result<()> {
        if depth > MAX_DEPTH {
            let (line, col) = self.here();
            return Err(at(
                line,
                col,
                format!("type expression nested too deeply in {ctx}"),
            ));
        }
        Ok(())
    }
    /// "expected <what>, found <token>" at the current token (or its own message when the
    /// token is malformed).
    fn expected(&self, what: &str) -> Error {
        let (l, c) = self.here();
        match self.peek() {
            Some(Token {
                tok: Tok::Bad(m), ..
            }) => at(l, c, m),
            t => at(l, c, format!("expected {what}, found {}", describe(t))),
        }
    }
    fn expect_sym(&mut self, s: &str, what: &str) -> Result<&'a Token> {
        if self.is_sym(s) {
            if let Some(t) = self.bump() {
                return Ok(t);
            }
        }
        Err(self.expected(what))
    }
    fn expect_ident(&mut self, what: &str) -> Result<(&'a str, &'a Token)> {
        if let Some(t) = self.peek() {
            if let Tok::Ident(w) = &t.tok {
                self.pos += 1;
                return Ok((w.as_str(), t));
            }
        }
        Err(self.expected(what))
    }
    /// `(Name` and then `after` (`,` or `)`) of `method(Name ...)`, where the name is that of
    /// `what` (an input, an attribute, ...); returns the name and its token.
    fn open_name(&mut self, method: &str, what: &str, after: &str) -> Result<(&'a str, &'a Token)> {
        self.expect_sym("(", &format!("'(' after {method}"))?;
        let name = self.expect_ident(&format!("the {what} name in {method}(...)"))?;
        self.expect_sym(
            after,
            &format!("'{after}' after the {what} name in {method}(...)"),
        )?;
        Ok(name)
    }

    /// One `REG_OP(Name) ... OP_END_FACTORY_REG(Name)` block; the cursor is on `REG_OP`.
    fn block(&mut self) -> Result<OpProto> {
        let (reg_line, _) = self.here();
        self.bump();
        self.expect_sym("(", "'(' after REG_OP")?;
        let (name, _) = self.expect_ident("the operator name in REG_OP(...)")?;
        self.expect_sym(")", "')' after the operator name in REG_OP(...)")?;
        let mut b = Block {
            name: name.to_string(),
            line: reg_line,
            ..Default::default()
        };
        loop {
            if let Some(Token {
                tok: Tok::Bad(m),
                line,
                col,
                ..
            }) = self.peek()
            {
                return Err(at(*line, *col, m));
            }
            if self.is_sym(".") {
                self.bump();
                let (method, mt) = self.expect_ident(&format!(
                    "a method name after '.' in REG_OP({name}) (INPUT, OUTPUT, ATTR, ...)"
                ))?;
                if method == "OP_END_FACTORY_REG" {
                    self.end(&b, mt)?;
                    break;
                }
                self.method(&mut b, method, mt)?;
            } else if self.ident() == Some("OP_END_FACTORY_REG") {
                if let Some(t) = self.bump() {
                    self.end(&b, t)?;
                }
                break;
            } else {
                let found = match self.peek() {
                    None => " (the text ends first)".to_string(),
                    Some(t) => format!(
                        " (found {} at line {}, col {})",
                        describe(Some(t)),
                        t.line,
                        t.col
                    ),
                };
                return Err(Error::value(format!(
                    "line {reg_line}: REG_OP({name}) is not closed by OP_END_FACTORY_REG({name}){found}"
                )));
            }
        }
        b.finish()
    }

    /// `(Name)` after OP_END_FACTORY_REG, and an optional `;`.
    fn end(&mut self, b: &Block, t: &'a Token) -> Result<()> {
        let (end_name, _) = self.open_name("OP_END_FACTORY_REG", "operator", ")")?;
        if end_name != b.name {
            return Err(Error::value(format!(
                "line {}: OP_END_FACTORY_REG({end_name}) does not match REG_OP({}) of line {}",
                t.line, b.name, b.line
            )));
        }
        if self.is_sym(";") {
            self.bump();
        }
        Ok(())
    }

    fn method(&mut self, b: &mut Block, method: &str, mt: &'a Token) -> Result<()> {
        match method {
            "INPUT" | "OPTIONAL_INPUT" | "DYNAMIC_INPUT" | "OUTPUT" | "DYNAMIC_OUTPUT" => {
                let output = method.ends_with("OUTPUT");
                let what = if output { "output" } else { "input" };
                let (n, nt) = self.open_name(method, what, ",")?;
                let (tl, tc) = self.here();
                let ty = self.io_type(method)?;
                self.expect_sym(")", &format!("')' to close {method}({n}, ...)"))?;
                let kind = match method {
                    "OPTIONAL_INPUT" => IoKind::Optional,
                    "DYNAMIC_INPUT" | "DYNAMIC_OUTPUT" => IoKind::Dynamic,
                    _ => IoKind::Required,
                };
                let list = if output {
                    &mut b.outputs
                } else {
                    &mut b.inputs
                };
                if list.iter().any(|(d, _)| d.name == n) {
                    return Err(declared_twice(nt, what, n, &b.name));
                }
                let (ty, var) = match ty {
                    IoType::Var(v) => (TypeSpec::Var(v.clone()), Some((v, tl, tc))),
                    IoType::List(l) => (TypeSpec::List(l), None),
                };
                list.push((
                    IoDef {
                        name: n.to_string(),
                        kind,
                        ty,
                        since: None,
                    },
                    var,
                ));
            }
            "ATTR" | "REQUIRED_ATTR" => {
                let required = method == "REQUIRED_ATTR";
                let (n, nt) = self.open_name(method, "attribute", ",")?;
                let (tn, tt) = self.expect_ident(&format!(
                    "the attribute type (Int, Float, String, ListInt, ...) in {method}({n}, ...)"
                ))?;
                let ty = attr_type(tn).map_err(|m| at(tt.line, tt.col, m))?;
                let default = if required {
                    None
                } else {
                    self.expect_sym(
                        ",",
                        &format!("',' before the default value in ATTR({n}, {tn}, ...)"),
                    )?;
                    let v = self.value(0)?;
                    let d = convert(ty, &v).map_err(|(l, c, m)| {
                        at(l, c, format!("default of attribute '{n}' ({ty}) {m}"))
                    })?;
                    Some(d)
                };
                let close = if required {
                    format!("')' to close REQUIRED_ATTR({n}, {tn})")
                } else {
                    format!("')' after the default value of attribute '{n}'")
                };
                self.expect_sym(")", &close)?;
                if b.attrs.iter().any(|a| a.name == n) {
                    return Err(declared_twice(nt, "attribute", n, &b.name));
                }
                b.attrs.push(AttrDef {
                    name: n.to_string(),
                    ty,
                    default,
                    since: None,
                });
            }
            "GRAPH" | "DYNAMIC_GRAPH" => {
                let (n, nt) = self.open_name(method, "subgraph", ")")?;
                if b.subgraphs.iter().any(|s| s.name == n) {
                    return Err(declared_twice(nt, "subgraph", n, &b.name));
                }
                b.subgraphs.push(SubgraphDef {
                    name: n.to_string(),
                    kind: if method == "GRAPH" {
                        SubgraphKind::Static
                    } else {
                        SubgraphKind::Dynamic
                    },
                });
            }
            "DATATYPE" => {
                let (n, nt) = self.open_name(method, "type variable", ",")?;
                let l = self.type_expr(0, &format!("DATATYPE({n}, ...)"))?;
                self.expect_sym(")", &format!("')' to close DATATYPE({n}, ...)"))?;
                if b.type_vars.contains_key(n) {
                    return Err(at(
                        nt.line,
                        nt.col,
                        format!(
                            "type variable '{n}' is declared twice by DATATYPE in REG_OP({})",
                            b.name
                        ),
                    ));
                }
                b.type_vars.insert(n.to_string(), l);
            }
            "INFER_SHAPE_AND_TYPE" => {
                self.expect_sym("(", &format!("'(' after {method}"))?;
                let mut depth = 1usize;
                while depth > 0 {
                    match self.bump() {
                        None => {
                            return Err(at(
                                mt.line,
                                mt.col,
                                "INFER_SHAPE_AND_TYPE( is not closed by ')'",
                            ))
                        }
                        Some(Token {
                            tok: Tok::Sym(s), ..
                        }) if s == "(" => depth += 1,
                        Some(Token {
                            tok: Tok::Sym(s), ..
                        }) if s == ")" => depth -= 1,
                        _ => {}
                    }
                }
            }
            other => {
                return Err(at(
                    mt.line,
                    mt.col,
                    format!(
                        "unknown REG_OP method '{other}' (expected INPUT, OPTIONAL_INPUT, \
                         DYNAMIC_INPUT, OUTPUT, DYNAMIC_OUTPUT, ATTR, REQUIRED_ATTR, GRAPH, \
                         DYNAMIC_GRAPH, DATATYPE or OP_END_FACTORY_REG)"
                    ),
                ))
            }
        }
        Ok(())
    }

    /// The type of an input/output: a type expression or `"T"`.
    fn io_type(&mut self, method: &str) -> Result<IoType> {
        if let Some(Token {
            tok: Tok::Str(s),
            line,
            col,
            ..
        }) = self.peek()
        {
            let ok = s
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_alphanumeric() || c == '_');
            if !ok {
                return Err(at(
                    *line,
                    *col,
                    format!("\"{s}\" is not a valid type variable name in {method}(...)"),
                ));
            }
            self.bump();
            return Ok(IoType::Var(s.clone()));
        }
        Ok(IoType::List(self.type_expr(0, &format!("{method}(...)"))?))
    }

    /// `ge::`-qualified name: its segments without the leading `ge` (and `::` prefix).
    fn path(&mut self) -> Vec<&'a str> {
        let mut segs = Vec::new();
        if self.is_sym("::") {
            self.bump();
        }
        while let Some(w) = self.ident() {
            self.bump();
            segs.push(w);
            let next_is_ident = matches!(
                self.toks.get(self.pos + 1),
                Some(Token {
                    tok: Tok::Ident(_),
                    ..
                })
            );
            if self.is_sym("::") && next_is_ident {
                self.bump();
            } else {
                break;
            }
        }
        if segs.len() > 1 && segs.first() == Some(&"ge") {
            segs.remove(0);
        }
        segs
    }

    /// A type expression (no type variables): its dtypes, de-duplicated in order.
    fn type_expr(&mut self, depth: usize, ctx: &str) -> Result<Vec<DataType>> {
        let (line, col) = self.here();
        self.check_depth(depth, ctx)?;
        let what = format!(
            "a type (TensorType({{...}}), TensorType::<Set>(), DT_<TYPE> or \"<type variable>\") in {ctx}"
        );
        if self.is_sym("{") {
            return self.type_braces(depth + 1, ctx);
        }
        if let Some(Token {
            tok: Tok::Str(s), ..
        }) = self.peek()
        {
            return Err(at(
                line,
                col,
                format!("type variable \"{s}\" cannot be used inside a type expression in {ctx}"),
            ));
        }
        if self.ident().is_none() {
            return Err(self.expected(&what));
        }
        let segs = self.path();
        match segs.as_slice() {
            ["TensorType"] => {
                if self.is_sym("{") {
                    return self.type_braces(depth + 1, ctx);
                }
                self.expect_sym("(", &format!("'(' or '{{' after TensorType in {ctx}"))?;
                let mut out: Vec<DataType> = Vec::new();
                loop {
                    let l = if self.is_sym("{") {
                        self.type_braces(depth + 1, ctx)?
                    } else {
                        self.type_expr(depth + 1, ctx)?
                    };
                    union(&mut out, l);
                    if self.is_sym(",") {
                        self.bump();
                        continue;
                    }
                    self.expect_sym(")", &format!("',' or ')' in TensorType(...) of {ctx}"))?;
                    break;
                }
                Ok(out)
            }
            ["ListTensorType"] => {
                self.expect_sym("(", &format!("'(' after ListTensorType in {ctx}"))?;
                let l = self.type_expr(depth + 1, ctx)?;
                self.expect_sym(")", &format!("')' to close ListTensorType(...) in {ctx}"))?;
                Ok(l)
            }
            ["TensorType", set] => {
                let set = *set;
                self.expect_sym("(", &format!("'(' after TensorType::{set} in {ctx}"))?;
                self.expect_sym(")", &format!("')' after TensorType::{set}( in {ctx}"))?;
                type_set(set).ok_or_else(|| {
                    at(
                        line,
                        col,
                        format!(
                            "unknown type set 'TensorType::{set}()' in {ctx} (known: {})",
                            TYPE_SET_NAMES.join(", ")
                        ),
                    )
                })
            }
            [dt] if dt.starts_with("DT_") => DataType::from_name(dt)
                .map(|d| vec![d])
                .map_err(|_| at(line, col, format!("unknown data type '{dt}' in {ctx}"))),
            _ => Err(at(
                line,
                col,
                format!("expected {what}, found '{}'", segs.join("::")),
            )),
        }
    }

    /// The comma-separated items `item` parses up to the symbol `close`, which it consumes (the
    /// cursor is after the opening symbol); `what` is what a bad separator was expected to be.
    fn comma_list<T>(
        &mut self,
        close: &str,
        what: &str,
        mut item: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        while !self.is_sym(close) {
            out.push(item(self)?);
            if self.is_sym(",") {
                self.bump();
            } else if !self.is_sym(close) {
                return Err(self.expected(what));
            }
        }
        self.bump();
        Ok(out)
    }

    /// `{ <type>, <type>, ... }`; the cursor is on `{`.
    fn type_braces(&mut self, depth: usize, ctx: &str) -> Result<Vec<DataType>> {
        let (line, col) = self.here();
        self.check_depth(depth, ctx)?;
        self.bump();
        let what = format!("',' or '}}' in the type list of {ctx}");
        let lists = self.comma_list("}", &what, |p| p.type_expr(depth + 1, ctx))?;
        let mut out = Vec::new();
        for l in lists {
            union(&mut out, l);
        }
        if out.is_empty() {
            return Err(at(line, col, format!("empty type list in {ctx}")));
        }
        Ok(out)
    }

    /// A C++ default-value expression.
    fn value(&mut self, depth: usize) -> Result<V> {
        let (line, col) = self.here();
        if depth > MAX_DEPTH {
            return Err(at(line, col, "default value nested too deeply"));
        }
        let mk = |val| V { val, line, col };
        let what = "a default value (number, string, true/false, DT_..., {...} list or Tensor())";
        let Some(t) = self.peek() else {
            return Err(self.expected(what));
        };
        match &t.tok {
            Tok::Sym(s) if s == "-" || s == "+" => {
                let neg = s == "-";
                self.bump();
                let inner = self.value(depth + 1)?;
                if !matches!(inner.val, Val::Int(_) | Val::Float(_) | Val::Name(_)) {
                    return Err(at(
                        inner.line,
                        inner.col,
                        format!("a number or constant must follow '{s}'"),
                    ));
                }
                Ok(if neg {
                    mk(Val::Neg(Box::new(inner)))
                } else {
                    inner
                })
            }
            Tok::Num(n) => {
                self.bump();
                parse_number(n)
                    .map(mk)
                    .ok_or_else(|| at(line, col, format!("invalid number '{n}'")))
            }
            Tok::Str(_) => {
                let mut s = String::new();
                while let Some(Token {
                    tok: Tok::Str(p), ..
                }) = self.peek()
                {
                    s.push_str(p);
                    self.bump();
                }
                Ok(mk(Val::Str(s)))
            }
            Tok::Sym(s) if s == "{" => {
                self.bump();
                let what = "',' or '}' in the {...} list";
                let items = self.comma_list("}", what, |p| p.value(depth + 1))?;
                Ok(mk(Val::List(items)))
            }
            Tok::Ident(_) | Tok::Sym(_) if self.ident().is_some() || self.is_sym("::") => {
                let segs = self.path();
                let name = segs.join("::");
                if name.is_empty() {
                    return Err(self.expected(what));
                }
                if self.is_sym("(") {
                    self.bump();
                    let what = format!("',' or ')' in {name}(...)");
                    let args = self.comma_list(")", &what, |p| p.value(depth + 1))?;
                    return Ok(mk(Val::Call(name, args)));
                }
                Ok(mk(Val::Name(name)))
            }
            _ => Err(self.expected(what)),
        }
    }
}

fn union(out: &mut Vec<DataType>, add: Vec<DataType>) {
    for d in add {
        if !out.contains(&d) {
            out.push(d);
        }
    }
}

/// Every `TensorType::<Set>()` name accepted.
const TYPE_SET_NAMES: &[&str] = &[
    "ALL",
    "QuantifiedType",
    "OrdinaryType",
    "BasicType",
    "NumberType",
    "RealNumberType",
    "ComplexDataType",
    "IntegerDataType",
    "SignedDataType",
    "UnsignedDataType",
    "FloatingDataType",
    "IndexNumberType",
    "UnaryDataType",
    "FLOAT",
];

/// GE's named type sets: those of [`named_type_set`], plus the rest of `TensorType`'s static
/// sets (as GE defines them, without the types `named_type_set` leaves out). A name that
/// matches one of [`TYPE_SET_NAMES`] case-insensitively (`TensorType::All()`) is accepted.
fn type_set(name: &str) -> Option<Vec<DataType>> {
    use DataType::*;
    let canon = TYPE_SET_NAMES
        .iter()
        .find(|n| **n == name)
        .or_else(|| TYPE_SET_NAMES.iter().find(|n| n.eq_ignore_ascii_case(name)))?;
    if let Some(l) = named_type_set(canon) {
        return Some(l);
    }
    let l: &[DataType] = match *canon {
        "QuantifiedType" => &[QINT16, QINT32, QINT8, QUINT16, QUINT8],
        "OrdinaryType" => &[
            BOOL, COMPLEX128, COMPLEX64, DOUBLE, FLOAT, FLOAT16, INT16, INT32, INT64, INT8, UINT16,
            UINT32, UINT64, UINT8, BF16,
        ],
        "ComplexDataType" => &[COMPLEX128, COMPLEX64],
        "SignedDataType" => &[INT16, INT32, INT64, INT8],
        "UnsignedDataType" => &[UINT16, UINT32, UINT64, UINT8],
        _ => return None,
    };
    Some(l.to_vec())
}

fn attr_type(name: &str) -> std::result::Result<AttrType, String> {
    match name {
        "AscendString" => return Ok(AttrType::String),
        "ListAscendString" => return Ok(AttrType::ListString),
        "NamedAttrs" | "ListNamedAttrs" | "Bytes" | "ListTensor" => {
            return Err(format!(
                "attribute type '{name}' is not supported (ge-rs attributes have no {name} type)"
            ))
        }
        _ => {}
    }
    AttrType::parse(name).map_err(|_| {
        format!(
            "unknown attribute type '{name}' (expected Int, Float, String, Bool, Type, ListInt, \
             ListFloat, ListBool, ListType, ListListInt, Tensor or ListString)"
        )
    })
}

/// The error for a name declared twice in one REG_OP block, at the second declaration.
fn declared_twice(nt: &Token, what: &str, name: &str, op: &str) -> Error {
    at(
        nt.line,
        nt.col,
        format!("{what} '{name}' is declared twice in REG_OP({op})"),
    )
}
