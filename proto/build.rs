//! Compiles `fsin/v1/sync.proto` with protox (pure Rust, no `protoc`) and
//! generates the prost messages and tonic client and server.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fds = protox::compile(["fsin/v1/sync.proto"], ["."])?;
    tonic_build::configure().compile_fds(fds)?;
    println!("cargo:rerun-if-changed=fsin/v1/sync.proto");
    Ok(())
}
