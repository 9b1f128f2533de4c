//! The house rules that keep the code readable, checked over every crate of the workspace:
//! no product source file longer than 600 lines and no product function longer than 100
//! (docs/design.md, "House rules"). Product code is everything under a crate's `src/`
//! except `#[cfg(test)]` modules: a file's own test module (from its `#[cfg(test)]` line
//! on) and files that a `#[cfg(test)] mod name;` declares.
//!
//! The reader works on tokens, not a parse tree: strings, characters and comments are
//! blanked first, so that braces in them do not count, and a function runs from its `fn`
//! line to the brace that closes its body.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 100;

/// The workspace's crates' `src` directories.
fn source_roots() -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core sits in the workspace")
        .to_owned();
    let mut roots = Vec::new();
    for entry in std::fs::read_dir(&workspace).expect("read the workspace") {
        let src = entry.expect("a directory entry").path().join("src");
        if src.join("lib.rs").exists() || src.join("main.rs").exists() {
            roots.push(src);
        }
    }
    roots.sort();
    roots
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text with string, character and comment contents replaced by spaces (line breaks
/// kept), so that only code's braces remain.
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let keep = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend([b' ', b' ']);
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend([b' ', b' ']);
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep(b[i]));
                    i += 1;
                }
            }
        } else if c == b'r' && matches!(b.get(i + 1), Some(b'"' | b'#')) && !ident_before(b, i) {
            // A raw string: r"..." or r#"..."#, closed by the same number of hashes.
            let mut j = i + 1;
            while b.get(j) == Some(&b'#') {
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            out.extend(std::iter::repeat_n(b' ', j - i + 1));
            i = j + 1;
            while i < b.len() {
                if b[i] == b'"'
                    && b[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == b'#')
                        .count()
                        == hashes
                {
                    out.extend(std::iter::repeat_n(b' ', hashes + 1));
                    i += hashes + 1;
                    break;
                }
                out.push(keep(b[i]));
                i += 1;
            }
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(keep(b[i]));
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' && is_char_literal(b, i) {
            // '{', '\'', '\u{7b}': up to the closing quote.
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                out.push(b' ');
                i += 1;
            }
            out.push(b' ');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the byte before `i` ends an identifier (so an `r` there is not a raw string's),
/// the `b` of a raw byte string `br"..."` excepted.
fn ident_before(b: &[u8], i: usize) -> bool {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    match i {
        0 => false,
        1 => ident(b[0]) && b[0] != b'b',
        // `br"`: a `b` that starts its own word.
        _ => ident(b[i - 1]) && (b[i - 1] != b'b' || ident(b[i - 2])),
    }
}

/// A quote that opens a character literal, not a lifetime (`'a`, `'static`).
fn is_char_literal(b: &[u8], i: usize) -> bool {
    match (b.get(i + 1), b.get(i + 2)) {
        (Some(b'\\'), _) => true,
        (Some(_), Some(b'\'')) => true,
        // A multi-byte character: its closing quote comes within four bytes.
        (Some(&c), _) if c >= 0x80 => b[i + 1..].iter().take(5).any(|&q| q == b'\''),
        _ => false,
    }
}

/// The lines before the file's own `#[cfg(test)]` module.
fn product_lines(text: &str) -> Vec<&str> {
    text.lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .collect()
}

/// Files a `#[cfg(test)] mod name;` declares: test code wherever they are.
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("read a source file");
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().expect("a parent").to_owned(),
            _ => file.with_extension(""),
        };
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for pair in lines.windows(2) {
            if pair[0] != "#[cfg(test)]" {
                continue;
            }
            let declared = pair[1]
                .trim_start_matches("pub ")
                .trim_start_matches("pub(crate) ")
                .strip_prefix("mod ")
                .and_then(|r| r.strip_suffix(';'));
            if let Some(name) = declared {
                out.insert(dir.join(format!("{name}.rs")));
                out.insert(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// Each function in `lines` (already blanked) longer than the limit: (first line, name,
/// length in lines).
fn long_functions(lines: &[&str]) -> Vec<(usize, String, usize)> {
    let mut out = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let mut depth = 0i64;
        let mut opened = false;
        for (end, l) in lines.iter().enumerate().skip(start) {
            for c in l.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    // A declaration without a body (in a trait) ends at its semicolon.
                    ';' if !opened && depth == 0 => break,
                    _ => {}
                }
            }
            if !opened && l.trim_end().ends_with(';') {
                break;
            }
            if opened && depth <= 0 {
                let length = end - start + 1;
                if length > MAX_FN_LINES {
                    out.push((start + 1, name.clone(), length));
                }
                break;
            }
        }
    }
    out
}

/// The name of the function a line starts, if it starts one.
fn fn_name(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    let before_ok = words[..at].iter().all(|w| {
        matches!(
            *w,
            "pub" | "const" | "async" | "unsafe" | "extern" | "default"
        ) || w.starts_with("pub(")
            || w.starts_with('"')
    });
    let name = words.get(at + 1)?;
    let name: String = name
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (before_ok && !name.is_empty()).then_some(name)
}

struct Product {
    path: PathBuf,
    lines: Vec<String>,
}

fn product_files() -> Vec<Product> {
    let mut files = Vec::new();
    for root in source_roots() {
        rust_files(&root, &mut files);
    }
    let test_only = test_only_files(&files);
    files.sort();
    files
        .into_iter()
        .filter(|f| !test_only.contains(f))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read a source file");
            let blanked = blank(&text);
            let lines = product_lines(&text).len();
            let lines = blanked.lines().take(lines).map(str::to_owned).collect();
            Product { path, lines }
        })
        .collect()
}

#[test]
fn no_product_file_is_over_600_lines() {
    let files = product_files();
    // A reader that found nothing would find no long file either.
    assert!(files.len() > 300, "{} files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter(|f| f.lines.len() > MAX_FILE_LINES)
        .map(|f| format!("{}: {} lines", f.path.display(), f.lines.len()))
        .collect();
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
}

#[test]
fn no_product_function_is_over_100_lines() {
    let mut long = Vec::new();
    for f in product_files() {
        let lines: Vec<&str> = f.lines.iter().map(String::as_str).collect();
        for (line, name, length) in long_functions(&lines) {
            long.push(format!(
                "{}:{line}: fn {name}: {length} lines",
                f.path.display()
            ));
        }
    }
    assert!(
        long.is_empty(),
        "split these functions:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_reader_blanks_strings_and_comments_and_measures_a_function() {
    let text =
        "fn a() {\n    let s = \"}}\"; // }\n    let c = '{';\n    let r = r#\"{\"#;\n}\nfn b();\n";
    let blanked = blank(text);
    assert_eq!(blanked.matches('{').count(), 1, "{blanked}");
    assert_eq!(blanked.matches('}').count(), 1, "{blanked}");
    let mut body = vec!["fn long() {"];
    body.extend(std::iter::repeat_n("    x();", MAX_FN_LINES));
    body.push("}");
    assert_eq!(
        long_functions(&body),
        vec![(1, "long".to_owned(), MAX_FN_LINES + 2)]
    );
    body.truncate(MAX_FN_LINES - 1);
    body.push("}");
    assert!(long_functions(&body).is_empty());
    // A lifetime is not a character literal.
    assert_eq!(blank("fn f<'a>(x: &'a str) {}"), "fn f<'a>(x: &'a str) {}");
}
