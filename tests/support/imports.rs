//! The import graph of a crate's modules, read from its source, and the circles in it:
//! shared by the tests that keep a crate's modules stacked as floors (placed-host's
//! `layers` test; daemon/src/lifecycle can use it the same way).
//!
//! The rule checked: at every level of the module tree, the children of one module (each
//! with everything below it) import each other without a circle, so that they stack as
//! floors. A module may use its own descendants and its ancestors' own items; those are
//! containment, not floors. Code under `#[cfg(test)]` is left out: a test may use the whole
//! crate.
//!
//! What counts as an import: a `use` of a path that starts with `crate`, `super` or `self`
//! (or with a child module, or with a name such a `use` brought in), and any such path
//! written in code or in a macro's arguments. A path is followed through the `use`s of the
//! modules it passes (re-exports) to the module that defines its item. Comments, strings and
//! doc links do not count. A glob (`use super::*`) counts as an import of its module only.
//!
//! It reads Rust as tokens, not as a parser would: items under `#[cfg(test)]` are skipped
//! to the end of the item (`;` or their closing brace), which is what the crates here write.

// Each crate's test uses a different subset.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// A module's path from the crate root, `[]` for the root.
type ModPath = Vec<String>;

/// A crate's modules and the imports between them.
#[derive(Debug)]
pub struct Crate {
    modules: Vec<Module>,
    /// Files of modules left out as test code (`#[cfg(test)] mod tests;`): part of the
    /// crate, though not of its import graph.
    skipped: Vec<PathBuf>,
}

#[derive(Debug)]
struct Module {
    path: ModPath,
    file: PathBuf,
    children: BTreeMap<String, usize>,
    /// Names brought in by `use`, to the path they stand for as written.
    bindings: BTreeMap<String, Vec<String>>,
    /// Paths written in the module (in `use`s and in code), as written, with their line.
    refs: Vec<(Vec<String>, usize)>,
}

/// Modules of one level that import each other in a circle, and where each import is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// The module whose children these are (`crate` for the root).
    pub level: String,
    /// The circle, first module repeated at the end.
    pub modules: Vec<String>,
    /// One import per step of the circle: `file:line: path`.
    pub evidence: Vec<String>,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "in {}: {} ({})",
            self.level,
            self.modules.join(" -> "),
            self.evidence.join("; ")
        )
    }
}

/// An import from one floor to another: `from` and `to` are children of one module.
#[derive(Debug, Clone)]
struct Edge {
    level: ModPath,
    from: String,
    to: String,
    evidence: String,
}

impl Crate {
    /// Reads the crate whose root file is `root` (`src/lib.rs`, `src/main.rs`) and every
    /// module file it declares.
    pub fn read(root: &Path) -> Result<Self, String> {
        let mut krate = Self {
            modules: Vec::new(),
            skipped: Vec::new(),
        };
        krate.read_file(root, Vec::new(), None)?;
        Ok(krate)
    }

    /// Every circle, at every level.
    pub fn cycles(&self) -> Vec<Cycle> {
        self.cycles_where(|_| true)
    }

    /// The circles among the modules below `module` (`"lifecycle"`, `"observe::pattern"`),
    /// at every level from its children down.
    pub fn cycles_below(&self, module: &str) -> Vec<Cycle> {
        let at = split(module);
        self.cycles_where(|level| level.starts_with(&at))
    }

    /// The modules outside `module` that code inside it imports, named at the level where
    /// they are its floor's neighbours (`cgroup`, `observe::noise`, ...). Empty for a ground
    /// floor.
    pub fn imports_of(&self, module: &str) -> BTreeSet<String> {
        let at = split(module);
        let mut out = BTreeSet::new();
        for (from, to, _) in self.resolved() {
            let (from, to) = (&self.modules[from].path, &self.modules[to].path);
            if from.starts_with(&at) && !to.starts_with(&at) && !at.starts_with(to) {
                let common = common_len(&at, to);
                out.insert(to[..=common].join("::"));
            }
        }
        out
    }

    /// How many modules were read (a check that the reader found the crate).
    pub fn module_count(&self) -> usize {
        self.modules.len()
    }

