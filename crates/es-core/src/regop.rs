//! A parser for GE's operator prototype text: the `REG_OP` macro language of the CANN operator
//! headers.
//!
//! ```text
//! /**
//! * @brief Multiplies matrix "a" by matrix "b", producing "a * b".
//! */
//! REG_OP(MatMulV2)
//!     .INPUT(x1, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32, DT_INT8}))
//!     .INPUT(x2, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32, DT_INT8}))
//!     .OPTIONAL_INPUT(bias, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32}))
//!     .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32}))
//!     .ATTR(transpose_x1, Bool, false)
//!     .OP_END_FACTORY_REG(MatMulV2)
//! ```
//!
//! [`parse_regop`] turns every `REG_OP(..)...OP_END_FACTORY_REG(..)` block of a text into an
//! [`OpProto`]. Everything outside the blocks (includes, namespaces, other C++ code, comments,
//! preprocessor lines) is skipped; the nearest comment before a block gives the prototype's
//! `doc` (the first sentence of its `@brief`).
//!
//! Chained methods: `INPUT`, `OPTIONAL_INPUT`, `DYNAMIC_INPUT`, `OUTPUT`, `DYNAMIC_OUTPUT`,
//! `ATTR`, `REQUIRED_ATTR`, `GRAPH`, `DYNAMIC_GRAPH`, `DATATYPE` and `INFER_SHAPE_AND_TYPE`
//! (accepted and ignored). Type expressions: `TensorType({DT_A, DT_B})`, `TensorType(DT_A)`,
//! `TensorType{DT_A}`, `TensorType::<Set>()`, a bare `DT_A`, `ListTensorType(<type>)`, unions
//! of these inside `TensorType(...)`, and `"T"` (a `DATATYPE` type variable).
//!
//! Errors are [`Error::Value`] whose message starts with the 1-based line (and column) of the
//! problem. The parser never panics, whatever the input.

use crate::attr::{AttrType, AttrValue};
use crate::error::{Error, Result};
use crate::ops::{
    named_type_set, AttrDef, IoDef, IoKind, OpProto, SubgraphDef, SubgraphKind, TypeSpec,
};
use crate::types::{DataType, Format, Tensor};
use std::collections::{BTreeMap, HashMap};

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

fn at(line: usize, col: usize, msg: impl std::fmt::Display) -> Error {
    Error::value(format!("line {line}, col {col}: {msg}"))
}

// =============================================================================================
// Lexer
// =============================================================================================

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Num(String),
    Str(String),
    Sym(String),
    /// A malformed token (unterminated string, ...): its message.
    Bad(String),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
    col: usize,
    /// Char offsets of the token in the text.
    start: usize,
    end: usize,
}

#[derive(Debug, Clone)]
struct Comment {
    start: usize,
    end: usize,
    start_line: usize,
    end_line: usize,
    text: String,
    /// Only whitespace precedes it on its first line.
    own_line: bool,
    line_comment: bool,
}

struct Lexed {
    toks: Vec<Token>,
    comments: Vec<Comment>,
    eof: (usize, usize),
    unterminated_comment: Option<(usize, usize)>,
}

struct Cursor {
    chars: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
}

impl Cursor {
    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.i).copied()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }
    /// A backslash-newline (line continuation) at the cursor: its length.
    fn continuation(&self) -> Option<usize> {
        match (self.peek(0), self.peek(1), self.peek(2)) {
            (Some('\\'), Some('\n'), _) => Some(2),
            (Some('\\'), Some('\r'), Some('\n')) => Some(3),
            _ => None,
        }
    }
    /// Skips a block comment whose `/*` is at the cursor; returns its inner text, or None
    /// when it is not terminated.
    fn block_comment(&mut self) -> Option<String> {
        self.bump();
        self.bump();
        let mut text = String::new();
        loop {
            match self.peek(0) {
                None => return None,
                Some('*') if self.peek(1) == Some('/') => {
                    self.bump();
                    self.bump();
                    return Some(text);
                }
                Some(c) => {
                    text.push(c);
                    self.bump();
                }
            }
        }
    }
}

