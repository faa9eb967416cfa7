//! The one statistics module of the lab: medians with their range, a distribution-free
//! confidence interval for the median, and ratios.

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// The middle value (mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// Median, min and max of `values`; `None` when empty.
#[must_use]
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    };
    Some(Summary { median, min: v[0], max: v[n - 1] })
}

/// A distribution-free 95% confidence interval for the median of the population `values` were
/// drawn from: the order statistics `x(k)` and `x(n + 1 - k)` (1-based, ascending), with `k` the
/// largest rank whose binomial tail `P(B(n, 1/2) < k)` is at most 2.5%. It assumes only that the
/// values are independent draws from one distribution. `None` for fewer than 6 values, where
/// even the smallest and largest value cover the median with less than 95% probability.
#[must_use]
pub fn median_interval(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    let k = if n <= 1000 {
        // P(B < k), summed from P(B = 0) = 2^-n (no underflow for n <= 1000).
        let mut pmf = 0.5f64.powi(i32::try_from(n).ok()?);
        let (mut below, mut k) = (0.0, 0);
        while below + pmf <= 0.025 {
            below += pmf;
            pmf *= (n - k) as f64 / (k + 1) as f64;
            k += 1;
        }
        k
    } else {
        // The normal approximation of the binomial.
        ((n as f64 / 2.0 - 1.96 * (n as f64).sqrt() / 2.0).floor()) as usize
    };
    if k == 0 {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some((v[k - 1], v[n - k]))
}

/// `num / den`, if `den` is positive.
#[must_use]
pub fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0).then(|| num / den)
}

/// The median of `values` (`None` when empty).
#[must_use]
pub fn median(values: &[f64]) -> Option<f64> {
    summarize(values).map(|s| s.median)
}

/// The median of `f` over the items of `items` that `keep` selects and `f` gives a value for.
pub fn median_by<T>(items: &[T], keep: impl Fn(&T) -> bool, f: impl Fn(&T) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = items.iter().filter(|x| keep(x)).filter_map(&f).collect();
    median(&v)
}

/// The order in which repetition `rep` measures `n` configurations: `0..n`, turned round in
/// every other repetition (A B C, C B A, A B C, ...). On a shared machine the place within a
/// repetition favours one end (a fresh process's memory, a neighbour's load that comes and
/// goes), so no configuration is always first.
pub fn in_turn<R>(n: usize, rep: R) -> impl Iterator<Item = usize>
where
    R: std::ops::Rem<Output = R> + PartialEq + From<u8>,
{
    let turned = rep % R::from(2) == R::from(1);
    (0..n).map(move |i| if turned { n - 1 - i } else { i })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetitions_turn_the_order_round() {
        assert_eq!(in_turn(3, 0).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(in_turn(3, 1).collect::<Vec<_>>(), [2, 1, 0]);
        assert_eq!(in_turn(3, 2u32).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(in_turn(0, 1).count(), 0);
    }

    #[test]
    fn median_min_max() {
        assert_eq!(summarize(&[]), None);
        let s = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 4.0));
        assert_eq!(summarize(&[5.0]).unwrap().median, 5.0);
    }

    /// Ranks from the binomial tables: n = 6 gives the extremes (coverage 1 - 2/64), n = 11 the
    /// 2nd and 10th values, n = 25 the 8th and 18th; five values are too few.
    #[test]
    fn median_interval_uses_the_binomial_ranks() {
        let values = |n: usize| (1..=n).rev().map(|i| i as f64).collect::<Vec<_>>();
        assert_eq!(median_interval(&values(5)), None);
        assert_eq!(median_interval(&values(6)), Some((1.0, 6.0)));
        assert_eq!(median_interval(&values(11)), Some((2.0, 10.0)));
        assert_eq!(median_interval(&values(25)), Some((8.0, 18.0)));
        let (lo, hi) = median_interval(&values(2001)).unwrap();
        assert!((955.0..=957.0).contains(&lo) && (1045.0..=1047.0).contains(&hi), "{lo} {hi}");
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio(1.0, 2.0), Some(0.5));
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(ratio(1.0, -1.0), None);
    }

    /// `docs/results-schema.md` documents every column of the result files written from

    #[test]
    fn medians_of_selections() {
        let items = [(1, 5.0), (2, 1.0), (1, 3.0), (1, 4.0), (2, 9.0)];
        assert_eq!(median_by(&items, |x| x.0 == 1, |x| Some(x.1)), Some(4.0));
        assert_eq!(median_by(&items, |x| x.0 == 3, |x| Some(x.1)), None);
        assert_eq!(median(&[2.0, 1.0]), Some(1.5));
    }
}
