//! Leak suspects: call sites ranked by *steady* growth over a series of
//! captures.
//!
//! For each call site, its bytes in every capture (0 where it is missing)
//! are fitted with a least-squares line over the capture times ([`fit`]):
//! the slope is how fast it grows, R² how well a straight line explains
//! the series. A site that grows at a steady rate has R² near 1; one that
//! grows and shrinks (a sawtooth, a cache) or grew once and stayed has a
//! low R² or grew in few of the steps. A site is a *suspect* when its
//! slope is positive, R² at least [`Rule::min_r2`] and it grew in at least
//! [`Rule::min_grew`] of the steps between captures. Suspects rank first,
//! by slope; the other sites after them by slope × R² (the growth the
//! line explains), so a sawtooth ranks below a steady grower of smaller
//! slope.
//!
//! The sums are made in 128-bit integers and each figure is one division
//! of two integers reduced by their greatest common divisor, so a slope or
//! an R² that is a simple fraction comes out as the `f64` nearest to it.

use crate::record::{Record, SiteKey};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

/// A least-squares line through points (x, y).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// In units of y per `per` units of x (see [`fit`]).
    pub slope: f64,
    /// The coefficient of determination, 0 to 1; 0 when y is constant
    /// (there is nothing for a line to explain).
    pub r2: f64,
}

/// The greatest common divisor (`b` when `a` is 0).
fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `num / den` as the `f64` nearest to it when both fit in 53 bits after
/// reducing the fraction.
fn ratio(num: i128, den: i128) -> f64 {
    let g = gcd(num.unsigned_abs(), den.unsigned_abs()).max(1) as i128;
    (num / g) as f64 / (den / g) as f64
}

/// The least-squares line of `ys` over `xs`, its slope in y per `per`
/// units of x (`per` = 1000 for x in milliseconds and a slope per second).
/// `None` with fewer than two points, points of different numbers, or
/// when every x is the same.
pub fn fit(xs: &[i64], ys: &[i64], per: i64) -> Option<Fit> {
    if xs.len() != ys.len() || xs.len() < 2 {
        return None;
    }
    let (cxx, cxy, cyy) = match moments(xs, ys) {
        Some(m) => m,
        None => return fit_f64(xs, ys, per),
    };
    if cxx <= 0 {
        return None;
    }
    let slope = match cxy.checked_mul(per as i128) {
        Some(num) => ratio(num, cxx),
        None => cxy as f64 * per as f64 / cxx as f64,
    };
    let r2 = if cyy <= 0 {
        0.0
    } else {
        match (cxy.checked_mul(cxy), cxx.checked_mul(cyy)) {
            (Some(num), Some(den)) => ratio(num, den),
            _ => {
                let r = cxy as f64 / ((cxx as f64).sqrt() * (cyy as f64).sqrt());
                r * r
            }
        }
    };
    Some(Fit {
        slope,
        r2: r2.min(1.0),
    })
}

/// n² times the variance of x, the covariance and the variance of y,
/// exactly; `None` when a sum overflows 128 bits.
fn moments(xs: &[i64], ys: &[i64]) -> Option<(i128, i128, i128)> {
    let n = xs.len() as i128;
    let (mut sx, mut sy, mut sxx, mut sxy, mut syy) = (0i128, 0i128, 0i128, 0i128, 0i128);
    for (&x, &y) in xs.iter().zip(ys) {
        let (x, y) = (x as i128, y as i128);
        sx = sx.checked_add(x)?;
        sy = sy.checked_add(y)?;
        sxx = sxx.checked_add(x.checked_mul(x)?)?;
        sxy = sxy.checked_add(x.checked_mul(y)?)?;
        syy = syy.checked_add(y.checked_mul(y)?)?;
    }
    let c = |sab: i128, sa: i128, sb: i128| n.checked_mul(sab)?.checked_sub(sa.checked_mul(sb)?);
    Some((c(sxx, sx, sx)?, c(sxy, sx, sy)?, c(syy, sy, sy)?))
}

/// [`fit`] in floating point, about the means, for figures too large for
/// [`moments`].
fn fit_f64(xs: &[i64], ys: &[i64], per: i64) -> Option<Fit> {
    let n = xs.len() as f64;
    let mx = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
    let my = ys.iter().map(|&y| y as f64).sum::<f64>() / n;
    let (mut cxx, mut cxy, mut cyy) = (0.0, 0.0, 0.0);
    for (&x, &y) in xs.iter().zip(ys) {
        let (dx, dy) = (x as f64 - mx, y as f64 - my);
        cxx += dx * dx;
        cxy += dx * dy;
        cyy += dy * dy;
    }
    if cxx <= 0.0 || !cxx.is_finite() {
        return None;
    }
    let r2 = if cyy > 0.0 && cyy.is_finite() {
        let r = cxy / (cxx.sqrt() * cyy.sqrt());
        (r * r).min(1.0)
    } else {
        0.0
    };
    Some(Fit {
        slope: cxy / cxx * per as f64,
        r2,
    })
}

