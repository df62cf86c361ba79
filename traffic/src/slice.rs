//! The co-simulation's slice ratio (Simics paper, section 5: "200 INSEE
//! cycles per 10000 Simics cycles", written `NET:NODE`), one type from the
//! command line to the report.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A co-simulation slice: `net` network cycles against `node` node cycles
/// (`fsin_cycle_relation`, `simics_cycle_relation`), both at least 1.
/// Written `NET:NODE`, e.g. `200:10000`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SliceRatio {
    /// Network cycles per slice.
    pub net: u64,
    /// Node cycles per slice.
    pub node: u64,
}

impl SliceRatio {
    /// `NET:NODE` with both parts positive integers; `None` otherwise.
    pub fn parse(text: &str) -> Option<SliceRatio> {
        let (net, node) = text.split_once(':')?;
        match (net.parse::<u64>(), node.parse::<u64>()) {
            (Ok(net), Ok(node)) if net > 0 && node > 0 => Some(SliceRatio { net, node }),
            _ => None,
        }
    }

    /// Network cycles per node cycle.
    pub fn net_per_node(&self) -> f64 {
        self.net as f64 / self.node.max(1) as f64
    }

    /// The slice `f` times as long (both parts; `f` 0 counts as 1),
    /// saturating.
    pub fn times(&self, f: u64) -> SliceRatio {
        let f = f.max(1);
        SliceRatio {
            net: self.net.saturating_mul(f),
            node: self.node.saturating_mul(f),
        }
    }
}

impl fmt::Display for SliceRatio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.net, self.node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_reads_and_writes_as_net_colon_node() {
        let s = SliceRatio::parse("200:10000").unwrap();
        assert_eq!(
            s,
            SliceRatio {
                net: 200,
                node: 10000
            }
        );
        assert_eq!(s.to_string(), "200:10000");
        assert_eq!(s.net_per_node(), 0.02);
        assert_eq!(
            s.times(10),
            SliceRatio {
                net: 2000,
                node: 100000
            }
        );
        assert_eq!(s.times(0), s);
        for bad in ["200", "0:1000", "200:0", "a:1", "1:2:3", "-1:5", ""] {
            assert_eq!(SliceRatio::parse(bad), None, "{bad}");
        }
    }
}
