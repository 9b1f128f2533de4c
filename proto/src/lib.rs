//! The `placed.v1` gRPC API, generated from `proto/placed.proto`.
//!
//! Nothing below the service layer sees these types: handlers convert them into the
//! daemon's domain commands and back.

#![allow(missing_debug_implementations, clippy::all)]

/// Generated protobuf and tonic code for package `placed.v1`.
pub mod v1 {
    tonic::include_proto!("placed.v1");
}

/// The encoded file descriptor set, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("placed_descriptor");
