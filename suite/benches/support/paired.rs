//! A ratio measured in pairs: the work measured and its baseline run back to back,
//! in turn first, so that a machine's slower and faster moments fall on both alike
//! (criterion measures each function over seconds of its own).

use std::time::Duration;

/// What [`paired`] measured.
pub struct Paired {
    /// The median of the pairs' ratios (measured / baseline).
    pub median: f64,
    /// The first and third quartiles of the ratios.
    pub quartiles: (f64, f64),
    /// The measured work's total time.
    pub measured: Duration,
    /// The baseline's total time.
    pub baseline: Duration,
}

/// Runs `rounds` pairs of `measured` and `baseline` (each returns the time it took).
pub fn paired(
    rounds: usize,
    mut measured: impl FnMut() -> Duration,
    mut baseline: impl FnMut() -> Duration,
) -> Paired {
    let mut ratios = Vec::with_capacity(rounds);
    let (mut measured_total, mut baseline_total) = (Duration::ZERO, Duration::ZERO);
    for round in 0..rounds {
        let (m, b) = if round % 2 == 0 {
            let m = measured();
            (m, baseline())
        } else {
            let b = baseline();
            (measured(), b)
        };
        measured_total += m;
        baseline_total += b;
        ratios.push(m.as_secs_f64() / b.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: usize| ratios.get(rounds * q / 4).copied().unwrap_or(f64::NAN);
    Paired {
        median: at(2),
        quartiles: (at(1), at(3)),
        measured: measured_total,
        baseline: baseline_total,
    }
}
