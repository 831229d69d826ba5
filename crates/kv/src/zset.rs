//! Sorted sets: [`Score`] (an `f64` with a total order), [`ScoreBound`], and [`ZSet`], the
//! stored value with its two indexes.
//!
//! A score is never NaN: parsing refuses it as Redis does, and a `ZADD INCR` whose sum is NaN
//! is an error. Stored scores are normalized (`-0` is stored as `0`, as Redis stores small
//! sorted sets), so the total order of [`Score`] (`f64::total_cmp`) agrees with the numeric
//! order Redis sorts by, and equal contents have equal bytes.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Bound;

/// A sorted-set score: an `f64` that is not NaN, compared and ordered by `f64::total_cmp`
/// (so `-0` and `0` are different scores; stored scores never hold `-0`). Its encoding is the
/// `f64`'s; decoding refuses NaN.
#[derive(Clone, Copy, Debug)]
pub struct Score(f64);

impl Score {
    /// `x` as a score, `None` if NaN.
    pub fn new(x: f64) -> Option<Score> {
        (!x.is_nan()).then_some(Score(x))
    }

    pub fn get(self) -> f64 {
        self.0
    }

    /// The score a sorted set stores: `-0` becomes `0`.
    pub fn normalized(self) -> Score {
        if self.0 == 0.0 {
            Score(0.0)
        } else {
            self
        }
    }

    /// A score argument (`ZADD`, `ZINCRBY`) as Redis 7.0 reads it (`strtod` of the whole
    /// text): decimal with optional exponent, `inf`/`infinity` in any case, optional sign; no
    /// spaces, no NaN, no overflow to infinity and no underflow to zero. `None` is Redis'
    /// "value is not a valid float". Hexadecimal floats, which C's `strtod` also reads, are
    /// refused.
    pub fn parse(text: &[u8]) -> Option<Score> {
        let text = std::str::from_utf8(text).ok()?;
        let x = parse_decimal(text)?;
        if x.is_infinite() && !is_infinity_literal(text) {
            return None;
        }
        if x == 0.0 && mantissa_has_nonzero_digit(text) {
            return None;
        }
        Score::new(x)
    }
}

impl PartialEq for Score {
    fn eq(&self, other: &Score) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Score) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Score) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Serialize for Score {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for Score {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Score, D::Error> {
        let x = f64::deserialize(deserializer)?;
        Score::new(x).ok_or_else(|| D::Error::custom("NaN score"))
    }
}

/// Redis' reply form of a score: `inf`, `-inf`, or C's `%.17g` (17 significant digits,
/// trailing zeros dropped, exponent form below `1e-4` and from `1e17`), as Redis 7.0 prints.
impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_g17(self.0))
    }
}

/// C's `printf("%.17g", x)` for a non-NaN `x`, with Redis' `inf` / `-inf`.
fn format_g17(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // 17 significant digits, correctly rounded: `d.dddddddddddddddde<exp>`.
    let sci = format!("{:.16e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if x < 0.0 { "-" } else { "" };
    if !(-4..17).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let rest = rest.trim_end_matches('0');
        let dot = if rest.is_empty() { "" } else { "." };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!(
            "{sign}{first}{dot}{rest}e{exp_sign}{:02}",
            exp.unsigned_abs()
        );
    }
    let (int_part, frac_part) = if exp >= 0 {
        let split = usize::try_from(exp + 1).unwrap_or(1).min(digits.len());
        let (i, f) = digits.split_at(split);
        (i.to_string(), f.to_string())
    } else {
        let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
        ("0".to_string(), format!("{zeros}{digits}"))
    };
    let frac_part = frac_part.trim_end_matches('0');
    if frac_part.is_empty() {
        format!("{sign}{int_part}")
    } else {
        format!("{sign}{int_part}.{frac_part}")
    }
}

/// Rust's decimal reading, which is `strtod`'s for decimal text (both round correctly);
/// overflow gives infinity and underflow zero, which callers judge.
fn parse_decimal(text: &str) -> Option<f64> {
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    // Rust reads `nan`; `strtod` does too, and Redis refuses it: leave it to `Score::new`.
    // Rust refuses hexadecimal floats, and so does this parser.
    if body.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    text.parse::<f64>().ok()
}

fn is_infinity_literal(text: &str) -> bool {
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity")
}

/// Whether the digits before the exponent include a non-zero one (so a zero result is an
/// underflow, which `strtod` reports and Redis refuses).
fn mantissa_has_nonzero_digit(text: &str) -> bool {
    text.chars()
        .take_while(|&c| c != 'e' && c != 'E')
        .any(|c| ('1'..='9').contains(&c))
}

/// One end of a score range (`ZRANGEBYSCORE`, `ZCOUNT`): `(` makes it exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScoreBound {
    pub score: Score,
    pub exclusive: bool,
}

impl ScoreBound {
    pub fn inclusive(score: Score) -> ScoreBound {
        ScoreBound {
            score,
            exclusive: false,
        }
    }

    pub fn exclusive(score: Score) -> ScoreBound {
        ScoreBound {
            score,
            exclusive: true,
        }
    }