fn lex(text: &str) -> Lexed {
    let mut cur = Cursor {
        chars: text.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
    };
    let mut toks = Vec::new();
    let mut comments = Vec::new();
    let mut unterminated_comment = None;
    // The line where the last token or comment ended (0: none yet).
    let mut sig_line = 0usize;
    while let Some(c) = cur.peek(0) {
        if let Some(n) = cur.continuation() {
            for _ in 0..n {
                cur.bump();
            }
            continue;
        }
        if c.is_whitespace() {
            cur.bump();
            continue;
        }
        let (start, line, col) = (cur.i, cur.line, cur.col);
        if c == '/' && cur.peek(1) == Some('/') {
            cur.bump();
            cur.bump();
            let mut t = String::new();
            while let Some(ch) = cur.peek(0) {
                if ch == '\n' {
                    break;
                }
                t.push(ch);
                cur.bump();
            }
            comments.push(Comment {
                start,
                end: cur.i,
                start_line: line,
                end_line: line,
                text: t,
                own_line: sig_line < line,
                line_comment: true,
            });
            sig_line = line;
            continue;
        }
        if c == '/' && cur.peek(1) == Some('*') {
            match cur.block_comment() {
                Some(t) => comments.push(Comment {
                    start,
                    end: cur.i,
                    start_line: line,
                    end_line: cur.line,
                    text: t,
                    own_line: sig_line < line,
                    line_comment: false,
                }),
                None => {
                    if unterminated_comment.is_none() {
                        unterminated_comment = Some((line, col));
                    }
                }
            }
            sig_line = cur.line;
            continue;
        }
        if c == '#' && sig_line < line {
            skip_preprocessor(&mut cur, &mut unterminated_comment);
            continue;
        }
        let tok = if c.is_ascii_alphabetic() || c == '_' {
            let mut w = String::new();
            while let Some(ch) = cur.peek(0) {
                if ch.is_ascii_alphanumeric() || ch == '_' {
                    w.push(ch);
                    cur.bump();
                } else {
                    break;
                }
            }
            if matches!(w.as_str(), "R" | "LR" | "uR" | "UR" | "u8R") && cur.peek(0) == Some('"') {
                raw_string(&mut cur)
            } else {
                Tok::Ident(w)
            }
        } else if c.is_ascii_digit()
            || (c == '.' && cur.peek(1).is_some_and(|d| d.is_ascii_digit()))
        {
            number(&mut cur)
        } else if c == '"' {
            string(&mut cur)
        } else if c == '\'' {
            char_literal(&mut cur)
        } else if c == ':' && cur.peek(1) == Some(':') {
            cur.bump();
            cur.bump();
            Tok::Sym("::".into())
        } else {
            cur.bump();
            Tok::Sym(c.to_string())
        };
        toks.push(Token {
            tok,
            line,
            col,
            start,
            end: cur.i,
        });
        sig_line = cur.line;
    }
    Lexed {
        toks,
        comments,
        eof: (cur.line, cur.col),
        unterminated_comment,
    }
}

/// Skips a preprocessor line (`#include`, `#define ... \` with continuations, ...).
fn skip_preprocessor(cur: &mut Cursor, unterminated: &mut Option<(usize, usize)>) {
    while let Some(c) = cur.peek(0) {
        if let Some(n) = cur.continuation() {
            for _ in 0..n {
                cur.bump();
            }
            continue;
        }
        match c {
            '\n' => break,
            '/' if cur.peek(1) == Some('*') => {
                let (line, col) = (cur.line, cur.col);
                if cur.block_comment().is_none() && unterminated.is_none() {
                    *unterminated = Some((line, col));
                }
            }
            '/' if cur.peek(1) == Some('/') => {
                while cur.peek(0).is_some_and(|ch| ch != '\n') {
                    cur.bump();
                }
            }
            _ => {
                cur.bump();
            }
        }
    }
}

