//! The network's counters of a timeline: per window, the
//! accepted load (phits/node/cycle delivered) and the links' utilization
//! (phits per cycle of a link, 0 to 1): every link by name for a network
//! of at most [`NAMED_LINKS`] links, the busiest link and the mean
//! otherwise. `fsin run --timeline` writes them per `--timeline-window`;
//! the co-simulation server per window of its links' watch
//! (`util_window` slices), for its own timeline and `fsin qemu`'s.

use crate::network::Network;

/// Links drawn one by one when the network has at most this many.
pub const NAMED_LINKS: usize = 64;

/// The counters of one network, window after window: what each is named
/// and which links they read (each caller keeps its windows' base).
#[derive(Debug, Clone)]
pub struct NetworkCounters {
    /// The counters' names, in the order [`NetworkCounters::values`] gives
    /// their values: `accepted load`, then `link N dD+`/`link N dD-`
    /// (router N's link along dimension D, positive or negative) or
    /// `busiest link utilization` and `mean link utilization`.
    names: Vec<String>,
    /// The links drawn one by one (empty: busiest and mean).
    named: Vec<usize>,
    /// The network's links (indices into [`Network::link_packets`] of ports
    /// with a neighbour).
    real: Vec<usize>,
    plength: u64,
    nodes: u64,
}

impl NetworkCounters {
    /// The counters of `net`'s links.
    pub fn new(net: &Network) -> NetworkCounters {
        let topo = net.topology();
        let ports = topo.ports();
        let links = net.link_packets().len();
        let real: Vec<usize> = (0..links)
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

    /// The counters of a window: `values` becomes them (in the order of
    /// [`NetworkCounters::names`]) for `phits` delivered over `cycles`
    /// network cycles, the links having carried `base` packets each
    /// (router x ports + port, [`Network::link_packets`]) at the window's
    /// start and `now` at its end. The caller owns the window's base: the
    /// co-simulation's link watch shares its own.
    pub fn values(
        &self,
        base: &[u64],
        now: &[u64],
        phits: u64,
        cycles: u64,
        values: &mut Vec<f64>,
    ) {
        let c = cycles.max(1) as f64;
        values.clear();
        values.push(phits as f64 / self.nodes.max(1) as f64 / c);
        let util = |i: usize| (now[i] - base[i]) as f64 * self.plength as f64 / c;
        if self.named.is_empty() {
            let (busiest, sum) = (self.real.iter())
                .map(|&i| util(i))
                .fold((0.0, 0.0), |(b, s), u| (f64::max(b, u), s + u));
            values.push(busiest);
            values.push(sum / self.real.len().max(1) as f64);
        } else {
            values.extend(self.named.iter().map(|&i| util(i)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn network(topo: &str) -> Network {
        let cfg = Config::from_settings(&[topo, "plength=8"]).unwrap();
        Network::new(&cfg.net).unwrap()
    }

    /// A bidirectional ring of 4 (8 links, each named): each link's
    /// utilization is its packets in the window x 8 phits / cycles.
    #[test]
    fn a_small_network_names_every_link_and_counts_from_the_callers_base() {
        let net = network("topo=torus_4");
        let c = NetworkCounters::new(&net);
        let ports = net.topology().ports();
        assert_eq!(ports, 2);
        assert_eq!(c.names().len(), 1 + 8);
        assert_eq!(c.names()[0], "accepted load");
        assert_eq!(c.names()[1], "link 0 d0+");
        assert_eq!(c.names()[2], "link 0 d0-");
        let base = vec![5u64; 8];
        let mut now = base.clone();
        now[0] += 10; // router 0, d0+: 10 packets
        now[3] += 5; // router 1, d0-: 5 packets
        let mut v = Vec::new();
        // 160 phits delivered over 4 nodes and 100 cycles: 0.4.
        c.values(&base, &now, 160, 100, &mut v);
        assert_eq!(v[0], 0.4);
        assert_eq!(v[1], 10.0 * 8.0 / 100.0);
        assert_eq!(v[4], 5.0 * 8.0 / 100.0);
        assert_eq!(v.iter().skip(1).filter(|&&u| u == 0.0).count(), 6);
    }

    /// A 6 x 6 torus has 144 links, more than NAMED_LINKS: the busiest
    /// and the mean over all of them instead.
    #[test]
    fn a_large_network_gives_the_busiest_and_the_mean_link() {
        let net = network("topo=torus_6_6");
        let c = NetworkCounters::new(&net);
        assert_eq!(
            c.names(),
            [
                "accepted load",
                "busiest link utilization",
                "mean link utilization"
            ]
        );
        let base = vec![0u64; 36 * net.topology().ports()];
        let mut now = base.clone();
        now[7] = 50;
        now[100] = 22;
        let mut v = Vec::new();
        c.values(&base, &now, 0, 400, &mut v);
        assert_eq!(v[0], 0.0);
        assert_eq!(v[1], 50.0 * 8.0 / 400.0);
        // (50 + 22) packets x 8 phits / 400 cycles over 144 links.
        assert!(
            (v[2] - 72.0 * 8.0 / 400.0 / 144.0).abs() < 1e-12,
            "{}",
            v[2]
        );
    }
}
