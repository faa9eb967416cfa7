//! Parsers for command-line numbers: byte sizes (`64MiB`), counts (`1e6`, `1_000_000`, `1M`),
//! seconds (`0.5`) and mode lists (`all`, `traditional,swizzling`).

use swizzledb::PoolMode;

/// Parses a byte size: plain bytes (`4096`), binary units (`512KiB`, `64MiB`, `1GiB`, `1TiB`;
/// `K`, `M`, `G`, `T` mean the same) or decimal units (`KB`, `MB`, `GB`, `TB`). Case-insensitive;
/// `_` separators and a fractional number (`1.5GiB`) are accepted.
pub fn parse_size(input: &str) -> Result<u64, String> {
    let s = input.trim().replace('_', "");
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "unknown size unit {other:?} in {input:?}; use bytes or KiB, MiB, GiB (e.g. 64MiB)"
            ))
        }
    };
    scale(num, multiplier).ok_or_else(|| format!("invalid size {input:?}; expected e.g. 64MiB"))
}

/// Parses a count: `20000`, `1_000_000`, `1,000,000`, `1e6`, `2.5e5`, `1k`, `1M`, `1G`
/// (decimal suffixes: 1M = 1,000,000). The value must be a whole number.
/// Commas group thousands only (`1,000,000`): a list such as `1000,2000` or a slip such as `2,1`
/// is refused, not read as one number with the commas dropped.
pub fn parse_count(input: &str) -> Result<u64, String> {
    let bad = || format!("invalid count {input:?}; expected e.g. 1000000, 1_000_000, 1e6 or 1M");
    if !thousands_grouped(input.trim()) {
        return Err(format!(
            "invalid count {input:?}: commas may only group thousands (1,000,000); this option takes \
             one number, not a list"
        ));
    }
    let s: String = input.trim().chars().filter(|&c| c != '_' && c != ',').collect();
    let (num, multiplier) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() && c != 'e' && c != 'E' => {
            let m = match c.to_ascii_lowercase() {
                'k' => 1_000,
                'm' => 1_000_000,
                'g' => 1_000_000_000,
                _ => return Err(bad()),
            };
            (&s[..i], m)
        }
        _ => (s.as_str(), 1),
    };
    scale(num, multiplier).ok_or_else(bad)
}

/// Whether the commas of `s`, if any, group thousands: one to three digits before the first, and
/// exactly three digits between commas and after the last (then a fraction, exponent or suffix
/// may follow).
fn thousands_grouped(s: &str) -> bool {
    let mut groups = s.split(',');
    let first = groups.next().unwrap_or_default();
    let rest: Vec<&str> = groups.collect();
    if rest.is_empty() {
        return true;
    }
    let digits = |g: &str| g.bytes().take_while(u8::is_ascii_digit).count();
    let last = rest.len() - 1;
    (1..=3).contains(&first.len())
        && digits(first) == first.len()
        && rest.iter().enumerate().all(|(i, g)| digits(g) == 3 && (i == last || g.len() == 3))
}

/// A count (as [`parse_count`]) from `min` to `max`: a value outside is refused as
/// `"OPTION VALUE is out of range: give MIN to MAX (WHY)"`, naming `option` and its range before
/// anything runs (an unbounded count ran for ever or allocated without bound).
pub fn parse_count_in(input: &str, option: &str, min: u64, max: u64, why: &str) -> Result<u64, String> {
    match parse_count(input)? {
        n if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{option} {} is out of range: give {} to {} ({why})",
            input.trim(),
            crate::support::text::thousands(min),
            crate::support::text::thousands(max)
        )),
    }
}

/// A count of at least one.
pub fn parse_positive_count(input: &str) -> Result<u64, String> {
    match parse_count(input)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

/// How much of the key range is accessed: a fraction of the records (`0.25`, `25%`) or a size of
/// keys and values (`64MiB`, 128 bytes per record).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WorkingSet {
    /// Fraction of the records, in (0, 1].
    Fraction(f64),
    /// Bytes of keys and values.
    Bytes(u64),
}

/// Parses `--working-set`.
pub fn parse_working_set(input: &str) -> Result<WorkingSet, String> {
    let s = input.trim();
    if let Some(pct) = s.strip_suffix('%') {
        let v: f64 = pct.trim().parse().map_err(|_| format!("invalid percentage {input:?}"))?;
        return fraction(v / 100.0, input);
    }
    if s.contains('.') && s.chars().all(|c| c.is_ascii_digit() || c == '.') {
        let v: f64 = s.parse().map_err(|_| format!("invalid fraction {input:?}"))?;
        return fraction(v, input);
    }
    match parse_size(s)? {
        0 => Err("the working set must not be empty".into()),
        n => Ok(WorkingSet::Bytes(n)),
    }
}

fn fraction(v: f64, input: &str) -> Result<WorkingSet, String> {
    if v > 0.0 && v <= 1.0 {
        Ok(WorkingSet::Fraction(v))
    } else {
        Err(format!("working set {input:?} must be a fraction in (0, 1], a percentage or a size like 64MiB"))
    }
}

