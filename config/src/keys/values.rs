//! The values of the configuration keys: the names each choice is
//! spelled with, the parsers and printers of numbers, topologies, packet
//! lengths, bubbles and placements that the table in the parent module
//! points to.

use std::path::PathBuf;

use fsin_traffic::pattern::Permutation;
use fsin_traffic::placement::{PlacementKind, PLACEMENTS};
use fsin_traffic::replay::TraceMode;

use crate::{
    Arbitration, Compat, Config, Consumption, CpuUnits, FamilyParams, FrameOrder, InjectionMode,
    PatternKind, RequestMode, RoutingOrder, SyncMode, TopoKind, VcManagement,
};

pub(super) fn choice<T: Copy>(value: &str, table: &[(&'static str, T)]) -> Result<T, ValueError> {
    table
        .iter()
        .find(|(n, _)| *n == value)
        .map(|(_, v)| *v)
        .ok_or_else(|| ValueError::OneOf(table.iter().map(|(n, _)| *n).collect()))
}

pub(super) fn name_of<T: PartialEq>(v: T, table: &[(&'static str, T)]) -> String {
    table
        .iter()
        .find(|(_, t)| *t == v)
        .map_or_else(String::new, |(n, _)| (*n).to_string())
}

pub(super) fn int(value: &str, min: u64, max: u64) -> Result<u64, ValueError> {
    let v: u64 = value
        .parse()
        .map_err(|_| ValueError::Integer { min, max })?;
    within(v, min, max)
}

/// `v` if it lies in `min..=max` (a typed value's check, as [`int`]
/// checks its text).
pub(super) fn within(v: u64, min: u64, max: u64) -> Result<u64, ValueError> {
    if v < min || v > max {
        return Err(ValueError::Integer { min, max });
    }
    Ok(v)
}

/// The largest size of a dimension of a torus, mesh or circulant.
pub(super) const MAX_SIZE: u32 = 1 << 16;

pub(super) fn small(value: &str, min: u32, max: u32) -> Result<u32, ValueError> {
    int(value, min.into(), max.into()).map(|v| v as u32)
}

pub(super) fn real(value: &str, min: f64, max: f64) -> Result<f64, ValueError> {
    let v: f64 = value.parse().map_err(|_| ValueError::Number { min, max })?;
    if !(min..=max).contains(&v) {
        return Err(ValueError::Number { min, max });
    }
    Ok(v)
}

pub(super) fn flag(value: &str) -> Result<bool, ValueError> {
    match value {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ValueError::Expected("0 or 1")),
    }
}

/// Splits INSEE multi-part values (`torus_8_8`, `16_4`) on `_` or space.
pub(super) fn parts(value: &str) -> Vec<&str> {
    value.split(['_', ' ']).filter(|p| !p.is_empty()).collect()
}

pub(super) const TOPOS: &[(&str, TopoKind)] = &[
    ("torus", TopoKind::Torus),
    ("mesh", TopoKind::Mesh),
    ("ttorus", TopoKind::TwistedTorus),
    ("midimew", TopoKind::Midimew),
    ("circulant", TopoKind::Circulant),
    ("fattree", TopoKind::FatTree),
    ("thintree", TopoKind::ThinTree),
    ("slimtree", TopoKind::SlimTree),
    ("hypercube", TopoKind::Hypercube),
    ("spinnaker", TopoKind::Spinnaker),
    ("spin", TopoKind::Spinnaker),
    ("icube", TopoKind::Icube),
    ("tricube", TopoKind::Icube),
];
pub(super) const VCS: &[(&str, VcManagement)] = &[
    ("bubble", VcManagement::Bubble),
    ("dally", VcManagement::Dally),
    ("double", VcManagement::Double),
];
pub(super) const RMODES: &[(&str, RequestMode)] = &[
    ("oblivious", RequestMode::Oblivious),
    ("random", RequestMode::Random),
    ("shortest", RequestMode::Shortest),
    ("smart", RequestMode::Smart),
    ("static", RequestMode::Static),
    ("trc", RequestMode::Trc),
    ("basic", RequestMode::Basic),
    ("improved", RequestMode::Improved),
    ("adaptive", RequestMode::Adaptive),
    ("doubleob", RequestMode::DoubleOblivious),
    ("doubleadap", RequestMode::DoubleAdaptive),
];
pub(super) const ROUTINGS: &[(&str, RoutingOrder)] = &[
    ("dim", RoutingOrder::Dimension),
    ("dir", RoutingOrder::Direction),
    ("static", RoutingOrder::Static),
    ("adaptive", RoutingOrder::Adaptive),
    ("shortest", RoutingOrder::Shortest),
    ("duato", RoutingOrder::Duato),
    ("updown", RoutingOrder::Adaptive),
];
pub(super) const IMODES: &[(&str, InjectionMode)] = &[
    ("shortest", InjectionMode::Shortest),
    ("dor", InjectionMode::Dor),
    ("dsh", InjectionMode::DorShortest),
    ("shp", InjectionMode::ShortestProfitable),
    ("lpath", InjectionMode::LongestPath),
];
pub(super) const AMODES: &[(&str, Arbitration)] = &[
    ("rr", Arbitration::RoundRobin),
    ("fifo", Arbitration::Fifo),
    ("longest", Arbitration::Longest),
    ("random", Arbitration::Random),
    ("age", Arbitration::Age),
    ("oldest", Arbitration::Age),
];
pub(super) const CMODES: &[(&str, Consumption)] = &[
    ("single", Consumption::Single),
    ("multiple", Consumption::Multiple),
];
pub(super) const SYNC_MODES: &[(&str, SyncMode)] = &[
    ("lockstep", SyncMode::Lockstep),
    ("parallel", SyncMode::Parallel),
    ("exact", SyncMode::Exact),
];
pub(super) const FRAME_ORDERS: &[(&str, FrameOrder)] =
    &[("pair", FrameOrder::Pair), ("network", FrameOrder::Network)];
impl SyncMode {
    /// `lockstep`, `parallel` or `exact` (the values of `sync_mode`);
    /// `None` for any other text.
    pub fn parse(text: &str) -> Option<SyncMode> {
        choice(text, SYNC_MODES).ok()
    }
}

impl std::fmt::Display for SyncMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&name_of(*self, SYNC_MODES))
    }
}