    /// The `.rs` files below the root file's folder that are no module of the crate: with
    /// `autotests = false`, cargo silently leaves such a file out of every test binary.
    pub fn stray_files(&self) -> Vec<PathBuf> {
        let Some(dir) = self.modules.first().and_then(|m| m.file.parent()) else {
            return Vec::new();
        };
        let read: BTreeSet<PathBuf> = self
            .modules
            .iter()
            .filter_map(|m| m.file.canonicalize().ok())
            .chain(self.skipped.iter().filter_map(|f| f.canonicalize().ok()))
            .collect();
        let mut stray = Vec::new();
        let mut dirs = vec![dir.to_owned()];
        while let Some(d) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.canonicalize().is_ok_and(|p| read.contains(&p))
                {
                    stray.push(path);
                }
            }
        }
        stray.sort();
        stray
    }

    fn cycles_where(&self, keep: impl Fn(&ModPath) -> bool) -> Vec<Cycle> {
        let mut levels: BTreeMap<ModPath, Vec<Edge>> = BTreeMap::new();
        for edge in self.edges() {
            if keep(&edge.level) {
                levels.entry(edge.level.clone()).or_default().push(edge);
            }
        }
        levels
            .into_iter()
            .flat_map(|(level, edges)| circles(&level, &edges))
            .collect()
    }

    /// Every import as (from module, to module, evidence), `to` the module that defines
    /// what the path names.
    fn resolved(&self) -> Vec<(usize, usize, String)> {
        let mut out = Vec::new();
        for (i, m) in self.modules.iter().enumerate() {
            for (segments, line) in &m.refs {
                let Some(path) = self.absolute(i, segments, 0) else {
                    continue;
                };
                let to = self.resolve(&path);
                let evidence = format!("{}:{line}: {}", m.file.display(), segments.join("::"));
                out.push((i, to, evidence));
            }
        }
        out
    }

    /// `segments`, written in `module`, as a path from the crate root; `None` for a path
    /// that leaves the crate (`std::..`, another crate, a local name).
    fn absolute(&self, module: usize, segments: &[String], hops: usize) -> Option<ModPath> {
        let m = &self.modules[module];
        let first = segments.first()?;
        match first.as_str() {
            "crate" => Some(segments[1..].to_vec()),
            "super" | "self" => {
                let mut base = m.path.clone();
                let mut rest = segments;
                while let Some(s) = rest.first() {
                    match s.as_str() {
                        "super" => {
                            base.pop()?;
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
                Some(base.into_iter().chain(rest.iter().cloned()).collect())
            }
            name if m.children.contains_key(name) => {
                Some(m.path.iter().chain(segments).cloned().collect())
            }
            // A name a `use` brought in; a `use` of a `use`d name is followed a few times
            // at most (rustc refuses circles of them).
            name if hops < 16 => {
                let bound = m.bindings.get(name)?;
                let base = self.absolute(module, bound, hops + 1)?;
                Some(
                    base.into_iter()
                        .chain(segments[1..].iter().cloned())
                        .collect(),
                )
            }
            _ => None,
        }
    }

    /// The module that defines what `path` names, following `use`s on the way.
    fn resolve(&self, path: &[String]) -> usize {
        let mut path: Vec<String> = path.to_vec();
        let mut cur = 0;
        let mut i = 0;
        // Each hop through a binding restarts from the root; a crate has few, and a circle
        // of re-exports (which rustc refuses anyway) must not loop.
        let mut hops = 0;
        while i < path.len() {
            let m = &self.modules[cur];
            if let Some(&child) = m.children.get(&path[i]) {
                cur = child;
                i += 1;
            } else if let Some(bound) = m.bindings.get(&path[i]).filter(|_| hops < 64) {
                hops += 1;
                let Some(base) = self.absolute(cur, bound, 0) else {
                    break;
                };
                path = base
                    .into_iter()
                    .chain(path[i + 1..].iter().cloned())
                    .collect();
                cur = 0;
                i = 0;
            } else {
                break;
            }
        }
        cur
    }

    /// Imports between floors: each import whose two ends are neither the same module nor
    /// one inside the other, as an edge between the children of their deepest common module.
    fn edges(&self) -> Vec<Edge> {
        let mut out = Vec::new();
        for (from, to, evidence) in self.resolved() {
            let (a, b) = (&self.modules[from].path, &self.modules[to].path);
            if a.starts_with(b) || b.starts_with(a) {
                continue;
            }
            let common = common_len(a, b);
            out.push(Edge {
                level: a[..common].to_vec(),
                from: a[common].clone(),
                to: b[common].clone(),
                evidence,
            });
        }
        out
    }

    fn read_file(
        &mut self,
        file: &Path,
        path: ModPath,
        parent: Option<usize>,
    ) -> Result<usize, String> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let tokens = tokenize(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let index = self.add(path, file.to_owned(), parent);
        // Files that hold their children's files beside them: `lib.rs`, `main.rs`, `mod.rs`;
        // any other `foo.rs` holds them in `foo/`.
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("lib.rs" | "main.rs" | "mod.rs") => file.parent().map(Path::to_owned),
            _ => file.with_extension("").into(),
        }
        .unwrap_or_default();
        let base = file.parent().map(Path::to_owned).unwrap_or_default();
        self.read_items(&tokens, index, &dir, &base)?;
        Ok(index)
    }

    fn add(&mut self, path: ModPath, file: PathBuf, parent: Option<usize>) -> usize {
        let index = self.modules.len();
        if let (Some(p), Some(name)) = (parent, path.last()) {
            self.modules[p].children.insert(name.clone(), index);
        }
        self.modules.push(Module {
            path,
            file,
            children: BTreeMap::new(),
            bindings: BTreeMap::new(),
            refs: Vec::new(),
        });
        index
    }

    /// The items of one module body: child modules (files or inline), `use`s, and the paths
    /// written in everything else.
    fn read_items(
        &mut self,
        tokens: &[Token],
        module: usize,
        dir: &Path,
        base: &Path,
    ) -> Result<(), String> {
        let mut i = 0;
        let mut attrs = Attrs::default();
        while i < tokens.len() {
            let t = &tokens[i];
            if t.is("#") {
                let inner = tokens.get(i + 1).is_some_and(|t| t.is("!"));
                let open = i + 1 + usize::from(inner);
                let close = matching(tokens, open)?;
                let attr = Attrs::of(&tokens[open + 1..close]);
                if inner && attr.test {
                    // `#![cfg(test)]`: the whole module is test code.
                    return Ok(());
                }
                attrs.merge(attr);
                i = close + 1;
                continue;
            }
            if attrs.test {
                if let Some((name, after)) = mod_decl(tokens, i).filter(|(_, a)| tokens[*a].is(";"))
                {
                    let file = match &attrs.path {
                        Some(p) => Ok(base.join(p)),
                        None => child_file(dir, &name),
                    };
                    self.skipped.extend(file);
                    i = after + 1;
                } else {
                    i = item_end(tokens, i)?;
                }
                attrs = Attrs::default();
                continue;
            }
            if let Some((name, after)) = mod_decl(tokens, i) {
                let mut path = self.modules[module].path.clone();
                path.push(name.clone());
                if tokens[after].is(";") {
                    let file = match &attrs.path {
                        Some(p) => base.join(p),
                        None => child_file(dir, &name)?,
                    };
                    self.read_file(&file, path, Some(module))?;
                    i = after + 1;
                } else {
                    let close = matching(tokens, after)?;
                    let child = self.add(path, self.modules[module].file.clone(), Some(module));
                    let child_dir = match &attrs.path {
                        Some(p) => dir.join(p),
                        None => dir.join(&name),
                    };
                    self.read_items(&tokens[after + 1..close], child, &child_dir, &child_dir)?;
                    i = close + 1;
                }
                attrs = Attrs::default();
                continue;
            }
            if t.is("use") {
                let end = find(tokens, i, ";")?;
                self.read_use(&tokens[i + 1..end], module);
                i = end + 1;
                attrs = Attrs::default();
                continue;
            }
            if let Some(end) = self.read_path(tokens, i, module) {
                i = end;
                continue;
            }
            if t.is(";") || t.is("}") {
                attrs = Attrs::default();
            }
            i += 1;
        }
        Ok(())
    }

    /// A `use` tree (the tokens between `use` and `;`): each leaf is a reference, each
    /// named leaf a binding.
    fn read_use(&mut self, tokens: &[Token], module: usize) {
        let line = tokens.first().map_or(0, |t| t.line);
        let mut leaves = Vec::new();
        use_tree(tokens, &mut Vec::new(), &mut leaves);
        let m = &mut self.modules[module];
        for (segments, binding) in leaves {
            if let Some(name) = binding {
                m.bindings.insert(name, segments.clone());
            }
            m.refs.push((segments, line));
        }
    }

    /// A path written in code at `tokens[i]` (`crate::a::b`, `super::x`, `child::y`,
    /// `bound::z`, `std::w`): records it and returns where it ends. Which of them stay in
    /// the crate is known once every `use` is read.
    fn read_path(&mut self, tokens: &[Token], i: usize, module: usize) -> Option<usize> {
        let t = &tokens[i];
        if !t.ident || !tokens.get(i + 1).is_some_and(|n| n.is("::")) {
            return None;
        }
        // A path's first segment only: `a::b::c` is read once, from `a`.
        if i > 0 && tokens[i - 1].is("::") {
            return None;
        }
        let mut segments = vec![t.text.clone()];
        let mut j = i + 1;
        while j + 1 < tokens.len() && tokens[j].is("::") && tokens[j + 1].ident {
            segments.push(tokens[j + 1].text.clone());
            j += 2;
        }
        self.modules[module].refs.push((segments, t.line));
        Some(j)
    }
}

/// Fails unless every `.rs` file below `<manifest_dir>/tests` is a module of the test
/// binary whose root is `tests/main.rs` (see [`Crate::stray_files`]).
pub fn assert_one_binary(manifest_dir: &str) {
    let main = Path::new(manifest_dir).join("tests/main.rs");
    let krate = Crate::read(&main).unwrap_or_else(|e| panic!("{e}"));
    let stray = krate.stray_files();
    assert!(
        stray.is_empty(),
        "not a module of {}, so never compiled: {stray:?}; declare each with `mod` there",
        main.display()
    );
}

/// The circles among the children of `level`, one per strongly connected group, each
/// shown as one concrete circle through its members.
fn circles(level: &ModPath, edges: &[Edge]) -> Vec<Cycle> {
    let mut graph: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    for e in edges {
        graph
            .entry(&e.from)
            .or_default()
            .entry(&e.to)
            .or_insert(&e.evidence);
        graph.entry(&e.to).or_default();
    }
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for &start in graph.keys() {
        if seen.contains(start) {
            continue;
        }
        // The shortest way back to `start`, by breadth-first search.
        let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut back = None;
        while let Some(n) = queue.pop_front() {
            for &m in graph[n].keys() {
                if m == start {
                    back = Some(n);
                    break;
                }
                if !prev.contains_key(m) {
                    prev.insert(m, n);
                    queue.push_back(m);
                }
            }
            if back.is_some() {
                break;
            }
        }
        let Some(mut n) = back else { continue };
        let mut path = vec![start, n];
        while n != start {
            n = prev[n];
            path.push(n);
        }
        path.reverse();
        seen.extend(path.iter().copied());
        let evidence = path
            .windows(2)
            .map(|w| graph[w[0]][w[1]].to_owned())
            .collect();
        out.push(Cycle {
            level: if level.is_empty() {
                "crate".into()
            } else {
                level.join("::")
            },
            modules: path.iter().map(|s| (*s).to_owned()).collect(),
            evidence,
        });
    }
    out
}

fn split(module: &str) -> ModPath {
    module
        .split("::")
        .filter(|s| !s.is_empty() && *s != "crate")
        .map(str::to_owned)
        .collect()
}

fn common_len(a: &[String], b: &[String]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn child_file(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let flat = dir.join(format!("{name}.rs"));
    let nested = dir.join(name).join("mod.rs");
    [flat, nested]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| format!("no file for module {name} in {}", dir.display()))
}

/// What the attributes before an item say.
#[derive(Debug, Default)]
struct Attrs {
    /// `#[cfg(test)]` (or `cfg(all(test, ...))`): the item is test code.
    test: bool,
    /// `#[path = "..."]`.
    path: Option<String>,
}

impl Attrs {
    fn of(tokens: &[Token]) -> Self {
        let text: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
        let test = matches!(text.as_slice(), ["cfg", "(", "test", ")"])
            || matches!(text.as_slice(), ["cfg", "(", "all", "(", "test", ..]);
        let path = match text.as_slice() {
            ["path", "=", lit] => Some(lit.trim_matches('"').to_owned()),
            _ => None,
        };
        Self { test, path }
    }

    fn merge(&mut self, other: Self) {
        self.test |= other.test;
        if other.path.is_some() {
            self.path = other.path;
        }
    }
}

/// `mod name ;` or `mod name {` at `i` (after any visibility): the name and the index of
/// the `;` or `{`.
fn mod_decl(tokens: &[Token], i: usize) -> Option<(String, usize)> {
    let mut j = i;
    if tokens[j].is("pub") {
        j += 1;
        if tokens.get(j).is_some_and(|t| t.is("(")) {
            j = matching(tokens, j).ok()? + 1;
        }
    }
    if !tokens.get(j)?.is("mod") {
        return None;
    }
    let name = tokens.get(j + 1).filter(|t| t.ident)?;
    let after = tokens.get(j + 2)?;
    (after.is(";") || after.is("{")).then(|| (name.text.clone(), j + 2))
}

/// The index after the item that starts at `i`: after its `;`, or after its closing brace,
/// or at the closing bracket of what encloses it.
fn item_end(tokens: &[Token], i: usize) -> Result<usize, String> {
    let semicolon_only = tokens[i..]
        .iter()
        .take(3)
        .any(|t| t.is("use") || t.is("const") || t.is("static") || t.is("type"));
    let mut depth = 0usize;
    let mut j = i;
    while j < tokens.len() {
        let t = &tokens[j];
        if t.is("{") || t.is("(") || t.is("[") {
            depth += 1;
        } else if t.is("}") || t.is(")") || t.is("]") {
            if depth == 0 {
                return Ok(j);
            }
            depth -= 1;
            if depth == 0 && t.is("}") && !semicolon_only {
                // `struct S { .. }` and `fn f() { .. }` end here; `S { .. };` does not.
                let next_is_semicolon = tokens.get(j + 1).is_some_and(|n| n.is(";"));
                return Ok(j + 1 + usize::from(next_is_semicolon));
            }
        } else if t.is(";") && depth == 0 {
            return Ok(j + 1);
        }
        j += 1;
    }
    Err(format!("item at line {} has no end", tokens[i].line))
}

/// The index of the bracket that closes the one at `open`.
fn matching(tokens: &[Token], open: usize) -> Result<usize, String> {
    let mut depth = 0usize;
    for (j, t) in tokens.iter().enumerate().skip(open) {
        if t.is("{") || t.is("(") || t.is("[") {
            depth += 1;
        } else if t.is("}") || t.is(")") || t.is("]") {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return Ok(j);
            }
        }
    }
    let line = tokens.get(open).map_or(0, |t| t.line);
    Err(format!("unclosed bracket at line {line}"))
}

