//! The `placed.v1` gRPC API, generated from `proto/placed/v1/placed.proto`, the
//! conversions between its messages and [`placed_core`]'s values, and a channel to the
//! daemon's Unix socket.
//!
//! Nothing below the service layer sees these types: the daemon's handlers convert them
//! into its domain commands and back, `placectl` converts what it prints.

pub mod convert;
pub mod metric_text;
pub mod unix;

/// Generated protobuf and tonic code for package `placed.v1`.
#[allow(missing_debug_implementations, clippy::all)]
pub mod v1 {
    tonic::include_proto!("placed.v1");
}

/// The encoded file descriptor set (placed.v1 and the well-known types it imports), for
/// gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("placed_descriptor");
