//! Generated code for Hidden Front's gRPC APIs (`proto/hiddenfront/v1`): the internal session API,
//! the public player API, and the messages they share. Generated at build time from the `.proto`
//! files by protox, so a fresh machine needs no `protoc`.

/// `hiddenfront.v1`: every message and service.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v1 {
    tonic::include_proto!("hiddenfront.v1");
}

/// The encoded `FileDescriptorSet` of every proto, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/hiddenfront_descriptor.bin"));
