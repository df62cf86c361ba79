//! [`ConfigBuilder`]: a configuration from defaults, files and overrides,
//! in INSEE's order, and the checks of the whole that no single key can
//! make.

use super::*;
use crate::checks::{check_app, check_cube_router, check_other_router, check_skews, comb};

/// Builds configurations: defaults, then files, then overrides.
#[derive(Debug, Default)]
pub struct ConfigBuilder {
    pub(crate) config: Config,
    /// Canonical names of the keys set so far (defaults that differ by
    /// topology family apply only to keys not among them).
    pub(crate) explicit: Vec<&'static str>,
}

impl ConfigBuilder {
    /// Starts from the defaults documented in `fsin help config`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The usual sources in order: the program's `defaults`, then the
    /// configuration `file` if any, then the command line's `settings`
    /// (`key=value` texts); build it, or add more first.
    ///
    /// # Errors
    /// As [`ConfigBuilder::put`], [`ConfigBuilder::load_file`] and
    /// [`ConfigBuilder::set_text`].
    pub fn from_sources<S: AsRef<str>>(
        defaults: &[Setting],
        file: Option<&Path>,
        settings: &[S],
    ) -> Result<ConfigBuilder, ConfigError> {
        let mut b = ConfigBuilder::new();
        for d in defaults {
            b.put(d, Origin::CommandLine)?;
        }
        if let Some(path) = file {
            b.load_file(path)?;
        }
        for s in settings {
            b.set_text(s.as_ref(), Origin::CommandLine)?;
        }
        Ok(b)
    }

