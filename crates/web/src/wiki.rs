//! The wiki: its state, its routes, and the HTML of its pages.
//!
//! Routes (every answer is a complete HTML page; errors say what was wrong):
//! - `GET /`: every page, with its revision count and last edit.
//! - `GET /new?name=N`: `303` to `N`'s edit form (the index's "new page" form).
//! - `GET /wiki/N`: page `N` rendered from its markup, "last edited … (revision R)"; a `404`
//!   page that offers to create it if it does not exist.
//! - `GET /wiki/N/edit`: the edit form (`POST`s to `/wiki/N`).
//! - `GET /wiki/N/history`: the revisions kept, newest first, with summaries.
//! - `GET /wiki/N/rev/R`: revision `R` as it was.
//! - `POST /wiki/N` (`application/x-www-form-urlencoded`, field `body`, optional `summary`):
//!   a new revision stamped with the batch's agreed time, answered `303 See Other` to the page.
//!
//! Time comes only from [`plumb_app::NonDeterminism`]: replicas agree on every byte.

use crate::date::format_agreed_time;
use crate::markup::{escape, render};
use crate::op::{WebOp, WebResponse, MAX_FORM_BYTES};
use plumb_crypto::Digest;
use plumb_wire::Micros;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub use crate::page_name::{valid_name, MAX_NAME_LEN};
/// The most bytes a page's text may hold (after decoding the form).
pub const MAX_PAGE_BYTES: usize = 64 * 1024;
/// The longest edit summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 200;
/// The most pages the wiki holds; creating one more is refused (`507`).
pub const MAX_PAGES: usize = 10_000;
/// Revisions kept per page: older ones leave the history (their numbers are not reused), so a
/// page's memory is bounded however often it is edited.
pub const MAX_REVISIONS_KEPT: usize = 32;

/// One saved version of a page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revision {
    /// 1 for the page's first revision, then one more per edit.
    pub number: u64,
    /// The agreed time of the batch that saved it, in microseconds since the Unix epoch.
    pub time: Micros,
    pub summary: String,
    pub text: String,
}

/// A page: its newest revisions, oldest first (never empty).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    pub revisions: Vec<Revision>,
}

impl Page {
    pub fn latest(&self) -> Option<&Revision> {
        self.revisions.last()
    }
}

/// The wiki's whole state: pages by name. As objects (objects.rs), each page lives in a hash
/// bucket of its name, and the directory and the edit count are the metadata.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Wiki {
    /// The pages held (every page, unless the replica loaded on demand).
    pub pages: BTreeMap<String, Page>,
    /// Revisions saved since the wiki began (including those no longer kept).
    pub edits: u64,
    /// Every page's latest revision: what the index lists and what a link's colour asks,
    /// answered without holding the pages. Derived from `pages` on a whole wiki; metadata.
    #[serde(skip)]
    pub(crate) directory: BTreeMap<String, Latest>,
    /// The names of the pages held in each bucket (derived from `pages`).
    #[serde(skip)]
    pub(crate) buckets: BTreeMap<u64, BTreeSet<String>>,
    /// Buckets (object ids) written since the last call of `take_changed_objects`.
    #[serde(skip)]
    pub(crate) dirty: BTreeSet<u64>,
}

/// A page's latest revision, as the directory keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latest {
    pub number: u64,
    pub time: Micros,
}

/// Two wikis are equal if they hold the same pages and counts (the directory follows from
/// them, and what changed since a checkpoint is not state).
impl PartialEq for Wiki {
    fn eq(&self, other: &Wiki) -> bool {
        self.pages == other.pages && self.edits == other.edits && self.directory == other.directory
    }
}

impl Eq for Wiki {}

/// The answer to an operation that could not be decoded.
pub fn undecodable(why: &str) -> WebResponse {
    error_page(
        400,
        "Bad request",
        &format!("The gateway sent an operation this application cannot decode: {why}."),
    )
}

/// A target's path, query and path segments, as the routes read them.
fn route(target: &str) -> (&str, &str, Vec<&str>) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    (path, query, path.split('/').skip(1).collect())
}

impl Wiki {
    /// The page `op` reads or writes, if any: the object it needs beyond the metadata
    /// (the index and `/new` need none; a link's colour asks the directory).
    pub fn page_of(op: &WebOp) -> Option<String> {
        let (WebOp::Get { target } | WebOp::Post { target, .. }) = op;
        let (_, _, segments) = route(target);
        match (op, segments.as_slice()) {
            (WebOp::Get { .. }, ["wiki", name, ..]) | (WebOp::Post { .. }, ["wiki", name]) => {
                page_name(name).ok()
            }
            _ => None,
        }
    }

