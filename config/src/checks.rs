//! The combination checks of a configuration (`ConfigBuilder::build`):
//! the routers of the k-ary n-cubes and of the other families, the
//! applications, the twisted torus's skews; each error names the key to
//! change.

use super::*;

/// Router checks of the k-ary n-cube group (`vc`, `rmode`, `bsize`,
/// `bub_to_adap`, `imode`), with INSEE's implied adjustments.
pub(crate) fn check_cube_router(c: &mut Config) -> Result<(), ConfigError> {
    if c.net.topo == TopoKind::Spinnaker && c.vc == VcManagement::Dally {
        return Err(comb(
            "vc",
            "Dally's escape channels cut each ring at its wrap-around link; the SpiNNaker diagonal rings have none: use vc=bubble or double",
        ));
    }
    if matches!(
        c.net.routing,
        RoutingOrder::Static
            | RoutingOrder::Adaptive
            | RoutingOrder::Shortest
            | RoutingOrder::Duato
    ) || c.net.rmode == RequestMode::Static
    {
        return Err(comb(
            "routing",
            "static, adaptive, shortest and duato routing (routing=static|adaptive|shortest|duato, rmode=static) belong to trees, hypercubes and file topologies; cubes take routing=dim|dir and the rmode of their vc",
        ));
    }
    let ndim = c.net.ndim();
    check_vc_management(c, ndim)?;
    if matches!(
        c.net.rmode,
        RequestMode::Random | RequestMode::Shortest | RequestMode::Smart
    ) && c.net.nchan < 2
    {
        return Err(comb(
            "nchan",
            format!(
                "rmode={:?} needs an adaptive VC besides the escape VC (nchan >= 2)",
                c.net.rmode
            )
            .to_lowercase(),
        ));
    }
    if c.net.bub_to_adap > 0 {
        if c.vc == VcManagement::Dally {
            return Err(comb(
                "bub_to_adap",
                "the local bubble restriction belongs to the bubble routers (vc=bubble or double), not vc=dally",
            ));
        }
        if c.net.bub_to_adap >= c.net.tql {
            return Err(comb(
                "bub_to_adap",
                format!(
                    "{} packets do not leave room in queues of tql={}",
                    c.net.bub_to_adap, c.net.tql
                ),
            ));
        }
    }
    if c.net.imode != InjectionMode::Shortest {
        let per_dir = (ndim as u32) * c.net.nways;
        if c.net.ninj < per_dir {
            // INSEE: pre-routed injection needs one queue per dimension and direction.
            c.net.ninj = per_dir;
        }
    }
    Ok(())
}

/// The request modes, VCs and bubbles each of the cubes' VC managements
/// (`vc`) takes: bubble flow control (INSEE's default), Dally's escape
/// channels (which need no bubble: `bsize` cleared) and the double
/// network; `ndim`: the cube's dimensions.
fn check_vc_management(c: &mut Config, ndim: usize) -> Result<(), ConfigError> {
    let bub_max = c.net.bsize.iter().copied().max().unwrap_or(0);
    match c.vc {
        VcManagement::Bubble => {
            if !matches!(
                c.net.rmode,
                RequestMode::Oblivious
                    | RequestMode::Random
                    | RequestMode::Shortest
                    | RequestMode::Smart
            ) {
                return Err(comb(
                    "rmode",
                    format!(
                        "vc=bubble takes rmode oblivious, random, shortest or smart, not {:?}",
                        c.net.rmode
                    ),
                ));
            }
            if bub_max > c.net.tql {
                return Err(comb(
                    "bsize",
                    format!("bubble of {bub_max} packets does not fit tql={}", c.net.tql),
                ));
            }
            if c.net.tql < 2 && bub_max > 0 {
                return Err(comb(
                    "tql",
                    "bubble flow control needs transit queues of at least 2 packets (or bsize=0: no bubble)",
                ));
            }
        }
        VcManagement::Dally => {
            if !matches!(
                c.net.rmode,
                RequestMode::Trc
                    | RequestMode::Basic
                    | RequestMode::Improved
                    | RequestMode::Adaptive
            ) {
                return Err(comb(
                    "rmode",
                    format!(
                        "vc=dally takes rmode trc, basic, improved or adaptive, not {:?}",
                        c.net.rmode
                    ),
                ));
            }
            let need = if c.net.rmode == RequestMode::Adaptive {
                3
            } else {
                2
            };
            if c.net.nchan < need {
                return Err(comb(
                    "nchan",
                    format!("vc=dally rmode={:?} needs nchan >= {need}", c.net.rmode),
                ));
            }
            c.net.bsize = [0; 3];
        }
        VcManagement::Double => {
            if !matches!(
                c.net.rmode,
                RequestMode::DoubleOblivious | RequestMode::DoubleAdaptive
            ) {
                return Err(comb(
                    "rmode",
                    format!(
                        "vc=double takes rmode doubleob or doubleadap, not {:?}",
                        c.net.rmode
                    ),
                ));
            }
            if !(c.net.nchan as usize).is_multiple_of(ndim) {
                return Err(comb(
                    "nchan",
                    format!("vc=double needs nchan to be a multiple of the {ndim} dimensions"),
                ));
            }
            if bub_max > c.net.tql {
                return Err(comb(
                    "bsize",
                    format!("bubble of {bub_max} packets does not fit tql={}", c.net.tql),
                ));
            }
        }
    }
    Ok(())
}

