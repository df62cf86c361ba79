//! A report's figures, read from the report's own serialisation: every
//! scalar field (a number, flag, text or none) in the order its struct
//! declares it, flattened parts inline; lists and nested objects (per-node
//! tables, batches, the configuration) are left to files of their own.
//!
//! This is how a field added to a report struct reaches every output
//! without another edit: the JSON by serde, the text reports through
//! [`Figures::lines_except`] (the figures their hand-written lines leave
//! out), and the studies' CSV files through [`Figures::append_csv`]
//! (docs/architecture.md, "Adding a report field").

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The scalar figures of one report: name (its JSON key) and value, in
/// declaration order. Serialised as one JSON object in that order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures(pub Vec<(String, Value)>);

impl Figures {
    /// The scalar figures of `report`.
    ///
    /// # Errors
    /// `report` does not serialise to a JSON object (a map whose keys are
    /// not strings, or not a struct or map at all).
    pub fn of<T: Serialize>(report: &T) -> Result<Figures, serde_json::Error> {
        let text = serde_json::to_string(report)?;
        let Figures(all) = serde_json::from_str(&text)?;
        Ok(Figures(
            all.into_iter()
                .filter(|(_, v)| !v.is_array() && !v.is_object())
                .collect(),
        ))
    }

    /// The value of figure `name`, if the report has it.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The text report's lines for the figures whose names are not in
    /// `shown` (the ones its hand-written lines print): `  NAME  VALUE`,
    /// the name in 18 columns as the reports' other lines have it
    /// (a longer name gets one space).
    pub fn lines_except(&self, shown: &[&str]) -> String {
        let mut s = String::new();
        for (name, v) in self.0.iter().filter(|(n, _)| !shown.contains(&n.as_str())) {
            s.push_str(&format!("  {:<17} {}\n", label(name), text(v)));
        }
        s
    }

    /// What a text report `text`, whose hand-written lines print the
    /// figures named in `shown`, gets wrong: the names in `shown` that are
    /// no figure of this report (stale), and the figures outside `shown`
    /// that `text` does not name. Empty when the text covers every figure,
    /// as [`Figures::lines_except`] makes it do.
    pub fn uncovered(&self, shown: &[&str], text: &str) -> Vec<String> {
        let stale = shown.iter().copied().filter(|n| self.get(n).is_none());
        let unnamed = (self.0.iter())
            .map(|(n, _)| n.as_str())
            .filter(|n| !shown.contains(n) && !text.contains(&label(n)));
        stale.chain(unnamed).map(str::to_string).collect()
    }

    /// The mean of each numeric figure over `rows`, named in the order
    /// they first appear; a row without a figure (or with none as its
    /// value) leaves it out of that figure's mean. Figures that are not
    /// numbers are left out.
    pub fn mean(rows: &[Figures]) -> Figures {
        let mut sums: Vec<(String, f64, u32)> = Vec::new();
        for (name, v) in rows.iter().flat_map(|r| &r.0) {
            let Some(x) = v.as_f64() else { continue };
            match sums.iter_mut().find(|(n, _, _)| n == name) {
                Some((_, sum, count)) => {
                    *sum += x;
                    *count += 1;
                }
                None => sums.push((name.clone(), x, 1)),
            }
        }
        Figures(
            sums.into_iter()
                .map(|(name, sum, count)| (name, Value::from(sum / f64::from(count))))
                .collect(),
        )
    }

    /// `csv` (a header row, then one row per entry of `rows`) with a
    /// column more for every figure of `rows` that neither its header nor
    /// `also` (figures its columns show under other names) names, in the
    /// order they first appear; a row without a figure leaves its cell
    /// empty.
    pub fn append_csv(csv: &str, rows: &[Figures], also: &[&str]) -> String {
        let head: Vec<&str> = csv.lines().next().unwrap_or_default().split(',').collect();
        let mut names: Vec<&str> = Vec::new();
        for (name, _) in rows.iter().flat_map(|r| &r.0) {
            let name = name.as_str();
            if !head.contains(&name) && !also.contains(&name) && !names.contains(&name) {
                names.push(name);
            }
        }
        let mut out = String::new();
        for (i, line) in csv.lines().enumerate() {
            out.push_str(line);
            for name in &names {
                out.push(',');
                match i.checked_sub(1) {
                    None => out.push_str(name),
                    Some(row) => out.push_str(&cell(rows.get(row).and_then(|r| r.get(name)))),
                }
            }
            out.push('\n');
        }
        out
    }
}