fn number(cur: &mut Cursor) -> Tok {
    let mut s = String::new();
    let hex = cur.peek(0) == Some('0') && matches!(cur.peek(1), Some('x' | 'X'));
    while let Some(c) = cur.peek(0) {
        let exp_sign = (c == '+' || c == '-')
            && s.chars().last().is_some_and(|p| {
                if hex {
                    matches!(p, 'p' | 'P')
                } else {
                    matches!(p, 'e' | 'E')
                }
            });
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' || exp_sign {
            s.push(c);
            cur.bump();
        } else {
            break;
        }
    }
    Tok::Num(s)
}

fn escape(c: char) -> char {
    match c {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        '0' => '\0',
        other => other,
    }
}

fn string(cur: &mut Cursor) -> Tok {
    cur.bump();
    let mut s = String::new();
    loop {
        if let Some(n) = cur.continuation() {
            for _ in 0..n {
                cur.bump();
            }
            continue;
        }
        match cur.peek(0) {
            None | Some('\n') => return Tok::Bad("unterminated string literal".into()),
            Some('"') => {
                cur.bump();
                return Tok::Str(s);
            }
            Some('\\') => {
                cur.bump();
                match cur.peek(0) {
                    None | Some('\n') => {
                        return Tok::Bad("unterminated string literal".into());
                    }
                    Some(e) => {
                        s.push(escape(e));
                        cur.bump();
                    }
                }
            }
            Some(c) => {
                s.push(c);
                cur.bump();
            }
        }
    }
}

fn raw_string(cur: &mut Cursor) -> Tok {
    cur.bump();
    let mut delim = String::new();
    loop {
        match cur.peek(0) {
            Some('(') => {
                cur.bump();
                break;
            }
            Some(c) if delim.len() < 16 && !c.is_whitespace() && c != ')' && c != '\\' => {
                delim.push(c);
                cur.bump();
            }
            _ => return Tok::Bad("malformed raw string literal".into()),
        }
    }
    let close: Vec<char> = std::iter::once(')')
        .chain(delim.chars())
        .chain(std::iter::once('"'))
        .collect();
    let mut s = String::new();
    loop {
        if cur.chars.get(cur.i..cur.i + close.len()) == Some(&close[..]) {
            for _ in 0..close.len() {
                cur.bump();
            }
            return Tok::Str(s);
        }
        match cur.bump() {
            Some(c) => s.push(c),
            None => return Tok::Bad("unterminated raw string literal".into()),
        }
    }
}

fn char_literal(cur: &mut Cursor) -> Tok {
    let mut s = String::from('\'');
    cur.bump();
    loop {
        match cur.peek(0) {
            None | Some('\n') => return Tok::Bad("unterminated character literal".into()),
            Some('\'') => {
                cur.bump();
                s.push('\'');
                return Tok::Sym(s);
            }
            Some('\\') => {
                s.push('\\');
                cur.bump();
                if let Some(c) = cur.peek(0).filter(|c| *c != '\n') {
                    s.push(c);
                    cur.bump();
                }
            }
            Some(c) => {
                s.push(c);
                cur.bump();
            }
        }
    }
}

// =============================================================================================
// Doc comments
// =============================================================================================

