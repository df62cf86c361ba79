//! Tests that cannot run on this machine (no QEMU or guest image, no
//! INSEE sources or C compiler, no CAP_SYS_ADMIN for namespaces) say why
//! and pass, unless `FSIN_NO_SKIP=1` (set by `.ci/run`) turns every such
//! skip into a failure: in CI, nothing passes by skipping.

/// The variable that turns skips into failures.
pub const NO_SKIP: &str = "FSIN_NO_SKIP";

/// Says that a test (or part of one) is skipped, and why; panics instead
/// when `FSIN_NO_SKIP` is set.
pub fn skip(why: &str) {
    assert!(
        std::env::var_os(NO_SKIP).is_none(),
        "{NO_SKIP} is set, but this test cannot run here: {why}"
    );
    eprintln!("skipped: {why}");
}
