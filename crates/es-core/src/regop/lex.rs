//! The lexer of REG_OP text: tokens with their positions, and the comments between them.

use crate::error::Error;

pub(super) fn at(line: usize, col: usize, msg: impl std::fmt::Display) -> Error {
    Error::value(format!("line {line}, col {col}: {msg}"))
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Num(String),
    Str(String),
    Sym(String),
    /// A malformed token (unterminated string, ...): its message.
    Bad(String),
}

#[derive(Debug, Clone)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) line: usize,
    pub(super) col: usize,
    /// Char offsets of the token in the text.
    pub(super) start: usize,
    pub(super) end: usize,
}

#[derive(Debug, Clone)]
pub(super) struct Comment {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) start_line: usize,
    pub(super) end_line: usize,
    pub(super) text: String,
    /// Only whitespace precedes it on its first line.
    pub(super) own_line: bool,
    pub(super) line_comment: bool,
}

pub(super) struct Lexed {
    pub(super) toks: Vec<Token>,
    pub(super) comments: Vec<Comment>,
    pub(super) eof: (usize, usize),
    pub(super) unterminated_comment: Option<(usize, usize)>,
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

pub(super) fn lex(text: &str) -> Lexed {
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