/// The first sentence of the comment right before token `idx` (only whitespace, other
/// comments and preprocessor lines between them); empty when there is none.
fn doc_before(lexed: &Lexed, idx: usize) -> String {
    let lo = match idx.checked_sub(1).and_then(|p| lexed.toks.get(p)) {
        Some(t) => t.end,
        None => 0,
    };
    let Some(hi) = lexed.toks.get(idx).map(|t| t.start) else {
        return String::new();
    };
    let cs = &lexed.comments;
    let from = cs.partition_point(|c| c.start < lo);
    let to = cs.partition_point(|c| c.start < hi);
    let cands: Vec<&Comment> = cs
        .get(from..to)
        .unwrap_or(&[])
        .iter()
        .filter(|c| c.own_line && c.end <= hi)
        .collect();
    let Some(last) = cands.last() else {
        return String::new();
    };
    let mut block: Vec<&Comment> = vec![last];
    if last.line_comment {
        for c in cands.iter().rev().skip(1) {
            let next_line = block.last().map_or(0, |b| b.start_line);
            if c.line_comment && c.end_line + 1 == next_line {
                block.push(c);
            } else {
                break;
            }
        }
        block.reverse();
    }
    let mut lines: Vec<String> = Vec::new();
    for c in block {
        if c.line_comment {
            lines.push(c.text.trim_start_matches(['/', '!']).trim().to_string());
        } else {
            for l in c.text.lines() {
                lines.push(l.trim().trim_start_matches('*').trim().to_string());
            }
        }
    }
    first_sentence(&lines)
}

fn first_sentence(lines: &[String]) -> String {
    if lines.iter().any(|l| l.contains("Copyright")) {
        return String::new();
    }
    let brief = lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| {
            ["@brief", "\\brief"]
                .iter()
                .find_map(|m| l.find(m).map(|p| (i, l[p + m.len()..].trim().to_string())))
        })
        .or_else(|| {
            lines
                .iter()
                .enumerate()
                .find(|(_, l)| !l.is_empty())
                .map(|(i, l)| (i, l.clone()))
        });
    let Some((i, head)) = brief else {
        return String::new();
    };
    let mut parts = vec![head];
    for l in lines.iter().skip(i + 1) {
        if l.is_empty() || l.starts_with('@') {
            break;
        }
        parts.push(l.clone());
    }
    let joined = parts.join(" ").replace("\\n", " ");
    let text: String = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars: Vec<char> = text.chars().collect();
    let mut cut = chars.len();
    for (k, &c) in chars.iter().enumerate() {
        let end = chars.get(k + 1).is_none_or(|n| n.is_whitespace());
        if (c == '.' && end) || c == '。' {
            cut = k + 1;
            break;
        }
    }
    let s: String = chars.get(..cut).unwrap_or(&[]).iter().collect();
    let s = s.trim().to_string();
    match s.strip_suffix(" .") {
        Some(r) => format!("{}.", r.trim_end()),
        None => s,
    }
}

