//! A prototype's `doc`: the first sentence of the comment right before its `REG_OP`.

use super::lex::{Comment, Lexed};

/// The first sentence of the comment right before token `idx` (only whitespace, other
/// comments and preprocessor lines between them); empty when there is none.
pub(super) fn doc_before(lexed: &Lexed, idx: usize) -> String {
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