/// Router checks of trees, hypercubes and networks with faults (which all
/// route with `routing=static|adaptive`). Trees use the multistage router
/// (INSEE paper, section 2.2.3): routing `rmode=adaptive` (default) or
/// `static`, the injection queue with most room and single consumption,
/// as INSEE's indirect topologies always do (section 2.3); the VC
/// managements and the local bubble restriction of the cube routers do
/// not apply. Hypercubes take the same two routings (dimension order as
/// the escape) and keep the direct injection and consumption modes. A
/// file topology without faults, `routing` and `rmode` takes Duato's
/// routing when it has two VCs or more (the best deadlock-free routing on
/// every file network measured: docs/model.md, "Routing a file
/// topology"), else up*/down*.
pub(crate) fn check_other_router(c: &mut Config, explicit: &[&str]) -> Result<(), ConfigError> {
    let set = |k: &str| explicit.contains(&k);
    if c.net.topo == TopoKind::File
        && c.net.faults == 0
        && c.net.nchan >= 2
        && !set("routing")
        && !set("rmode")
    {
        c.net.routing = RoutingOrder::Duato;
    }
    let family = if c.net.faults > 0 {
        "networks with faults (up*/down* routing)"
    } else if c.net.topo == TopoKind::File {
        "file topologies"
    } else if c.net.topo.is_tree() {
        "trees"
    } else if c.net.topo == TopoKind::Icube {
        "indirect cubes"
    } else {
        "hypercubes"
    };
    let (shortest, duato) = check_table_routing(c, &set)?;
    // vc=bubble is the default, which a built configuration's own settings
    // name; only another choice is one these routers cannot make.
    if set("vc") && c.vc != VcManagement::Bubble {
        return Err(comb(
            "vc",
            format!("vc (bubble, dally, double) belongs to the k-ary n-cube routers; {family} are deadlock-free with their own routing (rmode=static or adaptive)"),
        ));
    }
    choose_request_mode(c, &set, family, shortest || duato)?;
    if !matches!(c.net.rmode, RequestMode::Static | RequestMode::Adaptive) {
        return Err(comb(
            "rmode",
            format!("{family} take rmode static or adaptive"),
        ));
    }
    if c.net.topo == TopoKind::Hypercube
        && c.net.faults == 0
        && c.net.rmode == RequestMode::Adaptive
        && c.net.nchan < 2
    {
        return Err(comb(
            "nchan",
            "adaptive hypercube routing needs an adaptive VC besides the escape VC 0 (nchan >= 2)",
        ));
    }
    if c.net.imode != InjectionMode::Shortest {
        return Err(comb(
            "imode",
            format!("{family} inject into the queue with most room (imode=shortest); the pre-routed modes are for the cube routers"),
        ));
    }
    if c.net.is_indirect() {
        if set("cmode") && c.net.cmode != Consumption::Single {
            return Err(comb(
                "cmode",
                format!("in {family} nodes hang from a link of their own: consumption is single (cmode=single)"),
            ));
        }
        c.net.cmode = Consumption::Single;
    }
    if c.net.bub_to_adap > 0 {
        return Err(comb(
            "bub_to_adap",
            format!("the local bubble restriction belongs to the bubble routers, not to {family}"),
        ));
    }
    let bub_max = c.net.bsize.iter().copied().max().unwrap_or(0);
    if c.net.topo == TopoKind::Icube && c.net.faults == 0 {
        // The switch torus keeps INSEE's bubble escape rings.
        if bub_max > c.net.tql {
            return Err(comb(
                "bsize",
                format!("bubble of {bub_max} packets does not fit tql={}", c.net.tql),
            ));
        }
    } else {
        c.net.bsize = [0; 3];
    }
    Ok(())
}