fn find(tokens: &[Token], from: usize, text: &str) -> Result<usize, String> {
    tokens[from..]
        .iter()
        .position(|t| t.is(text))
        .map(|p| from + p)
        .ok_or_else(|| format!("no {text:?} after line {}", tokens[from].line))
}

/// The leaves of a `use` tree: each path, and the name it binds (`None` for a glob or
/// `as _`).
fn use_tree(
    tokens: &[Token],
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut i = 0;
    if tokens.first().is_some_and(|t| t.is("::")) {
        i = 1;
    }
    let depth = prefix.len();
    while i < tokens.len() {
        let t = &tokens[i];
        if t.is("{") {
            let close = matching(tokens, i).unwrap_or(tokens.len() - 1);
            for part in split_commas(&tokens[i + 1..close]) {
                use_tree(part, prefix, out);
            }
            break;
        } else if t.is("*") {
            out.push((prefix.clone(), None));
            break;
        } else if t.is("self") && i + 1 == tokens.len() {
            // `use a::{self}` binds `a`.
            out.push((prefix.clone(), prefix.last().cloned()));
            break;
        } else if t.ident {
            prefix.push(t.text.clone());
            match tokens.get(i + 1) {
                Some(n) if n.is("::") => i += 2,
                Some(n) if n.is("as") => {
                    let alias = tokens.get(i + 2).map(|a| a.text.clone());
                    out.push((prefix.clone(), alias.filter(|a| a != "_")));
                    break;
                }
                _ => {
                    out.push((prefix.clone(), Some(t.text.clone())));
                    break;
                }
            }
        } else {
            break;
        }
    }
    prefix.truncate(depth);
}

