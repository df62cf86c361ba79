//! `mpi_profile=PATH`: a calibrated profile's `mpi_*` settings applied
//! where the key stands, anything else refused naming the file's line.

use fsin_config::{Config, MpiProfile};
use fsin_trace::mpi::costs::Side;

/// A file of `text` in a directory of this test's own, removed after.
struct Profile(std::path::PathBuf);

impl Profile {
    fn new(name: &str, text: &str) -> Profile {
        let dir = std::env::temp_dir().join(format!("fsin-profile-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.conf");
        std::fs::write(&path, text).unwrap();
        Profile(path)
    }

    fn key(&self) -> String {
        format!("mpi_profile={}", self.0.display())
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn a_profile_sets_the_mpi_layers_keys() {
    let p = Profile::new(
        "ok",
        "# made by fsin qemu --calibrate\n\nmpi_costs=8:1000:2000,1008:3000:2000 # a table\nmpi_wake_ns=500\n",
    );
    let c = Config::from_settings(&[p.key().as_str()]).unwrap();
    let m = &c.traffic.app.mpi;
    assert_eq!(m.wake_ns, 500);
    // Half way between the two points: 2,000 ns sending, 2,000 receiving.
    assert_eq!(m.costs.ns(Side::Send, 508, m.eager_limit), 2000.0);
    assert_eq!(m.costs.ns(Side::Recv, 508, m.eager_limit), 2000.0);
    assert_eq!(c.traffic.app.mpi_profile, MpiProfile::File(p.0.clone()));
    // A key after it overrides it.
    let c = Config::from_settings(&[p.key().as_str(), "mpi_wake_ns=7"]).unwrap();
    assert_eq!(c.traffic.app.mpi.wake_ns, 7);
    // The straight line's key after it applies the straight line: the
    // table is emptied, the profile's other costs stay.
    let c = Config::from_settings(&[p.key().as_str(), "mpi_message_ns=5"]).unwrap();
    assert!(c.traffic.app.mpi.costs.is_empty());
    assert_eq!(
        (c.traffic.app.mpi.message_ns, c.traffic.app.mpi.wake_ns),
        (5, 500)
    );
}

#[test]
fn a_profile_with_other_keys_or_bad_values_is_refused_at_its_line() {
    let p = Profile::new(
        "net",
        "mpi_wake_ns=1\n# the network is not the MPI layer's\ntopo=torus_4\n",
    );
    let e = Config::from_settings(&[p.key().as_str()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("p.conf:3") && e.contains("`topo`"), "{e}");
    let p = Profile::new("bad", "mpi_costs=8:1:2,4:1:2\n");
    let e = Config::from_settings(&[p.key().as_str()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("p.conf:1") && e.contains("not more than"), "{e}");
    let p = Profile::new("self", "mpi_profile=elsewhere\n");
    let e = Config::from_settings(&[p.key().as_str()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("p.conf:1"), "{e}");
    let e = Config::from_settings(&["mpi_profile=/nonexistent/p.conf"]).unwrap_err();
    assert!(e.to_string().contains("cannot read it"), "{e}");
}

/// Without `mpi_profile` the built-in profile applies: its cost table
/// (the calibration's sizes, ten and more) and the kernel's receives of
/// a frame and of an ARP request and the set-up of a peer on the
/// default guests (each more than 0; its wake-up, fitted against the
/// exchanges, may come out 0);
/// `mpi_profile=none` gives the model without a profile (the straight
/// line of 149,000 ns a message and 24,000 ps a byte, nothing else), and
/// `mpi_profile=default` the built-in one back.
#[test]
fn the_built_in_profile_is_the_default_and_none_is_the_straight_line() {
    let c = Config::from_settings::<&str>(&[]).unwrap();
    let m = &c.traffic.app.mpi;
    assert_eq!(c.traffic.app.mpi_profile, MpiProfile::BuiltIn);
    assert!(m.costs.to_string().split(',').count() >= 10, "{}", m.costs);
    assert!(m.rx_ns > 0 && m.arp_rx_ns > 0 && m.connect_ns > 0, "{m:?}");
    let none = Config::from_settings(&["mpi_profile=none"]).unwrap();
    let n = &none.traffic.app.mpi;
    assert!(n.costs.is_empty());
    assert_eq!((n.message_ns, n.byte_ps), (149_000, 24_000));
    assert_eq!(
        (n.wake_ns, n.rx_ns, n.arp_rx_ns, n.connect_ns),
        (0, 0, 0, 0)
    );
    assert_eq!(none.traffic.app.mpi_profile, MpiProfile::None);
    let empty = Config::from_settings(&["mpi_profile="]).unwrap();
    assert_eq!(empty.traffic.app.mpi, *n);
    let back = Config::from_settings(&["mpi_profile=none", "mpi_profile=default"]).unwrap();
    assert_eq!(back.traffic.app.mpi, *m);
    assert_eq!(back.traffic.app.mpi_profile, MpiProfile::BuiltIn);
    // The straight line's key replaces the built-in table, not its other
    // costs; mpi_profile=none before it leaves those out too.
    let c = Config::from_settings(&["mpi_byte_ps=5"]).unwrap();
    assert!(c.traffic.app.mpi.costs.is_empty());
    assert_eq!(
        (c.traffic.app.mpi.byte_ps, c.traffic.app.mpi.wake_ns),
        (5, m.wake_ns)
    );
    let c = Config::from_settings(&["mpi_profile=none", "mpi_byte_ps=5"]).unwrap();
    assert_eq!(
        (c.traffic.app.mpi.byte_ps, c.traffic.app.mpi.wake_ns),
        (5, 0)
    );
}

/// A profile starts the costs afresh where it stands: a cost given
/// before it is dropped (the file's replace it, the built-in one's too),
/// a key after it stays, and the MPI layer's other keys (segments,
/// eager limit) stay wherever they are.
#[test]
fn a_profile_replaces_the_costs_before_it() {
    let p = Profile::new("fresh", "mpi_costs=8:1000:2000\n");
    let c = Config::from_settings(&[
        "mpi_wake_ns=9",
        "mpi_irq_window_ns=128000",
        "mpi_segment_bytes=8948",
        "mpi_eager_limit=4096",
        p.key().as_str(),
        "mpi_rx_ns=3",
    ])
    .unwrap();
    let m = &c.traffic.app.mpi;
    assert_eq!((m.wake_ns, m.rx_ns, m.connect_ns), (0, 3, 0));
    assert_eq!(m.irq_window_ns, 0, "a profile starts the window afresh too");
    assert_eq!(m.costs.ns(Side::Send, 8, m.eager_limit), 1000.0);
    assert_eq!((m.segment_bytes, m.eager_limit), (8948, 4096));
    let c = Config::from_settings(&["mpi_segment_bytes=8948", "mpi_profile=none"]).unwrap();
    assert_eq!(c.traffic.app.mpi.segment_bytes, 8948);
}