/// What a sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepVar {
    /// The database size (bytes of keys and values; the whole key range is accessed).
    Records,
    /// The accessed part of the key range (bytes of keys and values).
    WorkingSet,
}

/// A grid of values for one variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The variable.
    pub var: SweepVar,
    /// Its values in bytes, ascending.
    pub values: Vec<u64>,
}

/// Parses `--sweep`: `records=8MiB..256MiB:x2` (multiply by 2 up to the end, inclusive),
/// `working-set=16MiB..1GiB:x4`, or a list `records=8MiB,64MiB,512MiB`.
pub fn parse_sweep(input: &str) -> Result<Sweep, String> {
    let usage = "expected VAR=FROM..TO:xF or VAR=V1,V2,... with VAR records or working-set \
                 (e.g. records=8MiB..256MiB:x2)";
    let (var, spec) = input.split_once('=').ok_or_else(|| format!("invalid sweep {input:?}; {usage}"))?;
    let var = match var.trim() {
        "records" | "data" => SweepVar::Records,
        "working-set" | "working_set" | "ws" => SweepVar::WorkingSet,
        other => return Err(format!("cannot sweep {other:?}; {usage}")),
    };
    let values = if let Some((range, step)) = spec.split_once(':') {
        let (from, to) = range.split_once("..").ok_or_else(|| format!("invalid sweep {input:?}; {usage}"))?;
        let (from, to) = (parse_size(from)?, parse_size(to)?);
        let factor: u64 = step
            .trim()
            .strip_prefix('x')
            .and_then(|f| f.parse().ok())
            .filter(|&f| f >= 2)
            .ok_or_else(|| format!("invalid sweep step {step:?}; use x2, x4, ..."))?;
        if from == 0 || from > to {
            return Err(format!("sweep {input:?} must go from a positive value up to a larger one"));
        }
        let mut v = vec![from];
        while let Some(next) = v.last().and_then(|x| x.checked_mul(factor)).filter(|&x| x <= to) {
            v.push(next);
        }
        if v.len() > 64 {
            return Err(format!("sweep {input:?} has more than 64 points"));
        }
        v
    } else {
        let mut v = spec.split(',').map(parse_size).collect::<Result<Vec<_>, _>>()?;
        v.sort_unstable();
        v.dedup();
        if v.contains(&0) {
            return Err(format!("sweep {input:?} contains zero"));
        }
        v
    };
    Ok(Sweep { var, values })
}

/// The most seconds [`parse_seconds`] takes: one day.
pub const MAX_SECONDS: f64 = 86_400.0;

/// Seconds as a decimal from 0 to [`MAX_SECONDS`] (`3`, `0.5`, `2s`).
pub fn parse_seconds(input: &str) -> Result<f64, String> {
    let s = input.trim();
    let s = s.strip_suffix('s').unwrap_or(s);
    match s.parse::<f64>() {
        Ok(v) if (0.0..=MAX_SECONDS).contains(&v) => Ok(v),
        _ => Err(format!(
            "{input:?} is not a number of seconds from 0 to {MAX_SECONDS} (one day); give e.g. 3 or 0.5"
        )),
    }
}

/// Seconds greater than zero.
pub fn parse_positive_seconds(input: &str) -> Result<f64, String> {
    match parse_seconds(input)? {
        v if v > 0.0 => Ok(v),
        _ => Err("must be greater than 0".into()),
    }
}

/// A set of buffer modes, always in [`PoolMode::ALL`] order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Modes(pub Vec<PoolMode>);

/// Parses `all` or a comma-separated list of modes (`traditional,main-memory`).
pub fn parse_modes(input: &str) -> Result<Modes, String> {
    if input.trim().eq_ignore_ascii_case("all") {
        return Ok(Modes(PoolMode::ALL.to_vec()));
    }
    let mut chosen = Vec::new();
    for part in input.split(',') {
        let mode: PoolMode = part.trim().parse().map_err(|_| {
            format!(
                "unknown mode {part:?}; expected all, or a comma-separated list of traditional, \
                 swizzling, main-memory"
            )
        })?;
        chosen.push(mode);
    }
    Ok(Modes(PoolMode::ALL.into_iter().filter(|m| chosen.contains(m)).collect()))
}

/// `num * multiplier` for a decimal `num` (integer or fraction), if it is a whole, finite,
/// non-overflowing result.
fn scale(num: &str, multiplier: u64) -> Option<u64> {
    if num.is_empty() {
        return None;
    }
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(multiplier);
    }
    let v = num.parse::<f64>().ok()? * multiplier as f64;
    // 2^53: beyond it f64 no longer represents every whole number.
    (v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9_007_199_254_740_992.0).then_some(v as u64)
}