    /// A wiki of `pages`: the directory derived, every page's bucket counted as written.
    pub fn from_pages(pages: BTreeMap<String, Page>, edits: u64) -> Wiki {
        let mut wiki = Wiki {
            pages,
            edits,
            ..Wiki::default()
        };
        for (name, page) in &wiki.pages {
            if let Some(r) = page.latest() {
                wiki.directory.insert(
                    name.clone(),
                    Latest {
                        number: r.number,
                        time: r.time,
                    },
                );
            }
            let b = crate::page_name::bucket_of(name).0;
            wiki.buckets.entry(b).or_default().insert(name.clone());
            wiki.dirty.insert(b);
        }
        wiki
    }

    /// Answer a read (a GET) from the current state.
    pub fn get(&self, target: &str) -> WebResponse {
        let (path, query, segments) = route(target);
        match segments.as_slice() {
            [""] => self.index(),
            ["new"] => self.new_page(query),
            ["wiki"] | ["wiki", ""] => redirect("/"),
            ["wiki", name, rest @ ..] => {
                let name = match page_name(name) {
                    Ok(name) => name,
                    Err(response) => return response,
                };
                match rest {
                    [] => self.view(&name, None),
                    ["edit"] => self.edit_form(&name),
                    ["history"] => self.history(&name),
                    ["rev", number] => match number.parse::<u64>() {
                        Ok(n) => self.view(&name, Some(n)),
                        Err(_) => not_found(path),
                    },
                    _ => not_found(path),
                }
            }
            _ => not_found(path),
        }
    }

    /// Run a POST at agreed time `now`.
    pub fn post(
        &mut self,
        target: &str,
        content_type: Option<&str>,
        body: &[u8],
        now: Micros,
    ) -> WebResponse {
        let (path, _, segments) = route(target);
        let name = match segments.as_slice() {
            ["wiki", name] => match page_name(name) {
                Ok(name) => name,
                Err(response) => return response,
            },
            _ => {
                return error_page(
                    405,
                    "Method not allowed",
                    &format!(
                        "{path} cannot be posted to: a page's edit form posts to /wiki/<name>."
                    ),
                )
            }
        };
        let form_type = "application/x-www-form-urlencoded";
        let media_type = content_type
            .and_then(|c| c.split(';').next())
            .map(|c| c.trim().to_ascii_lowercase());
        if media_type.as_deref() != Some(form_type) {
            return error_page(
                415,
                "Unsupported media type",
                &format!(
                    "An edit is sent as {form_type} (as the edit form sends it), not as {}.",
                    content_type.map_or("a body without a Content-Type".into(), |c| escape(
                        &format!("{c:?}")
                    ))
                ),
            );
        }
        if body.len() > MAX_FORM_BYTES {
            return error_page(
                413,
                "Too large",
                &format!(
                    "The form is {} bytes; an edit may send at most {MAX_FORM_BYTES}.",
                    body.len()
                ),
            );
        }
        let mut text = None;
        let mut summary = None;
        for (key, value) in form_urlencoded::parse(body) {
            match key.as_ref() {
                "body" if text.is_none() => text = Some(value.into_owned()),
                "summary" if summary.is_none() => summary = Some(value.into_owned()),
                _ => {}
            }
        }
        let Some(text) = text else {
            return error_page(
                400,
                "Bad request",
                "The form has no field named \"body\": nothing to save.",
            );
        };
        // Browsers send a textarea's line breaks as CRLF: keep one form of the text.
        let text = text.replace("\r\n", "\n");
        let summary = summary.unwrap_or_default().replace(['\r', '\n'], " ");
        let summary = summary.trim().to_string();
        if text.trim().is_empty() {
            return error_page(
                400,
                "Bad request",
                "The page text is empty; a page must say something (pages cannot be deleted).",
            );
        }
        if text.len() > MAX_PAGE_BYTES {
            return error_page(
                413,
                "Too large",
                &format!(
                    "The page text is {} bytes; a page holds at most {MAX_PAGE_BYTES}.",
                    text.len()
                ),
            );
        }
        if summary.chars().count() > MAX_SUMMARY_CHARS {
            return error_page(
                400,
                "Bad request",
                &format!(
                    "The summary has {} characters; at most {MAX_SUMMARY_CHARS} are kept.",
                    summary.chars().count()
                ),
            );
        }
        if !self.directory.contains_key(&name) && self.directory.len() >= MAX_PAGES {
            return error_page(
                507,
                "Wiki full",
                &format!(
                    "The wiki holds its maximum of {MAX_PAGES} pages: {name} cannot be created."
                ),
            );
        }
        let location = format!("/wiki/{name}");
        let page = self.pages.entry(name.clone()).or_insert(Page {
            revisions: Vec::new(),
        });
        if let Some(latest) = page.latest() {
            if latest.text == text && summary.is_empty() {
                // Nothing changed: no new revision, the same answer as a save.
                return saved(&location, &name, latest.number);
            }
        }
        let number = page.latest().map_or(1, |r| r.number + 1);
        page.revisions.push(Revision {
            number,
            time: now,
            summary,
            text,
        });
        if page.revisions.len() > MAX_REVISIONS_KEPT {
            page.revisions.remove(0);
        }
        self.directory
            .insert(name.clone(), Latest { number, time: now });
        let b = crate::page_name::bucket_of(&name).0;
        self.buckets.entry(b).or_default().insert(name.clone());
        self.dirty.insert(b);
        self.edits += 1;
        saved(&location, &name, number)
    }

