//! Detailed outputs behind INSEE's `plevel` bits (INSEE's print_results.c),
//! collected over the whole run and written under `--out DIR`:
//!
//! | bit | file | what |
//! |---|---|---|
//! | 1 | `pairs.csv` | packets per (source, destination): generated, delivered |
//! | 2 | `links.csv`, `utilization.svg` | packets and utilization of every link; heat map of each node's outgoing links (2D) |
//! | 4 | `distance.csv` | distance histogram at generation and at delivery |
//! | 8 | `queues.csv` | per input queue, cycles spent holding 0, 1, ... packets |
//! | 16 | `packets.csv` | every delivered packet: ids, cycles of generation, injection, delivery, hops |
//!
//! `plevel.json` holds the maps of bits 1, 2 and 4 together.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use rand::SeedableRng;
use serde::Serialize;

use crate::engine::Delivered;

use crate::network::Network;
use crate::study::PlotError;
use crate::traffic::Observer;

/// Counts each packet handed to the network (bits 1 and 4).
impl Observer for Detail {
    fn generated(&mut self, net: &Network, src: u32, dst: u32) {
        if self.bits & 1 != 0 {
            self.pairs.entry((src, dst)).or_default().0 += 1;
        }
        if self.bits & 4 != 0 {
            let topo = net.topology();
            let d = topo.hops(&topo.record(src, dst, &mut self.rng)) as usize;
            grow(&mut self.distance, d).0 += 1;
        }
    }
}

/// Detailed statistics of one run.
pub struct Detail {
    bits: u32,
    dir: PathBuf,
    /// (source, destination) -> (generated, delivered).
    pairs: BTreeMap<(u32, u32), (u64, u64)>,
    /// Distance -> (generated, delivered).
    distance: Vec<(u64, u64)>,
    /// Per input queue (node * inputs + input): cycles at each occupancy
    /// in packets.
    queues: Vec<Vec<u64>>,
    packets: Option<BufWriter<File>>,
    /// First error writing `packets.csv`, returned by [`Detail::finish`].
    error: Option<std::io::Error>,
    rng: rand_pcg::Pcg64Mcg,
}

#[derive(Serialize)]
struct Pair {
    src: u32,
    dst: u32,
    generated: u64,
    delivered: u64,
}

/// One link's use over a run: `packets` crossed it from router `node`'s
/// output `port` (dimension `dim`, direction `positive`), `utilization`
/// phits per cycle (packets x plength over the cycles counted, 0 to 1).
#[derive(Debug, Clone, Serialize)]
pub struct LinkUse {
    /// The router the link leaves.
    pub node: u32,
    /// Its output port there.
    pub port: usize,
    /// The port's dimension.
    pub dim: usize,
    /// Whether the port goes the dimension's positive way.
    pub positive: bool,
    /// Packets that crossed it.
    pub packets: u64,
    /// Phits per cycle, 0 to 1.
    pub utilization: f64,
}

/// The use of every link of `net` that exists, from `packets` per link
/// (router x ports + port, as [`Network::link_packets`]) over `cycles`
/// network cycles.
pub fn link_uses(net: &Network, packets: &[u64], cycles: u64) -> Vec<LinkUse> {
    let cycles = cycles.max(1) as f64;
    let ports = net.topology().ports();
    let plen = f64::from(net.spec().plength);
    packets
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            net.topology()
                .neighbour((i / ports) as u32, i % ports)
                .is_some()
        })
        .map(|(i, &n)| {
            let (dim, positive) = net.link_direction(i % ports);
            LinkUse {
                node: (i / ports) as u32,
                port: i % ports,
                dim,
                positive,
                packets: n,
                utilization: n as f64 * plen / cycles,
            }
        })
        .collect()
}

