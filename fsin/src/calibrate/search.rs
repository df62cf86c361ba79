//! The calibration's one-dimensional search: where a non-decreasing
//! replay reaches a live figure (ITP's bracketing, from a hint first).

/// Where in `[lo, hi]` the non-decreasing `f(x)` reaches `target`: of
/// the two points at most `(hi - lo) / 2^steps` apart (what `steps`
/// halvings give) that bracket the crossing, the one where `f` is nearer
/// `target`; `lo` if `f` starts above it, `hi` if it never reaches it.
///
/// With a `hint` (a value found before for nearly the same `f`: the
/// previous turn's, or the previous wake-up cost's), the bracket is looked
/// for from it outwards first, in steps growing fourfold from 32 times
/// the precision. Then the search is ITP's (Interpolate, Truncate,
/// Project; Oliveira and Takahashi, ACM TOMS 47(1), 2020), with their
/// constants `κ1 = 0.2 / width`, `κ2 = 2`, `n0 = 1`: each step tries the
/// secant's point between the bracket's ends, moved towards the midpoint
/// and kept near enough to it that the bracket is never wider than
/// bisection's after one step more; so at most one evaluation more than
/// bisection, and fewer on the replays' nearly linear costs (their time
/// grows with a cost by the number of times it is paid, up to a slice's
/// quantum).
pub(super) fn reach<E>(
    lo: f64,
    hi: f64,
    hint: Option<f64>,
    target: f64,
    steps: u32,
    mut f: impl FnMut(f64) -> Result<f64, E>,
) -> Result<f64, E> {
    let eps = (hi - lo) / f64::from(2u32).powi(steps as i32 + 1);
    let mut g = |x: f64| Ok::<_, E>(f(x)? - target);
    // The bracket: g(lo) < 0 <= g(hi), each end's value when known.
    let (mut lo, mut hi) = ((lo, None), (hi, None));
    if let Some(h) = hint.filter(|h| *h > lo.0 && *h < hi.0) {
        let at = g(h)?;
        // Outwards from the hint, on the side the crossing is on.
        let up = at < 0.0;
        if up {
            lo = (h, Some(at));
        } else {
            hi = (h, Some(at));
        }
        let mut step = 64.0 * eps;
        while if up { hi.1.is_none() } else { lo.1.is_none() } {
            let x = if up { lo.0 + step } else { hi.0 - step };
            if x <= lo.0 || x >= hi.0 {
                break;
            }
            let y = g(x)?;
            if y < 0.0 {
                lo = (x, Some(y));
            } else {
                hi = (x, Some(y));
            }
            step *= 4.0;
        }
    }
    let mut y_lo = match lo.1 {
        Some(y) => y,
        None => g(lo.0)?,
    };
    if y_lo >= 0.0 {
        return Ok(lo.0);
    }
    let mut y_hi = match hi.1 {
        Some(y) => y,
        None => g(hi.0)?,
    };
    if y_hi < 0.0 {
        return Ok(hi.0);
    }
    let (mut lo, mut hi) = (lo.0, hi.0);
    let width = hi - lo;
    let kappa1 = 0.2 / width;
    // The projection's radius after `j` steps is `eps * 2^(n - j)` less
    // half the bracket, `n` the steps bisection would take, plus one: at
    // most `n` steps (a cap too where rounding would keep a bracket of a
    // few floating-point numbers from shrinking).
    let n = (width / eps).log2().ceil().max(0.0);
    let mut radius_scale = eps * n.exp2();
    for _ in 0..n as u32 {
        if hi - lo <= 2.0 * eps {
            break;
        }
        let mid = (lo + hi) / 2.0;
        let radius = radius_scale - (hi - lo) / 2.0;
        let delta = kappa1 * (hi - lo) * (hi - lo);
        // The secant's point: y_lo < 0 <= y_hi, so y_hi - y_lo > 0.
        let secant = (y_hi * lo - y_lo * hi) / (y_hi - y_lo);
        let towards = (mid - secant).signum();
        let truncated = if delta <= (mid - secant).abs() {
            secant + towards * delta
        } else {
            mid
        };
        let x = if (truncated - mid).abs() <= radius {
            truncated
        } else {
            mid - towards * radius
        };
        let y = g(x)?;
        if y < 0.0 {
            (lo, y_lo) = (x, y);
        } else {
            (hi, y_hi) = (x, y);
        }
        radius_scale /= 2.0;
    }
    // Of the bracket's ends, the one whose replay is nearer the target
    // (the replays' times go in steps of a slice: the crossing itself
    // gives neither).
    Ok(if -y_lo < y_hi { lo } else { hi })
}
