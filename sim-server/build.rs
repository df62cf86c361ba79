//! The stamp of the guest images that this `fsin` expects: the content
//! hash that scripts/install-qemu.sh writes into each image's
//! `image.stamp` (the first 16 hex digits of the SHA-256 of the script,
//! the guest's /init, guest-bench's Cargo.toml and src/*.rs, the MPI
//! kernels examples/qemu/mpi/*.c and the MPI tracing library
//! mpi-trace/*.c and *.h, each set in byte order), for `fsin
//! doctor`. Empty when those sources are not beside
//! this crate.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim-server is in the workspace")
        .to_path_buf();
    let src = repo.join("guest-bench/src");
    let kernels = repo.join("examples/qemu/mpi");
    println!("cargo:rerun-if-changed={}", src.display());
    let tracer = repo.join("mpi-trace");
    println!("cargo:rerun-if-changed={}", kernels.display());
    println!("cargo:rerun-if-changed={}", tracer.display());
    let mut files: Vec<PathBuf> = [
        "scripts/install-qemu.sh",
        "examples/qemu/guest/init",
        "guest-bench/Cargo.toml",
    ]
    .iter()
    .map(|f| repo.join(f))
    .collect();
    files.extend(sorted(&src, "rs"));
    files.extend(sorted(&kernels, "c"));
    files.extend(sorted(&tracer, "c"));
    files.extend(sorted(&tracer, "h"));
    let mut hash = Sha256::new();
    let mut complete = true;
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        match std::fs::read(f) {
            Ok(bytes) => hash.update(bytes),
            Err(_) => complete = false,
        }
    }
    let stamp = if complete {
        hash.finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()[..16]
            .to_string()
    } else {
        String::new()
    };
    println!("cargo:rustc-env=FSIN_GUEST_IMAGE_STAMP={stamp}");
}

/// The files of `dir` ending in `.ext`, in byte order of their names.
fn sorted(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == ext))
                .collect()
        })
        .unwrap_or_default();
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    files
}