/// Writes `links.csv` (every link's packets and utilization) into `dir`
/// and, for a network of one or two dimensions `dims`, `utilization.svg`
/// (a heat map of the mean utilization of each node's outgoing links);
/// returns the files written.
///
/// # Errors
/// A file that cannot be written.
pub fn write_links(dir: &Path, links: &[LinkUse], dims: &[u32]) -> std::io::Result<Vec<PathBuf>> {
    let mut s = String::from("node,port,dim,positive,packets,utilization\n");
    for l in links {
        s.push_str(&format!(
            "{},{},{},{},{},{:.6}\n",
            l.node, l.port, l.dim, l.positive, l.packets, l.utilization
        ));
    }
    let mut files = vec![dir.join("links.csv")];
    std::fs::write(&files[0], s)?;
    if let (1 | 2, Some(&nx)) = (dims.len(), dims.first()) {
        let ny = dims.get(1).copied().unwrap_or(1);
        let mut per_node = vec![(0.0, 0u32); (nx * ny) as usize];
        for l in links {
            if let Some(n) = per_node.get_mut(l.node as usize) {
                n.0 += l.utilization;
                n.1 += 1;
            }
        }
        let mean: Vec<f64> = per_node
            .iter()
            .map(|&(u, n)| if n > 0 { u / f64::from(n) } else { 0.0 })
            .collect();
        let p = dir.join("utilization.svg");
        std::fs::write(&p, heat_map(nx, ny, &mean).map_err(std::io::Error::other)?)?;
        files.push(p);
    }
    Ok(files)
}

impl Detail {
    /// Detail collection for `bits` on `net`, writing into `dir`.
    ///
    /// # Errors
    /// The directory or `packets.csv` cannot be created.
    pub fn new(bits: u32, dir: &Path, net: &Network) -> std::io::Result<Detail> {
        std::fs::create_dir_all(dir)?;
        let packets = if bits & 16 != 0 {
            let mut w = BufWriter::new(File::create(dir.join("packets.csv"))?);
            writeln!(w, "src,dst,t_gen,t_inj,t_done,hops,latency")?;
            Some(w)
        } else {
            None
        };
        Ok(Detail {
            bits,
            dir: dir.to_path_buf(),
            pairs: BTreeMap::new(),
            distance: Vec::new(),
            queues: if bits & 8 != 0 {
                vec![Vec::new(); net.nodes() * net.inputs_per_router()]
            } else {
                Vec::new()
            },
            packets,
            error: None,
            rng: rand_pcg::Pcg64Mcg::seed_from_u64(0),
        })
    }

    /// Whether the run must record deliveries for these bits.
    pub fn needs_deliveries(&self) -> bool {
        self.bits & (1 | 4 | 16) != 0
    }

    /// A packet delivered (a write error is kept for [`Detail::finish`]).
    pub fn delivered(&mut self, d: &Delivered) {
        if self.bits & 1 != 0 {
            self.pairs.entry((d.src, d.dst)).or_default().1 += 1;
        }
        if self.bits & 4 != 0 {
            grow(&mut self.distance, d.hops as usize).1 += 1;
        }
        if let Some(w) = self.packets.as_mut() {
            if let Err(e) = writeln!(
                w,
                "{},{},{},{},{},{},{}",
                d.src,
                d.dst,
                d.t_gen,
                d.t_inj,
                d.t_done,
                d.hops,
                d.t_done - d.t_gen
            ) {
                self.error.get_or_insert(e);
                self.packets = None;
            }
        }
    }

    /// Samples the queues (bit 8) after a simulated cycle.
    pub fn cycle(&mut self, net: &Network) {
        if self.bits & 8 == 0 {
            return;
        }
        let per = net.inputs_per_router();
        for node in 0..net.nodes() as u32 {
            for e in 0..per {
                let c = net.queue_packets(node, e) as usize;
                *grow(&mut self.queues[node as usize * per + e], c) += 1;
            }
        }
    }

    /// Cycles skipped on an idle network: every queue empty.
    pub fn idle(&mut self, cycles: u64) {
        for q in &mut self.queues {
            *grow(q, 0) += cycles;
        }
    }

