//! `timeline.svg`: a Gantt chart of a timeline's rows (each row's dominant
//! state over each stretch of time, in Paraver's colours) with the
//! network's accepted load under it, for timelines of at most
//! [`MAX_ROWS`] rows.
//!
//! The chart is kept as the run goes in [`BINS`] bins per row, whatever
//! the run's length: when a record passes the last bin, the bins are
//! merged pairwise (each then covers twice the ticks), so that memory stays
//! at rows x bins x states counts.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::State;

/// Rows a Gantt chart draws at most (more would not be readable).
pub const MAX_ROWS: usize = 64;

/// Bins per row.
const BINS: usize = 1024;

/// The chart's counts so far.
pub(crate) struct Gantt {
    names: Vec<String>,
    /// Ticks per bin: a power of two.
    width: u64,
    /// Per row and bin: ticks in each state (in [`State::ALL`]'s order).
    rows: Vec<Vec<[u64; STATES]>>,
    /// Per bin: the sum and count of the accepted load's values.
    load: Vec<(f64, u32)>,
}

fn slot(state: State) -> usize {
    State::ALL.iter().position(|&s| s == state).unwrap_or(0)
}

fn colour(state: State) -> RGBColor {
    let (r, g, b) = state.rgb();
    RGBColor(r, g, b)
}

/// States a bin counts.
const STATES: usize = State::ALL.len();

impl Gantt {
    pub(crate) fn new(names: Vec<String>) -> Gantt {
        Gantt {
            rows: vec![vec![[0; STATES]; BINS]; names.len()],
            names,
            width: 1,
            load: vec![(0.0, 0); BINS],
        }
    }

    /// Wider bins until tick `t` falls in one.
    fn reach(&mut self, t: u64) {
        while t >= self.width.saturating_mul(BINS as u64) && self.width < 1 << 62 {
            self.width *= 2;
            for row in &mut self.rows {
                for k in 0..BINS / 2 {
                    let (a, b) = (row[2 * k], row[2 * k + 1]);
                    row[k] = std::array::from_fn(|s| a[s] + b[s]);
                }
                row[BINS / 2..].fill([0; STATES]);
            }
            for k in 0..BINS / 2 {
                let (a, b) = (self.load[2 * k], self.load[2 * k + 1]);
                self.load[k] = (a.0 + b.0, a.1 + b.1);
            }
            self.load[BINS / 2..].fill((0.0, 0));
        }
    }

    pub(crate) fn state(&mut self, row: u32, from: u64, to: u64, state: State) {
        if row as usize >= self.rows.len() || to <= from {
            return;
        }
        self.reach(to - 1);
        let w = self.width;
        let s = slot(state);
        let bins = &mut self.rows[row as usize];
        let mut t = from;
        while t < to {
            let k = (t / w) as usize;
            let next = ((k as u64 + 1) * w).min(to);
            bins[k.min(BINS - 1)][s] += next - t;
            t = next;
        }
    }

    pub(crate) fn load(&mut self, t: u64, value: f64) {
        if !value.is_finite() {
            return;
        }
        self.reach(t);
        let k = ((t / self.width) as usize).min(BINS - 1);
        self.load[k].0 += value;
        self.load[k].1 += 1;
    }