    /// A range end as Redis 7.0 reads it (`zslParseRange`): an optional `(`, then C's
    /// `strtod` of the rest, which must be consumed whole: leading spaces, overflow to
    /// infinity and an empty text (zero) pass; NaN does not. `None` is Redis'
    /// "min or max is not a float".
    pub fn parse(text: &[u8]) -> Option<ScoreBound> {
        let (exclusive, rest) = match text.split_first() {
            Some((b'(', rest)) => (true, rest),
            _ => (false, text),
        };
        let x = if rest.is_empty() {
            0.0
        } else {
            let rest = std::str::from_utf8(rest).ok()?;
            let trimmed = rest.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
            parse_decimal(trimmed)?
        };
        Some(ScoreBound {
            score: Score::new(x)?,
            exclusive,
        })
    }

    /// Whether `s` is above this bound as a minimum.
    fn admits_from_below(self, s: Score) -> bool {
        if self.exclusive {
            s.0 > self.score.0
        } else {
            s.0 >= self.score.0
        }
    }

    /// Whether `s` is below this bound as a maximum.
    fn admits_from_above(self, s: Score) -> bool {
        if self.exclusive {
            s.0 < self.score.0
        } else {
            s.0 <= self.score.0
        }
    }
}

/// A sorted set: members with scores, ordered by (score, member). Two indexes, member to
/// score and the ordered (score, member) pairs; only the first is state (compared, encoded),
/// the second is derived from it. Ranks and index ranges walk the ordered index, so they cost
/// O(rank) rather than Redis' O(log n).
#[derive(Clone, Debug, Default)]
pub struct ZSet {
    scores: BTreeMap<Vec<u8>, Score>,
    order: BTreeSet<(Score, Vec<u8>)>,
}

impl ZSet {
    pub fn new() -> ZSet {
        ZSet::default()
    }

    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    pub fn score(&self, member: &[u8]) -> Option<Score> {
        self.scores.get(member).copied()
    }

    /// Store `member` with `score` (normalized); the previous score, if any.
    pub fn insert(&mut self, member: &[u8], score: Score) -> Option<Score> {
        let score = score.normalized();
        let old = self.scores.insert(member.to_vec(), score);
        if let Some(old) = old {
            self.order.remove(&(old, member.to_vec()));
        }
        self.order.insert((score, member.to_vec()));
        old
    }

    pub fn remove(&mut self, member: &[u8]) -> Option<Score> {
        let old = self.scores.remove(member)?;
        self.order.remove(&(old, member.to_vec()));
        Some(old)
    }

    /// Members and scores in (score, member) order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], Score)> {
        self.order.iter().map(|(s, m)| (m.as_slice(), *s))
    }

    /// Members and scores in member (byte) order: the state.
    pub fn by_member(&self) -> impl Iterator<Item = (&[u8], Score)> {
        self.scores.iter().map(|(m, s)| (m.as_slice(), *s))
    }

    /// The 0-based position of `member` in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        Some(self.order.range(..(score, member.to_vec())).count())
    }

    /// Remove and return the lowest (`max` false) or highest member.
    pub fn pop(&mut self, max: bool) -> Option<(Vec<u8>, Score)> {
        let (score, member) = if max {
            self.order.pop_last()?
        } else {
            self.order.pop_first()?
        };
        self.scores.remove(&member);
        Some((member, score))
    }

    /// Members whose scores lie between `min` and `max`, ascending (or descending if `rev`).
    pub fn range_by_score(
        &self,
        min: ScoreBound,
        max: ScoreBound,
        rev: bool,
    ) -> Box<dyn Iterator<Item = (&[u8], Score)> + '_> {
        let lo = min.score.normalized();
        let hi = max.score.normalized();
        if lo.0 > hi.0 {
            return Box::new(std::iter::empty());
        }
        // Every pair with score in [lo, hi] (then the bounds' exclusivity filters).
        let start = Bound::Included((lo, Vec::new()));
        let end = if hi.0 == f64::INFINITY {
            Bound::Unbounded
        } else {
            Bound::Excluded((Score(hi.0.next_up()), Vec::new()))
        };
        let inside = self
            .order
            .range((start, end))
            .map(|(s, m)| (m.as_slice(), *s));
        if rev {
            Box::new(
                inside
                    .rev()
                    .skip_while(move |(_, s)| !max.admits_from_above(*s))
                    .take_while(move |(_, s)| min.admits_from_below(*s)),
            )
        } else {
            Box::new(
                inside
                    .skip_while(move |(_, s)| !min.admits_from_below(*s))
                    .take_while(move |(_, s)| max.admits_from_above(*s)),
            )
        }
    }
}

impl FromIterator<(Vec<u8>, Score)> for ZSet {
    fn from_iter<I: IntoIterator<Item = (Vec<u8>, Score)>>(iter: I) -> ZSet {
        let mut z = ZSet::new();
        for (member, score) in iter {
            z.insert(&member, score);
        }
        z
    }
}

impl PartialEq for ZSet {
    fn eq(&self, other: &ZSet) -> bool {
        self.scores == other.scores
    }
}

impl Eq for ZSet {}

/// Encoded as the member-to-score map alone, in member order: a function of the contents.
impl Serialize for ZSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.scores.serialize(serializer)
    }
}

/// Rebuilds the ordered index. Scores are normalized, so an encoding holding `-0` loads to a
/// set that encodes differently (a checkpoint load refuses it as non-canonical).
impl<'de> Deserialize<'de> for ZSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ZSet, D::Error> {
        let scores = BTreeMap::<Vec<u8>, Score>::deserialize(deserializer)?;
        Ok(scores.into_iter().collect())
    }
}