    /// Applies one `key=value` setting.
    ///
    /// # Errors
    /// [`ConfigError::UnknownKey`], [`ConfigError::Unsupported`] or
    /// [`ConfigError::BadValue`], naming the key and `origin`.
    pub fn set(&mut self, key: &str, value: &str, origin: Origin) -> Result<(), ConfigError> {
        let key = key.trim();
        let value = value.trim();
        if let Some(reason) = keys::unsupported(key) {
            return Err(ConfigError::Unsupported {
                key: key.to_string(),
                origin,
                reason: reason.to_string(),
            });
        }
        let spec = keys::lookup(key).ok_or_else(|| ConfigError::UnknownKey {
            key: key.to_string(),
            hint: keys::suggest(key)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default(),
            origin: origin.clone(),
        })?;
        (spec.apply)(&mut self.config, value).map_err(|reason| ConfigError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
            origin,
            reason: reason.to_string(),
        })?;
        self.explicit.push(spec.names[0]);
        Ok(())
    }

    /// Applies one typed [`Setting`], given by `origin`: its values go
    /// into the configuration as they are, checked as its keys' texts
    /// are, and its keys count as set; a [`Setting::Key`] is applied as
    /// its text.
    ///
    /// # Errors
    /// As [`ConfigBuilder::set`] for the setting's keys (a value out of
    /// its key's range, an unknown key of [`Setting::Key`]), the value
    /// named as its key's text would give it.
    pub fn put(&mut self, setting: &Setting, origin: Origin) -> Result<(), ConfigError> {
        keys::put(self, setting, origin)
    }

    /// Applies one `key=value` text (command-line form).
    ///
    /// # Errors
    /// As [`ConfigBuilder::set`], plus [`ConfigError::Syntax`] without `=`.
    pub fn set_text(&mut self, text: &str, origin: Origin) -> Result<(), ConfigError> {
        match text.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => self.set(k, v, origin),
            _ => Err(ConfigError::Syntax {
                text: text.to_string(),
                origin,
            }),
        }
    }

    /// Applies every setting of an INSEE-style file (`key=value` lines,
    /// `#` comments, blank lines) or, if the name ends in `.toml`, a TOML
    /// table with the same keys.
    ///
    /// # Errors
    /// [`ConfigError::File`] if unreadable or not TOML; any setting error
    /// with its file and line.
    pub fn load_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        use crate::files::{read_bounded, setting_lines, ReadError};
        let name = path.display().to_string();
        let bad = |reason: String| ConfigError::File {
            path: name.clone(),
            reason,
        };
        let text = read_bounded(path, MAX_CONFIG_BYTES).map_err(|e| match e {
            ReadError::Io(e) => bad(e.to_string()),
            ReadError::TooLong => bad(format!(
                "longer than {} MiB: not a configuration file",
                MAX_CONFIG_BYTES >> 20
            )),
        })?;
        if path.extension().is_some_and(|e| e == "toml") {
            return self.load_toml(&name, &text);
        }
        for (line, setting) in setting_lines(&text) {
            let origin = Origin::File {
                path: name.clone(),
                line,
            };
            self.set_text(setting, origin)?;
        }
        Ok(())
    }

    fn load_toml(&mut self, name: &str, text: &str) -> Result<(), ConfigError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::File {
                path: name.to_string(),
                reason: e.to_string(),
            })?;
        for (key, value) in &table {
            let line = text[..]
                .lines()
                .position(|l| l.trim_start().starts_with(key.as_str()))
                .map_or(0, |p| p + 1);
            let origin = Origin::File {
                path: name.to_string(),
                line,
            };
            let v = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                // As words: a flag takes them, a number refuses them.
                toml::Value::Boolean(b) => b.to_string(),
                toml::Value::Table(t) => {
                    let header = format!("[{key}]");
                    let line = text
                        .lines()
                        .position(|l| l.trim_start().starts_with(&header))
                        .map_or(0, |p| p + 1);
                    let keys: Vec<&str> = t.keys().map(String::as_str).collect();
                    return Err(ConfigError::File {
                        path: name.to_string(),
                        reason: format!(
                            "line {line}: `{header}`: TOML sections are not read: write the keys at the top level of the file, before any [section] ({})",
                            keys.iter()
                                .map(|k| format!("{k} = ..."))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    });
                }
                other => {
                    return Err(ConfigError::BadValue {
                        key: key.clone(),
                        value: other.to_string(),
                        origin,
                        reason: "expected a string, number or boolean".into(),
                    })
                }
            };
            self.set(key, &v, origin)?;
        }
        Ok(())
    }

    /// Checks combinations and returns the configuration, with INSEE's
    /// implied adjustments made explicit (e.g. pre-routed injection modes
    /// need one injection queue per dimension and direction).
    ///
    /// # Errors
    /// [`ConfigError::Combination`] naming the offending key.
    pub fn build(mut self) -> Result<Config, ConfigError> {
        if self.config.net.compat == Compat::Insee {
            for (key, value) in INSEE_DEFAULTS {
                if !self.explicit.contains(&key) {
                    self.set(key, value, Origin::CommandLine)?;
                }
            }
        }
        let mut c = self.config;
        check_shape(&c)?;
        if let Some(why) = c.cosim.slice_refused(c.cosim.slice.net) {
            return Err(comb("sync_mode", why));
        }
        if c.net.topo == TopoKind::TwistedTorus {
            check_skews(&c)?;
        } else if c.net.skews != Skews::default() {
            return Err(comb(
                "sk_xy",
                "skews (sk_xy, sk_xz, ...) apply only to topo=ttorus_...",
            ));
        }
        check_hol(&mut c, &self.explicit)?;
        if c.net.topo.is_cube() && c.net.faults == 0 {
            check_cube_router(&mut c)?;
        } else {
            check_other_router(&mut c, &self.explicit)?;
        }
        checks::check_updown_root(&c)?;
        if c.net.faults > 0 {
            fsin_model::topology::Topology::check_faults(&c.net)
                .map_err(|e| comb("faults", e.reason.to_string()))?;
        }
        if c.net.hol {
            c.net.bsize = [0; 3];
        }
        check_app(&mut c)?;
        check_bursts(&mut c)?;
        if c.method.cycles == 0 && c.method.nsamples == 0 {
            return Err(comb("nsamples", "need at least one sample (or cycles=N)"));
        }
        Ok(c)
    }
}

