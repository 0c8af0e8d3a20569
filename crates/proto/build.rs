//! Compiles proto/hiddenfront/v1 with protox (pure Rust, no system `protoc`), writes the
//! descriptor set that gRPC reflection serves, and generates serde impls (pbjson) that follow the
//! canonical proto3 JSON mapping, so the WebSocket API speaks literally the gRPC messages.

use prost::Message;
use std::path::PathBuf;

/// The one message whose Rust form is written by hand (`src/connect.rs`).
const CONNECT_RESPONSE: &str = ".hiddenfront.v1.ConnectResponse";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let files = [
        "hiddenfront/v1/game.proto",
        "hiddenfront/v1/session.proto",
        "hiddenfront/v1/client.proto",
        "hiddenfront/v1/clock.proto",
        "hiddenfront/v1/matchmaking.proto",
        "hiddenfront/v1/admin.proto",
        "hiddenfront/v1/webhooks.proto",
        "hiddenfront/v1/organiser.proto",
    ];
    let fds = protox::compile(files, [&root])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let encoded = fds.encode_to_vec();
    std::fs::write(out.join("hiddenfront_descriptor.bin"), &encoded)?;
    pbjson_build::Builder::new()
        .register_descriptors(&encoded)?
        // Written by hand (`src/connect.rs`): its messages travel already encoded, and it never
        // travels as JSON (the JSON WebSocket face sends each ServerMessage in a frame of its own).
        .exclude([CONNECT_RESPONSE])
        .build(&[".hiddenfront"])?;
    tonic_prost_build::configure()
        // The well-known type with proto3 JSON serde (an RFC 3339 string), so pbjson's impls of
        // the messages that hold one compile; prost_types' has no serde.
        .extern_path(".google.protobuf.Timestamp", "::pbjson_types::Timestamp")
        // The server sends each ServerMessage encoded once and shared (docs/connect.md), so the
        // response of Connect is a list of encoded messages: the same bytes on the wire.
        .extern_path(CONNECT_RESPONSE, "crate::connect::ConnectResponse")
        .build_server(true)
        .build_client(true)
        // No `XClient::connect(url)` constructors: `PlayerService/Connect` is an RPC, whose
        // client method would have the same name. Clients are made with `XClient::new(channel)`.
        .build_transport(false)
        .codec_path("crate::codec::ProtoCodec")
        .compile_fds(fds)?;
    println!("cargo:rerun-if-changed={}", root.display());
    Ok(())
}
