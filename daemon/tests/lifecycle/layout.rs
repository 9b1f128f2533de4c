//! The lifecycle's modules import one another in one direction only (issue 25: they used to
//! form one circle of eight, through a hub every path came back to).

#[path = "../../../tests/support/imports.rs"]
mod imports;

use std::path::Path;

use imports::Crate;

#[test]
fn no_module_of_the_lifecycle_imports_one_that_imports_it_back() {
    let krate = Crate::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .unwrap_or_else(|e| panic!("{e}"));
    // A reader that found nothing would find no circle either: the task imports the
    // metric slot it measures with.
    assert!(krate.module_count() > 40, "{}", krate.module_count());
    assert!(
        krate
            .imports_of("lifecycle::task")
            .contains("lifecycle::measure"),
        "{:?}",
        krate.imports_of("lifecycle::task")
    );
    let cycles: Vec<String> = krate
        .cycles_below("lifecycle")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        cycles.is_empty(),
        "circles of imports:\n{}",
        cycles.join("\n")
    );
}
