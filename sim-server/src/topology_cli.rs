//! `fsin topology`: a topology's facts (nodes, links, diameter, bisection
//! and throughput bounds), its drawing, and `--write`, which writes a
//! generated family or a built-in topology as an edge list.

use std::path::PathBuf;

use anyhow::Context;

use fsin::config::{ConfigBuilder, ConfigError, Origin};

#[derive(clap::Args)]
pub(crate) struct TopologyArgs {
    /// Configuration file: INSEE-style key=value lines, or TOML (*.toml).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Write a topology file (an edge list `topo=file:PATH` reads) to
    /// standard output instead: FAMILY is dragonfly_A_H_P (A routers per
    /// group, H global links and P nodes per router), slimfly_Q_P (Q a
    /// prime power: 4, 5, 7, 8, 9, ...), jellyfish_N_K_P (N routers of K links, seeded by rseed),
    /// hyperx_S1[_S2[_S3]]_P, or a built-in topology (torus_8_8,
    /// fattree_4_3, ...) to set beside the built-in one.
    #[arg(long, value_name = "FAMILY")]
    write: Option<String>,
    /// Also draw the network into DIR/topology.svg: its routers on a
    /// circle, their links as chords, an indirect network's nodes beside
    /// their routers, and for a file topology its bisection's two sides
    /// and the links it cuts.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The topology settings, e.g. topo=torus_16_16 nways=1.
    #[arg(value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

/// `fsin topology --write FAMILY`: a generated family's graph (random
/// choices seeded by the settings' `rseed`), or a built-in topology's, as
/// an edge list.
fn write_topology(a: &TopologyArgs, family: &str) -> anyhow::Result<()> {
    use fsin::config::topology_gen::{edge_list, generate, FAMILIES};
    let generated = FAMILIES.iter().any(|f| family.split('_').next() == Some(f));
    let mut settings = a.settings.clone();
    if !generated {
        settings.push(format!("topo={family}"));
    }
    let cfg = ConfigBuilder::from_sources(&[], a.config.as_deref(), &settings)?.build()?;
    let refuse = |reason: String| ConfigError::BadValue {
        key: "--write".into(),
        value: family.into(),
        origin: Origin::CommandLine,
        reason,
    };
    let (graph, name) = if generated {
        let graph = generate(family, cfg.net.rseed).map_err(|e| refuse(e.to_string()))?;
        (graph, format!("{family} (rseed={})", cfg.net.rseed))
    } else {
        let topo = fsin::topology::Topology::build(&cfg.net).map_err(|e| refuse(e.to_string()))?;
        let graph = topo.to_graph().ok_or_else(|| {
            refuse("unidirectional rings (nways=1) have no full-duplex links to write".into())
        })?;
        (graph, cfg.topology_name())
    };
    let header = format!(
        "{name}: {} routers, {} nodes, {} links; written by fsin topology --write",
        graph.routers,
        graph.node_router.len(),
        graph.links.len()
    );
    print!("{}", edge_list(&graph, &header));
    Ok(())
}

pub(crate) fn cmd_topology(a: &TopologyArgs) -> anyhow::Result<()> {
    if let Some(family) = &a.write {
        return write_topology(a, family);
    }
    let cfg = ConfigBuilder::from_sources(&[], a.config.as_deref(), &a.settings)?.build()?;
    let fsin::network_facts::Facts {
        summary: t,
        side,
        warning,
    } = fsin::network_facts::facts(&cfg).map_err(|e| ConfigError::Combination {
        key: "faults".into(),
        reason: e.to_string(),
    })?;
    if let Some(dir) = &a.out {
        draw_topology(&cfg, dir, side.as_deref())?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&t)?);
        return Ok(());
    }
    let opt = |v: Option<String>| v.unwrap_or_else(|| "unknown for this family".into());
    println!("topology          {}", t.topology);
    println!("nodes             {}", t.nodes);
    println!(
        "switches          {} ({} link ports each)",
        t.switches, t.ports
    );
    println!(
        "links             {} ({} between switches, {} to nodes)",
        t.links,
        t.router_links,
        t.links - t.router_links
    );
    println!("diameter          {} hops", t.diameter);
    println!("average distance  {:.4} hops", t.avg_distance);
    println!(
        "bisection links   {}",
        opt(t.bisection_links.map(|b| format!(
            "{b} ({})",
            t.bisection_method.as_deref().unwrap_or_default()
        )))
    );
    if let Some(theta) = t.theta {
        println!("theta             {theta:.4}");
    }
    println!(
        "throughput bound  {} (uniform traffic)",
        opt(t
            .throughput_bound
            .map(|b| format!("{b:.4} phits/node/cycle")))
    );
    if let Some(b) = t.routing_bounds {
        println!(
            "routing bounds    up*/down* {:.4}, minimal paths {:.4} phits/node/cycle (uniform traffic, channel loads)",
            b.updown, b.minimal
        );
    }
    if let Some(r) = &t.routing {
        println!("routing           {r}");
    }
    if let Some(w) = warning {
        println!("WARNING: {w}");
    }
    Ok(())
}

/// `fsin topology --out DIR`: the network of `cfg` drawn into
/// DIR/topology.svg, a bisection's `side`s coloured.
fn draw_topology(
    cfg: &fsin::config::Config,
    dir: &std::path::Path,
    side: Option<&[bool]>,
) -> anyhow::Result<()> {
    use std::borrow::Cow;
    let graph = match &cfg.net.family {
        fsin::config::FamilyParams::File { graph, .. } => Some(Cow::Borrowed(&**graph)),
        _ => fsin::topology::Topology::build(&cfg.net)?
            .to_graph()
            .map(Cow::Owned),
    };
    let graph = graph.ok_or_else(|| {
        anyhow::anyhow!("unidirectional rings (nways=1) are not drawn: their links are one-way")
    })?;
    let svg = fsin::topology_svg::topology_svg(&graph, &cfg.topology_name(), side)
        .map_err(|e| anyhow::anyhow!("cannot draw the topology: {}", e.0))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join("topology.svg");
    std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("fsin topology: wrote {}", path.display());
    Ok(())
}
