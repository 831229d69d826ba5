//! The wiki as objects (docs/objects.md "The web application"): each page lives in a hash
//! bucket of its name ([`PAGE_BUCKET_BITS`] bits: the wiki holds at most
//! [`crate::wiki::MAX_PAGES`] pages, so a bucket holds about one); the directory (every page's
//! latest revision) and the edit count are the metadata, so the index and the colour of a link
//! (to a page that exists or not) need no page. An operation's access set is the bucket of the
//! page it reads or saves, if any.

use crate::page_name::{bucket_of, PAGE_BUCKET_BITS};
use crate::wiki::{valid_name, Latest, Page, Wiki, MAX_PAGES, MAX_PAGE_BYTES, MAX_REVISIONS_KEPT};
use crate::{WebOp, WikiApp};
use plumb_app::{AccessSet, LoadError, ObjectId, ObjectState, ObjectWrite};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version byte of a bucket's encoding.
const BUCKET_VERSION: u8 = 1;
/// Version byte of the metadata's encoding.
const METADATA_VERSION: u8 = 1;

/// Why a page, on its own, breaks the wiki's rules (a bad name, no revision or too many,
/// numbers that do not increase, a revision over the size limit).
pub(crate) fn page_error(name: &str, page: &Page) -> Option<String> {
    if let Err(why) = valid_name(name) {
        return Some(format!("page {name:?}: {why}"));
    }
    if page.revisions.is_empty() || page.revisions.len() > MAX_REVISIONS_KEPT {
        return Some(format!(
            "page {name}: {} revisions kept",
            page.revisions.len()
        ));
    }
    if page
        .revisions
        .windows(2)
        .any(|w| w[1].number <= w[0].number)
        || page.revisions[0].number == 0
    {
        return Some(format!("page {name}: revision numbers do not increase"));
    }
    if page.revisions.iter().any(|r| r.text.len() > MAX_PAGE_BYTES) {
        return Some(format!("page {name}: a revision over the size limit"));
    }
    None
}

fn corrupt(why: impl Into<String>) -> LoadError {
    LoadError::Corrupt(why.into())
}

#[derive(Serialize, Deserialize)]
struct Metadata {
    edits: u64,
    directory: BTreeMap<String, Latest>,
}

impl WikiApp {
    /// The canonical bytes of bucket `id` (`None` if it holds no page): version byte, then
    /// postcard of its `(name, page)` pairs in name order.
    pub fn bucket_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        let names = self.wiki.buckets.get(&id.0)?;
        let pages: Vec<(&String, &Page)> = names
            .iter()
            .filter_map(|name| self.wiki.pages.get_key_value(name))
            .collect();
        (!pages.is_empty()).then(|| plumb_app::codec::encode_versioned(BUCKET_VERSION, &pages))
    }

    fn metadata(&self) -> Metadata {
        Metadata {
            edits: self.wiki.edits,
            directory: self.wiki.directory.clone(),
        }
    }
}

impl ObjectState for WikiApp {
    fn object_id_bits(&self) -> u8 {
        PAGE_BUCKET_BITS
    }

    fn take_changed_objects(&mut self) -> Vec<ObjectWrite> {
        std::mem::take(&mut self.wiki.dirty)
            .into_iter()
            .map(|b| (ObjectId(b), self.bucket_bytes(ObjectId(b))))
            .collect()
    }

    fn object_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        self.bucket_bytes(id)
    }

    fn load_object(&mut self, id: ObjectId, bytes: Option<&[u8]>) -> Result<(), LoadError> {
        if id.0 >> PAGE_BUCKET_BITS != 0 {
            return Err(corrupt("bucket id out of range"));
        }
        let pages: Vec<(String, Page)> = match bytes {
            None | Some([]) => Vec::new(),
            Some(b) => plumb_app::codec::decode_versioned(BUCKET_VERSION, b)
                .map_err(|e| corrupt(format!("bucket: {e}")))?,
        };
        if bytes.is_some_and(|b| !b.is_empty()) && pages.is_empty() {
            return Err(corrupt("empty bucket encoded"));
        }
        if pages.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(corrupt("bucket pages out of order"));
        }
        for (name, page) in &pages {
            if bucket_of(name) != id {
                return Err(corrupt(format!("page {name} in the wrong bucket")));
            }
            if let Some(e) = page_error(name, page) {
                return Err(corrupt(e));
            }
        }
        if let Some(b) = bytes.filter(|b| !b.is_empty()) {
            let pairs: Vec<(&String, &Page)> = pages.iter().map(|(n, p)| (n, p)).collect();
            if plumb_app::codec::encode_versioned(BUCKET_VERSION, &pairs) != b {
                return Err(corrupt("non-canonical bucket"));
            }
        }
        for name in self.wiki.buckets.remove(&id.0).unwrap_or_default() {
            self.wiki.pages.remove(&name);
        }
        if !pages.is_empty() {
            let names = pages.iter().map(|(name, _)| name.clone()).collect();
            self.wiki.buckets.insert(id.0, names);
        }
        self.wiki.pages.extend(pages);
        self.wiki.dirty.remove(&id.0);
        Ok(())
    }

    /// The edit count and the directory.
    fn object_metadata(&self) -> Vec<u8> {
        plumb_app::codec::encode_versioned(METADATA_VERSION, &self.metadata())
    }

    fn load_object_metadata(&mut self, metadata: &[u8]) -> Result<(), LoadError> {
        let m: Metadata = plumb_app::codec::decode_versioned(METADATA_VERSION, metadata)
            .map_err(|e| corrupt(format!("metadata: {e}")))?;
        if m.directory.len() > MAX_PAGES {
            return Err(corrupt(format!("{} pages", m.directory.len())));
        }
        if let Some((name, _)) = m
            .directory
            .iter()
            .find(|(name, l)| valid_name(name).is_err() || l.number == 0)
        {
            return Err(corrupt(format!("directory entry {name:?}")));
        }
        if plumb_app::codec::encode_versioned(METADATA_VERSION, &m) != metadata {
            return Err(corrupt("non-canonical metadata"));
        }
        self.wiki.edits = m.edits;
        self.wiki.directory = m.directory;
        Ok(())
    }

    /// The bucket of the page the operation reads or saves; none for the index, `/new` and
    /// bytes that are no operation.
    fn access_set(&self, op: &[u8]) -> AccessSet {
        let page = WebOp::decode(op).ok().and_then(|op| Wiki::page_of(&op));
        AccessSet::objects(page.map(|name| bucket_of(&name)))
    }
}