    /// Writes the files of the enabled bits; returns their paths.
    ///
    /// # Errors
    /// Any I/O error, including one met while the run wrote `packets.csv`.
    pub fn finish(mut self, net: &Network) -> std::io::Result<Vec<PathBuf>> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut files = Vec::new();
        let mut link_files = Vec::new();
        let mut json = serde_json::Map::new();
        let mut put = |name: &str, text: String| -> std::io::Result<()> {
            let p = self.dir.join(name);
            std::fs::write(&p, text)?;
            files.push(p);
            Ok(())
        };
        if self.bits & 1 != 0 {
            let mut s = String::from("src,dst,generated,delivered\n");
            let mut rows = Vec::new();
            for (&(src, dst), &(g, d)) in &self.pairs {
                s.push_str(&format!("{src},{dst},{g},{d}\n"));
                rows.push(Pair {
                    src,
                    dst,
                    generated: g,
                    delivered: d,
                });
            }
            put("pairs.csv", s)?;
            json.insert("pairs".into(), serde_json::to_value(rows)?);
        }
        if self.bits & 2 != 0 {
            let links = link_uses(net, &net.link_packets(), net.now());
            link_files = write_links(&self.dir, &links, &net.spec().dims)?;
            json.insert("links".into(), serde_json::to_value(links)?);
        }
        if self.bits & 4 != 0 {
            let mut s = String::from("distance,generated,delivered\n");
            for (d, (g, c)) in self.distance.iter().enumerate() {
                s.push_str(&format!("{d},{g},{c}\n"));
            }
            put("distance.csv", s)?;
            json.insert("distance".into(), serde_json::to_value(&self.distance)?);
        }
        if self.bits & 8 != 0 {
            let per = net.inputs_per_router();
            let width = self.queues.iter().map(Vec::len).max().unwrap_or(1);
            let mut s = String::from("node,input,kind");
            for c in 0..width {
                s.push_str(&format!(",packets_{c}"));
            }
            s.push('\n');
            let transit = per - net.spec().ninj as usize;
            for (i, q) in self.queues.iter().enumerate() {
                let kind = if i % per < transit {
                    "transit"
                } else {
                    "injection"
                };
                s.push_str(&format!("{},{},{kind}", i / per, i % per));
                for c in 0..width {
                    s.push_str(&format!(",{}", q.get(c).copied().unwrap_or(0)));
                }
                s.push('\n');
            }
            put("queues.csv", s)?;
        }
        files.extend(link_files);
        if let Some(mut w) = self.packets.take() {
            w.flush()?;
            files.push(self.dir.join("packets.csv"));
        }
        if !json.is_empty() {
            let p = self.dir.join("plevel.json");
            std::fs::write(&p, serde_json::to_string_pretty(&json)? + "\n")?;
            files.push(p);
        }
        Ok(files)
    }
}

fn grow<T: Default>(v: &mut Vec<T>, i: usize) -> &mut T {
    if v.len() <= i {
        v.resize_with(i + 1, T::default);
    }
    &mut v[i]
}

/// A heat map of one value per node of an `nx x ny` grid (node = x + nx y,
/// y growing downwards), from light yellow (the minimum) to dark red (the
/// maximum); the caption gives both.
fn heat_map(nx: u32, ny: u32, values: &[f64]) -> Result<String, PlotError> {
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    let span = (max - min).max(1e-12);
    // YlOrRd: three stops, interpolated.
    let stops = [
        (255.0, 255.0, 204.0),
        (253.0, 141.0, 60.0),
        (128.0, 0.0, 38.0),
    ];
    let color = |v: f64| {
        let t = ((v - min) / span).clamp(0.0, 1.0) * 2.0;
        let (a, b, f) = if t < 1.0 {
            (stops[0], stops[1], t)
        } else {
            (stops[1], stops[2], t - 1.0)
        };
        let mix = |p: f64, q: f64| (p + (q - p) * f) as u8;
        RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
    };
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (560, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(PlotError::of)?;
        let mut c = ChartBuilder::on(&root)
            .caption(
                format!(
                    "mean utilization of each node's links: {min:.3} (light) to {max:.3} (dark)"
                ),
                ("sans-serif", 15),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(36)
            .build_cartesian_2d(0.0..f64::from(nx), f64::from(ny)..0.0)
            .map_err(PlotError::of)?;
        c.configure_mesh()
            .disable_mesh()
            .x_desc("x")
            .y_desc("y")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(PlotError::of)?;
        c.draw_series(
            (0..ny)
                .flat_map(|y| (0..nx).map(move |x| (x, y)))
                .map(|(x, y)| {
                    let v = values[(x + nx * y) as usize];
                    let (x, y) = (f64::from(x), f64::from(y));
                    Rectangle::new([(x, y), (x + 1.0, y + 1.0)], color(v).filled())
                }),
        )
        .map_err(PlotError::of)?;
        root.present().map_err(PlotError::of)?;
    }
    Ok(out)
}