/// The routings of file topologies (`routing=shortest`, `routing=duato`),
/// refused where they cannot run: on other families, with faults, with
/// too few VCs, and wormhole switching on a file's slower links. Returns
/// whether each is chosen.
fn check_table_routing(
    c: &Config,
    set: &impl Fn(&str) -> bool,
) -> Result<(bool, bool), ConfigError> {
    let shortest = c.net.routing == RoutingOrder::Shortest;
    if shortest {
        let FamilyParams::File { graph, .. } = &c.net.family else {
            return Err(comb(
                "routing",
                "routing=shortest (a VC per hop) is for file topologies (topo=file:PATH)",
            ));
        };
        if c.net.faults > 0 {
            return Err(comb(
                "routing",
                "routing=shortest does not route around faults; with faults=N file topologies take up*/down* (routing=adaptive or static)",
            ));
        }
        let diameter = graph.diameter();
        if diameter > c.net.nchan {
            return Err(comb(
                "nchan",
                format!("routing=shortest takes hop k on VC k: the network's diameter is {diameter} hops, more than nchan={}", c.net.nchan),
            ));
        }
    }
    if let FamilyParams::File { graph, .. } = &c.net.family {
        let slow = graph
            .links
            .iter()
            .find(|l| l.latency_ab > 1 || l.latency_ba > 1);
        if let (true, Some(l)) = (c.net.wormhole, slow) {
            return Err(comb(
                "switching",
                format!("wormhole switching runs on links of one cycle; the file's link between routers {} and {} takes {} and {}", l.a, l.b, l.latency_ab, l.latency_ba),
            ));
        }
    }
    let duato = c.net.routing == RoutingOrder::Duato;
    if duato {
        if c.net.topo != TopoKind::File {
            return Err(comb(
                "routing",
                "routing=duato (minimal adaptive with an up*/down* escape VC) is for file topologies (topo=file:PATH)",
            ));
        }
        if c.net.faults > 0 {
            return Err(comb(
                "routing",
                "routing=duato does not route around faults; with faults=N file topologies take up*/down* (routing=adaptive or static)",
            ));
        }
        if c.net.nchan < 2 {
            return Err(comb(
                "nchan",
                "routing=duato keeps VC 0 for its up*/down* escape and needs an adaptive VC besides it (nchan >= 2)",
            ));
        }
        if set("rmode") && c.net.rmode != RequestMode::Adaptive {
            return Err(comb("rmode", "routing=duato is adaptive (rmode=adaptive)"));
        }
    }
    Ok((shortest, duato))
}

/// The request mode of a router other than the cubes': the one `routing`
/// names (adaptive under a file's tables, `tables`), which a given `rmode`
/// must agree with; without either, adaptive where an adaptive VC exists
/// (or in trees), static otherwise. `routing` itself is then the tables'
/// or `dimension` (what these routers report).
fn choose_request_mode(
    c: &mut Config,
    set: &impl Fn(&str) -> bool,
    family: &str,
    tables: bool,
) -> Result<(), ConfigError> {
    let chosen = match c.net.routing {
        RoutingOrder::Static => Some(RequestMode::Static),
        RoutingOrder::Adaptive => Some(RequestMode::Adaptive),
        _ => None,
    };
    let chosen = if tables && !set("rmode") {
        Some(RequestMode::Adaptive)
    } else {
        chosen
    };
    match chosen {
        Some(m) if set("rmode") && c.net.rmode != m => {
            return Err(comb(
                "routing",
                format!("routing and rmode choose different {family} routings; give one of them"),
            ));
        }
        Some(m) => c.net.rmode = m,
        None if !set("rmode") => {
            c.net.rmode = if c.net.nchan < 2 && !c.net.topo.is_tree() {
                RequestMode::Static
            } else {
                RequestMode::Adaptive
            };
        }
        None => {}
    }
    if !tables {
        c.net.routing = RoutingOrder::Dimension;
    }
    Ok(())
}

/// A router as `updown_root` only where up*/down* routes (a file
/// topology not under `routing=shortest`, or a network with faults), and
/// one the network has.
pub(crate) fn check_updown_root(c: &Config) -> Result<(), ConfigError> {
    let Some(root) = c.net.updown_root else {
        return Ok(());
    };
    let updown = c.net.faults > 0
        || (c.net.topo == TopoKind::File && c.net.routing != RoutingOrder::Shortest);
    // The printed default of a network without up*/down* is router 0,
    // which its settings give back.
    if !updown && root != UpDownRoot::Router(0) {
        return Err(comb(
            "updown_root",
            "up*/down* routes file topologies (not under routing=shortest) and networks with faults (faults=N); this network does not use it",
        ));
    }
    if let UpDownRoot::Router(r) = root {
        let (_, routers, _) = fsin_model::topology::Topology::shape(&c.net);
        if r as usize >= routers {
            return Err(comb(
                "updown_root",
                format!(
                    "router {r} is not in the network, whose routers are 0 to {}",
                    routers - 1
                ),
            ));
        }
    }
    Ok(())
}

