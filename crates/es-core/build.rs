//! Generates the typed Rust builder functions (`es_core::es`) from the operator library, so they
//! are always current with `ops/registry/<current>/operators.json` (`current` from ops/index.json).

use serde_json::Value;
use std::fmt::Write;
use std::path::PathBuf;

const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "box", "yield",
];

fn snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    ident(&out)
}

fn ident(s: &str) -> String {
    if KEYWORDS.contains(&s) {
        format!("{s}_")
    } else {
        s.to_string()
    }
}

fn rust_type(ty: &str) -> &'static str {
    match ty {
        "Int" => "i64",
        "Float" => "f32",
        "String" => "String",
        "Bool" => "bool",
        "Type" => "DataType",
        "ListInt" => "Vec<i64>",
        "ListFloat" => "Vec<f32>",
        "ListBool" => "Vec<bool>",
        "ListType" => "Vec<DataType>",
        "ListListInt" => "Vec<Vec<i64>>",
        "Tensor" => "Tensor",
        "ListString" => "Vec<String>",
        _ => "AttrValue",
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("manifest dir"));
    let index_path = manifest.join("../../ops/index.json");
    println!("cargo:rerun-if-changed={}", index_path.display());
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(&index_path).expect("ops/index.json"))
            .expect("index JSON");
    let current = index["current"].as_str().expect("current version");
    let lib = manifest.join(format!("../../ops/registry/{current}/operators.json"));
    println!("cargo:rerun-if-changed={}", lib.display());
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(&lib).expect("operator library");
    let doc: Value = serde_json::from_str(&text).expect("operator library JSON");
    let mut out = String::new();
    for op in doc["operators"].as_array().expect("operators") {
        gen_op(op, &mut out);
    }
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("out dir")).join("es_generated.rs");
    std::fs::write(dest, out).expect("write generated builders");
}