// =============================================================================================
// Parser
// =============================================================================================

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
        self.expect_sym("(", "'(' after OP_END_FACTORY_REG")?;
        let (end_name, _) = self.expect_ident("the operator name in OP_END_FACTORY_REG(...)")?;
        self.expect_sym(
            ")",
            "')' after the operator name in OP_END_FACTORY_REG(...)",
        )?;
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
        let open = format!("'(' after {method}");
        match method {
            "INPUT" | "OPTIONAL_INPUT" | "DYNAMIC_INPUT" | "OUTPUT" | "DYNAMIC_OUTPUT" => {
                let output = method.ends_with("OUTPUT");
                let what = if output { "output" } else { "input" };
                self.expect_sym("(", &open)?;
                let (n, nt) = self.expect_ident(&format!("the {what} name in {method}(...)"))?;
                self.expect_sym(",", &format!("',' after the {what} name in {method}(...)"))?;
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
                    return Err(at(
                        nt.line,
                        nt.col,
                        format!("{what} '{n}' is declared twice in REG_OP({})", b.name),
                    ));
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
                self.expect_sym("(", &open)?;
                let (n, nt) = self.expect_ident(&format!("the attribute name in {method}(...)"))?;
                self.expect_sym(
                    ",",
                    &format!("',' after the attribute name in {method}(...)"),
                )?;
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
                    return Err(at(
                        nt.line,
                        nt.col,
                        format!("attribute '{n}' is declared twice in REG_OP({})", b.name),
                    ));
                }
                b.attrs.push(AttrDef {
                    name: n.to_string(),
                    ty,
                    default,
                    since: None,
                });
            }
            "GRAPH" | "DYNAMIC_GRAPH" => {
                self.expect_sym("(", &open)?;
                let (n, nt) = self.expect_ident(&format!("the subgraph name in {method}(...)"))?;
                self.expect_sym(
                    ")",
                    &format!("')' after the subgraph name in {method}(...)"),
                )?;
                if b.subgraphs.iter().any(|s| s.name == n) {
                    return Err(at(
                        nt.line,
                        nt.col,
                        format!("subgraph '{n}' is declared twice in REG_OP({})", b.name),
                    ));
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
                self.expect_sym("(", &open)?;
                let (n, nt) = self.expect_ident("the type variable name in DATATYPE(...)")?;
                self.expect_sym(",", "',' after the type variable name in DATATYPE(...)")?;
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
                self.expect_sym("(", &open)?;
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
        if depth > MAX_DEPTH {
            return Err(at(
                line,
                col,
                format!("type expression nested too deeply in {ctx}"),
            ));
        }
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

    /// `{ <type>, <type>, ... }`; the cursor is on `{`.
    fn type_braces(&mut self, depth: usize, ctx: &str) -> Result<Vec<DataType>> {
        let (line, col) = self.here();
        if depth > MAX_DEPTH {
            return Err(at(
                line,
                col,
                format!("type expression nested too deeply in {ctx}"),
            ));
        }
        self.bump();
        let mut out = Vec::new();
        while !self.is_sym("}") {
            let l = self.type_expr(depth + 1, ctx)?;
            union(&mut out, l);
            if self.is_sym(",") {
                self.bump();
            } else if !self.is_sym("}") {
                return Err(self.expected(&format!("',' or '}}' in the type list of {ctx}")));
            }
        }
        self.bump();
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
                let mut items = Vec::new();
                while !self.is_sym("}") {
                    items.push(self.value(depth + 1)?);
                    if self.is_sym(",") {
                        self.bump();
                    } else if !self.is_sym("}") {
                        return Err(self.expected("',' or '}' in the {...} list"));
                    }
                }
                self.bump();
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
                    let mut args = Vec::new();
                    while !self.is_sym(")") {
                        args.push(self.value(depth + 1)?);
                        if self.is_sym(",") {
                            self.bump();
                        } else if !self.is_sym(")") {
                            return Err(self.expected(&format!("',' or ')' in {name}(...)")));
                        }
                    }
                    self.bump();
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

// =============================================================================================
// Prototype assembly
// =============================================================================================

type VarRef = Option<(String, usize, usize)>;

#[derive(Default)]
struct Block {
    name: String,
    line: usize,
    inputs: Vec<(IoDef, VarRef)>,
    outputs: Vec<(IoDef, VarRef)>,
    attrs: Vec<AttrDef>,
    subgraphs: Vec<SubgraphDef>,
    type_vars: BTreeMap<String, Vec<DataType>>,
}

impl Block {
    fn finish(self) -> Result<OpProto> {
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

// =============================================================================================
// Default values
// =============================================================================================

#[derive(Debug)]
enum Val {
    /// An integer literal's magnitude.
    Int(i128),
    Float(f64),
    Str(String),
    /// An identifier such as `true`, `DT_FLOAT`, `INFINITY` (`::`-joined).
    Name(String),
    Call(String, Vec<V>),
    List(Vec<V>),
    Neg(Box<V>),
}

#[derive(Debug)]
struct V {
    val: Val,
    line: usize,
    col: usize,
}

fn show(v: &V) -> String {
    match &v.val {
        Val::Int(n) => n.to_string(),
        Val::Float(f) => format!("{f:?}"),
        Val::Str(s) => format!("\"{}\"", s.chars().take(40).collect::<String>()),
        Val::Name(n) => n.clone(),
        Val::Call(n, a) => format!("{n}({})", if a.is_empty() { "" } else { "..." }),
        Val::List(_) => "{...}".into(),
        Val::Neg(x) => format!("-{}", show(x)),
    }
}

/// An integer or floating literal, with C suffixes (`u`, `l`, `ll`, `f`) and prefixes (`0x`,
/// `0b`, leading `0` for octal).
fn parse_number(text: &str) -> Option<Val> {
    let t = text.replace('\'', "").to_ascii_lowercase();
    let int = |digits: &str, radix: u32| -> Option<Val> {
        let d = digits.trim_end_matches(['u', 'l']);
        if d.is_empty() {
            return None;
        }
        let n = u64::from_str_radix(d, radix).ok()?;
        Some(Val::Int(i128::from(n)))
    };
    if let Some(h) = t.strip_prefix("0x") {
        return int(h, 16);
    }
    if let Some(b) = t.strip_prefix("0b") {
        return int(b, 2);
    }
    if t.contains('.') || t.contains('e') || t.ends_with('f') {
        let f = t.trim_end_matches(['f', 'l']);
        if f.is_empty() || !f.chars().all(|c| c.is_ascii_digit() || "+-.e".contains(c)) {
            return None;
        }
        return f.parse::<f64>().ok().map(Val::Float);
    }
    if t.len() > 1 && t.starts_with('0') {
        return int(&t[1..], 8);
    }
    int(&t, 10)
}

type Conv<T> = std::result::Result<T, (usize, usize, String)>;

fn fail<T>(v: &V, expect: &str) -> Conv<T> {
    Err((
        v.line,
        v.col,
        format!("must be {expect}, found {}", show(v)),
    ))
}

fn int_value(v: &V) -> Option<i128> {
    match &v.val {
        Val::Int(n) => Some(*n),
        Val::Neg(x) => int_value(x).map(|n| -n),
        Val::Name(n) => {
            if n.starts_with("DT_") {
                if let Ok(d) = DataType::from_name(n) {
                    return Some(i128::from(d.value()));
                }
            }
            if n.starts_with("FORMAT_") {
                if let Ok(f) = Format::from_name(n) {
                    return Some(i128::from(f.value()));
                }
            }
            Some(match n.as_str() {
                "INT_MAX" | "INT32_MAX" => i128::from(i32::MAX),
                "INT_MIN" | "INT32_MIN" => i128::from(i32::MIN),
                "INT64_MAX" | "LLONG_MAX" | "LONG_MAX" => i128::from(i64::MAX),
                "INT64_MIN" | "LLONG_MIN" | "LONG_MIN" => i128::from(i64::MIN),
                "UINT32_MAX" | "UINT_MAX" => i128::from(u32::MAX),
                _ => return None,
            })
        }
        _ => None,
    }
}

fn to_int(v: &V) -> Conv<i64> {
    match int_value(v) {
        Some(n) => i64::try_from(n).map_err(|_| {
            (
                v.line,
                v.col,
                format!("{} is out of range for Int", show(v)),
            )
        }),
        None => fail(v, "an integer"),
    }
}

fn float_value(v: &V) -> Option<f64> {
    match &v.val {
        Val::Float(f) => Some(*f),
        Val::Int(n) => Some(*n as f64),
        Val::Neg(x) => float_value(x).map(|f| -f),
        Val::Name(n) => Some(match n.as_str() {
            "INFINITY" | "HUGE_VALF" | "HUGE_VAL" => f64::INFINITY,
            "NAN" => f64::NAN,
            "FLT_MAX" => f64::from(f32::MAX),
            "FLT_MIN" => f64::from(f32::MIN_POSITIVE),
            "FLT_EPSILON" => f64::from(f32::EPSILON),
            _ => return None,
        }),
        _ => None,
    }
}

fn to_float(v: &V) -> Conv<f32> {
    match float_value(v) {
        Some(f) => {
            let x = f as f32;
            if f.is_finite() && !x.is_finite() {
                return Err((
                    v.line,
                    v.col,
                    format!("{} is out of range for Float", show(v)),
                ));
            }
            Ok(x)
        }
        None => fail(v, "a number"),
    }
}

fn to_bool(v: &V) -> Conv<bool> {
    match &v.val {
        Val::Name(n) if n == "true" => Ok(true),
        Val::Name(n) if n == "false" => Ok(false),
        _ => fail(v, "true or false"),
    }
}

fn to_string(v: &V) -> Conv<String> {
    match &v.val {
        Val::Str(s) => Ok(s.clone()),
        Val::Call(n, args)
            if matches!(
                n.as_str(),
                "AscendString" | "string" | "std::string" | "OpString" | "OpAscendString"
            ) =>
        {
            match args.as_slice() {
                [] => Ok(String::new()),
                [a] => to_string(a),
                _ => fail(v, "a string literal"),
            }
        }
        _ => fail(v, "a string literal"),
    }
}

fn to_type(v: &V) -> Conv<DataType> {
    match &v.val {
        Val::Name(n) if n.starts_with("DT_") => DataType::from_name(n)
            .map_err(|_| (v.line, v.col, format!("names unknown data type '{n}'"))),
        Val::Int(n) => i64::try_from(*n)
            .ok()
            .and_then(|n| DataType::from_value(n).ok())
            .map_or_else(|| fail(v, "a data type (DT_...)"), Ok),
        _ => fail(v, "a data type (DT_...)"),
    }
}

fn to_list<'v, T>(v: &'v V, elem: &str, f: impl Fn(&'v V) -> Conv<T>) -> Conv<Vec<T>> {
    match &v.val {
        Val::List(items) => items.iter().map(f).collect(),
        _ => fail(v, &format!("a {{...}} list of {elem}")),
    }
}

fn empty_tensor() -> Conv<Tensor> {
    Tensor::from_values::<f32>(&[], vec![0]).map_err(|e| (0, 0, e.to_string()))
}

/// Converts a default-value expression to an attribute value of type `ty`. Errors name the
/// position of the offending (sub-)expression.
fn convert(ty: AttrType, v: &V) -> Conv<AttrValue> {
    Ok(match ty {
        AttrType::Int => AttrValue::Int(to_int(v)?),
        AttrType::Float => AttrValue::Float(to_float(v)?),
        AttrType::Bool => AttrValue::Bool(to_bool(v)?),
        AttrType::String => AttrValue::String(to_string(v)?),
        AttrType::Type => AttrValue::Type(to_type(v)?),
        AttrType::ListInt => AttrValue::ListInt(to_list(v, "integers", to_int)?),
        AttrType::ListFloat => AttrValue::ListFloat(to_list(v, "numbers", to_float)?),
        AttrType::ListBool => AttrValue::ListBool(to_list(v, "true/false", to_bool)?),
        AttrType::ListString => AttrValue::ListString(to_list(v, "string literals", to_string)?),
        AttrType::ListType => AttrValue::ListType(to_list(v, "data types (DT_...)", to_type)?),
        AttrType::ListListInt => AttrValue::ListListInt(to_list(
            v,
            "{...} integer lists (e.g. {{}, {1, 2}})",
            |row| to_list(row, "integers", to_int),
        )?),
        AttrType::Tensor => match &v.val {
            Val::Call(n, args)
                if args.is_empty() && matches!(n.as_str(), "Tensor" | "OpTensor") =>
            {
                AttrValue::Tensor(empty_tensor().map_err(|(_, _, m)| (v.line, v.col, m))?)
            }
            _ => return fail(v, "Tensor() (only an empty tensor default is supported)"),
        },
    })
}