/// A pool size as a percentage of the data (`25%` or `25`), up to 1000%: a fraction above 0.
///
/// # Errors
/// Not a number, or not above 0% and at most 1000%.
pub fn parse_pool_percent(input: &str) -> Result<f64, String> {
    let s = input.trim();
    let v: f64 =
        s.strip_suffix('%').unwrap_or(s).trim().parse().map_err(|_| {
            format!("invalid pool size {input:?}; expected a percentage of the data such as 25%")
        })?;
    if v > 0.0 && v <= 1000.0 {
        Ok(v / 100.0)
    } else {
        Err(format!("pool size {input:?} must be above 0% and at most 1000% of the data"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_set_forms() {
        assert_eq!(parse_working_set("0.25"), Ok(WorkingSet::Fraction(0.25)));
        assert_eq!(parse_working_set("50%"), Ok(WorkingSet::Fraction(0.5)));
        assert_eq!(parse_working_set("64MiB"), Ok(WorkingSet::Bytes(64 << 20)));
        assert!(parse_working_set("1.5").is_err());
        assert!(parse_working_set("0%").is_err());
        assert!(parse_working_set("0").is_err());
        assert!(parse_working_set("lots").is_err());
    }

    #[test]
    fn sweep_forms() {
        let s = parse_sweep("records=8MiB..64MiB:x2").unwrap();
        assert_eq!(s.var, SweepVar::Records);
        assert_eq!(s.values, vec![8 << 20, 16 << 20, 32 << 20, 64 << 20]);
        let s = parse_sweep("working-set=1GiB,16MiB").unwrap();
        assert_eq!((s.var, s.values), (SweepVar::WorkingSet, vec![16 << 20, 1 << 30]));
        assert_eq!(parse_sweep("records=8MiB..20MiB:x2").unwrap().values, vec![8 << 20, 16 << 20]);
        for bad in [
            "records",
            "pool=1..2:x2",
            "records=9..1:x2",
            "records=1..9:x1",
            "records=1..9:+2",
            "records=0,5",
        ] {
            assert!(parse_sweep(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_with_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("64mib"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("8 KiB"), Ok(8192));
        assert_eq!(parse_size("1MB"), Ok(1_000_000));
        assert_eq!(parse_size("100B"), Ok(100));
        assert_eq!(parse_size("1_048_576"), Ok(1 << 20));
    }

    #[test]
    fn bad_sizes() {
        for bad in ["", "MiB", "-1", "1XiB", "abc", "1.5", "0.1B", "1e3", "99999999999TiB", "1..5M"] {
            assert!(parse_size(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("20000"), Ok(20_000));
        assert_eq!(parse_count("1_000_000"), Ok(1_000_000));
        assert_eq!(parse_count("1,000,000"), Ok(1_000_000));
        assert_eq!(parse_count("12,345"), Ok(12_345));
        assert_eq!(parse_count("1,500k"), Ok(1_500_000));
        assert_eq!(parse_count("1e6"), Ok(1_000_000));
        assert_eq!(parse_count("2.5e5"), Ok(250_000));
        assert_eq!(parse_count("1M"), Ok(1_000_000));
        assert_eq!(parse_count("1m"), Ok(1_000_000));
        assert_eq!(parse_count("2.5M"), Ok(2_500_000));
        assert_eq!(parse_count("10k"), Ok(10_000));
        assert_eq!(parse_count("0"), Ok(0));
    }

    #[test]
    fn bad_counts() {
        for bad in [
            "",
            "M",
            "1.5",
            "1e-3",
            "-5",
            "1x",
            "1MiB",
            "1e400",
            "abc",
            "2,1",
            "1,,2",
            "1000,2000",
            ",",
            "1,0000",
            "1000,000",
            "1,000,",
        ] {
            assert!(parse_count(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(parse_positive_count("0").is_err());
        assert_eq!(parse_count_in("1e3", "--n", 1, 1000, "why"), Ok(1000));
        let e = parse_count_in("1001", "--n", 1, 1000, "why").unwrap_err();
        assert_eq!(e, "--n 1001 is out of range: give 1 to 1,000 (why)");
        assert!(parse_count_in("0", "--n", 1, 1000, "why").is_err());
        assert_eq!(parse_positive_count("1"), Ok(1));
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("3"), Ok(3.0));
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        assert_eq!(parse_seconds("2s"), Ok(2.0));
        assert_eq!(parse_seconds("0"), Ok(0.0));
        assert_eq!(parse_seconds("86400"), Ok(MAX_SECONDS));
        for bad in ["-1", "nan", "inf", "x", "", "86400.5", "1e18"] {
            assert!(parse_seconds(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(parse_positive_seconds("0").is_err());
    }

    #[test]
    fn modes() {
        assert_eq!(parse_modes("all"), Ok(Modes(PoolMode::ALL.to_vec())));
        assert_eq!(
            parse_modes("main-memory,traditional"),
            Ok(Modes(vec![PoolMode::Traditional, PoolMode::MainMemory]))
        );
        assert!(parse_modes("fast").is_err());
    }
}
