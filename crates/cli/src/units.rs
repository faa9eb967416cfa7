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
pub fn parse_count(input: &str) -> Result<u64, String> {
    let s: String = input.trim().chars().filter(|&c| c != '_' && c != ',').collect();
    let bad = || format!("invalid count {input:?}; expected e.g. 1000000, 1_000_000, 1e6 or 1M");
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

/// A count of at least one.
pub fn parse_positive_count(input: &str) -> Result<u64, String> {
    match parse_count(input)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

/// Seconds as a non-negative decimal (`3`, `0.5`, `2s`).
pub fn parse_seconds(input: &str) -> Result<f64, String> {
    let s = input.trim();
    let s = s.strip_suffix('s').unwrap_or(s);
    match s.parse::<f64>() {
        Ok(v) if (0.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!("invalid number of seconds {input:?}; expected e.g. 3 or 0.5")),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        for bad in ["", "M", "1.5", "1e-3", "-5", "1x", "1MiB", "1e400", "abc"] {
            assert!(parse_count(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(parse_positive_count("0").is_err());
        assert_eq!(parse_positive_count("1"), Ok(1));
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("3"), Ok(3.0));
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        assert_eq!(parse_seconds("2s"), Ok(2.0));
        assert_eq!(parse_seconds("0"), Ok(0.0));
        for bad in ["-1", "nan", "inf", "x", ""] {
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
