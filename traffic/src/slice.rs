//! The co-simulation's slice ratio (Simics paper, section 5: "200 INSEE
//! cycles per 10000 Simics cycles", written `NET:NODE`), one type from the
//! command line to the report.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Most node (or network) cycles one co-simulation slice may last, from the
/// configuration or a `set_slice` control request: with the warm-up factor
/// bounded too, slice arithmetic cannot overflow.
pub const MAX_SLICE_CYCLES: u64 = u32::MAX as u64;

/// A part of a slice: its network or its node cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlicePart {
    /// Network cycles (`net_cycles`, `fsin_cycle_relation`).
    Net,
    /// Node cycles (`node_cycles`, `simics_cycle_relation`).
    Node,
}

impl fmt::Display for SlicePart {
    /// The part's name in `set_slice`: `net_cycles` or `node_cycles`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SlicePart::Net => "net_cycles",
            SlicePart::Node => "node_cycles",
        })
    }
}

/// A slice that cannot be one: `part` is 0 or above [`MAX_SLICE_CYCLES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{part} = {value} is outside 1..={MAX_SLICE_CYCLES} cycles per slice")]
pub struct SliceError {
    /// The part out of range.
    pub part: SlicePart,
    /// The value given, cycles.
    pub value: u64,
}

/// A co-simulation slice: `net` network cycles against `node` node cycles
/// (`fsin_cycle_relation`, `simics_cycle_relation`), both in
/// 1..=[`MAX_SLICE_CYCLES`] when made with [`SliceRatio::new`] or
/// [`SliceRatio::parse`]. Written `NET:NODE`, e.g. `200:10000`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SliceRatio {
    /// Network cycles per slice.
    pub net: u64,
    /// Node cycles per slice.
    pub node: u64,
}

impl SliceRatio {
    /// The slice of `net` network cycles and `node` node cycles, the one
    /// place that checks a slice's range (configuration keys and control
    /// requests alike).
    ///
    /// # Errors
    /// [`SliceError`] naming the first part outside 1..=[`MAX_SLICE_CYCLES`].
    pub fn new(net: u64, node: u64) -> Result<SliceRatio, SliceError> {
        for (part, value) in [(SlicePart::Net, net), (SlicePart::Node, node)] {
            if !(1..=MAX_SLICE_CYCLES).contains(&value) {
                return Err(SliceError { part, value });
            }
        }
        Ok(SliceRatio { net, node })
    }

    /// `NET:NODE` with both parts integers in 1..=[`MAX_SLICE_CYCLES`];
    /// `None` otherwise.
    pub fn parse(text: &str) -> Option<SliceRatio> {
        let (net, node) = text.split_once(':')?;
        SliceRatio::new(net.parse().ok()?, node.parse().ok()?).ok()
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
        for bad in [
            "200",
            "0:1000",
            "200:0",
            "a:1",
            "1:2:3",
            "-1:5",
            "",
            "4294967296:1",
        ] {
            assert_eq!(SliceRatio::parse(bad), None, "{bad}");
        }
        assert_eq!(
            SliceRatio::parse("4294967295:1").map(|s| s.net),
            Some(u32::MAX as u64)
        );
    }

    #[test]
    fn a_slice_out_of_range_names_its_part() {
        assert_eq!(
            SliceRatio::new(0, 5),
            Err(SliceError {
                part: SlicePart::Net,
                value: 0
            })
        );
        let too_long = SliceRatio::new(5, 1 << 32).unwrap_err();
        assert_eq!(too_long.part, SlicePart::Node);
        assert_eq!(
            too_long.to_string(),
            "node_cycles = 4294967296 is outside 1..=4294967295 cycles per slice"
        );
    }
}
