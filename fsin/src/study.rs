//! One writer for every study: `fsin sweep` ([`crate::sweep`]), `fsin
//! cosim-sweep` and `fsin qemu --vary` (crate `fsin-cosim`). A study is a
//! list of points, each shown as a row of an aligned text table and of a
//! CSV file (each with its own columns), written with the points as JSON
//! and the study's SVG plots into one directory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// A column of a study's table or CSV: its header and each point's cell.
pub struct Column<P> {
    pub head: String,
    /// Width in the table, in characters (CSV ignores it).
    pub width: usize,
    /// Left-aligned in the table (otherwise right-aligned).
    pub left: bool,
    pub cell: fn(&P) -> String,
}

impl<P> Column<P> {
    /// A right-aligned column `width` characters wide.
    pub fn new(head: impl Into<String>, width: usize, cell: fn(&P) -> String) -> Column<P> {
        Column {
            head: head.into(),
            width,
            left: false,
            cell,
        }
    }

    /// The same column, left-aligned.
    pub fn left(self) -> Column<P> {
        Column { left: true, ..self }
    }

    /// A CSV column (no width).
    pub fn csv(head: impl Into<String>, cell: fn(&P) -> String) -> Column<P> {
        Column::new(head, 0, cell)
    }
}

/// The aligned table of `points`: a header row, then a row per point,
/// cells separated by one space.
pub fn table<P>(columns: &[Column<P>], points: &[P]) -> String {
    let mut s = String::new();
    let mut row = |cells: Vec<String>| {
        for (i, (c, text)) in columns.iter().zip(cells).enumerate() {
            let sep = if i == 0 { "" } else { " " };
            let w = c.width;
            let _ = if c.left {
                write!(s, "{sep}{text:<w$}")
            } else {
                write!(s, "{sep}{text:>w$}")
            };
        }
        s.push('\n');
    };
    row(columns.iter().map(|c| c.head.clone()).collect());
    for p in points {
        row(columns.iter().map(|c| (c.cell)(p)).collect());
    }
    s
}

/// The CSV of `points`: a header row, then a row per point.
pub fn csv<P>(columns: &[Column<P>], points: &[P]) -> String {
    let line = |cells: Vec<String>| cells.join(",") + "\n";
    let mut s = line(columns.iter().map(|c| c.head.clone()).collect());
    for p in points {
        s += &line(columns.iter().map(|c| (c.cell)(p)).collect());
    }
    s
}

/// A plot that could not be drawn: plotters' error, or why the data
/// cannot be plotted, as text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlotError(pub String);

impl PlotError {
    /// The error of a drawing step.
    pub fn of(e: impl std::fmt::Display) -> PlotError {
        PlotError(e.to_string())
    }
}

/// Why a study's files could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    #[error("cannot create {}: {source}", path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the study as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Writes a study into `dir` (created if missing): `NAME.csv`, `NAME.json`
/// (`json`, pretty-printed) and each `(file name, SVG text)` of `plots`.
/// Gives the paths of the plots written.
///
/// # Errors
/// [`StudyError`], naming the file or directory.
pub fn write(
    dir: &Path,
    name: &str,
    csv: &str,
    json: &impl Serialize,
    plots: &[(impl AsRef<str>, String)],
) -> Result<Vec<PathBuf>, StudyError> {
    std::fs::create_dir_all(dir).map_err(|source| StudyError::Create {
        path: dir.to_path_buf(),
        source,
    })?;
    let json = serde_json::to_string_pretty(json)? + "\n";
    let put = |file: &str, text: &str| {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|source| StudyError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    };
    put(&format!("{name}.csv"), csv)?;
    put(&format!("{name}.json"), &json)?;
    plots
        .iter()
        .map(|(file, svg)| put(file.as_ref(), svg))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_csv_by_hand() {
        let cols = [
            Column::new("key", 4, |p: &(u32, f64)| p.0.to_string()).left(),
            Column::new("x", 6, |p: &(u32, f64)| format!("{:.2}", p.1)),
        ];
        let points = [(1, 0.5), (22, 10.25)];
        assert_eq!(
            table(&cols, &points),
            "key       x\n1      0.50\n22    10.25\n"
        );
        assert_eq!(csv(&cols, &points), "key,x\n1,0.50\n22,10.25\n");
    }
}
