//! The replicated web application (DESIGN §7): a small wiki whose pages are read with GET and
//! changed with POST, served to browsers and curl by its gateway's HTTP front end
//! (`gateway`, feature `gateway`). See docs/web.md.
//!
//! - [`op`]: operations (method, target, POST content type and body) and results (an HTTP
//!   response without volatile headers) as versioned, bounds-checked bytes.
//! - [`wiki`]: the state, the routes and the HTML, rendered deterministically from the state
//!   and the batch's agreed time.
//! - [`markup`]: the pages' tiny markup and HTML escaping (user HTML is never rendered raw).
//! - [`date`]: dates from Unix time without a clock.
//! - `objects`: the state as objects (pages in hash buckets; the directory as metadata) and
//!   each operation's access set.
//! - `gateway` (feature `gateway`): the HTTP/1.1 front end `plumb gateway` runs for a web
//!   cluster.
//!
//! [`WikiApp`] is the [`Application`]: GETs answer the same on the ordered and the read-only
//! path at the same state; its state is kept as objects (docs/objects.md).

pub mod date;
#[cfg(feature = "gateway")]
pub mod gateway;
pub mod markup;
mod objects;
pub mod op;
pub mod page_name;
pub mod wiki;

pub use op::{DecodeError, WebOp, WebResponse, MAX_FORM_BYTES};
pub use page_name::{bucket_of, PAGE_BUCKET_BITS};
pub use wiki::Wiki;

use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Seq};

/// Version byte of checkpoint encodings.
pub const CHECKPOINT_VERSION: u8 = 1;

/// The wiki as a plumb application.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WikiApp {
    wiki: Wiki,
}

impl WikiApp {
    pub fn wiki(&self) -> &Wiki {
        &self.wiki
    }

    /// The canonical encoding of the whole state: pages are in a `BTreeMap`, so equal states
    /// give equal bytes.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        plumb_app::codec::encode_versioned(CHECKPOINT_VERSION, &self.wiki)
    }

    /// The state `bytes` encode, if they are exactly the canonical encoding of a valid state
    /// (names, sizes and revision numbers within the wiki's rules).
    pub fn from_canonical_bytes(bytes: &[u8]) -> Result<WikiApp, LoadError> {
        let corrupt = |why: String| LoadError::Corrupt(why);
        let wiki: Wiki = plumb_app::codec::decode_versioned(CHECKPOINT_VERSION, bytes)
            .map_err(|e| corrupt(format!("checkpoint: {e}")))?;
        if wiki.pages.len() > wiki::MAX_PAGES {
            return Err(corrupt(format!("{} pages", wiki.pages.len())));
        }
        if let Some(e) = wiki
            .pages
            .iter()
            .find_map(|(n, p)| objects::page_error(n, p))
        {
            return Err(corrupt(e));
        }
        let app = WikiApp {
            wiki: Wiki::from_pages(wiki.pages, wiki.edits),
        };
        if app.canonical_bytes() != bytes {
            return Err(corrupt("non-canonical encoding".into()));
        }
        Ok(app)
    }
}

impl Application for WikiApp {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput {
        let replies = batch
            .iter()
            .map(|cmd| {
                match WebOp::decode(cmd.op) {
                    Ok(op) => self.wiki.apply(&op, nd.time),
                    Err(why) => wiki::undecodable(&why.to_string()),
                }
                .encode()
            })
            .collect();
        BatchOutput {
            replies,
            pushes: Vec::new(),
        }
    }

    /// A GET's answer is the state's alone (its URL, no cookies or client): D-Prophecy's
    /// replicas may vouch for it.
    fn is_read(&self, op: &[u8]) -> bool {
        WebOp::decode(op).is_ok_and(|op| op.is_read_only())
    }

    fn execute_read_only(&self, _client: ClientId, op: &[u8]) -> Vec<u8> {
        match WebOp::decode(op) {
            Ok(op) => self.wiki.read_only(&op),
            Err(why) => wiki::undecodable(&why.to_string()),
        }
        .encode()
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        self.canonical_bytes()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        *self = WikiApp::from_canonical_bytes(checkpoint)?;
        Ok(())
    }

    fn state_digest(&self) -> Digest {
        Digest::of(&self.canonical_bytes())
    }

    fn objects(&mut self) -> Option<&mut dyn plumb_app::ObjectState> {
        Some(self)
    }
}