fn gen_op(op: &Value, out: &mut String) {
    let name = op["name"].as_str().expect("op name");
    let f = snake(name);
    let empty = Vec::new();
    let inputs = op["inputs"].as_array().unwrap_or(&empty);
    let outputs = op["outputs"].as_array().unwrap_or(&empty);
    let attrs = op["attrs"].as_array().unwrap_or(&empty);
    let subgraphs = op["subgraphs"].as_array().unwrap_or(&empty);
    let derived: Vec<&str> = op["derived_attrs"]
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let counted: Vec<&str> = op["output_counts"]
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let user_attrs: Vec<&Value> = attrs
        .iter()
        .filter(|a| !derived.contains(&a["name"].as_str().unwrap_or("")))
        .collect();
    let req: Vec<&Value> = user_attrs
        .iter()
        .copied()
        .filter(|a| a["required"].as_bool() == Some(true))
        .collect();
    let opt: Vec<&Value> = user_attrs
        .iter()
        .copied()
        .filter(|a| a["required"].as_bool() != Some(true))
        .collect();

    // Optional attributes: a struct of Options (None = the prototype's default).
    let attrs_ty = format!("{name}Attrs");
    if !opt.is_empty() {
        let _ = writeln!(
            out,
            "/// Optional attributes of [`{f}`]; `None` keeps the prototype's default."
        );
        let _ = writeln!(
            out,
            "#[derive(Debug, Clone, Default)]\npub struct {attrs_ty} {{"
        );
        for a in &opt {
            let an = a["name"].as_str().unwrap_or("");
            let _ = writeln!(out, "    /// default: `{}`", a["default"]);
            let _ = writeln!(
                out,
                "    pub {}: Option<{}>,",
                ident(an),
                rust_type(a["type"].as_str().unwrap_or(""))
            );
        }
        let _ = writeln!(out, "}}\n");
    }
    // Outputs.
    let multi = outputs.len() > 1;
    // No output (HcomSend): the node itself, for control edges (GE's handle on the node).
    let out_ty = if outputs.is_empty() {
        "NodeId".to_string()
    } else if multi {
        let t = format!("{name}Outputs");
        let _ = writeln!(
            out,
            "/// Outputs of [`{f}`].\n#[derive(Debug, Clone)]\npub struct {t} {{"
        );
        for o in outputs {
            let on = o["name"].as_str().unwrap_or("");
            let ty = if o["kind"] == "dynamic" {
                "Vec<OutPort>"
            } else {
                "OutPort"
            };
            let _ = writeln!(out, "    pub {}: {ty},", ident(on));
        }
        let _ = writeln!(out, "}}\n");
        t
    } else if outputs[0]["kind"] == "dynamic" {
        "Vec<OutPort>".to_string()
    } else {
        "OutPort".to_string()
    };
    // Signature.
    let mut params = vec!["builder: &mut GraphBuilder".to_string()];
    let mut input_exprs = Vec::new();
    for i in inputs {
        let p = ident(i["name"].as_str().unwrap_or(""));
        match i["kind"].as_str().unwrap_or("required") {
            "optional" => {
                params.push(format!("{p}: Option<OutPort>"));
                input_exprs.push(format!("vec![{p}]"));
            }
            "dynamic" => {
                params.push(format!("{p}: &[OutPort]"));
                input_exprs.push(format!("{p}.iter().map(|p| Some(*p)).collect()"));
            }
            _ => {
                params.push(format!("{p}: OutPort"));
                input_exprs.push(format!("vec![Some({p})]"));
            }
        }
    }
    let mut attr_stmts = Vec::new();
    for a in &req {
        let an = a["name"].as_str().unwrap_or("");
        let p = ident(an);
        params.push(format!(
            "{p}: {}",
            rust_type(a["type"].as_str().unwrap_or(""))
        ));
        attr_stmts.push(format!(
            "    args_.attrs.insert(\"{an}\".into(), AttrValue::from({p}));"
        ));
    }
    let mut sub_exprs = Vec::new();
    for s in subgraphs {
        let p = ident(s["name"].as_str().unwrap_or(""));
        if s["kind"] == "dynamic" {
            params.push(format!("{p}: Vec<Graph>"));
            sub_exprs.push(p);
        } else {
            params.push(format!("{p}: Graph"));
            sub_exprs.push(format!("vec![{p}]"));
        }
    }
    let mut count_stmts = Vec::new();
    for o in outputs {
        let on = o["name"].as_str().unwrap_or("");
        if o["kind"] == "dynamic" && !counted.contains(&on) {
            params.push(format!("{on}_num: usize"));
            count_stmts.push(format!(
                "    args_.output_counts.insert(\"{on}\".into(), {on}_num);"
            ));
        }
    }
    if !opt.is_empty() {
        params.push(format!("optional: {attrs_ty}"));
        for a in &opt {
            let an = a["name"].as_str().unwrap_or("");
            attr_stmts.push(format!(
                "    if let Some(v) = optional.{} {{ args_.attrs.insert(\"{an}\".into(), AttrValue::from(v)); }}",
                ident(an)
            ));
        }
    }
    let doc = op["doc"].as_str().unwrap_or("").replace('\n', " ");
    let _ = writeln!(out, "/// `{name}`: {doc}");
    let _ = writeln!(out, "#[allow(clippy::too_many_arguments, unused_mut)]");
    let _ = writeln!(
        out,
        "pub fn {f}({}) -> Result<{out_ty}> {{",
        params.join(", ")
    );
    let _ = writeln!(
        out,
        "    let mut args_ = OpArgs {{ inputs: vec![{}], ..Default::default() }};",
        input_exprs.join(", ")
    );
    for s in &attr_stmts {
        let _ = writeln!(out, "{s}");
    }
    if !sub_exprs.is_empty() {
        let _ = writeln!(out, "    args_.subgraphs = vec![{}];", sub_exprs.join(", "));
    }
    for s in &count_stmts {
        let _ = writeln!(out, "{s}");
    }
    let _ = writeln!(out, "    let node_ = builder.add_op(\"{name}\", args_)?;");
    // What the function returns: the struct of the output ports, or the one port.
    let ret = if outputs.is_empty() {
        "node_".to_string()
    } else if multi {
        let _ = writeln!(out, "    let ports_ = ports_by_ir(builder, node_)?;");
        let mut fields = String::new();
        for (k, o) in outputs.iter().enumerate() {
            let on = ident(o["name"].as_str().unwrap_or(""));
            let port = match o["kind"] == "dynamic" {
                true => format!("ports_.get({k}).cloned().unwrap_or_default()"),
                false => format!("first(&ports_, {k}, node_)?"),
            };
            let _ = writeln!(fields, "        {on}: {port},");
        }
        format!("{out_ty} {{\n{fields}    }}")
    } else if outputs[0]["kind"] == "dynamic" {
        "ports_by_ir(builder, node_)?.into_iter().next().unwrap_or_default()".to_string()
    } else {
        "OutPort { node: node_, index: 0 }".to_string()
    };
    let _ = writeln!(out, "    Ok({ret})");
    let _ = writeln!(out, "}}\n");
}
