//! [`Names`]: the children's names of one chunk, a sorted set kept in one buffer.
//!
//! Every create and delete changes one chunk and the execution stage then encodes and hashes
//! the whole chunk. As a `BTreeSet<String>` each name was an allocation of its own, so
//! encoding a chunk of a hundred names touched a hundred scattered cache lines; on a loaded
//! machine those misses, not the copying, were most of the cost (a whole-machine profile of
//! `zk-create`: encoding the written chunks was a fifth of each execution thread). Here the
//! names lie end to end in one string, in order, with the end of each: a lookup is a binary
//! search over contiguous bytes, an insert or a remove moves the names after it, and the
//! encoding is one pass over the buffer. Chunks are small (about a hundred names), so the
//! moves cost less than the allocations they replace.
//!
//! It encodes exactly as a `BTreeSet<String>` does (a sequence of strings in order), and
//! decoding refuses names out of order or repeated, so every set has one encoding.

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A sorted set of names in one buffer.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// The names end to end, in order.
    text: String,
    /// Where each name ends in `text`: name `i` is `text[ends[i - 1]..ends[i]]` (from 0 for
    /// the first). Increasing, since names are distinct; the last is `text.len()`.
    ends: Vec<usize>,
}

impl Names {
    pub fn new() -> Names {
        Names::default()
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn start(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            self.ends[i - 1]
        }
    }

    /// Name `i` in order.
    fn get(&self, i: usize) -> &str {
        &self.text[self.start(i)..self.ends[i]]
    }

    fn last(&self) -> Option<&str> {
        self.len().checked_sub(1).map(|i| self.get(i))
    }

    /// Where `name` is (`Ok`) or would go (`Err`).
    fn search(&self, name: &str) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid).cmp(name) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.search(name).is_ok()
    }

    /// Add `name`; whether it was not there.
    pub fn insert(&mut self, name: &str) -> bool {
        let Err(i) = self.search(name) else {
            return false;
        };
        let at = self.start(i);
        self.text.insert_str(at, name);
        self.ends.insert(i, at + name.len());
        for end in &mut self.ends[i + 1..] {
            *end += name.len();
        }
        self.debug_check();
        true
    }

    /// Take `name` out; whether it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        let Ok(i) = self.search(name) else {
            return false;
        };
        let (at, end) = (self.start(i), self.ends[i]);
        self.text.replace_range(at..end, "");
        self.ends.remove(i);
        for e in &mut self.ends[i..] {
            *e -= end - at;
        }
        self.debug_check();
        true
    }

    /// The names in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// About how many bytes the encoding takes (each name, and a length of one or two bytes).
    pub fn encoded_len_hint(&self) -> usize {
        self.text.len() + 2 * self.len() + 4
    }

    /// Add `name` after every name held, if it sorts after them all.
    fn push_greatest(&mut self, name: &str) -> bool {
        if self.last().is_some_and(|last| last >= name) {
            return false;
        }
        self.text.push_str(name);
        self.ends.push(self.text.len());
        true
    }

    /// The names in order, if `names` are strictly increasing.
    fn from_sorted<I: IntoIterator<Item = S>, S: AsRef<str>>(names: I) -> Option<Names> {
        let mut out = Names::new();
        for n in names {
            if !out.push_greatest(n.as_ref()) {
                return None;
            }
        }
        out.debug_check();
        Some(out)
    }

    /// The invariants, in debug builds (the simulator and the tests stop at the first
    /// broken step).
    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            assert_eq!(self.ends.last().copied().unwrap_or(0), self.text.len());
            assert!(self.ends.windows(2).all(|w| w[0] < w[1]));
            assert!(
                (1..self.len()).all(|i| self.get(i - 1) < self.get(i)),
                "{self:?}"
            );
        }
    }
}

impl<S: AsRef<str>> FromIterator<S> for Names {
    /// The names given, in order, each once.
    fn from_iter<I: IntoIterator<Item = S>>(names: I) -> Names {
        let mut sorted: Vec<S> = names.into_iter().collect();
        sorted.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
        sorted.dedup_by(|a, b| a.as_ref() == b.as_ref());
        Names::from_sorted(sorted).unwrap_or_default()
    }
}

impl fmt::Debug for Names {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Serialize for Names {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Names {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Names, D::Error> {
        struct Sorted;
        impl<'de> Visitor<'de> for Sorted {
            type Value = Names;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("names in increasing order")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Names, A::Error> {
                let mut out = Names::new();
                while let Some(n) = seq.next_element::<String>()? {
                    if !out.push_greatest(&n) {
                        return Err(serde::de::Error::custom("names out of order or repeated"));
                    }
                }
                out.debug_check();
                Ok(out)
            }
        }
        d.deserialize_seq(Sorted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Random inserts and removes do to `Names` what they do to a `BTreeSet`, and both
    /// encode alike.
    #[test]
    fn behaves_and_encodes_as_a_btreeset() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let (mut names, mut set) = (Names::new(), BTreeSet::new());
        for _ in 0..5000 {
            let r = next();
            let name = format!("n{}", r % 300).repeat(1 + (r >> 20) as usize % 3);
            if r >> 40 & 1 == 0 {
                assert_eq!(names.insert(&name), set.insert(name.clone()));
            } else {
                assert_eq!(names.remove(&name), set.remove(&name));
            }
            assert_eq!(names.contains(&name), set.contains(&name));
            assert_eq!(names.len(), set.len());
        }
        assert!(names.iter().eq(set.iter().map(String::as_str)));
        let bytes = postcard::to_stdvec(&names).unwrap();
        assert_eq!(bytes, postcard::to_stdvec(&set).unwrap());
        assert_eq!(postcard::from_bytes::<Names>(&bytes).unwrap(), names);
        assert_eq!(set.iter().collect::<Names>(), names);
        assert!(names.encoded_len_hint() >= bytes.len());
    }

    #[test]
    fn decoding_refuses_names_out_of_order_or_repeated() {
        for bad in [vec!["b", "a"], vec!["a", "a"]] {
            let bytes = postcard::to_stdvec(&bad).unwrap();
            assert!(postcard::from_bytes::<Names>(&bytes).is_err(), "{bad:?}");
        }
        let good = postcard::to_stdvec(&vec!["", "a", "b"]).unwrap();
        assert_eq!(postcard::from_bytes::<Names>(&good).unwrap().len(), 3);
    }
}