    /// The chart of ticks 0 to `end`, `tick` naming a tick.
    pub(crate) fn svg(&self, end: u64, tick: &str) -> Result<String, String> {
        let e = |e: &dyn std::fmt::Display| e.to_string();
        let rows = self.rows.len();
        let bins = (end.div_ceil(self.width) as usize).clamp(1, BINS);
        let x_end = (bins as u64 * self.width) as f64;
        let mut out = String::new();
        {
            let height = 120 + 14 * rows as u32 + 180;
            let root = SVGBackend::with_string(&mut out, (960, height)).into_drawing_area();
            root.fill(&WHITE).map_err(|x| e(&x))?;
            let (top, bottom) = root.split_vertically(height - 180);
            let mut chart = ChartBuilder::on(&top)
                .caption(
                    "what each row did (blue running, red waiting a message, pink sending, dark red at a barrier)",
                    ("sans-serif", 14),
                )
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(90)
                .build_cartesian_2d(0.0..x_end, 0.0..rows as f64)
                .map_err(|x| e(&x))?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_desc(format!("{tick}s"))
                .y_labels(0)
                .draw()
                .map_err(|x| e(&x))?;
            // Each row's name at its middle, every row up to 32 of them
            // (else every step-th); plotters' own labels would fall on
            // round values of the axis, the rows' boundaries.
            let step = rows.div_ceil(32).max(1);
            let style = ("sans-serif", 12)
                .into_font()
                .into_text_style(&root)
                .pos(Pos::new(HPos::Right, VPos::Center));
            for (r, name) in self.names.iter().enumerate().step_by(step) {
                let (x, y) = chart.backend_coord(&(0.0, (rows - 1 - r) as f64 + 0.5));
                root.draw(&Text::new(name.clone(), (x - 6, y), style.clone()))
                    .map_err(|x| e(&x))?;
            }
            let w = self.width as f64;
            for (r, row) in self.rows.iter().enumerate() {
                let y = (rows - 1 - r) as f64;
                // Runs of bins with one dominant state, one rectangle each.
                let mut run: Option<(usize, usize)> = None;
                let mut bars = Vec::new();
                for (k, counts) in row.iter().enumerate().take(bins) {
                    let busy = counts.iter().sum::<u64>() > 0;
                    let top = (0..STATES).max_by_key(|&s| counts[s]).unwrap_or(0);
                    let now = busy.then_some(top);
                    match (run, now) {
                        (Some((s, from)), Some(t)) if s == t => run = Some((s, from)),
                        _ => {
                            if let Some((s, from)) = run {
                                bars.push((s, from, k));
                            }
                            run = now.map(|t| (t, k));
                        }
                    }
                }
                if let Some((s, from)) = run {
                    bars.push((s, from, bins));
                }
                chart
                    .draw_series(bars.into_iter().map(|(s, a, b)| {
                        Rectangle::new(
                            [(a as f64 * w, y + 0.15), (b as f64 * w, y + 0.85)],
                            colour(State::ALL[s]).filled(),
                        )
                    }))
                    .map_err(|x| e(&x))?;
            }
            let points: Vec<(f64, f64)> = (self.load.iter().enumerate().take(bins))
                .filter(|(_, (_, n))| *n > 0)
                .map(|(k, (sum, n))| ((k as f64 + 0.5) * w, sum / f64::from(*n)))
                .collect();
            let hi = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.15;
            let mut chart = ChartBuilder::on(&bottom)
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(90)
                .build_cartesian_2d(0.0..x_end, 0.0..hi)
                .map_err(|x| e(&x))?;
            chart
                .configure_mesh()
                .x_desc(format!("{tick}s"))
                .y_desc("accepted load")
                .draw()
                .map_err(|x| e(&x))?;
            chart
                .draw_series(LineSeries::new(points, BLACK.stroke_width(2)))
                .map_err(|x| e(&x))?;
            root.present().map_err(|x| e(&x))?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bins stay at 1 024 however long the run: merged pairwise, each
    /// row's ticks per state are kept.
    #[test]
    fn bins_merge_and_keep_every_tick() {
        let mut g = Gantt::new(vec!["a".into(), "b".into()]);
        g.state(0, 0, 10, State::Running);
        g.state(0, 10, 5_000, State::Waiting);
        g.state(1, 0, 1_000_000, State::Sending);
        g.load(999_999, 0.5);
        assert!(g.width >= 1024 && g.width.is_power_of_two());
        let total = |r: usize, s: State| g.rows[r].iter().map(|b| b[slot(s)]).sum::<u64>();
        assert_eq!(total(0, State::Running), 10);
        assert_eq!(total(0, State::Waiting), 4_990);
        assert_eq!(total(1, State::Sending), 1_000_000);
        assert_eq!(g.load.iter().map(|l| l.1).sum::<u32>(), 1);
        let svg = g.svg(1_000_000, "network cycle").unwrap();
        assert!(svg.contains("<svg") && svg.contains("accepted load"));
        // Row a: one red bar (bins 0-4 of 1 024 cycles mostly waiting);
        // row b: one pink bar across.
        assert_eq!(svg.matches("fill=\"#FF0000\"").count(), 1, "{svg}");
        assert_eq!(svg.matches("fill=\"#FF00AE\"").count(), 1);
    }

    /// Every row's name is drawn once, at the middle of its row (labels
    /// used to read task 0, 1, 3, 5 ... and sit on the rows' boundaries).
    #[test]
    fn every_row_is_named_at_its_middle() {
        let names: Vec<String> = (0..16).map(|k| format!("task {k}")).collect();
        let mut g = Gantt::new(names.clone());
        for r in 0..16 {
            g.state(r, 0, 10_000, State::Running);
        }
        let svg = g.svg(10_000, "network cycle").unwrap();
        let attr = |tag: &str, name: &str| -> f64 {
            let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            tag[at..].split('"').next().unwrap().parse().unwrap()
        };
        // The bars, top row first: each row's middle in pixels.
        let middles: Vec<f64> = svg
            .split("<rect")
            .skip(1)
            .filter(|t| t.contains("fill=\"#0000FF\""))
            .map(|t| attr(t, "y") + attr(t, "height") / 2.0)
            .collect();
        assert_eq!(middles.len(), 16, "{svg}");
        for (k, name) in names.iter().enumerate() {
            let texts: Vec<&str> = svg
                .split("<text")
                .skip(1)
                .filter(|t| {
                    t.split("</text>")
                        .next()
                        .unwrap()
                        .trim_end()
                        .ends_with(&format!(">\n{name}"))
                        || t.contains(&format!(">{name}<"))
                })
                .collect();
            assert_eq!(texts.len(), 1, "{name}");
            let y = attr(texts[0], "y");
            assert!(
                (y - middles[k]).abs() <= 1.0,
                "{name} at y {y}, its row's middle {}",
                middles[k]
            );
        }
    }
}
