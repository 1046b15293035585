//! Generates the KServe v2 gRPC message and service types from the vendored
//! `proto/grpc_predict_v2.proto` with no system `protoc`: `protox` (pure Rust)
//! compiles the file to a descriptor set, and `tonic-prost-build` generates code
//! from it. `bytes` fields become `bytes::Bytes`, so `raw_input_contents` decoded
//! from a `Bytes` buffer are slices of it, not copies.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/grpc_predict_v2.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure()
        .build_transport(false)
        .build_client(true)
        .bytes(".inference")
        .compile_fds(descriptors)?;
    Ok(())
}
