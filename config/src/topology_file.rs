//! Topologies read from a file (`topo=file:PATH`) into a
//! [`Graph`]: routers, the router of each compute node and the links
//! between routers. Three formats:
//!
//! - **anynet**, as BookSim2 reads it (`src/networks/anynet.cpp`): a line
//!   per router or node, `router R` or `node N` and then what it is linked
//!   to, `router S [LATENCY]` or `node M`. A router-to-router latency is
//!   the link's from `R` to `S`; the way back keeps 1 cycle unless a line of
//!   `S` gives it. Routers and nodes are numbered from 0 without gaps.
//!   fsin-rs's node links take one cycle: another node latency is refused.
//! - **GraphML**, as SST merlin's `anytopo` takes it: an undirected graph
//!   whose nodes are routers, each with an `endpoints` attribute (compute
//!   nodes on it; the key's default, else 0, where a router has none) and
//!   edges with an optional `latency` attribute (cycles, both ways).
//!   Parallel edges are parallel links. Compute nodes are numbered router
//!   by router in the document's order.
//! - **an edge list**: `A B [LATENCY]` lines link routers `A` and `B` (the
//!   latency both ways, 1 by default), `node N R` lines put compute node
//!   `N` on router `R`; without `node` lines, router `i` has node `i` (a
//!   direct network). `#` starts a comment.
//!
//! The format is the extension's (`.anynet`; `.graphml` or `.xml`;
//! `.edges`, `.el` or `.txt`), else the content's (`<` first: GraphML;
//! `router` or `node` first: anynet; else an edge list).
//!
//! Every error names the file, the line (of the GraphML element too) and
//! what is wrong: a node on two routers, an unknown router, a gap in the
//! numbering, a latency of 0, a router linked to itself, a disconnected
//! graph (its parts named), a router with more ports than allowed.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use fsin_model::spec::{Graph, GraphLink};
use thiserror::Error;

/// Largest topology file read, bytes (64 MiB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// Most routers, and most compute nodes, a file may describe.
pub const MAX_ROUTERS: u32 = 1 << 20;
/// Longest link latency, cycles.
pub const MAX_LATENCY: u32 = 1 << 16;
/// Most links a router of a file may have for `topo=file:` (the engine
/// indexes at most 127 input queues per router: ports x VCs plus the
/// injection queues).
pub const MAX_PORTS: usize = 126;

/// Why a topology file cannot be used.
#[derive(Debug, Error)]
pub enum TopologyFileError {
    /// The file cannot be read.
    #[error("cannot read the topology file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is larger than a topology file may be.
    #[error("the topology file {path} has {bytes} bytes, more than the {MAX_FILE_BYTES} read")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size, bytes.
        bytes: u64,
    },
    /// What is wrong, and where.
    #[error("{file}:{line}: {what}")]
    Syntax {
        /// The file.
        file: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// What is wrong with the network the file describes.
    #[error("{file}: {what}")]
    Graph {
        /// The file.
        file: String,
        /// What is wrong.
        what: String,
    },
}

/// The formats a topology file may be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopologyFileFormat {
    /// BookSim2's anynet (`.anynet`).
    Anynet,
    /// GraphML, as SST merlin's `anytopo` takes it (`.graphml`, `.xml`).
    GraphMl,
    /// `A B [LATENCY]` lines (`.edges`, `.el`, `.txt`).
    EdgeList,
}

impl TopologyFileFormat {
    /// The format of a file named `name` holding `text` (module docs).
    pub fn of(name: &str, text: &str) -> TopologyFileFormat {
        let ext = Path::new(name)
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("anynet") => return TopologyFileFormat::Anynet,
            Some("graphml" | "xml") => return TopologyFileFormat::GraphMl,
            Some("edges" | "el" | "txt") => return TopologyFileFormat::EdgeList,
            _ => {}
        }
        let first = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .find(|l| !l.is_empty())
            .unwrap_or("");
        if first.starts_with('<') {
            TopologyFileFormat::GraphMl
        } else if first.starts_with("router") || first.starts_with("node") {
            TopologyFileFormat::Anynet
        } else {
            TopologyFileFormat::EdgeList
        }
    }
}