pub(super) const PATTERNS: &[(&str, PatternKind)] = &[
    ("uniform", PatternKind::Uniform),
    ("random", PatternKind::Uniform),
    ("hotregion", PatternKind::HotRegion),
    ("hotspot", PatternKind::HotSpot),
    ("semi", PatternKind::Semi),
    (
        "distribute",
        PatternKind::Distribute {
            random_start: false,
        },
    ),
    ("rsdist", PatternKind::Distribute { random_start: true }),
    (
        "complement",
        PatternKind::Permutation(Permutation::Complement),
    ),
    ("reversal", PatternKind::Permutation(Permutation::Reversal)),
    (
        "transpose",
        PatternKind::Permutation(Permutation::Transpose),
    ),
    (
        "butterfly",
        PatternKind::Permutation(Permutation::Butterfly),
    ),
    ("shuffle", PatternKind::Permutation(Permutation::Shuffle)),
    ("tornado", PatternKind::Permutation(Permutation::Tornado)),
    ("local", PatternKind::Local),
    ("population", PatternKind::Distance { histogram: false }),
    ("pop", PatternKind::Distance { histogram: false }),
    ("histogram", PatternKind::Distance { histogram: true }),
    ("hist", PatternKind::Distance { histogram: true }),
    ("trace", PatternKind::Trace),
];
pub(super) const COMPAT: &[(&str, Compat)] = &[("none", Compat::None), ("insee", Compat::Insee)];

pub(super) const CPU_UNITS: &[(&str, CpuUnits)] = &[
    ("cycles", CpuUnits::Cycles),
    ("cycle", CpuUnits::Cycles),
    ("ms", CpuUnits::Ms),
    ("milliseconds", CpuUnits::Ms),
    ("us", CpuUnits::Us),
    ("microseconds", CpuUnits::Us),
    ("ns", CpuUnits::Ns),
    ("nanoseconds", CpuUnits::Ns),
];
pub(super) const TRACE_MODES: &[(&str, TraceMode)] = &[
    ("causal", TraceMode::Causal),
    ("at_will", TraceMode::AtWill),
    ("inject", TraceMode::AtWill),
];

