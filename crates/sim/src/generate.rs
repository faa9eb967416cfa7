//! Synthetic reference strings, seeded and deterministic.
//!
//! A *pattern* is one component or a mixture of components:
//!
//! | spelling | references |
//! | --- | --- |
//! | `uniform` | uniformly random pages |
//! | `zipf:S` | Zipf with exponent `S >= 0`: page `r - 1` has weight `1 / r^S` (page 0 is hottest) |
//! | `scan` | pages `0, 1, 2, ...` in order, wrapping around at the last page |
//! | `scan:L` | runs of `L` consecutive pages, each run from a uniformly random start |
//! | `loop:N` | pages `0..N` in order, over and over |
//! | `drift:H:E` | uniformly random pages of a hot window of `H` pages that slides by `H/4` (at least 1) every `E` references of the whole trace, wrapping around at the last page |
//!
//! A mixture joins components with `+`, each with a weight `@W%` (or `@0.W`): every reference
//! picks a component with that probability, and each component keeps its own position (a scan
//! continues where it stopped). Components without a weight share what the others leave of
//! 100%. Example: `zipf:0.9@70%+scan@30%`. Names are case-insensitive; counts accept `_` and
//! exponents (`1e5`).
//!
//! The same pattern, page count, length and seed give the same trace with this build.

use crate::trace::{GenError, Trace, MAX_REFS};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::Distribution;
use std::fmt;
use std::str::FromStr;

/// One kind of reference stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Component {
    /// Uniformly random pages.
    Uniform,
    /// Zipf-distributed pages: page `r - 1` has weight `1 / r^s`.
    Zipf {
        /// The exponent, finite and at least 0 (0 is uniform).
        s: f64,
    },
    /// A sequential scan: all pages in order, or runs of `run` pages from random starts.
    Scan {
        /// The length of each run; `None` is one endless scan from page 0.
        run: Option<u32>,
    },
    /// Pages `0..len`, over and over.
    Loop {
        /// The number of pages in the loop.
        len: u32,
    },
    /// A hot window of `hot` pages that slides by `hot / 4` (at least 1) every `every` references.
    Drift {
        /// The window size in pages.
        hot: u32,
        /// References between two slides.
        every: u64,
    },
}

/// A mixture of components with their probabilities (which add up to 1).
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    parts: Vec<(Component, f64)>,
}

impl Pattern {
    /// A pattern of one component.
    #[must_use]
    pub fn single(component: Component) -> Pattern {
        Pattern { parts: vec![(component, 1.0)] }
    }

    /// The components and their probabilities.
    #[must_use]
    pub fn parts(&self) -> &[(Component, f64)] {
        &self.parts
    }

    /// A generator of references to pages `0..pages`.
    ///
    /// # Errors
    /// [`GenError::NoPages`] if `pages` is 0, [`GenError::TooFewPages`] if a loop or drift window
    /// or a scan run is longer than `pages`.
    pub fn stream(&self, pages: u32, seed: u64) -> Result<Generator, GenError> {
        if pages == 0 {
            return Err(GenError::NoPages);
        }
        let mut cumulative = Vec::with_capacity(self.parts.len());
        let mut states = Vec::with_capacity(self.parts.len());
        let mut total = 0.0;
        for &(component, weight) in &self.parts {
            let needed = match component {
                Component::Loop { len } => len,
                Component::Drift { hot, .. } => hot,
                Component::Scan { run: Some(run) } => run,
                _ => 1,
            };
            if needed > pages {
                return Err(GenError::TooFewPages { component: component.to_string(), needed, pages });
            }
            total += weight;
            cumulative.push(total);
            states.push(State::new(component, pages));
        }
        // Rounding must not leave a gap above the last threshold.
        if let Some(last) = cumulative.last_mut() {
            *last = f64::INFINITY;
        }
        Ok(Generator { rng: SmallRng::seed_from_u64(seed), pages, time: 0, cumulative, states })
    }