fn split_commas(tokens: &[Token]) -> Vec<&[Token]> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, t) in tokens.iter().enumerate() {
        if t.is("{") {
            depth += 1;
        } else if t.is("}") {
            depth = depth.saturating_sub(1);
        } else if t.is(",") && depth == 0 {
            parts.push(&tokens[start..i]);
            start = i + 1;
        }
    }
    if start < tokens.len() {
        parts.push(&tokens[start..]);
    }
    parts
}

#[derive(Debug, Clone)]
struct Token {
    text: String,
    ident: bool,
    line: usize,
}

impl Token {
    fn is(&self, s: &str) -> bool {
        self.text == s
    }
}

/// Rust source as identifiers, `::` and single punctuation characters; comments, string
/// and character literals and lifetimes are dropped (a string is kept only right after
/// `path =`, where an attribute names a file).
fn tokenize(src: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut out: Vec<Token> = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let push = |out: &mut Vec<Token>, text: String, ident: bool, line: usize| {
        out.push(Token { text, ident, line });
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if let Some(len) = raw_string_start(&chars, i) {
            // r"..", r#".."#, br#".."#: ends at a quote followed by as many hashes.
            let hashes = len - 1 - usize::from(chars[i] == 'b') - 1;
            let start_line = line;
            let mut j = i + len;
            loop {
                let Some(&ch) = chars.get(j) else {
                    return Err(format!("unterminated raw string at line {start_line}"));
                };
                if ch == '\n' {
                    line += 1;
                }
                if ch == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
        } else if c == '"' || (c == 'b' && next == Some('"')) {
            let start_line = line;
            let mut j = i + if c == 'b' { 2 } else { 1 };
            let mut text = String::new();
            loop {
                let Some(&ch) = chars.get(j) else {
                    return Err(format!("unterminated string at line {start_line}"));
                };
                match ch {
                    '\\' => {
                        if chars.get(j + 1) == Some(&'\n') {
                            line += 1;
                        }
                        j += 2;
                    }
                    '"' => {
                        j += 1;
                        break;
                    }
                    _ => {
                        if ch == '\n' {
                            line += 1;
                        }
                        text.push(ch);
                        j += 1;
                    }
                }
            }
            let after_path =
                out.len() >= 2 && out[out.len() - 1].is("=") && out[out.len() - 2].is("path");
            if after_path {
                push(&mut out, format!("\"{text}\""), false, start_line);
            }
            i = j;
        } else if c == '\'' {
            // A character literal ('a', '\n', '\u{..}', b'x' is handled by the ident
            // branch's `b` then here) or a lifetime ('a, 'static).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                let mut j = i + 1;
                while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                i = j;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let mut j = i;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            // A raw identifier (r#type) is the identifier.
            let ident = !c.is_ascii_digit();
            if word == "b" && chars.get(j) == Some(&'\'') {
                // b'x': the byte literal's quote follows; skip the prefix.
                i = j;
                continue;
            }
            push(&mut out, word, ident, line);
            i = j;
        } else if c == ':' && next == Some(':') {
            push(&mut out, "::".into(), false, line);
            i += 2;
        } else {
            push(&mut out, c.to_string(), false, line);
            i += 1;
        }
    }
    Ok(out)
}

/// At `i`, the length of a raw string's opening (`r"`, `r#"`, `br##"`, ...), if one
/// starts there.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    // Not the end of an identifier such as `br` in `for`.
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    j += 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    (chars.get(j) == Some(&'"')).then_some(j + 1 - i)
}
