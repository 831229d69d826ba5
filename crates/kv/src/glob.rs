//! Redis glob patterns (`KEYS`, `CONFIG GET`), matched exactly as Redis' `stringmatchlen`
//! does, so every replica and a real Redis agree on which keys match.
//!
//! `*` any run of bytes, `?` one byte, `[abc]` a class, `[^a]` its complement, `[a-z]` a range
//! (reversed ends are swapped), `\x` the byte `x` (also inside a class). Redis' corner cases
//! are kept: an unterminated class ends at the pattern's end, a trailing `\` is a literal `\`,
//! `[a-]` is the range from `a` to `]` (and leaves the class open), and a non-empty pattern never matches the empty
//! string (Redis' `KEYS *` lists it through a shortcut; so does [`crate::KvOp::KeysMatching`]).
//! Bytes are compared unsigned.
//!
//! Matching is bounded: once `*` fails to match the rest at every later position, no earlier
//! `*` retries (Redis' `skipLongerMatches`), so a pattern of `k` stars costs `O(k * n)` calls
//! at most per level rather than exponentially many.

/// Whether `text` matches the Redis glob `pattern` (case-sensitive).
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let mut give_up = false;
    matches(pattern, text, &mut give_up)
}

/// The longest prefix of `pattern` free of special bytes: every key `pattern` matches starts
/// with it.
pub fn literal_prefix(pattern: &[u8]) -> &[u8] {
    let end = pattern
        .iter()
        .position(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'))
        .unwrap_or(pattern.len());
    &pattern[..end]
}

fn matches(mut p: &[u8], mut s: &[u8], give_up: &mut bool) -> bool {
    while let (Some(&pc), Some(&sc)) = (p.first(), s.first()) {
        match pc {
            b'*' => {
                while p.get(1) == Some(&b'*') {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                while !s.is_empty() {
                    if matches(&p[1..], s, give_up) {
                        return true;
                    }
                    if *give_up {
                        return false;
                    }
                    s = &s[1..];
                }
                *give_up = true;
                return false;
            }
            b'?' => {
                s = &s[1..];
                p = &p[1..];
            }
            b'[' => {
                let (matched, rest) = class(&p[1..], sc);
                if !matched {
                    return false;
                }
                s = &s[1..];
                p = rest;
            }
            _ => {
                // `\x` is `x`; a lone trailing `\` is itself.
                let (want, rest) = match (pc, p.get(1)) {
                    (b'\\', Some(&escaped)) => (escaped, &p[2..]),
                    _ => (pc, &p[1..]),
                };
                if want != sc {
                    return false;
                }
                s = &s[1..];
                p = rest;
            }
        }
        if s.is_empty() {
            while p.first() == Some(&b'*') {
                p = &p[1..];
            }
            break;
        }
    }
    p.is_empty() && s.is_empty()
}

/// Match byte `c` against the class whose body starts at `p` (just after `[`). Returns
/// whether it matched and the pattern after the class.
fn class(mut p: &[u8], c: u8) -> (bool, &[u8]) {
    let negate = p.first() == Some(&b'^');
    if negate {
        p = &p[1..];
    }
    let mut matched = false;
    loop {
        match p {
            [] => break,
            [b'\\', escaped, ..] => {
                matched |= *escaped == c;
                p = &p[2..];
            }
            [b']', ..] => {
                p = &p[1..];
                break;
            }
            [a, b'-', b, ..] => {
                let (lo, hi) = if a <= b { (*a, *b) } else { (*b, *a) };
                matched |= (lo..=hi).contains(&c);
                p = &p[3..];
            }
            [x, ..] => {
                matched |= *x == c;
                p = &p[1..];
            }
        }
    }
    (matched != negate, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_examples() {
        let yes: &[(&[u8], &[u8])] = &[
            (b"h?llo", b"hello"),
            (b"h*llo", b"hllo"),
            (b"h*llo", b"heeeello"),
            (b"h[ae]llo", b"hallo"),
            (b"h[^e]llo", b"hallo"),
            (b"h[a-b]llo", b"hbllo"),
            (b"h[b-a]llo", b"hallo"),
            (b"**", b"abc"),
            (b"a*", b"a"),
            (b"\\*", b"*"),
            (b"a\\", b"a\\"),
            (b"[\\]]", b"]"),
            (b"[a-]", b"]"), // the range `a`..`]`, and the class is unterminated
            (b"[abc", b"b"),
            (b"*a*b*c", b"xxaxxbxxc"),
        ];
        for (p, t) in yes {
            assert!(
                glob_match(p, t),
                "{} {}",
                p.escape_ascii(),
                t.escape_ascii()
            );
        }
        let no: &[(&[u8], &[u8])] = &[
            (b"h?llo", b"hllo"),
            (b"h[ae]llo", b"hillo"),
            (b"h[^e]llo", b"hello"),
            (b"h[a-b]llo", b"hcllo"),
            (b"\\*", b"a"),
            (b"a", b""),
            (b"", b"a"),
            (b"?", b""),
            // Redis' quirk: a non-empty pattern never matches the empty string (`KEYS *`
            // has its own shortcut that does list the empty key).
            (b"*", b""),
            (b"*a*b*c", b"xxaxxbxx"),
            (b"[a-]x", b"]x"), // `x` is inside the unterminated class
        ];
        for (p, t) in no {
            assert!(
                !glob_match(p, t),
                "{} {}",
                p.escape_ascii(),
                t.escape_ascii()
            );
        }
    }

    #[test]
    fn many_stars_do_not_blow_up() {
        let pattern = b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b".to_vec();
        let text = vec![b'a'; 5_000];
        assert!(!glob_match(&pattern, &text));
    }

    #[test]
    fn literal_prefix_stops_at_the_first_special_byte() {
        assert_eq!(literal_prefix(b"user:*"), b"user:");
        assert_eq!(literal_prefix(b"abc"), b"abc");
        assert_eq!(literal_prefix(b"a?c"), b"a");
        assert_eq!(literal_prefix(b"[a]"), b"");
        assert_eq!(literal_prefix(b"a\\*"), b"a");
    }
}
