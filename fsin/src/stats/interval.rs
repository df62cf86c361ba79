//! Confidence intervals of a mean from independent samples (a run's batch
//! means, a study's repeats): Student's t with n - 1 degrees of freedom
//! (the method of batch means; Law and Kelton, "Simulation Modeling and
//! Analysis", ch. 9), quantiles from `statrs`.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Mean and half-width of the two-sided `level` confidence interval
/// (e.g. 0.95) of the mean of `samples`, in the samples' unit: `None` for
/// fewer than two samples or a level outside (0, 1).
pub fn mean_half_width(samples: &[f64], level: f64) -> Option<(f64, f64)> {
    let n = samples.len();
    if n < 2 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let mean = samples.iter().sum::<f64>() / n as f64;
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .ok()?
        .inverse_cdf(0.5 + level / 2.0);
    Some((mean, t * (var / n as f64).sqrt()))
}

/// Whether a half-width `half` is within `thres` (relative) of `mean`; a
/// zero half-width always is (nothing varied, e.g. nothing delivered).
pub fn within(mean: f64, half: f64, thres: f64) -> bool {
    half == 0.0 || half <= thres * mean.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_widths_match_the_t_tables() {
        // t(0.975, 2) = 4.303 (any table); samples 1, 2, 3: s = 1.
        let (m, h) = mean_half_width(&[1.0, 2.0, 3.0], 0.95).unwrap();
        assert_eq!(m, 2.0);
        assert!((h - 4.303 / 3f64.sqrt()).abs() < 1e-3, "{h}");
        // t(0.995, 9) = 3.250; ten samples 0..9: s^2 = 55/6.
        let xs: Vec<f64> = (0..10).map(f64::from).collect();
        let (_, h) = mean_half_width(&xs, 0.99).unwrap();
        assert!(
            (h - 3.250 * (55.0f64 / 6.0 / 10.0).sqrt()).abs() < 1e-3,
            "{h}"
        );
        assert_eq!(mean_half_width(&[5.0], 0.95), None);
        assert_eq!(mean_half_width(&[1.0, 2.0], 1.0), None);
        assert!(within(10.0, 0.4, 0.05) && !within(10.0, 0.6, 0.05));
        assert!(within(0.0, 0.0, 0.05));
    }
}
