//! The lifecycle's modules import one another in one direction only (issue 25: they used to
//! form one circle of eight, through a hub every path came back to).

#[path = "../../../tests/support/imports.rs"]
mod imports;

use std::path::Path;

#[test]
fn no_module_of_the_lifecycle_imports_one_that_imports_it_back() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lifecycle");
    let graph = imports::graph(&dir);
    assert!(
        graph.len() > 20,
        "read {} modules of {}",
        graph.len(),
        dir.display()
    );
    // The checker sees real imports: the task measures with the metric slot.
    assert!(graph["task"].contains("measure"), "{:?}", graph["task"]);
    let circles = imports::circles(&graph);
    assert!(circles.is_empty(), "circles of imports: {circles:?}");
}

#[test]
fn the_checker_finds_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mod.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(dir.path().join("a.rs"), "use super::b::B;\n").unwrap();
    std::fs::write(dir.path().join("b.rs"), "use super::{c::C, x};\n").unwrap();
    std::fs::write(
        dir.path().join("c.rs"),
        "// use super::b;\nuse super::a;\n#[cfg(test)]\nmod tests { use super::*; }\n",
    )
    .unwrap();
    let graph = imports::graph(dir.path());
    let circles = imports::circles(&graph);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(
        circles[0].iter().map(String::as_str).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    // A parent's own item named through super:: is an import of the parent.
    std::fs::write(dir.path().join("a.rs"), "use super::Thing;\n").unwrap();
    let graph = imports::graph(dir.path());
    assert!(graph["a"].contains("mod"));
    assert!(imports::circles(&graph).is_empty(), "{graph:?}");
}
