//! Path validation, ZooKeeper's `PathUtils.validatePath` rule for rule, and path arithmetic.
//!
//! A valid path starts with `/`, does not end with `/` (unless it is the root), has no empty
//! segment, no `.` or `..` segment, no null character and none of the characters ZooKeeper
//! refuses: U+0001..U+001F, U+007F..U+009F, U+E000..U+F8FF, U+FFF0..U+FFFF and everything
//! beyond U+FFFF (ZooKeeper looks at UTF-16 units, where such a character is a surrogate pair,
//! and refuses surrogates).

/// The paths ZooKeeper creates itself; none of them can be deleted.
pub const SPECIAL_PATHS: [&str; 4] = ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"];

fn bad_char(c: char) -> bool {
    let u = c as u32;
    (1..=0x1f).contains(&u)
        || (0x7f..=0x9f).contains(&u)
        || (0xd800..=0xf8ff).contains(&u)
        || u >= 0xfff0
}

/// Whether `path` is valid. A sequential create's path is checked as ZooKeeper's client does,
/// with a digit appended (so `/a/` is a valid sequential prefix).
pub fn is_valid(path: &str, sequential: bool) -> bool {
    if sequential {
        let mut p = String::with_capacity(path.len() + 1);
        p.push_str(path);
        p.push('1');
        return is_valid(&p, false);
    }
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    rest.split('/').all(|segment| {
        !segment.is_empty()
            && segment != "."
            && segment != ".."
            && !segment.chars().any(|c| c == '\0' || bad_char(c))
    })
}

/// The parent of a valid non-root path (`/` for a top-level node).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last segment of a valid non-root path.
pub fn name(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

/// The path of child `name` of `parent`.
pub fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// `path` and its ancestors up to the root, nearest first.
pub fn ancestry(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let current = next?;
        next = (current != "/").then(|| parent(current));
        Some(current)
    })
}

/// Whether `path` lies strictly below `ancestor`.
pub fn is_below(path: &str, ancestor: &str) -> bool {
    if ancestor == "/" {
        return path != "/";
    }
    path.len() > ancestor.len()
        && path.starts_with(ancestor)
        && path.as_bytes().get(ancestor.len()) == Some(&b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zookeepers_rules() {
        for ok in [
            "/",
            "/a",
            "/a/b",
            "/a.b",
            "/...",
            "/a/.b",
            "/zookeeper",
            "/é",
            "/a b",
        ] {
            assert!(is_valid(ok, false), "{ok}");
        }
        for bad in [
            "",
            "a",
            "/a/",
            "//",
            "/a//b",
            "/.",
            "/..",
            "/a/./b",
            "/a/..",
            "/a\0",
            "/\u{1}",
            "/\u{7f}",
            "/\u{9f}",
            "/\u{e000}",
            "/\u{fff0}",
            "/\u{1f600}",
        ] {
            assert!(!is_valid(bad, false), "{bad:?}");
        }
        assert!(is_valid("/a/", true));
        assert!(is_valid("/", true));
        assert!(!is_valid("/a//", true));
    }

    #[test]
    fn arithmetic() {
        assert_eq!(parent("/a"), "/");
        assert_eq!(parent("/a/b/c"), "/a/b");
        assert_eq!(name("/a/b"), "b");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(ancestry("/a/b").collect::<Vec<_>>(), ["/a/b", "/a", "/"]);
        assert_eq!(ancestry("/").collect::<Vec<_>>(), ["/"]);
        assert!(is_below("/a/b", "/a"));
        assert!(!is_below("/ab", "/a"));
        assert!(!is_below("/a", "/a"));
        assert!(is_below("/a", "/"));
    }
}
