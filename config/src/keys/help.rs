//! `fsin help config`: the key table ([`keys`]) as help text, in groups.

use super::{keys, KeySpec};
use crate::Config;

/// The text of `fsin help config`: every key ([`key_help`]), wrapped to
/// 80 columns.
pub fn help_text() -> String {
    let d = Config::default();
    let mut s = String::from(
        "fsin configuration keys (INSEE names). Give them as key=value on the command\n\
         line, or in a file (--config FILE): key=value lines with # comments, or TOML\n\
         (*.toml) with the same keys at the top level. Later settings override earlier\n\
         ones: defaults < file < command line. `fsin help config KEY` shows one key.\n",
    );
    for (group, names) in GROUPS {
        s.push_str(&format!("\n== {group} ==\n\n"));
        for name in *names {
            if let Some(k) = keys().find(|k| k.names[0] == *name) {
                s.push_str(&entry(k, &d));
            }
        }
    }
    s.push_str(
        "\nDefaults differ from INSEE's in two places: topo=torus_8_8 (INSEE: torus_4_4)\n\
         and plength=16_4 (INSEE: 8_8), the configuration used throughout the seed\n\
         papers.\n",
    );
    s
}

/// The groups of `fsin help config`, in order, with every key of
/// [`keys`] in exactly one (by its first name; a test checks it).
pub const GROUPS: &[(&str, &[&str])] = &[
    (
        "Network",
        &[
            "topo",
            "nways",
            "sk_xy",
            "sk_xz",
            "sk_yx",
            "sk_yz",
            "sk_zx",
            "sk_zy",
            "plength",
            "tql",
            "iql",
            "nchan",
            "ninj",
            "par_inj",
            "drop_packets",
            "extract",
            "switching",
            "faults",
            "hol",
            "hol_timeout",
            "threads",
        ],
    ),
    (
        "Routing and flow control",
        &[
            "routing",
            "rmode",
            "vc",
            "bsize",
            "updown_root",
            "imode",
            "amode",
            "cmode",
            "intransit_pr",
            "bub_to_adap",
            "timeout_upper_limit",
            "timeout_lower_limit",
        ],
    ),
    (
        "Traffic",
        &[
            "load",
            "tpattern",
            "rseed",
            "global_cc",
            "update_period",
            "longmessages",
            "lng_msg_ratio",
            "trigger_rate",
            "triggered",
            "shotmode",
            "shotsize",
        ],
    ),
    (
        "Measurement",
        &[
            "warm_up_period",
            "conv_period",
            "conv_thres",
            "max_conv_time",
            "nsamples",
            "max_samples",
            "sample_size",
            "cycles",
            "pinterval",
            "plevel",
        ],
    ),
    (
        "Traces, kernels and the MPI model",
        &[
            "tracefile",
            "kernel",
            "kernel_bytes",
            "kernel_tasks",
            "placement",
            "bg_load",
            "trace_mode",
            "trace_cpu_units",
            "link_bandwidth",
            "cpu_speed",
            "mpi_profile",
            "mpi_eager_limit",
            "mpi_segment_bytes",
            "mpi_segment_header",
            "mpi_message_header",
            "mpi_message_ns",
            "mpi_byte_ps",
            "mpi_costs",
            "mpi_wake_ns",
            "mpi_rx_ns",
            "mpi_irq_window_ns",
            "mpi_connect_ns",
            "mpi_event_tick_ns",
            "mpi_handshake_ns",
            "mpi_tcp_acks",
            "mpi_arp",
            "mpi_arp_rx_ns",
            "mpi_loss_probe_ns",
            "mpi_delayed_ack_ns",
            "mpi_poll_ns",
        ],
    ),
    (
        "Co-simulation",
        &[
            "fsin_cycle_relation",
            "simics_cycle_relation",
            "sync_mode",
            "node_clock",
            "nic_latency",
            "nic_queue_bytes",
            "frame_order",
            "frame_loss",
            "util_window",
        ],
    ),
    ("INSEE compatibility", &["compat"]),
];

/// The help of the key named `name` (any of its names), as `fsin help
/// config KEY` prints it: its names, what it does, its values and its
/// default, wrapped to 80 columns; `None` for no key of that name.
pub fn key_help(name: &str) -> Option<String> {
    let k = keys().find(|k| k.names.contains(&name))?;
    Some(entry(k, &Config::default()))
}

/// One key's entry in the help: its names, then its text, values and
/// default, each wrapped to 80 columns with a 4-space indent.
fn entry(k: &KeySpec, d: &Config) -> String {
    let mut s = k.names[0].to_string();
    if k.names.len() > 1 {
        s.push_str(&format!(" (alias {})", k.names[1..].join(", ")));
    }
    s.push('\n');
    // The text as a paragraph; values and default with a hanging indent.
    let wrap = |text: &str, hang: &str| {
        let opts = textwrap::Options::new(80)
            .initial_indent("    ")
            .subsequent_indent(hang)
            .word_splitter(textwrap::WordSplitter::NoHyphenation);
        textwrap::fill(text, opts) + "\n"
    };
    s.push_str(&wrap(k.help, "    "));
    s.push_str(&wrap(&format!("values: {}", k.values), "      "));
    s.push_str(&wrap(&format!("default: {}", (k.show)(d)), "      "));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_in_exactly_one_group() {
        for k in keys() {
            let n = GROUPS
                .iter()
                .flat_map(|(_, names)| names.iter())
                .filter(|&&name| name == k.names[0])
                .count();
            assert_eq!(n, 1, "{} is in {n} groups", k.names[0]);
        }
        let listed: usize = GROUPS.iter().map(|(_, names)| names.len()).sum();
        assert_eq!(
            listed,
            keys().count(),
            "a group names a key that is not one"
        );
    }
}
