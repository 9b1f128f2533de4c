//! The `placed.v1` gRPC API, generated from `proto/placed.proto`, and the conversions
//! between its messages and [`placed_core`]'s values.
//!
//! Nothing below the service layer sees these types: the daemon's handlers convert them
//! into its domain commands and back, `placectl` converts what it prints.

pub mod convert;

/// Generated protobuf and tonic code for package `placed.v1`.
#[allow(missing_debug_implementations, clippy::all)]
pub mod v1 {
    tonic::include_proto!("placed.v1");
}

/// The encoded file descriptor set, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("placed_descriptor");