/// A share of the steps between captures, `NUM/DEN` (at most 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub num: u64,
    pub den: u64,
}

impl Share {
    /// `2/3`, or a decimal fraction: `0.75`, `1`, `0`.
    pub fn parse(s: &str) -> Result<Share, String> {
        let bad = || format!("invalid share {s:?} (a fraction from 0 to 1: 2/3, 0.75, 1)");
        let t = s.trim();
        let share = match t.split_once('/') {
            Some((a, b)) => {
                let num: u64 = a.trim().parse().map_err(|_| bad())?;
                let den: u64 = b.trim().parse().map_err(|_| bad())?;
                Share { num, den }
            }
            None => {
                let (int, frac) = t.split_once('.').unwrap_or((t, ""));
                let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
                if int.is_empty() && frac.is_empty()
                    || !digits(int)
                    || !digits(frac)
                    || frac.len() > 9
                {
                    return Err(bad());
                }
                let den = 10u64.pow(frac.len() as u32);
                let int: u64 = if int.is_empty() {
                    0
                } else {
                    int.parse().map_err(|_| bad())?
                };
                let frac: u64 = if frac.is_empty() {
                    0
                } else {
                    frac.parse().map_err(|_| bad())?
                };
                Share {
                    num: int.checked_mul(den).ok_or_else(bad)? + frac,
                    den,
                }
            }
        };
        if share.den == 0 || share.num > share.den {
            return Err(bad());
        }
        let g = gcd(share.num as u128, share.den as u128) as u64;
        Ok(Share {
            num: share.num / g,
            den: share.den / g,
        })
    }

    /// The fewest of `steps` steps that make this share.
    pub fn of(self, steps: usize) -> usize {
        let need = (self.num as u128 * steps as u128).div_ceil(self.den as u128);
        need as usize
    }
}

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

/// When a site is a leak suspect: slope > 0, R² ≥ `min_r2`, and it grew
/// in at least `min_grew` of the steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    pub min_r2: f64,
    pub min_grew: Share,
}

impl Default for Rule {
    /// R² ≥ 0.9, grew in ≥ 2/3 of the steps.
    fn default() -> Rule {
        Rule {
            min_r2: 0.9,
            min_grew: Share { num: 2, den: 3 },
        }
    }
}

/// How one call site's bytes went over the captures.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    pub key: SiteKey,
    /// Bytes in each capture (0 where the site is missing).
    pub bytes: Vec<i64>,
    /// Least-squares slope, bytes per second or per capture.
    pub slope: f64,
    pub r2: f64,
    /// Last minus first capture.
    pub growth: i64,
    /// Steps (from one capture to the next) in which the bytes grew.
    pub grew: usize,
    /// Steps: captures − 1.
    pub steps: usize,
    /// The largest bytes over the captures.
    pub peak: i64,
    pub suspect: bool,
}

impl Trend {
    /// What the other sites rank by: slope × R², the growth the line explains.
    fn score(&self) -> f64 {
        self.slope * self.r2
    }

    /// Suspects first by slope, then the others by [`Trend::score`],
    /// largest first; then by site.
    fn rank_cmp(&self, other: &Trend) -> Ordering {
        let key = |t: &Trend| if t.suspect { t.slope } else { t.score() };
        other
            .suspect
            .cmp(&self.suspect)
            .then_with(|| key(other).total_cmp(&key(self)))
            .then_with(|| self.key.cmp(&other.key))
    }
}

/// The sites of a series ranked ([`rank`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Leaks {
    /// The sites whose bytes changed over the captures, ranked.
    pub sites: Vec<Trend>,
    /// Sites whose bytes were the same in every capture (left out).
    pub unchanged: usize,
    /// How many of `sites` are suspects.
    pub suspects: usize,
}

