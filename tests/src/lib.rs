//! Cross-crate integration tests for fsin-rs live in `tests/tests/`; they
//! run the built `fsin` binary as a user would. This library is empty.
