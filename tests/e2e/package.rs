//! `scripts/package-deb`'s contents, built here from the binaries cargo built (installing
//! and running the package is the guest's test, `guest.rs`): every man page a page names
//! is shipped, and so are the operator's documents.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The documents the package ships under /usr/share/doc/placed.
const DOCS: [&str; 4] = ["daemon.md", "cli-json.md", "training.md", "models.md"];

/// A gzipped man page's text.
fn zcat(page: &Path) -> String {
    let out = Command::new("zcat").arg(page).output().expect("zcat runs");
    assert!(out.status.success(), "zcat {}", page.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The target directory's profile folder, where cargo built the three binaries (the other
/// two brought up to date first).
pub fn bin_dir() -> PathBuf {
    let placed = Path::new(env!("CARGO_BIN_EXE_placed"));
    let bin_dir = placed.parent().expect("placed lives in a target directory");
    for other in ["placectl", "placed-train"] {
        assert_eq!(crate::bins::bin(other).parent(), Some(bin_dir));
    }
    bin_dir.to_owned()
}

/// Builds the package with `scripts/package-deb` from the binaries in [`bin_dir`], into
/// `out`, uncompressed; the package's path. Its tree stays beside it, without `.deb`.
pub fn build(out: &Path) -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let built = Command::new(workspace.join("scripts/package-deb"))
        .current_dir(&workspace)
        .env("PLACED_BIN_DIR", bin_dir())
        .env("PLACED_DEB_OUT", out)
        .env("PLACED_DEB_COMPRESSION", "none")
        .output()
        .expect("scripts/package-deb runs");
    assert!(
        built.status.success(),
        "scripts/package-deb failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    String::from_utf8_lossy(&built.stdout)
        .lines()
        .last()
        .map(PathBuf::from)
        .expect("package-deb names the package")
}

#[test]
fn every_man_page_named_is_shipped_and_so_are_the_documents() {
    for tool in ["dpkg-deb", "zcat", "python3"] {
        if !crate::guest_support::on_path(tool) {
            eprintln!("skipped, because {tool} is not installed (not a Debian host)");
            return;
        }
    }
    let out = tempfile::tempdir().unwrap();
    // The tree the package was made from: placed_<version>_<arch>/ beside its .deb.
    let root = build(out.path()).with_extension("");
    let man1 = root.join("usr/share/man/man1");
    let mut shipped: Vec<String> = std::fs::read_dir(&man1)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    shipped.sort();
    for top in ["placectl.1.gz", "placed-train.1.gz", "placectl-status.1.gz"] {
        assert!(
            shipped.iter().any(|s| s == top),
            "{top} missing: {shipped:?}"
        );
    }
    let mut pages: Vec<PathBuf> = shipped.iter().map(|s| man1.join(s)).collect();
    pages.push(root.join("usr/share/man/man8/placed.8.gz"));
    let mut named = 0;
    for page in &pages {
        let text = zcat(page);
        assert!(
            text.contains(".TH "),
            "{} is not a man page",
            page.display()
        );
        for name in placed_core::man::named_in(&text) {
            named += 1;
            assert!(
                shipped.contains(&format!("{name}.gz")),
                "{} names {name}, which the package lacks: {shipped:?}",
                page.display()
            );
        }
    }
    // placectl(1) alone lists its fourteen commands (man is hidden): the check read them.
    assert!(named >= 14, "only {named} pages named");
    for doc in DOCS {
        let shipped = root.join("usr/share/doc/placed").join(doc);
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../docs")
            .join(doc);
        assert_eq!(
            std::fs::read(&shipped).unwrap_or_default(),
            std::fs::read(&source).unwrap(),
            "{} is not docs/{doc}",
            shipped.display()
        );
    }
}