/// Rank the call sites of `captures` (each one's sites merged, see
/// [`crate::record::merge_duplicates`]) taken at `xs` (ascending), slopes
/// per `per` units of x, by `rule`. `None` with fewer than two captures or
/// when all were taken at the same x.
pub fn rank(captures: &[Vec<Record>], xs: &[i64], per: i64, rule: &Rule) -> Option<Leaks> {
    if captures.len() != xs.len() || captures.len() < 2 {
        return None;
    }
    let n = captures.len();
    let mut series: BTreeMap<SiteKey, Vec<i64>> = BTreeMap::new();
    for (i, recs) in captures.iter().enumerate() {
        for r in recs {
            let s = series.entry(r.key()).or_insert_with(|| vec![0; n]);
            s[i] = s[i].saturating_add(r.bytes);
        }
    }
    let mut sites = Vec::new();
    let mut unchanged = 0;
    for (key, bytes) in series {
        if bytes.iter().all(|b| *b == bytes[0]) {
            unchanged += 1;
            continue;
        }
        let f = fit(xs, &bytes, per)?;
        let grew = bytes.windows(2).filter(|w| w[1] > w[0]).count();
        let steps = n - 1;
        let suspect = f.slope > 0.0 && f.r2 >= rule.min_r2 && grew >= rule.min_grew.of(steps);
        sites.push(Trend {
            key,
            growth: bytes[n - 1].saturating_sub(bytes[0]),
            peak: bytes.iter().copied().max().unwrap_or(0),
            bytes,
            slope: f.slope,
            r2: f.r2,
            grew,
            steps,
            suspect,
        });
    }
    sites.sort_by(Trend::rank_cmp);
    let suspects = sites.iter().filter(|t| t.suspect).count();
    Some(Leaks {
        sites,
        unchanged,
        suspects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000; // a minute in milliseconds

    fn minutes(n: i64) -> Vec<i64> {
        (0..n).map(|k| k * MIN).collect()
    }

    #[test]
    fn fit_of_exact_lines_and_shapes() {
        let xs = minutes(7);
        // A steady leak of 3840 bytes a minute: 64 B/s, a perfect line.
        let leak: Vec<i64> = (0..7).map(|k| 5120 + 3840 * k).collect();
        assert_eq!(
            fit(&xs, &leak, 1000),
            Some(Fit {
                slope: 64.0,
                r2: 1.0
            })
        );
        // Per capture instead of per second.
        let idx: Vec<i64> = (0..7).collect();
        assert_eq!(fit(&idx, &leak, 1).unwrap().slope, 3840.0);
        // Grew once after the first capture, then flat: slope 3v/28 per
        // step, R² = 3/8.
        let once: Vec<i64> = (0..7).map(|k| if k == 0 { 0 } else { 573_440 }).collect();
        assert_eq!(
            fit(&xs, &once, 1000),
            Some(Fit {
                slope: 1024.0,
                r2: 0.375
            })
        );
        // A sawtooth, +20 and -16 units in turn: slope 2 units a step,
        // R² = 49/292.
        let saw: Vec<i64> = [0, 20, 4, 24, 8, 28, 12]
            .iter()
            .map(|p| 131_072 + p * 61_440)
            .collect();
        let f = fit(&xs, &saw, 1000).unwrap();
        assert_eq!(f.slope, 2048.0);
        assert_eq!(f.r2, 49.0 / 292.0);
        // A shrinking site: -680 bytes a minute.
        let shrink: Vec<i64> = (0..7).map(|k| 8160 - 680 * k).collect();
        assert_eq!(
            fit(&xs, &shrink, 1000),
            Some(Fit {
                slope: -34.0 / 3.0,
                r2: 1.0
            })
        );
        // Uneven times: y = 2x exactly.
        assert_eq!(
            fit(&[0, 1, 5, 6], &[0, 2, 10, 12], 1),
            Some(Fit {
                slope: 2.0,
                r2: 1.0
            })
        );
        // Hand-made: (0,1) (1,3) (2,2): slope 1/2, R² = 1/4.
        assert_eq!(
            fit(&[0, 1, 2], &[1, 3, 2], 1),
            Some(Fit {
                slope: 0.5,
                r2: 0.25
            })
        );
        // Constant: slope 0, R² 0.
        assert_eq!(
            fit(&xs, &[7; 7], 1000),
            Some(Fit {
                slope: 0.0,
                r2: 0.0
            })
        );
        // No line through one point, or through points at one x.
        assert_eq!(fit(&[0], &[1], 1), None);
        assert_eq!(fit(&[5, 5, 5], &[1, 2, 3], 1), None);
        assert_eq!(fit(&[0, 1], &[1, 2, 3], 1), None);
        // Extremes do not panic.
        let big = fit(&[0, i64::MAX, i64::MAX / 2], &[i64::MIN, i64::MAX, 0], 1000).unwrap();
        assert!(big.slope.is_finite() && (0.0..=1.0).contains(&big.r2));
    }

    #[test]
    fn shares() {
        let s = |t| Share::parse(t);
        assert_eq!(s("2/3"), Ok(Share { num: 2, den: 3 }));
        assert_eq!(s("0.75"), Ok(Share { num: 3, den: 4 }));
        assert_eq!(s("4/6"), Ok(Share { num: 2, den: 3 }));
        assert_eq!(s("1"), Ok(Share { num: 1, den: 1 }));
        assert_eq!(s(".5"), Ok(Share { num: 1, den: 2 }));
        assert_eq!(s("1.0"), Ok(Share { num: 1, den: 1 }));
        assert_eq!(s("0"), Ok(Share { num: 0, den: 1 }));
        for bad in [
            "",
            ".",
            "4/3",
            "1/0",
            "1.5",
            "-0.5",
            "x",
            "2/",
            "0.1234567890",
        ] {
            assert!(s(bad).is_err(), "{bad:?}");
        }
        let two_thirds = Share { num: 2, den: 3 };
        assert_eq!(two_thirds.to_string(), "2/3");
        assert_eq!(two_thirds.of(6), 4);
        assert_eq!(two_thirds.of(5), 4);
        assert_eq!(two_thirds.of(2), 2);
        assert_eq!(s("0.5").unwrap().of(5), 3);
        assert_eq!(s("0").unwrap().of(6), 0);
    }

    fn site(func: &str, bytes: i64) -> Record {
        Record {
            bytes,
            calls: 1,
            file: "mm/x.c".into(),
            line: 1,
            module: None,
            func: func.into(),
            extra: vec![],
        }
    }

    #[test]
    fn a_sawtooth_ranks_below_a_steady_grower_of_smaller_slope() {
        let saw = [0, 20, 4, 24, 8, 28, 12];
        let captures: Vec<Vec<Record>> = (0..7)
            .map(|k| {
                let mut c = vec![
                    site("leak", 5120 + 3840 * k as i64),
                    site("saw", 131_072 + saw[k] * 61_440),
                    site("once", if k == 0 { 0 } else { 573_440 }),
                    site("shrink", 8160 - 680 * k as i64),
                    site("flat", 4096),
                ];
                // A site missing from a capture counts as 0 there.
                if k >= 3 {
                    c.push(site("late", 1000));
                }
                c
            })
            .collect();
        let l = rank(&captures, &minutes(7), 1000, &Rule::default()).unwrap();
        let got: Vec<(&str, bool, f64, f64, i64, usize)> = l
            .sites
            .iter()
            .map(|t| {
                (
                    t.key.func.as_str(),
                    t.suspect,
                    t.slope,
                    t.r2,
                    t.growth,
                    t.grew,
                )
            })
            .collect();
        // late: 0, 0, 0, 1000, …: 6000/28 bytes a step (25/7 B/s), R² 3/4.
        assert_eq!(
            got,
            vec![
                ("leak", true, 64.0, 1.0, 23040, 6),
                ("once", false, 1024.0, 0.375, 573_440, 1),
                ("saw", false, 2048.0, 49.0 / 292.0, 737_280, 3),
                ("late", false, 25.0 / 7.0, 0.75, 1000, 1),
                ("shrink", false, -34.0 / 3.0, 1.0, -4080, 0),
            ]
        );
        assert_eq!((l.unchanged, l.suspects), (1, 1));
        assert_eq!(l.sites[2].peak, 131_072 + 28 * 61_440);
        assert_eq!(l.sites[3].bytes, vec![0, 0, 0, 1000, 1000, 1000, 1000]);
        assert_eq!(l.sites[0].steps, 6);

        // Without the fit and share thresholds, every grower is a suspect,
        // ranked by slope.
        let loose = Rule {
            min_r2: 0.0,
            min_grew: Share { num: 0, den: 1 },
        };
        let l = rank(&captures, &minutes(7), 1000, &loose).unwrap();
        let order: Vec<&str> = l.sites.iter().map(|t| t.key.func.as_str()).collect();
        assert_eq!(order, ["saw", "once", "leak", "late", "shrink"]);
        assert_eq!(l.suspects, 4);
        // The share alone: grew in 3 of 6 steps passes 1/2.
        let half = Rule {
            min_r2: 0.1,
            min_grew: Share { num: 1, den: 2 },
        };
        let l = rank(&captures, &minutes(7), 1000, &half).unwrap();
        let suspects: Vec<&str> = l
            .sites
            .iter()
            .filter(|t| t.suspect)
            .map(|t| t.key.func.as_str())
            .collect();
        assert_eq!(suspects, ["saw", "leak"]);

        assert_eq!(rank(&captures[..1], &[0], 1000, &loose), None);
        assert_eq!(rank(&captures[..3], &[0, 0, 0], 1000, &loose), None);
    }
}
