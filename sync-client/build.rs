//! Generates `include/fsin_sync.h`, the C header of the C ABI
//! (`src/ffi.rs`), with cbindgen; the header is shipped in the crate.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=src/ffi.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&dir);
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let header = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/ffi.rs"))
        .generate()
        .expect("the C header generates from src/ffi.rs");
    let path = dir.join("include/fsin_sync.h");
    // Rewrite only on change, so that the file's time stamp (and what
    // depends on it) moves only when the API does.
    let mut bytes = Vec::new();
    header.write(&mut bytes);
    if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
        std::fs::create_dir_all(path.parent().expect("include/")).expect("include/ is writable");
        std::fs::write(&path, &bytes).expect("include/fsin_sync.h is writable");
    }
}