    /// Draws a trace of `refs` references to pages `0..pages` (ids are kept, not remapped).
    ///
    /// # Errors
    /// As [`Pattern::stream`], and [`GenError::TooManyRefs`] past [`MAX_REFS`].
    pub fn generate(&self, pages: u32, refs: usize, seed: u64) -> Result<Trace, GenError> {
        if refs > MAX_REFS {
            return Err(GenError::TooManyRefs { refs });
        }
        let trace: Vec<u32> = self.stream(pages, seed)?.take(refs).collect();
        Ok(Trace::new(trace, pages)
            .expect("generated references are below the page count and within MAX_REFS"))
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Component::Uniform => f.write_str("uniform"),
            Component::Zipf { s } => write!(f, "zipf:{s}"),
            Component::Scan { run: None } => f.write_str("scan"),
            Component::Scan { run: Some(run) } => write!(f, "scan:{run}"),
            Component::Loop { len } => write!(f, "loop:{len}"),
            Component::Drift { hot, every } => write!(f, "drift:{hot}:{every}"),
        }
    }
}

impl fmt::Display for Pattern {
    /// The canonical spelling; a mixture shows every weight in percent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [(c, _)] = self.parts.as_slice() {
            return write!(f, "{c}");
        }
        for (i, (c, w)) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            let percent = format!("{:.6}", w * 100.0);
            write!(f, "{c}@{}%", percent.trim_end_matches('0').trim_end_matches('.'))?;
        }
        Ok(())
    }
}

impl FromStr for Pattern {
    type Err = GenError;

    fn from_str(spec: &str) -> Result<Pattern, GenError> {
        let bad = |reason: String| GenError::Syntax { spec: spec.to_owned(), reason };
        let mut parts: Vec<(Component, Option<f64>)> = Vec::new();
        for part in spec.split('+') {
            let part = part.trim();
            if part.is_empty() {
                return Err(bad("empty component".into()));
            }
            let (body, weight) = match part.split_once('@') {
                Some((body, w)) => (body.trim(), Some(parse_weight(w).map_err(&bad)?)),
                None => (part, None),
            };
            parts.push((parse_component(body).map_err(&bad)?, weight));
        }
        let given: f64 = parts.iter().filter_map(|p| p.1).sum();
        let unweighted = parts.iter().filter(|p| p.1.is_none()).count();
        if given > 1.0 + 1e-9 {
            return Err(bad(format!("the weights add up to {}%, more than 100%", percent(given))));
        }
        let share = if unweighted > 0 {
            let rest = 1.0 - given;
            if rest <= 1e-9 {
                return Err(bad("the weights leave nothing for the components without one".into()));
            }
            rest / unweighted as f64
        } else if (given - 1.0).abs() > 1e-9 {
            return Err(bad(format!("the weights add up to {}%, not 100%", percent(given))));
        } else {
            0.0
        };
        Ok(Pattern { parts: parts.into_iter().map(|(c, w)| (c, w.unwrap_or(share))).collect() })
    }
}

/// A share as a percentage for a message, without the binary fraction's noise: 0.7 + 0.4 is
/// `110`, not `110.00000000000001`.
fn percent(share: f64) -> String {
    let text = format!("{:.6}", share * 100.0);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `70%` or `0.7`, in (0, 1].
fn parse_weight(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (t, 1.0),
    };
    let w = num.parse::<f64>().map(|v| v / scale).ok().filter(|w| w.is_finite() && *w > 0.0 && *w <= 1.0);
    w.ok_or_else(|| format!("weight {text:?} is not a share in (0%, 100%], such as 30% or 0.3"))
}

/// A count: digits with optional `_`, or a whole number in exponent form (`1e5`).
fn parse_count(what: &str, text: &str) -> Result<u64, String> {
    let t: String = text.trim().chars().filter(|&c| c != '_').collect();
    let bad = || format!("{what} {text:?} is not a whole number such as 1000 or 1e3");
    if let Ok(v) = t.parse::<u64>() {
        return Ok(v);
    }
    let v: f64 = t.parse().map_err(|_| bad())?;
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64 {
        Ok(v as u64)
    } else {
        Err(bad())
    }
}