    /// Run one operation on the ordered path.
    pub fn apply(&mut self, op: &WebOp, now: Micros) -> WebResponse {
        match op {
            WebOp::Get { target } => self.get(target),
            WebOp::Post {
                target,
                content_type,
                body,
            } => self.post(target, content_type.as_deref(), body, now),
        }
    }

    /// Answer one operation on the read-only path: a GET as the ordered path would; anything
    /// else is refused, since it would change the state.
    pub fn read_only(&self, op: &WebOp) -> WebResponse {
        match op {
            WebOp::Get { target } => self.get(target),
            WebOp::Post { .. } => error_page(
                500,
                "Internal error",
                "A POST reached the read-only path; the front end must order every POST.",
            ),
        }
    }

    fn exists(&self, name: &str) -> bool {
        self.directory.contains_key(name)
    }

    fn index(&self) -> WebResponse {
        let mut body = String::from("<h1>All pages</h1>\n");
        if self.directory.is_empty() {
            body.push_str("<p>The wiki has no pages yet.</p>\n");
        } else {
            body.push_str("<ul id=\"pages\">\n");
            for (name, latest) in &self.directory {
                body.push_str(&format!(
                    "<li><a href=\"/wiki/{name}\">{name}</a> <small>revision {}, {}</small></li>\n",
                    latest.number,
                    format_agreed_time(latest.time)
                ));
            }
            body.push_str("</ul>\n");
        }
        body.push_str(&format!(
            "<form action=\"/new\" method=\"get\"><label>New page: <input name=\"name\" maxlength=\"{MAX_NAME_LEN}\" pattern=\"[A-Za-z0-9_\\-]+\" required></label> <button type=\"submit\">Create</button></form>\n<p><small>{} pages, {} edits.</small></p>\n",
            self.directory.len(),
            self.edits
        ));
        ok(layout("All pages", &body))
    }

    fn new_page(&self, query: &str) -> WebResponse {
        let name = form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "name")
            .map(|(_, v)| v.trim().to_string());
        let Some(name) = name else {
            return error_page(
                400,
                "Bad request",
                "Say which page to create: /new?name=<name>.",
            );
        };
        if let Err(why) = valid_name(&name) {
            return error_page(400, "Bad page name", &format!("{}: {why}.", escape(&name)));
        }
        redirect(&format!("/wiki/{name}/edit"))
    }

    fn view(&self, name: &str, number: Option<u64>) -> WebResponse {
        let Some(page) = self.pages.get(name) else {
            return missing_page(name);
        };
        let Some(latest) = page.latest() else {
            return missing_page(name);
        };
        let revision = match number {
            None => latest,
            Some(n) => match page.revisions.iter().find(|r| r.number == n) {
                Some(r) => r,
                None => {
                    return error_page(
                        404,
                        "No such revision",
                        &format!(
                            "{name} has no revision {n} kept: its history holds revisions {} to {}. <a href=\"/wiki/{name}/history\">History</a>.",
                            page.revisions[0].number, latest.number
                        ),
                    )
                }
            },
        };
        let note = if revision.number == latest.number {
            String::new()
        } else {
            format!(
                "<p class=\"note\">An old revision; <a href=\"/wiki/{name}\">the current one</a> is revision {}.</p>\n",
                latest.number
            )
        };
        let body = format!(
            "<h1>{name}</h1>\n{note}<div id=\"content\">\n{}</div>\n<p id=\"edited\">last edited {} (revision {})</p>\n<p><a id=\"edit\" href=\"/wiki/{name}/edit\">Edit</a> · <a href=\"/wiki/{name}/history\">History</a> · <a href=\"/\">All pages</a></p>\n",
            render(&revision.text, &|n| self.exists(n)),
            format_agreed_time(revision.time),
            revision.number
        );
        ok(layout(name, &body))
    }

    fn edit_form(&self, name: &str) -> WebResponse {
        let current = self.pages.get(name).and_then(Page::latest);
        let (heading, text) = match current {
            Some(r) => (format!("Editing {name}"), r.text.as_str()),
            None => (format!("Creating {name}"), ""),
        };
        let body = format!(
            "<h1>{heading}</h1>\n<form id=\"edit-form\" method=\"post\" action=\"/wiki/{name}\">\n<p><textarea id=\"body\" name=\"body\" rows=\"20\" cols=\"80\" required>{}</textarea></p>\n<p><label>Summary: <input id=\"summary\" name=\"summary\" maxlength=\"{MAX_SUMMARY_CHARS}\" size=\"60\"></label></p>\n<p><button id=\"save\" type=\"submit\">Save</button> <a href=\"/wiki/{name}\">Cancel</a></p>\n</form>\n<p><small>Markup: a blank line starts a paragraph; <code># Title</code> a heading; <code>* item</code> a list item; <code>[[Name]]</code> or <code>[[Name|text]]</code> links to a page. HTML is shown as text.</small></p>\n",
            escape(text)
        );
        ok(layout(&heading, &body))
    }

    fn history(&self, name: &str) -> WebResponse {
        let Some(page) = self.pages.get(name) else {
            return missing_page(name);
        };
        let mut body = format!("<h1>History of {name}</h1>\n<ol id=\"history\" reversed>\n");
        for r in page.revisions.iter().rev() {
            let summary = if r.summary.is_empty() {
                String::new()
            } else {
                format!(": {}", escape(&r.summary))
            };
            body.push_str(&format!(
                "<li value=\"{n}\"><a href=\"/wiki/{name}/rev/{n}\">revision {n}</a>, {}{summary}</li>\n",
                format_agreed_time(r.time),
                n = r.number
            ));
        }
        body.push_str(&format!(
            "</ol>\n<p><a href=\"/wiki/{name}\">{name}</a> · <a href=\"/\">All pages</a></p>\n"
        ));
        ok(layout(&format!("History of {name}"), &body))
    }
}

