//! Generates the NRI messages and ttrpc services from proto/nri.proto (placed's own subset
//! of the protocol) with ttrpc-codegen, which parses the file itself: no protoc needed.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    println!("cargo:rerun-if-changed=proto/nri.proto");
    ttrpc_codegen::Codegen::new()
        .out_dir(&out)
        .input("proto/nri.proto")
        .include("proto")
        .rust_protobuf()
        .customize(ttrpc_codegen::Customize {
            async_all: true,
            ..Default::default()
        })
        .run()?;
    // The generated files open with inner attributes, which `include!` refuses; modules
    // declared with an absolute path take them as they are.
    let mut wrapper = String::new();
    for module in ["nri", "nri_ttrpc"] {
        let path = out.join(format!("{module}.rs"));
        writeln!(
            wrapper,
            "#[path = {:?}]\npub mod {module};",
            path.display().to_string()
        )?;
    }
    std::fs::write(out.join("generated.rs"), wrapper)?;
    Ok(())
}
