//! The import graph of a flat module directory (`daemon/src/lifecycle`, `host/src/..`): which
//! sibling modules each file names through `super::`, and the circles among them. Shared by
//! the crates whose layout tests include it with `#[path]`.
//!
//! It reads source text, not the compiler's resolution: a file's `#[cfg(test)]` module is
//! left out (its `super::` is the file itself), as are comments.

// Each binary uses a different subset.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// For each module of `dir` (the file stem; `mod.rs` is `mod`), the sibling modules it
/// imports.
pub fn graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("a module directory") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            let stem = path
                .file_stem()
                .expect("a file name")
                .to_string_lossy()
                .into_owned();
            files.insert(stem, std::fs::read_to_string(&path).expect("a source file"));
        }
    }
    let modules: BTreeSet<String> = files.keys().cloned().collect();
    files
        .iter()
        .map(|(name, text)| {
            let is_mod = name == "mod";
            let deps = named(&product_code(text), is_mod)
                .into_iter()
                // `super::Name` of something that is not a module is the parent's own item
                // (or one it re-exports): an import of `mod`.
                .map(|m| match modules.contains(&m) || is_mod {
                    true => m,
                    false => "mod".to_owned(),
                })
                .filter(|m| modules.contains(m) && m != name)
                .collect();
            (name.clone(), deps)
        })
        .collect()
}

/// The text before the file's test module, without comments.
fn product_code(text: &str) -> String {
    let end = text.find("#[cfg(test)]").unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The sibling modules a file names: `super::x`, `super::{x, y::z}`; in `mod.rs`, its
/// children are named `x::` (or `self::x`).
fn named(code: &str, is_mod: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let prefixes: &[&str] = if is_mod {
        &["self::", "use "]
    } else {
        &["super::"]
    };
    for prefix in prefixes {
        let mut rest = code;
        while let Some(i) = rest.find(prefix) {
            rest = &rest[i + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let end = matching_brace(group);
                for item in split_top(&group[..end]) {
                    out.insert(first_ident(item));
                }
            } else {
                out.insert(first_ident(rest));
            }
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn matching_brace(s: &str) -> usize {
    let mut depth = 1;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    s.len()
}

fn split_top(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn first_ident(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The circles of imports: each group of modules that import one another, directly or
/// through others (the strongly connected components of more than one module).
pub fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    // Tarjan's algorithm.
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                group.insert(w.to_owned());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                s.found.push(group);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}
