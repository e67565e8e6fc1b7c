//! Einsum equations: `"ij,jk->ik"`, `"...ij,...jk"`. Whitespace is ignored; each term is ASCII
//! letters with at most one `...`; without `->` the output is numpy's implicit one: the
//! ellipsis dims (when a term has them), then the labels that appear exactly once, sorted.

/// One term: the labels before and after an optional `...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EinsumTerm {
    pub pre: Vec<char>,
    pub post: Vec<char>,
    pub ellipsis: bool,
}

impl EinsumTerm {
    /// The term's labels in order, without the ellipsis.
    pub fn letters(&self) -> impl Iterator<Item = char> + '_ {
        self.pre.iter().chain(&self.post).copied()
    }

    /// Parses one term; `Err` gives the bad term.
    pub fn parse(t: &str) -> Result<EinsumTerm, String> {
        let (pre, post, ellipsis) = match t.find("...") {
            Some(p) => (&t[..p], &t[p + 3..], true),
            None => (t, "", false),
        };
        let ok = |s: &str| s.chars().all(|c| c.is_ascii_alphabetic());
        if !ok(pre) || !ok(post) {
            return Err(t.to_string());
        }
        Ok(EinsumTerm {
            pre: pre.chars().collect(),
            post: post.chars().collect(),
            ellipsis,
        })
    }
}

/// A parsed equation. `output` is the explicit output term, `None` when the equation has no
/// `->` (see [`Einsum::output_term`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Einsum {
    /// The equation without whitespace.
    pub text: String,
    pub inputs: Vec<EinsumTerm>,
    pub output: Option<EinsumTerm>,
}

/// Parses `eq`; an error names the invalid term.
pub fn parse_einsum(eq: &str) -> Result<Einsum, String> {
    let text: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match text.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (text.as_str(), None),
    };
    let inputs = lhs
        .split(',')
        .map(EinsumTerm::parse)
        .collect::<Result<Vec<_>, _>>()?;
    let output = rhs.map(EinsumTerm::parse).transpose()?;
    Ok(Einsum {
        inputs,
        output,
        text,
    })
}

impl Einsum {
    /// How many times each label appears in the inputs, in label order.
    pub fn counts(&self) -> Vec<(char, usize)> {
        let mut counts: Vec<(char, usize)> = Vec::new();
        for c in self.inputs.iter().flat_map(EinsumTerm::letters) {
            match counts.iter_mut().find(|(l, _)| *l == c) {
                Some(e) => e.1 += 1,
                None => counts.push((c, 1)),
            }
        }
        counts.sort_unstable();
        counts
    }

    /// Whether any input term has an ellipsis.
    pub fn any_ellipsis(&self) -> bool {
        self.inputs.iter().any(|t| t.ellipsis)
    }

    /// The output term: the explicit one, else numpy's implicit one.
    pub fn output_term(&self) -> EinsumTerm {
        match &self.output {
            Some(t) => t.clone(),
            None => EinsumTerm {
                pre: Vec::new(),
                post: self
                    .counts()
                    .into_iter()
                    .filter(|e| e.1 == 1)
                    .map(|e| e.0)
                    .collect(),
                ellipsis: self.any_ellipsis(),
            },
        }
    }

    /// Checks the explicit output: each label appears in some input, and once. `Err` says
    /// which label breaks which rule.
    pub fn check_output(&self) -> Result<(), String> {
        let Some(out) = &self.output else {
            return Ok(());
        };
        let counts = self.counts();
        let mut seen: Vec<char> = Vec::new();
        for c in out.letters() {
            if !counts.iter().any(|e| e.0 == c) {
                return Err(format!("output label '{c}' appears in no operand"));
            }
            if seen.contains(&c) {
                return Err(format!("output label '{c}' repeats"));
            }
            seen.push(c);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(pre: &str, post: &str, ellipsis: bool) -> EinsumTerm {
        EinsumTerm {
            pre: pre.chars().collect(),
            post: post.chars().collect(),
            ellipsis,
        }
    }

    #[test]
    fn parses_terms_and_outputs() {
        let e = parse_einsum(" ij , jk -> ik").unwrap();
        assert_eq!(e.text, "ij,jk->ik");
        assert_eq!(e.inputs, vec![term("ij", "", false), term("jk", "", false)]);
        assert_eq!(e.output_term(), term("ik", "", false));
        let e = parse_einsum("b...i,b...j").unwrap();
        assert_eq!(e.inputs[0], term("b", "i", true));
        // Implicit output: ellipsis, then the labels seen once, sorted.
        assert_eq!(e.output_term(), term("", "ij", true));
        assert_eq!(
            parse_einsum("ba,ac").unwrap().output_term(),
            term("", "bc", false)
        );
        assert_eq!(
            parse_einsum("Ab,b").unwrap().output_term(),
            term("", "A", false)
        );
        assert_eq!(parse_einsum("ii").unwrap().counts(), vec![('i', 2)]);
    }

    #[test]
    fn invalid_equations() {
        assert_eq!(parse_einsum("i1,j"), Err("i1".to_string()));
        assert_eq!(parse_einsum("a...b...c"), Err("a...b...c".to_string()));
        assert_eq!(parse_einsum("ij->i.j"), Err("i.j".to_string()));
        let e = parse_einsum("ij->k").unwrap();
        assert_eq!(
            e.check_output(),
            Err("output label 'k' appears in no operand".into())
        );
        let e = parse_einsum("ij->ii").unwrap();
        assert_eq!(e.check_output(), Err("output label 'i' repeats".into()));
        assert_eq!(parse_einsum("ij->ji").unwrap().check_output(), Ok(()));
    }
}
