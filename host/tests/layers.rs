//! placed-host's modules stack as floors (host/src/lib.rs, "Layout"): read from the source,
//! no two modules of one level import each other in a circle, and `kernel`, the ground
//! floor, imports nothing else of the crate.

use std::path::Path;

use crate::imports::Crate;

fn host() -> Crate {
    let krate = Crate::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .unwrap_or_else(|e| panic!("{e}"));
    // A reader that found nothing would find no circle either.
    assert!(krate.module_count() > 40, "{}", krate.module_count());
    krate
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let cycles = host().cycles();
    let list: Vec<String> = cycles.iter().map(ToString::to_string).collect();
    assert!(list.is_empty(), "circles of imports:\n{}", list.join("\n"));
}

#[test]
fn the_kernel_layer_imports_nothing_else_of_the_crate() {
    let krate = host();
    assert_eq!(krate.imports_of("kernel"), Default::default());
    // The module that holds durable writes is a ground floor too.
    assert_eq!(krate.imports_of("atomic_file"), Default::default());
}
