//! Generates the placed.v1 code. protoc comes from `protoc-bin-vendored` so that a fresh
//! machine needs no system protobuf compiler; an operator's `PROTOC` still wins. The
//! well-known types (Timestamp, Duration) come from the vendored include directory too.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/placed/v1/placed.proto");
    println!("cargo:rerun-if-env-changed=PROTOC");
    let protoc = match std::env::var_os("PROTOC") {
        Some(p) => std::path::PathBuf::from(p),
        None => protoc_bin_vendored::protoc_bin_path()?,
    };
    let well_known = protoc_bin_vendored::include_path()?;
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc);
    tonic_prost_build::configure()
        .file_descriptor_set_path(
            std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("placed_descriptor.bin"),
        )
        .compile_with_config(
            config,
            &[std::path::PathBuf::from("proto/placed/v1/placed.proto")],
            &[std::path::PathBuf::from("proto"), well_known],
        )?;
    Ok(())
}