/// A count in `1..=u32::MAX`.
fn parse_pages(what: &str, text: &str) -> Result<u32, String> {
    let v = parse_count(what, text)?;
    match u32::try_from(v) {
        Ok(0) => Err(format!("{what} must be at least 1")),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("{what} {v} is above the {} pages a trace can name", u32::MAX)),
    }
}

fn parse_component(body: &str) -> Result<Component, String> {
    let lower = body.to_ascii_lowercase();
    let mut fields = lower.split(':');
    let name = fields.next().unwrap_or_default().trim();
    let args: Vec<&str> = fields.collect();
    let arity = |n: usize, form: &str| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!("{body:?} must be written {form}"))
        }
    };
    match name {
        "uniform" => arity(0, "uniform").map(|()| Component::Uniform),
        "zipf" => {
            arity(1, "zipf:S with an exponent S >= 0, e.g. zipf:0.9")?;
            let s = args[0].trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0);
            s.map(|s| Component::Zipf { s })
                .ok_or_else(|| format!("Zipf exponent {:?} must be a finite number >= 0", args[0]))
        }
        "scan" => match args.as_slice() {
            [] => Ok(Component::Scan { run: None }),
            [run] => Ok(Component::Scan { run: Some(parse_pages("scan run length", run)?) }),
            _ => Err(format!("{body:?} must be written scan or scan:L")),
        },
        "loop" => {
            arity(1, "loop:N with N pages, e.g. loop:1000")?;
            Ok(Component::Loop { len: parse_pages("loop length", args[0])? })
        }
        "drift" => {
            arity(2, "drift:H:E with a hot window of H pages sliding every E references")?;
            let hot = parse_pages("drift window", args[0])?;
            let every = parse_count("drift interval", args[1])?;
            if every == 0 {
                return Err("drift interval must be at least 1 reference".into());
            }
            Ok(Component::Drift { hot, every })
        }
        _ => Err(format!("unknown component {name:?}")),
    }
}

/// A component's position and distribution.
enum State {
    Uniform,
    Zipf(rand_distr::Zipf<f64>),
    Scan { next: u32 },
    Runs { run: u32, next: u32, left: u32 },
    Loop { len: u32, next: u32 },
    Drift { hot: u32, every: u64, step: u64 },
}

impl State {
    fn new(component: Component, pages: u32) -> State {
        match component {
            Component::Uniform => State::Uniform,
            Component::Zipf { s } => State::Zipf(
                rand_distr::Zipf::new(u64::from(pages), s).expect("parsed exponents are >= 0 and pages >= 1"),
            ),
            Component::Scan { run: None } => State::Scan { next: 0 },
            Component::Scan { run: Some(run) } => State::Runs { run, next: 0, left: 0 },
            Component::Loop { len } => State::Loop { len, next: 0 },
            Component::Drift { hot, every } => State::Drift { hot, every, step: u64::from((hot / 4).max(1)) },
        }
    }

    fn draw(&mut self, rng: &mut SmallRng, pages: u32, time: u64) -> u32 {
        let wrap = |p: u32| if p + 1 == pages { 0 } else { p + 1 };
        match self {
            State::Uniform => rng.gen_range(0..pages),
            // Samples are whole numbers in 1..=pages.
            State::Zipf(z) => (z.sample(rng) as u32).clamp(1, pages) - 1,
            State::Scan { next } => {
                let p = *next;
                *next = wrap(p);
                p
            }
            State::Runs { run, next, left } => {
                if *left == 0 {
                    *next = rng.gen_range(0..pages);
                    *left = *run;
                }
                let p = *next;
                *next = wrap(p);
                *left -= 1;
                p
            }
            State::Loop { len, next } => {
                let p = *next;
                *next = if p + 1 == *len { 0 } else { p + 1 };
                p
            }
            State::Drift { hot, every, step } => {
                let start = ((time / *every) % u64::from(pages)) * *step % u64::from(pages);
                ((start + u64::from(rng.gen_range(0..*hot))) % u64::from(pages)) as u32
            }
        }
    }
}