/// A figure's name in a text report: its JSON key with spaces for
/// underscores.
fn label(name: &str) -> String {
    name.replace('_', " ")
}

/// A figure in a text report: integers as they are, other numbers with 4
/// decimals, flags and text as words, none as `-`.
fn text(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_f64() => format!("{:.4}", n.as_f64().unwrap_or_default()),
        other => other.to_string(),
    }
}

/// A figure in a CSV cell: numbers and flags as JSON writes them, text
/// quoted when it holds a comma, quote or line break, none empty.
fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) if s.contains([',', '"', '\n']) => {
            format!("\"{}\"", s.replace('"', "\"\""))
        }
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

impl Serialize for Figures {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

impl<'de> Deserialize<'de> for Figures {
    /// A JSON object, its keys kept in the order they come.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Figures, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Figures;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Figures, A::Error> {
                let mut all = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    all.push(entry);
                }
                Ok(Figures(all))
            }
        }
        d.deserialize_map(InOrder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Inner {
        b: f64,
        list: Vec<u32>,
    }

    #[derive(Serialize)]
    struct Report {
        z: u64,
        #[serde(flatten)]
        inner: Inner,
        a: Option<String>,
        flag: bool,
    }

    fn report() -> Report {
        Report {
            z: 3,
            inner: Inner {
                b: 0.5,
                list: vec![1, 2],
            },
            a: Some("x, y".into()),
            flag: true,
        }
    }

    /// Means by hand: a figure missing from a row, or none in it, is left
    /// out of that figure's mean only; text is no figure to average.
    #[test]
    fn means_by_hand() {
        let row = |pairs: &[(&str, Value)]| {
            Figures(
                pairs
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.clone()))
                    .collect(),
            )
        };
        let m = Figures::mean(&[
            row(&[("a", 1.into()), ("b", 10.into()), ("t", "x".into())]),
            row(&[("a", 2.into()), ("b", Value::Null)]),
            row(&[("c", 0.5.into()), ("a", 6.into())]),
        ]);
        assert_eq!(
            m,
            row(&[("a", 3.0.into()), ("b", 10.0.into()), ("c", 0.5.into())])
        );
        assert_eq!(Figures::mean(&[]), Figures::default());
    }

    #[test]
    fn figures_come_in_declaration_order_with_lists_left_out() {
        let f = Figures::of(&report()).unwrap();
        let names: Vec<&str> = f.0.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["z", "b", "a", "flag"]);
        assert_eq!(f.get("b"), Some(&Value::from(0.5)));
        // Back from its JSON in the same order.
        let back: Figures = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn text_lines_cover_what_the_report_leaves_out() {
        let f = Figures::of(&report()).unwrap();
        assert_eq!(
            f.lines_except(&["z", "a"]),
            format!("  {:<18}0.5000\n  {:<18}true\n", "b", "flag")
        );
    }

    #[test]
    fn uncovered_names_stale_and_missing_figures() {
        let f = Figures::of(&report()).unwrap();
        assert!(f
            .uncovered(&["z", "a"], &f.lines_except(&["z", "a"]))
            .is_empty());
        assert_eq!(
            f.uncovered(&["z", "gone"], "  b  1\n  a x\n"),
            ["gone", "flag"]
        );
    }

    #[test]
    fn csv_columns_follow_the_figures() {
        let rows = [
            Figures::of(&report()).unwrap(),
            Figures(vec![
                ("z".into(), Value::from(4)),
                ("new".into(), Value::from(1)),
            ]),
        ];
        let csv = Figures::append_csv("key,z\nv1,3\nv2,4\n", &rows, &[]);
        assert_eq!(
            csv,
            "key,z,b,a,flag,new\nv1,3,0.5,\"x, y\",true,\nv2,4,,,,1\n"
        );
        // A figure that a column shows under another name is left out.
        let renamed = Figures::append_csv("key,zed\nv1,3\nv2,4\n", &rows, &["z"]);
        assert!(renamed.starts_with("key,zed,b,a,flag,new\n"), "{renamed}");
    }
}
