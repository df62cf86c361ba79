//! The table of configuration keys: names (INSEE's, with its aliases),
//! documentation, valid values, parser and printer. `fsin help config` is
//! generated from this table, so documentation and parser cannot drift.

use std::path::PathBuf;

use super::{
    Config, ConfigBuilder, ConfigError, MpiProfile, Origin, RequestMode, RoutingOrder, Setting,
    SlicePart, SliceRatio, TopoKind, UpDownRoot, MAX_SLICE_CYCLES, PLEVEL_SUPPORTED,
};
use fsin_traffic::kernels::KERNELS;

/// The key of one twisted-torus skew (`sk_xy` and its five siblings);
/// defined before the modules because `table` uses it.
macro_rules! skew_key {
    ($name:literal, $field:ident) => {
        KeySpec {
            names: &[$name],
            help: "Twisted torus skew (see sk_xy)",
            values: "0 <= skew < nodes of the skewed dimension",
            apply: |c, v| {
                c.net.skews.$field = small(v, 0, 1 << 16)?;
                Ok(())
            },
            show: |c| c.net.skews.$field.to_string(),
        }
    };
}

mod help;
mod profile;
mod table;
mod traces;
mod values;
pub use help::{help_text, key_help, GROUPS};
pub(crate) use profile::apply_built_in_profile;
use values::{set_grid, within, MAX_SIZE};
pub use values::{ValueError, MAX_NODES};

/// One configuration key.
pub struct KeySpec {
    /// Accepted names; the first is the canonical one.
    pub names: &'static [&'static str],
    /// What the key sets, with units.
    pub help: &'static str,
    /// Valid values.
    pub values: &'static str,
    /// Parses a value into the configuration; `Err` gives the reason.
    pub apply: fn(&mut Config, &str) -> Result<(), ValueError>,
    /// Prints the configuration's value in the syntax `apply` accepts.
    pub show: fn(&Config) -> String,
}

/// Every key `fsin` accepts, in the order reports list them: one
/// [`KeySpec`] each, from the tables of the network and traffic, of
/// traces and the MPI model, and of the run.
pub fn keys() -> impl Iterator<Item = &'static KeySpec> {
    [table::NETWORK_AND_TRAFFIC, traces::TRACES, table::RUN]
        .into_iter()
        .flatten()
}

/// The largest `nic_latency`, network cycles.
const MAX_NIC_LATENCY: u64 = u32::MAX as u64;

/// Applies `setting` to the builder `b`, given by `origin`: a typed one
/// as its keys' texts would, with the same checks, but from its values
/// (no text in between), its keys counting as set; a [`Setting::Key`] as
/// its text ([`ConfigBuilder::set`]).
///
/// # Errors
/// As [`ConfigBuilder::put`].
pub(crate) fn put(
    b: &mut ConfigBuilder,
    setting: &Setting,
    origin: Origin,
) -> Result<(), ConfigError> {
    // A value refused: named as its key's text would give it.
    let bad = |key: &'static str| {
        let origin = origin.clone();
        move |reason: ValueError| ConfigError::BadValue {
            key: key.to_string(),
            value: (setting.key_values().into_iter())
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v)
                .unwrap_or_default(),
            origin,
            reason: reason.to_string(),
        }
    };
    let c = &mut b.config;
    let names: &'static [&'static str] = match setting {
        Setting::Torus(dims) => {
            let sizes = dims
                .iter()
                .map(|&k| within(k.into(), 1, MAX_SIZE.into()).map(|_| k))
                .collect::<Result<Vec<u32>, _>>()
                .map_err(|e| bad("topo")(ValueError::In("sizes", Box::new(e))))?;
            set_grid(c, TopoKind::Torus, sizes, "1 to 3 sizes, e.g. torus_8_8")
                .map_err(bad("topo"))?;
            &["topo"]
        }
        Setting::Slice(s) => {
            c.cosim.slice = SliceRatio::new(s.net, s.node).map_err(|e| {
                let key = match e.part {
                    SlicePart::Net => "fsin_cycle_relation",
                    SlicePart::Node => "simics_cycle_relation",
                };
                bad(key)(ValueError::Integer {
                    min: 1,
                    max: MAX_SLICE_CYCLES,
                })
            })?;
            &["fsin_cycle_relation", "simics_cycle_relation"]
        }
        Setting::SyncMode(m) => {
            c.cosim.sync_mode = *m;
            &["sync_mode"]
        }
        Setting::NicLatency(l) => {
            c.cosim.nic_latency = within(*l, 0, MAX_NIC_LATENCY).map_err(bad("nic_latency"))?;
            &["nic_latency"]
        }
        Setting::NodeClockHz(hz) => {
            c.cosim.node_clock_hz = within(*hz, 1, u64::MAX).map_err(bad("node_clock"))?;
            &["node_clock"]
        }
        Setting::Rseed(seed) => {
            c.net.rseed = *seed;
            &["rseed"]
        }
        Setting::Key { key, value } => return b.set(key, value, origin),
    };
    b.explicit.extend_from_slice(names);
    Ok(())
}

/// Finds a key by any of its names.
pub fn lookup(name: &str) -> Option<&'static KeySpec> {
    keys().find(|k| k.names.contains(&name))
}

/// INSEE options that exist but are not implemented in this version, with
/// the reason given to the user.
pub fn unsupported(name: &str) -> Option<&'static str> {
    const LATER: &[(&[&str], &str)] = &[
        (
            &["pheaders", "bheaders", "monitored", "min_batch_pkt"],
            "INSEE's header selection and monitored-node reports are not implemented; plevel gives the detailed outputs",
        ),
        (
            &["serv_addr", "num_wait_periods", "num_periodos_espera"],
            "the legacy INSEE/Simics protocol options come with `fsin serve --legacy-exd`",
        ),
        (
            &["nodes_x", "nodes_y", "nodes_z"],
            "give the sizes in the topology instead, e.g. topo=torus_8_8",
        ),
    ];
    LATER
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, why)| *why)
}

/// The known key closest to `name` (edit distance at most 2), if any.
pub fn suggest(name: &str) -> Option<&'static str> {
    keys()
        .flat_map(|k| k.names.iter().copied())
        .map(|n| (edit_distance(name, n), n))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}