/// Reads the topology file `path` and checks it ([`parse`]), with routers
/// of at most `max_ports` links.
///
/// # Errors
/// [`TopologyFileError`]: the file cannot be read or is over
/// [`MAX_FILE_BYTES`], or [`parse`]'s.
pub fn read(path: &Path, max_ports: usize) -> Result<Graph, TopologyFileError> {
    let name = path.display().to_string();
    let read = |source| TopologyFileError::Read {
        path: name.clone(),
        source,
    };
    let bytes = std::fs::metadata(path).map_err(read)?.len();
    if bytes > MAX_FILE_BYTES {
        return Err(TopologyFileError::TooLarge { path: name, bytes });
    }
    let text = std::fs::read_to_string(path).map_err(read)?;
    parse(&text, &name, max_ports)
}

/// Reads `text`, a topology file named `file` (for its format and the
/// messages), and checks the network: at least one compute node, every
/// router reached from every other, no router with more than `max_ports`
/// links.
///
/// # Errors
/// [`TopologyFileError::Syntax`] naming the line, or
/// [`TopologyFileError::Graph`] naming the routers (module docs).
pub fn parse(text: &str, file: &str, max_ports: usize) -> Result<Graph, TopologyFileError> {
    let g = match TopologyFileFormat::of(file, text) {
        TopologyFileFormat::Anynet => anynet(text, file)?,
        TopologyFileFormat::GraphMl => graphml(text, file)?,
        TopologyFileFormat::EdgeList => edge_list(text, file)?,
    };
    check(&g, file, max_ports)?;
    Ok(g)
}

/// The error of line `line` of `file`.
fn syntax(file: &str, line: usize, what: String) -> TopologyFileError {
    TopologyFileError::Syntax {
        file: file.to_string(),
        line,
        what,
    }
}

/// A router or node id, or a latency: a number below `max` (`what` names
/// it in the message).
fn number(word: &str, what: &str, max: u32) -> Result<u32, String> {
    match word.parse::<u64>() {
        Ok(n) if n < u64::from(max) => Ok(n as u32),
        Ok(n) => Err(format!("{what} {n} is not below {max}")),
        Err(_) => Err(format!("`{word}` is not a {what} (a whole number)")),
    }
}

/// A link latency in cycles: 1 to [`MAX_LATENCY`].
fn latency(word: &str) -> Result<u32, String> {
    match number(word, "latency", MAX_LATENCY + 1)? {
        0 => Err("a latency of 0 cycles (links take at least 1)".into()),
        n => Ok(n),
    }
}

/// Checks that `ids` (what the file mentioned) are `0..n` for some `n`,
/// and gives `n`.
fn numbered(ids: &BTreeMap<u32, usize>, what: &str, file: &str) -> Result<u32, TopologyFileError> {
    for (k, (&id, &line)) in ids.iter().enumerate() {
        if id != k as u32 {
            return Err(syntax(
                file,
                line,
                format!("{what} {id}, but no {what} {k}: {what}s are numbered from 0 without gaps"),
            ));
        }
    }
    Ok(ids.len() as u32)
}

/// The words of a line, before its `#` comment.
fn words_of(line: &str) -> Vec<&str> {
    line.split('#')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect()
}

/// BookSim2's anynet format (module docs).
fn anynet(text: &str, file: &str) -> Result<Graph, TopologyFileError> {
    let mut seen = AnynetSeen::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |what: String| syntax(file, line, what);
        let words = words_of(raw);
        if words.is_empty() {
            continue;
        }
        let kind = |w: &str| match w {
            "router" => Ok(true),
            "node" => Ok(false),
            _ => Err(err(format!("`{w}` where `router` or `node` was expected"))),
        };
        let head_router = kind(words[0])?;
        let id_at = |k: usize, router: bool| -> Result<u32, TopologyFileError> {
            let what = if router { "router" } else { "node" };
            let w = words
                .get(k)
                .ok_or_else(|| err(format!("`{}` without its id", words[k - 1])))?;
            number(w, what, MAX_ROUTERS).map_err(err)
        };
        let head = id_at(1, head_router)?;
        if head_router {
            seen.routers.entry(head).or_insert(line);
        }
        let mut k = 2;
        while k < words.len() {
            let body_router = kind(words[k])?;
            let body = id_at(k + 1, body_router)?;
            k += 2;
            let lat = match words.get(k) {
                Some(w) if *w != "router" && *w != "node" => {
                    if !w.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') {
                        return Err(err(format!(
                            "unknown word `{w}`: after an id comes `router` or `node` with an id, or a link latency (a whole number of cycles)"
                        )));
                    }
                    k += 1;
                    Some(latency(w).map_err(err)?)
                }
                _ => None,
            };
            seen.link((head, head_router), (body, body_router), lat, line)
                .map_err(err)?;
        }
    }
    seen.graph(file)
}