/// A [`ConfigError::Combination`] naming `key`.
pub(crate) fn comb(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Combination {
        key: key.to_string(),
        reason: reason.into(),
    }
}

/// Checks the application workload keys; marks the pattern as `trace`
/// when a trace or kernel is given (as INSEE's `tpattern=trace`).
pub(crate) fn check_app(c: &mut Config) -> Result<(), ConfigError> {
    use fsin_traffic::placement::PlacementKind;
    if let PatternKind::Distance { histogram } = c.traffic.tpattern {
        let name = if histogram { "histogram" } else { "population" };
        if !matches!(c.net.topo, TopoKind::Torus | TopoKind::Mesh) {
            return Err(comb("tpattern", format!("{name} needs a torus or a mesh")));
        }
        let [file] = &c.traffic.app.tracefiles[..] else {
            return Err(comb(
                "tracefile",
                format!("tpattern={name} reads its distances from one file: tracefile=FILE"),
            ));
        };
        c.traffic.distance_weights = fsin_traffic::pattern::read_distances(file, histogram)
            .map_err(|e| comb("tracefile", e.to_string()))?;
        c.traffic.app.tracefiles.clear();
    }
    if c.traffic.tpattern == PatternKind::Local && c.net.dims.iter().any(|&n| n < 16) {
        return Err(comb(
            "tpattern",
            format!(
                "local traffic needs at least 16 nodes per dimension (its far draws go 8 to n-8 nodes ahead), not {:?}",
                c.net.dims
            ),
        ));
    }
    let a = &mut c.traffic.app;
    if !a.active() {
        if c.traffic.tpattern == PatternKind::Trace {
            return Err(comb(
                "tpattern",
                "tpattern=trace needs tracefile=FILE or kernel=NAME",
            ));
        }
        if a.bg_load > 0.0 {
            return Err(comb(
                "bg_load",
                "bg_load is the load around a trace or kernel; without one use load=",
            ));
        }
        return Ok(());
    }
    c.traffic.tpattern = PatternKind::Trace;
    if a.cpu_units != CpuUnits::Cycles && a.link_bandwidth <= 0.0 {
        return Err(comb(
            "trace_cpu_units",
            "time units (ms, us, ns) are converted to cycles with link_bandwidth=MBPS, which is not set",
        ));
    }
    if a.placement.kind == PlacementKind::Quadrant && a.placement.instances == 0 {
        // INSEE: one instance per quadrant.
        a.placement.instances = 1 << c.net.dims.len();
    }
    if a.placement.kind == PlacementKind::File && a.placement.file.is_none() {
        return Err(comb(
            "placement",
            "file placement needs a file: placement=file_PATH",
        ));
    }
    if let Some(k) = a.kernel {
        let nodes: u32 = c.net.dims.iter().product();
        let tasks = if a.kernel_tasks == 0 {
            nodes
        } else {
            a.kernel_tasks
        };
        k.check(tasks).map_err(|e| comb("kernel", e.to_string()))?;
    }
    Ok(())
}

pub(crate) fn check_skews(c: &Config) -> Result<(), ConfigError> {
    let s = c.net.skews;
    let dim = |i: usize| c.net.dims.get(i).copied().unwrap_or(1);
    let all = [
        ("sk_xy", s.xy, 1),
        ("sk_xz", s.xz, 2),
        ("sk_yx", s.yx, 0),
        ("sk_yz", s.yz, 2),
        ("sk_zx", s.zx, 0),
        ("sk_zy", s.zy, 1),
    ];
    for (key, v, over) in all {
        if v != 0 && v >= dim(over) {
            return Err(ConfigError::Combination {
                key: key.into(),
                reason: format!(
                    "skew {v} must be smaller than the {} nodes of the skewed dimension",
                    dim(over)
                ),
            });
        }
    }
    let set: Vec<_> = all.iter().filter(|a| a.1 != 0).collect();
    match set.as_slice() {
        [] => Err(ConfigError::Combination {
            key: "topo".into(),
            reason: "ttorus needs a non-zero skew (sk_xy, sk_xz, sk_yx, sk_yz, sk_zx or sk_zy); use topo=torus_... for none".into(),
        }),
        [_] => Ok(()),
        [a, b] if a.0.as_bytes()[4] == b.0.as_bytes()[4] => Ok(()),
        [a, b, ..] => Err(ConfigError::Combination {
            key: b.0.into(),
            reason: format!(
                "all skews must shift the same dimension (allowed: sk_xy+sk_zy, sk_xz+sk_yz, sk_yx+sk_zx); {} and {} shift different ones",
                a.0, b.0
            ),
        }),
    }
}