/// An endless stream of references drawn from a [`Pattern`].
pub struct Generator {
    rng: SmallRng,
    pages: u32,
    time: u64,
    cumulative: Vec<f64>,
    states: Vec<State>,
}

impl Iterator for Generator {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let i = if self.states.len() == 1 {
            0
        } else {
            let u: f64 = self.rng.gen();
            self.cumulative.iter().position(|&c| u < c).unwrap_or(self.states.len() - 1)
        };
        let page = self.states[i].draw(&mut self.rng, self.pages, self.time);
        self.time += 1;
        Some(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::SYNTAX;

    fn pattern(s: &str) -> Pattern {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn s7_parses_components_and_mixtures() {
        assert_eq!(pattern("Uniform"), Pattern::single(Component::Uniform));
        assert_eq!(pattern("zipf:0.9"), Pattern::single(Component::Zipf { s: 0.9 }));
        assert_eq!(pattern("scan"), Pattern::single(Component::Scan { run: None }));
        assert_eq!(pattern("scan:1_000"), Pattern::single(Component::Scan { run: Some(1000) }));
        assert_eq!(pattern("loop:1e3"), Pattern::single(Component::Loop { len: 1000 }));
        assert_eq!(pattern("drift:100:5000"), Pattern::single(Component::Drift { hot: 100, every: 5000 }));
        let mix = pattern("zipf:0.9@70% + scan@0.3");
        assert_eq!(mix.parts(), &[(Component::Zipf { s: 0.9 }, 0.7), (Component::Scan { run: None }, 0.3)]);
        let shared = pattern("uniform@50%+loop:4+scan");
        assert_eq!(shared.parts()[1].1, 0.25);
        assert_eq!(shared.parts()[2].1, 0.25);
        assert_eq!(mix.to_string(), "zipf:0.9@70%+scan@30%");
        assert_eq!(pattern(&mix.to_string()), mix);
    }

    #[test]
    fn s7_rejects_bad_patterns_with_reasons() {
        for (spec, needle) in [
            ("", "empty component"),
            ("zipf", "zipf:S"),
            ("zipf:-1", "exponent"),
            ("zipf:nan", "exponent"),
            ("loop", "loop:N"),
            ("loop:0", "at least 1"),
            ("loop:5000000000", "above"),
            ("scan:2:3", "scan:L"),
            ("drift:10", "drift:H:E"),
            ("drift:10:0", "at least 1 reference"),
            ("zipf:1@60%+scan@60%", "more than 100%"),
            // 0.7 + 0.4 is 1.1000000000000001 in binary fractions: the message says 110%.
            ("zipf:0.9@70%+scan@40%", "add up to 110%, more than 100%"),
            ("zipf:0.9@10%+scan@20%", "add up to 30%, not 100%"),
            ("zipf:1@60%+scan@30%", "not 100%"),
            ("zipf:1@100%+scan", "nothing"),
            ("uniform@0%", "weight"),
            ("uniform@abc", "weight"),
            ("uniform+", "empty component"),
            ("lfu", "unknown component"),
            ("uniform:3", "uniform"),
        ] {
            let err = spec.parse::<Pattern>().unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(needle) && msg.contains(SYNTAX), "{spec:?}: {msg}");
        }
    }

    #[test]
    fn s7_components_must_fit_the_pages() {
        assert_eq!(pattern("uniform").stream(0, 1).err(), Some(GenError::NoPages));
        for spec in ["loop:11", "drift:11:5", "scan:11", "uniform@50%+loop:11@50%"] {
            let err = pattern(spec).stream(10, 1).err().unwrap();
            assert!(matches!(err, GenError::TooFewPages { needed: 11, pages: 10, .. }), "{spec}: {err}");
        }
    }
}