/// What an AnyNet file said so far, each id with the first line that
/// mentions it.
#[derive(Default)]
struct AnynetSeen {
    routers: BTreeMap<u32, usize>,
    nodes: BTreeMap<u32, usize>,
    /// Node -> (router, line).
    node_router: HashMap<u32, (u32, usize)>,
    /// (from, to) -> latency in cycles; each pair once.
    latency_of: BTreeMap<(u32, u32), u32>,
}

impl AnynetSeen {
    /// One link of line `line` from `head` to `body` (each an id and
    /// whether it is a router), `lat` cycles from head to body if given.
    ///
    /// # Errors
    /// What is wrong with the link (the caller names the file and line).
    fn link(
        &mut self,
        (head, head_router): (u32, bool),
        (body, body_router): (u32, bool),
        lat: Option<u32>,
        line: usize,
    ) -> Result<(), String> {
        match (head_router, body_router) {
            (false, false) => {
                return Err(format!(
                    "node {head} linked to node {body}: nodes hang from routers"
                ))
            }
            (true, true) => {
                if head == body {
                    return Err(format!("router {head} linked to itself"));
                }
                self.routers.entry(body).or_insert(line);
                self.latency_of.insert((head, body), lat.unwrap_or(1));
                self.latency_of.entry((body, head)).or_insert(1);
            }
            (router, _) => {
                let (node, on) = if router { (body, head) } else { (head, body) };
                if lat.is_some_and(|l| l != 1) {
                    return Err(format!(
                        "node {node} with a link latency of {} cycles: fsin-rs's node links take 1",
                        lat.unwrap_or(1)
                    ));
                }
                self.nodes.entry(node).or_insert(line);
                self.routers.entry(on).or_insert(line);
                if let Some((other, at)) = self.node_router.insert(node, (on, line)) {
                    if other != on {
                        return Err(format!(
                            "node {node} on router {on}, but line {at} put it on router {other}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The graph of `file`, once every line is read.
    ///
    /// # Errors
    /// Routers or nodes not numbered from 0 without gaps.
    fn graph(self, file: &str) -> Result<Graph, TopologyFileError> {
        let n_routers = numbered(&self.routers, "router", file)?;
        let n_nodes = numbered(&self.nodes, "node", file)?;
        let links = (self.latency_of.iter())
            .filter(|&(&(a, b), _)| a < b)
            .map(|(&(a, b), &ab)| GraphLink {
                a,
                b,
                latency_ab: ab,
                latency_ba: self.latency_of.get(&(b, a)).copied().unwrap_or(1),
            })
            .collect();
        let node_router = (0..n_nodes).map(|n| self.node_router[&n].0).collect();
        Ok(Graph {
            routers: n_routers,
            node_router,
            links,
        })
    }
}

/// The plain edge list (module docs).
fn edge_list(text: &str, file: &str) -> Result<Graph, TopologyFileError> {
    let mut routers: BTreeMap<u32, usize> = BTreeMap::new();
    let mut nodes: BTreeMap<u32, usize> = BTreeMap::new();
    let mut node_router: HashMap<u32, (u32, usize)> = HashMap::new();
    let mut links = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |what: String| syntax(file, line, what);
        let words = words_of(raw);
        match words.as_slice() {
            [] => {}
            ["node", n, r] => {
                let node = number(n, "node", MAX_ROUTERS).map_err(err)?;
                let router = number(r, "router", MAX_ROUTERS).map_err(err)?;
                nodes.entry(node).or_insert(line);
                routers.entry(router).or_insert(line);
                if let Some((other, at)) = node_router.insert(node, (router, line)) {
                    return Err(err(format!(
                        "node {node} on router {router}, but line {at} put it on router {other}"
                    )));
                }
            }
            [a, b] | [a, b, _] => {
                let a = number(a, "router", MAX_ROUTERS).map_err(err)?;
                let b = number(b, "router", MAX_ROUTERS).map_err(err)?;
                let lat = match words.get(2) {
                    Some(w) => latency(w).map_err(err)?,
                    None => 1,
                };
                if a == b {
                    return Err(err(format!("router {a} linked to itself")));
                }
                routers.entry(a).or_insert(line);
                routers.entry(b).or_insert(line);
                links.push(GraphLink {
                    a,
                    b,
                    latency_ab: lat,
                    latency_ba: lat,
                });
            }
            _ => {
                return Err(err(format!(
                    "`{}`: a line is `A B [LATENCY]` (a link) or `node N R`",
                    raw.trim()
                )))
            }
        }
    }
    let n_routers = numbered(&routers, "router", file)?;
    let node_router = if node_router.is_empty() {
        (0..n_routers).collect()
    } else {
        let n_nodes = numbered(&nodes, "node", file)?;
        (0..n_nodes).map(|n| node_router[&n].0).collect()
    };
    Ok(Graph {
        routers: n_routers,
        node_router,
        links,
    })
}

/// GraphML as SST merlin's anytopo takes it (module docs).
fn graphml(text: &str, file: &str) -> Result<Graph, TopologyFileError> {
    let doc = roxmltree::Document::parse(text).map_err(|e| {
        let pos = e.pos();
        syntax(file, pos.row as usize, format!("not XML: {e}"))
    })?;
    let line_of = |n: roxmltree::Node| doc.text_pos_at(n.range().start).row as usize;
    let at = |n: roxmltree::Node, what: String| syntax(file, line_of(n), what);
    // The keys of the two attributes: id -> default.
    let mut endpoints_key: Option<(String, Option<String>)> = None;
    let mut latency_key: Option<(String, Option<String>)> = None;
    for k in doc.descendants().filter(|n| n.has_tag_name("key")) {
        let default = k
            .children()
            .find(|c| c.has_tag_name("default"))
            .and_then(|d| d.text())
            .map(|t| t.trim().to_string());
        let id = k.attribute("id").unwrap_or_default().to_string();
        match (k.attribute("attr.name"), k.attribute("for")) {
            (Some("endpoints"), Some("node") | None) => endpoints_key = Some((id, default)),
            (Some("latency"), Some("edge") | None) => latency_key = Some((id, default)),
            _ => {}
        }
    }
    let graph = doc
        .descendants()
        .find(|n| n.has_tag_name("graph"))
        .ok_or_else(|| syntax(file, 1, "no <graph> element".into()))?;
    if graph.attribute("edgedefault") == Some("directed") {
        return Err(at(
            graph,
            "a directed graph: links are full duplex, give edgedefault=\"undirected\"".into(),
        ));
    }
    let data = |n: roxmltree::Node, key: &Option<(String, Option<String>)>| -> Option<String> {
        let (id, default) = key.as_ref()?;
        n.children()
            .find(|c| c.has_tag_name("data") && c.attribute("key") == Some(id.as_str()))
            .and_then(|c| c.text())
            .map(|t| t.trim().to_string())
            .or_else(|| default.clone())
    };
    let mut index: HashMap<&str, u32> = HashMap::new();
    let mut node_router = Vec::new();
    let mut routers = 0u32;
    for n in graph.children().filter(|n| n.has_tag_name("node")) {
        let id = n
            .attribute("id")
            .ok_or_else(|| at(n, "a <node> without an id".into()))?;
        if routers >= MAX_ROUTERS {
            return Err(at(n, format!("more than {MAX_ROUTERS} routers")));
        }
        if index.insert(id, routers).is_some() {
            return Err(at(n, format!("router `{id}` defined twice")));
        }
        let endpoints = match data(n, &endpoints_key) {
            Some(t) => number(&t, "count of endpoints", MAX_ROUTERS).map_err(|e| at(n, e))?,
            None => 0,
        };
        if node_router.len() + endpoints as usize > MAX_ROUTERS as usize {
            return Err(at(n, format!("more than {MAX_ROUTERS} compute nodes")));
        }
        node_router.extend(std::iter::repeat_n(routers, endpoints as usize));
        routers += 1;
    }
    let mut links = Vec::new();
    for e in graph.children().filter(|n| n.has_tag_name("edge")) {
        let end = |attr: &str| -> Result<u32, TopologyFileError> {
            let id = e
                .attribute(attr)
                .ok_or_else(|| at(e, format!("an <edge> without a {attr}")))?;
            index.get(id).copied().ok_or_else(|| {
                at(
                    e,
                    format!("an <edge> to router `{id}`, which no <node> defines"),
                )
            })
        };
        let (a, b) = (end("source")?, end("target")?);
        if a == b {
            return Err(at(e, format!("router {a} linked to itself")));
        }
        let lat = match data(e, &latency_key) {
            Some(t) => latency(&t).map_err(|m| at(e, m))?,
            None => 1,
        };
        links.push(GraphLink {
            a,
            b,
            latency_ab: lat,
            latency_ba: lat,
        });
    }
    Ok(Graph {
        routers,
        node_router,
        links,
    })
}

/// The checks every format shares (module docs).
fn check(g: &Graph, file: &str, max_ports: usize) -> Result<(), TopologyFileError> {
    let err = |what: String| TopologyFileError::Graph {
        file: file.to_string(),
        what,
    };
    if g.routers == 0 || g.node_router.is_empty() {
        return Err(err("no routers, or no compute nodes on them".into()));
    }
    let mut degree = vec![0usize; g.routers as usize];
    for l in &g.links {
        degree[l.a as usize] += 1;
        degree[l.b as usize] += 1;
    }
    if let Some((r, &d)) = degree.iter().enumerate().find(|&(_, &d)| d > max_ports) {
        return Err(err(format!(
            "router {r} has {d} links, more than max_ports={max_ports}"
        )));
    }
    let parts = g.parts();
    if parts.len() > 1 {
        let named: Vec<String> = parts.iter().take(4).map(|p| routers_text(p)).collect();
        return Err(err(format!(
            "the network is in {} parts that no link joins: {}{}",
            parts.len(),
            named.join("; "),
            if parts.len() > 4 { "; ..." } else { "" }
        )));
    }
    Ok(())
}

/// Routers `ids` (sorted) for a message: runs as ranges, at most 8 items.
fn routers_text(ids: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &id in ids {
        match runs.last_mut() {
            Some((_, hi)) if *hi + 1 == id => *hi = id,
            _ => runs.push((id, id)),
        }
    }
    let shown: Vec<String> = runs
        .iter()
        .take(8)
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect();
    let more = if runs.len() > 8 { ", ..." } else { "" };
    let noun = if ids.len() == 1 { "router" } else { "routers" };
    format!("{noun} {}{more}", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(a: u32, b: u32, ab: u32, ba: u32) -> GraphLink {
        GraphLink {
            a,
            b,
            latency_ab: ab,
            latency_ba: ba,
        }
    }

    /// BookSim2's two examples (anynet.cpp's header): a 15-cycle link one
    /// way and 1 back, and three nodes on router 0.
    #[test]
    fn anynet_reads_as_booksim2_does() {
        let g = parse(
            "router 0 router 1 15 router 2\nrouter 0 node 0 node 1 node 2\nrouter 1 node 3\nrouter 2 node 4\n",
            "net.anynet",
            8,
        )
        .unwrap();
        assert_eq!(g.routers, 3);
        assert_eq!(g.node_router, vec![0, 0, 0, 1, 2]);
        assert_eq!(g.links, vec![link(0, 1, 15, 1), link(0, 2, 1, 1)]);
        // A line of router 1 gives the way back its own latency; a node
        // line puts the node on its router.
        let g = parse(
            "router 0 router 1 15\nrouter 1 router 0 4\nnode 0 router 0\nnode 1 router 1\n",
            "x",
            8,
        )
        .unwrap();
        assert_eq!(g.links, vec![link(0, 1, 15, 4)]);
        assert_eq!(g.node_router, vec![0, 1]);
    }

    #[test]
    fn an_edge_list_without_nodes_is_a_direct_network() {
        // A ring of 4 with one slow link, as an edge list.
        let g = parse("# ring\n0 1\n1 2\n2 3 5\n3 0\n", "ring.edges", 8).unwrap();
        assert_eq!(g.routers, 4);
        assert_eq!(g.node_router, vec![0, 1, 2, 3]);
        assert_eq!(g.links[2], link(2, 3, 5, 5));
        let g = parse("0 1\nnode 0 1\nnode 1 1\nnode 2 0\n", "star.txt", 8).unwrap();
        assert_eq!(g.node_router, vec![1, 1, 0]);
    }

    #[test]
    fn graphml_reads_endpoints_and_latencies() {
        let text = r#"<?xml version="1.0"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="e" for="node" attr.name="endpoints" attr.type="int"><default>2</default></key>
  <key id="l" for="edge" attr.name="latency" attr.type="int"/>
  <graph edgedefault="undirected">
    <node id="a"/>
    <node id="b"><data key="e">1</data></node>
    <node id="c"><data key="e">0</data></node>
    <edge source="a" target="b"><data key="l">7</data></edge>
    <edge source="b" target="c"/>
    <edge source="b" target="c"/>
  </graph>
</graphml>"#;
        let g = parse(text, "net.graphml", 8).unwrap();
        assert_eq!(g.routers, 3);
        assert_eq!(g.node_router, vec![0, 0, 1]);
        assert_eq!(
            g.links,
            vec![link(0, 1, 7, 7), link(1, 2, 1, 1), link(1, 2, 1, 1)]
        );
        assert_eq!(
            TopologyFileFormat::of("net", text),
            TopologyFileFormat::GraphMl
        );
    }

    /// Each error names the file, the line and what is wrong.
    #[test]
    fn bad_files_are_refused_naming_what_and_where() {
        for (text, name, want) in [
            ("router 0 node 0\nrouter 1 node 0\nrouter 0 router 1\n", "a.anynet", "a.anynet:2: node 0 on router 1, but line 1 put it on router 0"),
            ("router 0 node 0\nrouter 2 node 1\nrouter 0 router 2\n", "a.anynet", "a.anynet:2: router 2, but no router 1"),
            ("router 0 router 1 0\n", "a.anynet", "a.anynet:1: a latency of 0 cycles"),
            ("router 0 router 0\n", "a.anynet", "a.anynet:1: router 0 linked to itself"),
            ("node 0 node 1\n", "a.anynet", "nodes hang from routers"),
            ("router 0 node 0 5\n", "a.anynet", "node 0 with a link latency of 5 cycles"),
            ("router x\n", "a.anynet", "a.anynet:1: `x` is not a router"),
            ("0 1\n2 3\n", "two.edges", "two.edges: the network is in 2 parts that no link joins: routers 0-1; routers 2-3"),
            ("0 1\n0 2\n0 3\n", "star.edges", "star.edges: router 0 has 3 links, more than max_ports=2"),
            ("0 1 2 3\n", "x.edges", "x.edges:1: `0 1 2 3`: a line is"),
            ("<graphml><graph><node id=\"a\"/><edge source=\"a\" target=\"z\"/></graph></graphml>", "g.graphml", "g.graphml:1: an <edge> to router `z`, which no <node> defines"),
            ("<graphml>\n<graph edgedefault=\"directed\"/></graphml>", "g.graphml", "g.graphml:2: a directed graph"),
            ("<graphml><graph>", "g.graphml", "g.graphml:1: not XML"),
            ("<graphml><graph><node id=\"a\"/></graph></graphml>", "g.graphml", "no compute nodes"),
        ] {
            let e = parse(text, name, 2).unwrap_err().to_string();
            assert!(e.starts_with(want) || e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn parts_are_named_as_ranges() {
        assert_eq!(routers_text(&[0, 1, 2, 5, 7, 8]), "routers 0-2, 5, 7-8");
        assert_eq!(routers_text(&[4]), "router 4");
    }
}