/// The network's shape against its family: link directions, parameters
/// and node counts the traffic pattern needs.
fn check_shape(c: &Config) -> Result<(), ConfigError> {
    if c.net.topo == TopoKind::Mesh && c.net.nways != 2 {
        return Err(comb("nways", "meshes are always bidirectional (nways=2)"));
    }
    if !c.net.topo.is_cube() && c.net.nways != 2 {
        return Err(comb(
            "nways",
            "tree and hypercube links are full-duplex (nways=2)",
        ));
    }
    if matches!(c.net.topo, TopoKind::Midimew | TopoKind::Circulant) {
        if c.net.dims.len() != 1 {
            return Err(comb(
                "topo",
                "midimew takes one parameter, the number of nodes (midimew_N)",
            ));
        }
    } else if c.net.dims.iter().any(|&k| k < 2) {
        return Err(comb("topo", "every dimension needs at least 2 nodes"));
    }
    if c.traffic.tpattern == PatternKind::HotRegion && c.net.dims.iter().product::<u32>() <= 8 {
        return Err(comb(
            "tpattern",
            "hotregion needs more than 8 nodes (its region is the first eighth)",
        ));
    }
    if let PatternKind::Permutation(p) = c.traffic.tpattern {
        let nodes: u32 = c.net.dims.iter().product();
        if p.needs_power_of_two() && !nodes.is_power_of_two() {
            return Err(comb(
                "tpattern",
                format!("a bit permutation needs a power-of-two number of nodes, not {nodes}"),
            ));
        }
    }
    Ok(())
}

/// The SpiNNaker router (`hol=1`, the default on SpiNNaker without
/// faults) against the keys it has no use for, given explicitly.
fn check_hol(c: &mut Config, explicit: &[&'static str]) -> Result<(), ConfigError> {
    if c.net.topo == TopoKind::Spinnaker && c.net.faults == 0 && !explicit.contains(&"hol") {
        c.net.hol = true;
    }
    if c.net.hol {
        let clash = [
            ("amode", "the SpiNNaker router has no output arbitration: it routes one packet at a time"),
            ("extract", "the SpiNNaker router holds a blocked packet; extraction would bypass it"),
            ("bsize", "the SpiNNaker router has no bubble flow control (a bubble in the local queue could only be made by the engine the waiting packet holds); it breaks deadlocks by discarding after hol_timeout"),
        ];
        // A key given at the value the SpiNNaker router implies anyway
        // (as a built configuration's own settings give it) is no clash.
        let implied = |k: &str| match k {
            "amode" => c.net.amode == NetworkSpec::default().amode,
            "extract" => c.net.extract == NetworkSpec::default().extract,
            _ => c.net.bsize == [0; 3],
        };
        if let Some((key, why)) = clash
            .iter()
            .find(|(k, _)| explicit.contains(k) && !implied(k))
        {
            return Err(comb(key, format!("with hol=1: {why}")));
        }
        if c.net.wormhole {
            return Err(comb(
                "switching",
                "with hol=1: the SpiNNaker router's discards take whole packets from its queues (virtual cut-through)",
            ));
        }
        if !c.net.topo.is_cube() || c.net.faults > 0 {
            return Err(comb("hol", "the SpiNNaker router is a router of fault-free direct networks; trees, hypercubes and faulty networks have their own"));
        }
    }
    Ok(())
}

/// Global congestion control and bursts (`shotmode`) against the
/// workloads they cannot drive; a burst's default size.
fn check_bursts(c: &mut Config) -> Result<(), ConfigError> {
    if c.traffic.global_cc < 100.0 && (c.traffic.shotmode || c.traffic.app.active()) {
        return Err(comb(
            "global_cc",
            "global congestion control applies to independent sources, not to bursts, traces or kernels",
        ));
    }
    if c.traffic.shotmode {
        let clash = if c.traffic.app.active() {
            Some(("tracefile", "traces and kernels"))
        } else if c.traffic.longmessages > 1 {
            Some(("longmessages", "long messages"))
        } else if c.traffic.trigger_rate > 0.0 {
            Some(("trigger_rate", "reactive traffic"))
        } else {
            None
        };
        if let Some((key, what)) = clash {
            return Err(comb(
                key,
                format!("{what} cannot be combined with shotmode=1"),
            ));
        }
        if c.net.compat == Compat::Insee && c.traffic.load <= 0.0 {
            return Err(comb(
                "load",
                "compat=insee makes Bernoulli trials at load during a burst, as INSEE does: \
                 a burst at load 0 never ends",
            ));
        }
        if c.traffic.shotsize == 0 {
            // INSEE: a burst of one packet to every other node.
            c.traffic.shotsize = c.net.dims.iter().product::<u32>() - 1;
        }
    }
    Ok(())
}
