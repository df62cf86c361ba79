//! A file topology drawn as SVG (`fsin topology topo=file:... --out DIR`):
//! the routers on a circle in their order (a dragonfly's
//! groups, a Slim Fly's two halves, a torus's rows side by side), their
//! links as chords, the compute nodes of an indirect network as dots just
//! outside their router, and a bisection's two sides in two colours with
//! the links it cuts in red.

use plotters::prelude::*;

use crate::spec::Graph;
use crate::study::PlotError;

/// Most compute nodes drawn as dots of their own (beyond, the caption
/// says they are left out).
pub const MAX_DRAWN_NODES: usize = 1024;

/// The drawing of `g`, captioned `title`; `side` (per router, as
/// [`crate::config::bisection::Bisection::side`]) colours the two sides
/// of a bisection and the links between them.
///
/// # Errors
/// [`PlotError`] if a drawing step fails.
pub fn topology_svg(g: &Graph, title: &str, side: Option<&[bool]>) -> Result<String, PlotError> {
    let routers = g.routers.max(1) as usize;
    let at = |r: usize, radius: f64, shift: f64| {
        let a = std::f64::consts::TAU * (r as f64 + shift) / routers as f64
            - std::f64::consts::FRAC_PI_2;
        (radius * a.cos(), radius * a.sin())
    };
    let cut = |a: u32, b: u32| side.is_some_and(|s| s[a as usize] != s[b as usize]);
    let nodes = !g.is_direct() && g.node_router.len() <= MAX_DRAWN_NODES;
    let mut caption = format!(
        "{title}: {} routers, {} nodes, {} router links",
        g.routers,
        g.node_router.len(),
        g.links.len()
    );
    if side.is_some() {
        let n = g.links.iter().filter(|l| cut(l.a, l.b)).count();
        caption.push_str(&format!("; {n} cut by the bisection (red)"));
    }
    if !g.is_direct() && !nodes {
        caption.push_str("; nodes not drawn");
    }
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (720, 760)).into_drawing_area();
        root.fill(&WHITE).map_err(PlotError::of)?;
        let mut c = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 15))
            .margin(10)
            .build_cartesian_2d(-1.3..1.3, -1.3..1.3)
            .map_err(PlotError::of)?;
        let grey = RGBColor(170, 170, 170);
        c.draw_series(g.links.iter().map(|l| {
            let colour = if cut(l.a, l.b) { RED } else { grey };
            PathElement::new(
                vec![at(l.a as usize, 1.0, 0.0), at(l.b as usize, 1.0, 0.0)],
                colour.stroke_width(1),
            )
        }))
        .map_err(PlotError::of)?;
        if nodes {
            // A router's nodes fan out over the space it has on the circle.
            let mut seen = vec![0usize; routers];
            let mut count = vec![0usize; routers];
            for &r in &g.node_router {
                count[r as usize] += 1;
            }
            let spots: Vec<((f64, f64), (f64, f64))> = g
                .node_router
                .iter()
                .map(|&r| {
                    let r = r as usize;
                    let k = seen[r];
                    seen[r] += 1;
                    let shift = (k as f64 + 0.5) / count[r] as f64 - 0.5;
                    (at(r, 1.0, 0.0), at(r, 1.12, 0.8 * shift))
                })
                .collect();
            c.draw_series(
                spots
                    .iter()
                    .map(|&(r, n)| PathElement::new(vec![r, n], grey.stroke_width(1))),
            )
            .map_err(PlotError::of)?;
            c.draw_series(
                spots
                    .iter()
                    .map(|&(_, n)| Circle::new(n, 2, BLACK.filled())),
            )
            .map_err(PlotError::of)?;
        }
        let size = if routers > 200 { 3 } else { 5 };
        c.draw_series((0..routers).map(|r| {
            let colour = match side.map(|s| s[r]) {
                Some(true) => RGBColor(230, 120, 20),
                Some(false) => RGBColor(30, 90, 200),
                None => RGBColor(60, 60, 60),
            };
            Circle::new(at(r, 1.0, 0.0), size, colour.filled())
        }))
        .map_err(PlotError::of)?;
        root.present().map_err(PlotError::of)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::GraphLink;

    /// A star of one switch and 4 nodes, split by a bisection of one
    /// router: one router dot, four node dots with their links, and the
    /// caption's counts; a ring of 4 split 2 and 2 draws its 2 cut links
    /// in red and 2 in grey.
    #[test]
    fn the_drawing_holds_every_router_node_and_link() {
        let link = |a, b| GraphLink {
            a,
            b,
            latency_ab: 1,
            latency_ba: 1,
        };
        let star = Graph {
            routers: 1,
            node_router: vec![0; 4],
            links: vec![],
        };
        let svg = topology_svg(&star, "star", None).unwrap();
        assert_eq!(svg.matches("<circle").count(), 5, "{svg}");
        assert!(svg.contains("star: 1 routers, 4 nodes, 0 router links"));
        let ring = Graph {
            routers: 4,
            node_router: vec![0, 1, 2, 3],
            links: vec![link(0, 1), link(1, 2), link(2, 3), link(3, 0)],
        };
        let svg = topology_svg(&ring, "ring", Some(&[false, false, true, true])).unwrap();
        assert_eq!(svg.matches("<circle").count(), 4);
        assert_eq!(svg.matches("stroke=\"#FF0000\"").count(), 2, "{svg}");
        assert!(svg.contains("2 cut by the bisection"));
    }
}
