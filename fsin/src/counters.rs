//! The network's counters of a timeline (issue 59): per window, the
//! accepted load (phits/node/cycle delivered) and the links' utilization
//! (phits per cycle of a link, 0 to 1): every link by name for a network
//! of at most [`NAMED_LINKS`] links, the busiest link and the mean
//! otherwise. `fsin run --timeline` writes them per `--timeline-window`;
//! the co-simulation server per window of its links' watch
//! (`util_window` slices), for its own timeline and `fsin qemu`'s.

use crate::network::Network;

/// Links drawn one by one when the network has at most this many.
pub const NAMED_LINKS: usize = 64;

/// The counters of one network, window after window: what each is named,
/// and the links' packets at the current window's start.
#[derive(Debug, Clone)]
pub struct NetworkCounters {
    /// The counters' names, in the order [`NetworkCounters::take`] gives
    /// their values: `accepted load`, then `link N dD+`/`link N dD-`
    /// (router N's link along dimension D, positive or negative) or
    /// `busiest link utilization` and `mean link utilization`.
    names: Vec<String>,
    /// Packets of each link (router x ports + port) at the window's start.
    links: Vec<u64>,
    /// The links drawn one by one (empty: busiest and mean).
    named: Vec<usize>,
    /// The network's links (indices into `links` with a neighbour).
    real: Vec<usize>,
    plength: u64,
    nodes: u64,
}

impl NetworkCounters {
    /// The counters of `net`, their first window starting now.
    pub fn new(net: &Network) -> NetworkCounters {
        let topo = net.topology();
        let ports = topo.ports();
        let links = net.link_packets();
        let real: Vec<usize> = (0..links.len())
            .filter(|i| topo.neighbour((i / ports) as u32, i % ports).is_some())
            .collect();
        let named = if real.len() <= NAMED_LINKS {
            real.clone()
        } else {
            Vec::new()
        };
        let mut names = vec!["accepted load".to_string()];
        if named.is_empty() {
            names.push("busiest link utilization".into());
            names.push("mean link utilization".into());
        } else {
            names.extend(named.iter().map(|&i| {
                let (dim, positive) = net.link_direction(i % ports);
                let sign = if positive { '+' } else { '-' };
                format!("link {} d{dim}{sign}", i / ports)
            }));
        }
        NetworkCounters {
            names,
            links,
            named,
            real,
            plength: u64::from(net.spec().plength),
            nodes: net.nodes() as u64,
        }
    }

    /// The counters' names, in the order of their values.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Starts the next window now, without values for the one before (the
    /// start of a measured phase).
    pub fn restart(&mut self, net: &Network) {
        self.links = net.link_packets();
    }

    /// Ends the window now: `values` becomes its counters (in the order
    /// of [`NetworkCounters::names`]) for `phits` delivered over `cycles`
    /// network cycles; the next window starts.
    pub fn take(&mut self, net: &Network, phits: u64, cycles: u64, values: &mut Vec<f64>) {
        let c = cycles.max(1) as f64;
        values.clear();
        values.push(phits as f64 / self.nodes.max(1) as f64 / c);
        let now = net.link_packets();
        let util = |i: usize| (now[i] - self.links[i]) as f64 * self.plength as f64 / c;
        if self.named.is_empty() {
            let (busiest, sum) = (self.real.iter())
                .map(|&i| util(i))
                .fold((0.0, 0.0), |(b, s), u| (f64::max(b, u), s + u));
            values.push(busiest);
            values.push(sum / self.real.len().max(1) as f64);
        } else {
            values.extend(self.named.iter().map(|&i| util(i)));
        }
        self.links = now;
    }
}
