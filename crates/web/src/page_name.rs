//! What may name a wiki page (the wiki's routes and the markup's links both ask), and the
//! object (hash bucket) a page of that name is kept in.

use plumb_app::ObjectId;

/// The longest page name, in characters.
pub const MAX_NAME_LEN: usize = 64;

/// Whether `name` may name a page: 1 to [`MAX_NAME_LEN`] ASCII letters, digits, `-` or `_`
/// (so a name is safe in a URL and in HTML as it is). The error says why not.
pub fn valid_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a page name cannot be empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "a page name has at most {MAX_NAME_LEN} characters; this one has {}",
            name.chars().count()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(format!(
            "a page name is made of letters, digits, '-' and '_'; {c:?} is none of them"
        ));
    }
    Ok(())
}

/// Bits of a bucket id: the wiki holds at most `wiki::MAX_PAGES` pages, so a bucket of 2^16
/// holds about one.
pub const PAGE_BUCKET_BITS: u8 = 16;

/// The bucket (object) holding page `name`.
pub fn bucket_of(name: &str) -> ObjectId {
    ObjectId::hashed(name.as_bytes(), PAGE_BUCKET_BITS)
}
