//! Typed settings (`Setting`): what a command gives as a value
//! means what its key's text means, is checked as that text is, and
//! counts as set.

use fsin_config::{
    Config, ConfigBuilder, ConfigError, Origin, Setting, SliceRatio, SyncMode, MAX_SLICE_CYCLES,
};

fn typed(settings: &[Setting]) -> Result<Config, ConfigError> {
    let mut b = ConfigBuilder::new();
    for s in settings {
        b.put(s, Origin::CommandLine)?;
    }
    b.build()
}

#[test]
fn a_typed_setting_gives_the_configuration_of_its_text() {
    let t = typed(&[
        Setting::Torus(vec![8]),
        Setting::Slice(SliceRatio { net: 20, node: 100 }),
        Setting::NicLatency(20),
        Setting::SyncMode(SyncMode::Exact),
        Setting::NodeClockHz(1_000_000_000),
        Setting::Rseed(7),
        Setting::Key {
            key: "intransit_pr".into(),
            value: "1".into(),
        },
    ])
    .unwrap();
    // Written by hand in the keys' own syntax, not from the typed values.
    let text = Config::from_settings(&[
        "topo=torus_8",
        "fsin_cycle_relation=20",
        "simics_cycle_relation=100",
        "nic_latency=20",
        "sync_mode=exact",
        "node_clock=1000000000",
        "rseed=7",
        "intransit_pr=1",
    ])
    .unwrap();
    assert_eq!(t.settings(), text.settings());
    assert_eq!(t.net.dims, vec![8]);
    assert_eq!(t.cosim.slice, SliceRatio { net: 20, node: 100 });
    assert_eq!(t.cosim.sync_mode, SyncMode::Exact);
    let two = typed(&[Setting::Torus(vec![4, 2])]).unwrap();
    assert_eq!(two.net.dims, vec![4, 2]);
}

#[test]
fn a_typed_value_out_of_its_keys_range_is_refused_naming_the_key() {
    let big = SliceRatio {
        net: MAX_SLICE_CYCLES + 1,
        node: 1,
    };
    match typed(&[Setting::Slice(big)]) {
        Err(ConfigError::BadValue { key, .. }) => assert_eq!(key, "fsin_cycle_relation"),
        other => panic!("{other:?}"),
    }
    match typed(&[Setting::Key {
        key: "no_such_key".into(),
        value: "1".into(),
    }]) {
        Err(ConfigError::UnknownKey { key, .. }) => assert_eq!(key, "no_such_key"),
        other => panic!("{other:?}"),
    }
    // Checked together with the rest at build: exact mode needs slices no
    // longer than nic_latency (20 > 10).
    let exact = typed(&[
        Setting::Slice(SliceRatio { net: 20, node: 100 }),
        Setting::NicLatency(10),
        Setting::SyncMode(SyncMode::Exact),
    ]);
    assert!(
        matches!(exact, Err(ConfigError::Combination { .. })),
        "{exact:?}"
    );
}

#[test]
fn a_typed_topology_counts_as_set_under_insee_defaults() {
    // compat=insee fills the keys a configuration leaves unset with
    // INSEE's defaults (topo=torus_4_4): a typed ring is set, not left.
    let mut b =
        ConfigBuilder::from_sources(&[Setting::Torus(vec![6])], None, &["compat=insee"]).unwrap();
    b.put(&Setting::Rseed(3), Origin::CommandLine).unwrap();
    let c = b.build().unwrap();
    assert_eq!(c.net.dims, vec![6]);
    let unset = Config::from_settings(&["compat=insee"]).unwrap();
    assert_eq!(unset.net.dims, vec![4, 4]);
}
