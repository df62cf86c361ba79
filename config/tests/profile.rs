//! `mpi_profile=PATH`: a calibrated profile's `mpi_*` settings applied
//! where the key stands, anything else refused naming the file's line.

use fsin_config::Config;
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
    assert_eq!(m.costs.ns(Side::Send, 508), 2000.0);
    assert_eq!(m.costs.ns(Side::Recv, 508), 2000.0);
    assert_eq!(c.traffic.app.mpi_profile.as_deref(), Some(p.0.as_path()));
    // A key after it overrides it.
    let c = Config::from_settings(&[p.key().as_str(), "mpi_wake_ns=7"]).unwrap();
    assert_eq!(c.traffic.app.mpi.wake_ns, 7);
    // The straight line's keys beside a table would do nothing: refused,
    // unless the table is emptied after them.
    let e = Config::from_settings(&[p.key().as_str(), "mpi_message_ns=5"]).unwrap_err();
    assert!(e.to_string().contains("mpi_message_ns"), "{e}");
    let c = Config::from_settings(&[p.key().as_str(), "mpi_message_ns=5", "mpi_costs="]).unwrap();
    assert!(c.traffic.app.mpi.costs.is_empty());
    assert_eq!(c.traffic.app.mpi.message_ns, 5);
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
