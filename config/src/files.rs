//! Reading the `key=value` files of the configuration (`--config`,
//! `mpi_profile=`): bounded in size, `#` comments and blank lines left
//! out, the same way for every such file.

use std::io::Read;
use std::path::Path;

/// Why a file could not be read whole ([`read_bounded`]).
#[derive(Debug)]
pub(crate) enum ReadError {
    /// It could not be opened or read, or is not UTF-8.
    Io(std::io::Error),
    /// It holds more than the bound's bytes.
    TooLong,
}

/// The text of the file at `path`, refused beyond `limit` bytes (a device
/// or a trace given by mistake is not read forever).
pub(crate) fn read_bounded(path: &Path, limit: u64) -> Result<String, ReadError> {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(limit + 1).read_to_string(&mut text))
        .map_err(ReadError::Io)?;
    if text.len() as u64 > limit {
        return Err(ReadError::TooLong);
    }
    Ok(text)
}

/// The settings of a `key=value` file's `text`: each line's number (from
/// 1) and its text before any `#`, trimmed; blank lines left out.
pub(crate) fn setting_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, raw)| (i + 1, raw.split('#').next().unwrap_or("").trim()))
        .filter(|(_, line)| !line.is_empty())
}