/// `placement=NAME[_SHIFT|_FILE][_TASKS[_INSTANCES]]`, as INSEE parses it
/// (a file name may contain `_`: up to two trailing numbers are counts).
pub(super) fn set_placement(c: &mut Config, value: &str) -> Result<(), ValueError> {
    let (name, rest) = value.split_once('_').unwrap_or((value, ""));
    let kind = choice(name, PLACEMENTS)?;
    let mut p: Vec<&str> = rest.split('_').filter(|p| !p.is_empty()).collect();
    let pl = &mut c.traffic.app.placement;
    pl.kind = kind;
    pl.shift = 0;
    pl.file = None;
    match kind {
        PlacementKind::Shift if !p.is_empty() => {
            pl.shift = small(p.remove(0), 0, u32::MAX)?;
        }
        PlacementKind::File => {
            let counts = p
                .iter()
                .rev()
                .take(2)
                .take_while(|s| s.bytes().all(|b| b.is_ascii_digit()))
                .count()
                .min(p.len().saturating_sub(1));
            let path = p[..p.len() - counts].join("_");
            if path.is_empty() {
                return Err(ValueError::PlacementFile);
            }
            pl.file = Some(PathBuf::from(path));
            p.drain(..p.len() - counts);
        }
        _ => {}
    }
    let mut rest = p.into_iter();
    pl.tasks = rest.next().map_or(Ok(0), |v| small(v, 0, u32::MAX))?;
    pl.instances = rest.next().map_or(Ok(0), |v| small(v, 0, 1 << 16))?;
    if let Some(extra) = rest.next() {
        return Err(ValueError::AfterInstances(extra.to_string()));
    }
    Ok(())
}

pub(super) fn show_placement(c: &Config) -> String {
    let pl = &c.traffic.app.placement;
    let mut s = name_of(pl.kind, PLACEMENTS);
    match pl.kind {
        PlacementKind::Shift => s.push_str(&format!("_{}", pl.shift)),
        PlacementKind::File => {
            s.push('_');
            s.push_str(
                &pl.file
                    .as_deref()
                    .unwrap_or(std::path::Path::new(""))
                    .display()
                    .to_string(),
            );
        }
        _ => {}
    }
    if pl.tasks > 0 || pl.instances > 0 {
        s.push_str(&format!("_{}_{}", pl.tasks, pl.instances));
    }
    s
}