/// `name` percent-decoded and checked, or the `400` page that says what is wrong with it.
fn page_name(raw: &str) -> Result<String, WebResponse> {
    let decoded = percent_encoding::percent_decode_str(raw).decode_utf8_lossy();
    match valid_name(&decoded) {
        Ok(()) => Ok(decoded.into_owned()),
        Err(why) => Err(error_page(
            400,
            "Bad page name",
            &format!("{}: {why}.", escape(&decoded)),
        )),
    }
}

/// A complete HTML document.
fn layout(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{} · plumb wiki</title>\n<style>body{{font-family:sans-serif;max-width:48em;margin:2em auto;padding:0 1em}}a.new{{color:#b00}}.note{{background:#ffd}}textarea{{width:100%}}</style>\n</head>\n<body>\n<p><a href=\"/\">plumb wiki</a></p>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

/// The strong validator of `body`: its digest, quoted.
fn etag(body: &[u8]) -> String {
    let digest = Digest::of(body);
    let hex: String = digest.0[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

fn ok(html: String) -> WebResponse {
    let body = html.into_bytes();
    WebResponse {
        status: 200,
        content_type: "text/html; charset=utf-8".into(),
        location: None,
        etag: Some(etag(&body)),
        body,
    }
}

fn redirect(location: &str) -> WebResponse {
    let html = layout(
        "See other",
        &format!("<p>See <a href=\"{location}\">{location}</a>.</p>\n"),
    );
    WebResponse {
        status: 303,
        content_type: "text/html; charset=utf-8".into(),
        location: Some(location.to_string()),
        etag: None,
        body: html.into_bytes(),
    }
}

fn saved(location: &str, name: &str, number: u64) -> WebResponse {
    let mut response = redirect(location);
    response.body = layout(
        "Saved",
        &format!("<p>Saved revision {number} of <a href=\"{location}\">{name}</a>.</p>\n"),
    )
    .into_bytes();
    response
}

/// An error page: `message` is HTML (callers escape what users wrote).
pub fn error_page(status: u16, title: &str, message: &str) -> WebResponse {
    WebResponse {
        status,
        content_type: "text/html; charset=utf-8".into(),
        location: None,
        etag: None,
        body: layout(
            title,
            &format!("<h1>{title}</h1>\n<p id=\"error\">{message}</p>\n"),
        )
        .into_bytes(),
    }
}

fn not_found(path: &str) -> WebResponse {
    error_page(
        404,
        "Not found",
        &format!(
            "Nothing is at {}. Pages are at /wiki/&lt;name&gt;; <a href=\"/\">all pages</a>.",
            escape(path)
        ),
    )
}

fn missing_page(name: &str) -> WebResponse {
    error_page(
        404,
        "No such page",
        &format!(
            "The page {name} does not exist yet. <a id=\"create\" href=\"/wiki/{name}/edit\">Create it</a>."
        ),
    )
}