/// `circpk_A_K` (INSEE): the circulant C_N(1, 2KA - 1) with N = 2A^2 and
/// gcd(A, K) = 1; the jump is taken as its shorter equivalent `<= N/2`.
pub(super) fn set_circpk(c: &mut Config, p: &[&str]) -> Result<(), ValueError> {
    let expect = ValueError::Expected("circpk_A_K with A >= 2, K >= 1 and gcd(A, K) = 1");
    let [a, k] = p else {
        return Err(expect);
    };
    let (a, k) = (small(a, 2, 1 << 12)?, small(k, 1, 1 << 12)?);
    let gcd = |mut x: u32, mut y: u32| {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    if gcd(a, k) != 1 {
        return Err(expect);
    }
    let n = 2 * a * a;
    let jump = (2 * k * a - 1) % n;
    let jump = jump.min(n - jump);
    if jump < 2 {
        return Err(ValueError::NotCirculant { a, k, jump });
    }
    c.net.topo = TopoKind::Circulant;
    c.net.dims = vec![n];
    c.net.family = FamilyParams::Circulant { jump };
    Ok(())
}

/// Most compute nodes of any topology (1,048,576): node ids and counts
/// then fit every index the engine computes.
pub const MAX_NODES: u64 = 1 << 20;

/// `fattree_K_N`, `thintree_K_K'_N`, `slimtree_K_K'_N` (k downward and k'
/// upward ports per switch, n levels) and `hypercube_N` (2^N nodes).
pub(super) fn set_tree(c: &mut Config, kind: TopoKind, p: &[&str]) -> Result<(), ValueError> {
    let expect = match kind {
        TopoKind::FatTree => "fattree_K_N with K >= 2 (ports down = up) and N >= 1 levels",
        TopoKind::ThinTree => {
            "thintree_K_K'_N with K >= 2 down, 1 <= K' <= K up ports and N >= 1 levels"
        }
        TopoKind::SlimTree => {
            "slimtree_K_K'_N with K >= 2 down, K' up ports dividing K and N >= 2 levels"
        }
        _ => "hypercube_N with 1 <= N <= 20 dimensions",
    };
    let v = p
        .iter()
        .map(|s| small(s, 1, MAX_SIZE))
        .collect::<Result<Vec<u32>, _>>()
        .map_err(|e| ValueError::In(expect, Box::new(e)))?;
    let ports = match (kind, v.as_slice()) {
        (TopoKind::FatTree, &[k, n]) if k >= 2 => [k, k, n],
        (TopoKind::ThinTree, &[k, up, n]) if k >= 2 && up <= k => [k, up, n],
        (TopoKind::SlimTree, &[k, up, n]) if k >= 2 && up <= k && k % up == 0 && n >= 2 => {
            [k, up, n]
        }
        (TopoKind::Hypercube, &[n]) if n <= 20 => [0, 0, n],
        _ => return Err(ValueError::Expected(expect)),
    };
    let family = match ports {
        [0, 0, dimensions] => FamilyParams::Hypercube { dimensions },
        [down, up, levels] => FamilyParams::Tree { down, up, levels },
    };
    let [k, up, n] = ports.map(u64::from);
    let nodes = match kind {
        TopoKind::Hypercube => Some(1u64 << n),
        TopoKind::SlimTree => (k / up)
            .checked_pow((n - 1) as u32)
            .map(|x| x.saturating_mul(k * up)),
        _ => k.checked_pow(n as u32),
    };
    let nodes = nodes
        .filter(|&x| x <= MAX_NODES)
        .ok_or(ValueError::MoreThanMaxNodes)?;
    c.net.topo = kind;
    c.net.family = family;
    c.net.dims = vec![nodes as u32];
    Ok(())
}

/// `topo=file:PATH`: the graph of a topology file
/// ([`crate::topology_file`]), its links' latencies included, and
/// up*/down* tables that fit.
fn set_file_topo(c: &mut Config, path: &str) -> Result<(), ValueError> {
    let file = |what: String| ValueError::TopologyFile(what);
    let g = crate::topology_file::read(std::path::Path::new(path), crate::topology_file::MAX_PORTS)
        .map_err(|e| file(e.to_string()))?;
    let nodes = g.node_router.len() as u64;
    let routers = u64::from(g.routers) + if g.is_direct() { 0 } else { nodes };
    if nodes > MAX_NODES {
        return Err(ValueError::MoreThanMaxNodes);
    }
    if routers * nodes > fsin_model::topology::tables::MAX_ENTRIES as u64 {
        return Err(file(format!(
            "{path}: up*/down* routing keeps tables of routers x nodes entries; {routers} x {nodes} is more than {}",
            fsin_model::topology::tables::MAX_ENTRIES
        )));
    }
    c.net.topo = TopoKind::File;
    c.net.dims = vec![nodes as u32];
    c.net.family = FamilyParams::File {
        path: path.to_string(),
        graph: std::sync::Arc::new(g),
    };
    Ok(())
}

pub(super) fn set_topo(c: &mut Config, value: &str) -> Result<(), ValueError> {
    if let Some(path) = value.strip_prefix("file:") {
        return set_file_topo(c, path);
    }
    let p = parts(value);
    if p.first() == Some(&"circpk") {
        return set_circpk(c, &p[1..]);
    }
    let generated = [
        ("dragonfly", "dragonfly"),
        ("slimfly", "Slim Fly"),
        ("jellyfish", "Jellyfish"),
        ("hyperx", "HyperX"),
    ];
    if let Some(&(_, name)) = generated.iter().find(|(w, _)| p.first() == Some(w)) {
        return Err(ValueError::Generated(name, value.to_string()));
    }
    let kind = choice(p.first().copied().unwrap_or(""), TOPOS).map_err(|e| match e {
        ValueError::OneOf(names) => ValueError::UnknownTopology(names),
        other => other,
    })?;
    if kind.is_tree() || kind == TopoKind::Hypercube {
        return set_tree(c, kind, &p[1..]);
    }
    let sizes = p[1..]
        .iter()
        .map(|s| small(s, 1, MAX_SIZE))
        .collect::<Result<Vec<u32>, _>>()
        .map_err(|e| ValueError::In("sizes", Box::new(e)))?;
    let expect = match kind {
        TopoKind::Spinnaker => "spinnaker_X_Y (or INSEE's spinnaker_X_Y_1) with X, Y >= 3",
        TopoKind::Midimew => "midimew_N with N >= 5",
        TopoKind::Circulant => "circulant_N_S with N >= 5 and 2 <= S <= N/2",
        _ => "1 to 3 sizes, e.g. torus_8_8 or mesh_4_4_4",
    };
    if kind == TopoKind::Icube {
        let expect = "icube_N_L_X[_Y[_Z]]: N >= 1 nodes per switch, L >= 1 links per direction, 1 to 3 torus sizes >= 2";
        let &[n, l, ref torus @ ..] = sizes.as_slice() else {
            return Err(ValueError::Expected(expect));
        };
        if n < 1 || l < 1 || torus.is_empty() || torus.len() > 3 || torus.iter().any(|&k| k < 2) {
            return Err(ValueError::Expected(expect));
        }
        let nodes = torus.iter().fold(u64::from(n), |a, &k| a * u64::from(k));
        if nodes > MAX_NODES {
            return Err(ValueError::MoreThanMaxNodes);
        }
        c.net.topo = kind;
        c.net.family = FamilyParams::Icube {
            per_switch: n,
            lanes: l,
            switches: torus.to_vec(),
        };
        c.net.dims = vec![nodes as u32];
        return Ok(());
    }
    if kind == TopoKind::Spinnaker {
        let (&[x, y] | &[x, y, 1]) = sizes.as_slice() else {
            return Err(ValueError::Expected(expect));
        };
        if x < 3 || y < 3 {
            return Err(ValueError::Expected(expect));
        }
        if u64::from(x) * u64::from(y) > MAX_NODES {
            return Err(ValueError::TooManyNodes(vec![x, y]));
        }
        c.net.topo = kind;
        c.net.dims = vec![x, y];
        c.net.family = FamilyParams::Grid;
        return Ok(());
    }
    set_grid(c, kind, sizes, expect)
}

/// A torus, mesh, midimew or circulant of `sizes` (each already in
/// `1..=MAX_SIZE`); `expect` says what the family takes.
pub(super) fn set_grid(
    c: &mut Config,
    kind: TopoKind,
    sizes: Vec<u32>,
    expect: &'static str,
) -> Result<(), ValueError> {
    match (kind, sizes.len()) {
        (TopoKind::Midimew, 1) if sizes[0] >= 5 => {}
        (TopoKind::Circulant, 2) if sizes[0] >= 5 && (2..=sizes[0] / 2).contains(&sizes[1]) => {
            c.net.family = FamilyParams::Circulant { jump: sizes[1] };
            c.net.topo = kind;
            c.net.dims = vec![sizes[0]];
            return Ok(());
        }
        (TopoKind::Midimew | TopoKind::Circulant, _) => return Err(ValueError::Expected(expect)),
        (_, 1..=3) => {}
        _ => return Err(ValueError::Expected(expect)),
    }
    // INSEE accepts size-1 dimensions of tori and meshes (`torus_64_1`):
    // nothing crosses them, and its node numbering x + y nx + z nx ny is
    // that of the network without them, so they are dropped.
    let sizes = if matches!(kind, TopoKind::Torus | TopoKind::Mesh) && sizes.iter().any(|&k| k > 1)
    {
        sizes.into_iter().filter(|&k| k > 1).collect()
    } else {
        sizes
    };
    let nodes = sizes
        .iter()
        .fold(1u64, |a, &k| a.saturating_mul(u64::from(k)));
    if nodes > MAX_NODES {
        return Err(ValueError::TooManyNodes(sizes));
    }
    c.net.topo = kind;
    c.net.dims = sizes;
    c.net.family = FamilyParams::Grid;
    Ok(())
}

pub(super) fn show_topo(c: &Config) -> String {
    let mut s = name_of(c.net.topo, TOPOS);
    match &c.net.family {
        &FamilyParams::Tree { down, levels, .. } if c.net.topo == TopoKind::FatTree => {
            return format!("{s}_{down}_{levels}")
        }
        &FamilyParams::Tree { down, up, levels } => return format!("{s}_{down}_{up}_{levels}"),
        FamilyParams::Hypercube { dimensions } => return format!("{s}_{dimensions}"),
        FamilyParams::Icube {
            per_switch,
            lanes,
            switches,
        } => {
            let torus: Vec<String> = switches.iter().map(u32::to_string).collect();
            return format!("{s}_{per_switch}_{lanes}_{}", torus.join("_"));
        }
        FamilyParams::File { path, .. } => return format!("file:{path}"),
        FamilyParams::Grid | FamilyParams::Circulant { .. } => {}
    }
    for d in &c.net.dims {
        s.push('_');
        s.push_str(&d.to_string());
    }
    if let FamilyParams::Circulant { jump } = c.net.family {
        s.push_str(&format!("_{jump}"));
    }
    s
}

pub(super) fn set_plength(c: &mut Config, value: &str) -> Result<(), ValueError> {
    let p = parts(value);
    if p.is_empty() || p.len() > 2 {
        return Err(ValueError::Expected("PHITS or PHITS_BYTES, e.g. 16_4"));
    }
    c.net.plength = small(p[0], 1, 1 << 20)?;
    if let Some(b) = p.get(1) {
        c.phit_bytes = small(b, 1, 1 << 16)?;
    }
    Ok(())
}

pub(super) fn set_bsize(c: &mut Config, value: &str) -> Result<(), ValueError> {
    let p = parts(value);
    if p.is_empty() || p.len() > 3 {
        return Err(ValueError::Expected(
            "1 to 3 bubble sizes in packets (X[_Y[_Z]])",
        ));
    }
    let v = p
        .iter()
        .map(|s| small(s, 0, 1 << 16))
        .collect::<Result<Vec<_>, _>>()?;
    // INSEE: a single value applies to all dimensions; a second to Y and Z.
    c.net.bsize = [
        v[0],
        *v.get(1).unwrap_or(&v[0]),
        *v.get(2).or(v.get(1)).unwrap_or(&v[0]),
    ];
    Ok(())
}

/// Why a value of a key is refused (the `reason` of
/// [`crate::ConfigError::BadValue`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// Not one of the key's values (listed).
    #[error("valid values are {}", .0.join(", "))]
    OneOf(Vec<&'static str>),
    /// Not an integer in the key's range.
    #[error("expected an integer in {min}..={max}")]
    Integer {
        /// The least allowed.
        min: u64,
        /// The most allowed.
        max: u64,
    },
    /// Not a number in the key's range.
    #[error("expected a number in [{min}, {max}]")]
    Number {
        /// The least allowed.
        min: f64,
        /// The most allowed.
        max: f64,
    },
    /// What the value should look like.
    #[error("expected {0}")]
    Expected(&'static str),
    /// A part of the value is wrong: which part (or what it should be), and why.
    #[error("{0}: {1}")]
    In(&'static str, Box<ValueError>),
    /// A network of more than [`MAX_NODES`] nodes.
    #[error("more than {MAX_NODES} nodes")]
    MoreThanMaxNodes,
    /// The sizes of a grid whose nodes pass [`MAX_NODES`].
    #[error("{} nodes; at most {MAX_NODES}", .0.iter().map(u32::to_string).collect::<Vec<_>>().join(" x "))]
    TooManyNodes(Vec<u32>),
    /// A `circpk_A_K` whose jump makes no degree-4 circulant.
    #[error("circpk_{a}_{k} has jump {jump}: not a degree-4 circulant")]
    NotCirculant {
        /// The `A` of `circpk_A_K`.
        a: u32,
        /// The `K` of `circpk_A_K`.
        k: u32,
        /// The jump they give.
        jump: u32,
    },
    /// `placement=file` without a path.
    #[error("file placement needs a file: placement=file_PATH")]
    PlacementFile,
    /// Text after a placement's instance count (the text).
    #[error("unexpected `{0}` after the instance count")]
    AfterInstances(String),
    /// A `plevel` bit that is not supported.
    #[error("supported bits: 1, 2, 4, 8, 16 (INSEE's 32 and 64, phit-level and monitored-node output, are not)")]
    PlevelBits,
    /// A topology file that cannot be used (`topo=file:PATH`): the
    /// reader's message, naming the file and line.
    #[error("{0}")]
    TopologyFile(String),
    /// A generated family (dragonfly, Slim Fly, Jellyfish, HyperX) named
    /// as a built-in one: it comes as a file.
    #[error("{0} networks come as files: `fsin topology --write {1} > net.edges`, then topo=file:net.edges")]
    Generated(&'static str, String),
    /// An unknown topology family: the built-in ones and `file:`.
    #[error("valid values are {}, or file:PATH (a topology file; `fsin topology --write` writes dragonflies, Slim Flies, Jellyfish and HyperX)", .0.join(", "))]
    UnknownTopology(Vec<&'static str>),
    /// A cost table that cannot be read (`mpi_costs`).
    #[error(transparent)]
    Costs(#[from] fsin_trace::mpi::costs::CostsError),
    /// A profile (`mpi_profile=PATH`) that cannot be read or applied:
    /// where, and why.
    #[error("{path}:{line}: {reason}")]
    Profile {
        /// The profile's file.
        path: String,
        /// The line, from 1.
        line: usize,
        /// Why.
        reason: String,
    },
}
