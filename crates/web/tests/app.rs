//! The wiki as the library drives it: batches with agreed time, the read-only path,
//! checkpoints, and hostile operation bytes.

use plumb_app::{Application, Command, NonDeterminism};
use plumb_web::wiki::{MAX_PAGE_BYTES, MAX_REVISIONS_KEPT};
use plumb_web::{WebOp, WebResponse, WikiApp, MAX_FORM_BYTES};
use plumb_wire::{Life, ReqNo, Seq};
use proptest::prelude::*;

const FORM: &str = "application/x-www-form-urlencoded";

fn get(target: &str) -> Vec<u8> {
    WebOp::Get {
        target: target.into(),
    }
    .encode()
}

fn post(target: &str, form: &str) -> Vec<u8> {
    WebOp::Post {
        target: target.into(),
        content_type: Some(FORM.into()),
        body: form.as_bytes().to_vec(),
    }
    .encode()
}

/// Run one batch of `ops` at agreed time `time` (seconds) and decode the answers.
fn run(app: &mut WikiApp, seq: u64, time_secs: u64, ops: &[Vec<u8>]) -> Vec<WebResponse> {
    let batch: Vec<Command<'_>> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| Command::new(i as u32, Life(0), ReqNo(seq), op))
        .collect();
    let nd = NonDeterminism {
        time: time_secs * 1_000_000,
        seed: seq,
    };
    app.execute(Seq(seq), &batch, nd)
        .replies
        .iter()
        .map(|r| WebResponse::decode(r).expect("the application's answers decode"))
        .collect()
}

fn one(app: &mut WikiApp, seq: u64, op: Vec<u8>) -> WebResponse {
    run(app, seq, 1_795_671_000 + seq, &[op]).remove(0)
}

fn text(r: &WebResponse) -> String {
    String::from_utf8(r.body.clone()).unwrap()
}

#[test]
fn edit_then_read_a_page() {
    let mut app = WikiApp::default();
    let index = one(&mut app, 1, get("/"));
    assert_eq!(index.status, 200);
    assert!(text(&index).contains("no pages yet"));

    let missing = one(&mut app, 2, get("/wiki/Home"));
    assert_eq!(missing.status, 404);
    assert!(text(&missing).contains("does not exist yet"));

    let saved = one(
        &mut app,
        3,
        post(
            "/wiki/Home",
            "body=Hello+%3Cscript%3Ealert(1)%3C%2Fscript%3E%0D%0Asee+%5B%5BOther%5D%5D&summary=first",
        ),
    );
    assert_eq!(saved.status, 303);
    assert_eq!(saved.location.as_deref(), Some("/wiki/Home"));

    let page = one(&mut app, 4, get("/wiki/Home"));
    assert_eq!(page.status, 200);
    let html = text(&page);
    assert!(
        html.contains("Hello &lt;script&gt;alert(1)&lt;/script&gt;<br>\nsee "),
        "{html}"
    );
    assert!(
        !html.contains("<script>"),
        "user HTML is never rendered raw: {html}"
    );
    assert!(html.contains("href=\"/wiki/Other/edit\""), "{html}");
    // The agreed time of batch 3, never a local clock.
    assert!(
        html.contains("last edited 2026-11-26 05:30:03 UTC (revision 1)"),
        "{html}"
    );
    assert!(page.etag.is_some());

    one(&mut app, 5, post("/wiki/Home", "body=Second"));
    let history = text(&one(&mut app, 6, get("/wiki/Home/history")));
    assert!(
        history.contains("revision 2</a>, 2026-11-26 05:30:05 UTC"),
        "{history}"
    );
    assert!(
        history.contains("revision 1</a>, 2026-11-26 05:30:03 UTC: first"),
        "{history}"
    );
    let old = text(&one(&mut app, 7, get("/wiki/Home/rev/1")));
    assert!(old.contains("An old revision"), "{old}");
    let edit = text(&one(&mut app, 8, get("/wiki/Home/edit")));
    assert!(edit.contains(">Second</textarea>"), "{edit}");
    let index = text(&one(&mut app, 9, get("/")));
    assert!(index.contains("<a href=\"/wiki/Home\">Home</a>"), "{index}");
}

#[test]
fn mistakes_get_4xx_pages_that_say_what_was_wrong() {
    let mut app = WikiApp::default();
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (get("/nowhere"), 404, "Nothing is at /nowhere"),
        (get("/wiki/a%20b"), 400, "' ' is none of them"),
        (get(&format!("/wiki/{}", "x".repeat(65))), 400, "at most 64"),
        (get("/wiki/%3Cscript%3E"), 400, "&lt;script&gt;"),
        (get("/new?name=ok-name"), 303, ""),
        (get("/new"), 400, "Say which page"),
        (post("/", "body=x"), 405, "cannot be posted to"),
        (post("/wiki/P", "summary=no-body"), 400, "no field named"),
        (post("/wiki/P", "body=+++"), 400, "empty"),
        (
            post(
                "/wiki/P",
                &format!("body={}", "y".repeat(MAX_PAGE_BYTES + 1)),
            ),
            413,
            "a page holds at most",
        ),
        (
            post("/wiki/P", &format!("body=x&summary={}", "s".repeat(201))),
            400,
            "The summary has 201 characters",
        ),
        (
            WebOp::Post {
                target: "/wiki/P".into(),
                content_type: Some("text/<b>plain".into()),
                body: b"body=x".to_vec(),
            }
            .encode(),
            415,
            "not as &quot;text/&lt;b&gt;plain&quot;",
        ),
        (vec![1, 2, 3], 400, "cannot decode"),
    ];
    for (i, (op, status, says)) in cases.into_iter().enumerate() {
        let r = one(&mut app, i as u64 + 1, op);
        assert_eq!(r.status, status, "{}", text(&r));
        assert!(text(&r).contains(says), "{says:?} in {}", text(&r));
    }
    assert!(app.wiki().pages.is_empty(), "no mistake saved anything");
    let form = WebOp::Post {
        target: "/wiki/P".into(),
        content_type: Some(FORM.into()),
        body: vec![b'a'; MAX_FORM_BYTES + 1],
    };
    // Over the form limit the operation does not even decode.
    assert!(WebOp::decode(&form.encode()).is_err());
}

#[test]
fn history_is_bounded_and_unchanged_saves_add_nothing() {
    let mut app = WikiApp::default();
    for i in 0..(MAX_REVISIONS_KEPT as u64 + 5) {
        one(&mut app, i + 1, post("/wiki/P", &format!("body=v{i}")));
    }
    let page = &app.wiki().pages["P"];
    assert_eq!(page.revisions.len(), MAX_REVISIONS_KEPT);
    assert_eq!(page.revisions[0].number, 6);
    let last = page.latest().unwrap().number;
    let again = one(
        &mut app,
        100,
        post("/wiki/P", &format!("body=v{}", last - 1)),
    );
    assert_eq!(again.status, 303);
    assert_eq!(app.wiki().pages["P"].latest().unwrap().number, last);
    let gone = one(&mut app, 101, get("/wiki/P/rev/1"));
    assert_eq!(gone.status, 404);
}

/// A workload of reads, edits and mistakes.
fn workload() -> Vec<Vec<Vec<u8>>> {
    (0..20u64)
        .map(|b| {
            vec![
                post(
                    &format!("/wiki/P{}", b % 3),
                    &format!("body=text+{b}+[[P{}]]&summary=s{b}", (b + 1) % 3),
                ),
                get(&format!("/wiki/P{}", b % 4)),
                get("/"),
                get(&format!("/wiki/P{}/history", b % 3)),
                vec![b as u8; b as usize],
            ]
        })
        .collect()
}

#[test]
fn two_replicas_fed_the_same_batches_agree_byte_for_byte() {
    let mut a = WikiApp::default();
    let mut b = WikiApp::default();
    for (seq, batch) in workload().iter().enumerate() {
        let commands: Vec<Command<'_>> = batch
            .iter()
            .map(|op| Command::new(7, Life(0), ReqNo(seq as u64), op))
            .collect();
        let nd = NonDeterminism {
            time: 1_000_000 * seq as u64 + 17,
            seed: 99,
        };
        let out_a = a.execute(Seq(seq as u64 + 1), &commands, nd);
        let out_b = b.execute(Seq(seq as u64 + 1), &commands, nd);
        assert_eq!(out_a, out_b, "batch {seq}");
        assert_eq!(a.take_checkpoint(), b.take_checkpoint());
        assert_eq!(a.state_digest(), b.state_digest());
    }
    // A third replica that loads the checkpoint is in the same state, and answers alike.
    let mut c = WikiApp::default();
    c.load_checkpoint(&a.take_checkpoint()).unwrap();
    assert_eq!(c, a);
    for target in ["/", "/wiki/P1", "/wiki/P2/history"] {
        assert_eq!(
            c.execute_read_only(0, &get(target)),
            a.execute_read_only(0, &get(target))
        );
    }
}

#[test]
fn read_only_changes_nothing_and_answers_as_the_ordered_path() {
    let mut app = WikiApp::default();
    for (seq, batch) in workload().iter().enumerate().take(10) {
        run(&mut app, seq as u64 + 1, seq as u64, batch);
    }
    let before = app.state_digest();
    for target in [
        "/",
        "/wiki/P0",
        "/wiki/P0/edit",
        "/wiki/P1/history",
        "/wiki/none",
        "/x",
    ] {
        let read_only = app.execute_read_only(3, &get(target));
        assert_eq!(app.state_digest(), before);
        let mut ordered = app.clone();
        let out = ordered.execute(
            Seq(100),
            &[Command::new(3, Life(0), ReqNo(1), &get(target))],
            NonDeterminism { time: 1, seed: 1 },
        );
        assert_eq!(out.replies[0], read_only, "{target}");
    }
    // A POST on the read-only path is refused and changes nothing.
    let r = WebResponse::decode(&app.execute_read_only(3, &post("/wiki/P0", "body=x"))).unwrap();
    assert_eq!(r.status, 500);
    assert_eq!(app.state_digest(), before);
}

#[test]
fn corrupt_checkpoints_are_refused() {
    let mut app = WikiApp::default();
    run(&mut app, 1, 1, &[post("/wiki/P", "body=x")]);
    let good = app.take_checkpoint();
    let mut trailing = good.clone();
    trailing.push(0);
    let mut other = WikiApp::default();
    assert!(other.load_checkpoint(&trailing).is_err());
    assert!(other.load_checkpoint(&[]).is_err());
    assert!(other.load_checkpoint(&[2]).is_err());
    // A page name the wiki would never accept.
    let mut bad = app.clone();
    let page = bad.wiki().pages["P"].clone();
    let mut wiki = bad.wiki().clone();
    wiki.pages.insert("<bad>".into(), page);
    let mut bytes = vec![plumb_web::CHECKPOINT_VERSION];
    bytes.extend(postcard::to_stdvec(&wiki).unwrap());
    assert!(bad.load_checkpoint(&bytes).is_err());
    assert_eq!(
        other,
        WikiApp::default(),
        "a refused checkpoint changes nothing"
    );
    other.load_checkpoint(&good).unwrap();
    assert_eq!(other, app);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Random bytes as an operation never panic, on either path, and are answered with a
    /// response that decodes.
    #[test]
    fn hostile_operation_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut app = WikiApp::default();
        let r = app.execute_read_only(0, &bytes);
        prop_assert!(WebResponse::decode(&r).is_ok());
        let out = app.execute(Seq(1), &[Command::new(0, Life(0), ReqNo(1), &bytes)], NonDeterminism { time: 5, seed: 5 });
        prop_assert!(WebResponse::decode(&out.replies[0]).is_ok());
        let _ = app.load_checkpoint(&bytes);
    }

    /// Well-formed operations with arbitrary targets and bodies never panic either, and
    /// whatever the user wrote never comes back as a live tag.
    #[test]
    fn arbitrary_requests_never_panic_or_inject(target in "/[ -~]{0,40}", body in "[ -~\n]{0,200}") {
        let mut app = WikiApp::default();
        let form: String = form_encode(&body);
        let saved = one(&mut app, 1, post("/wiki/Fuzz", &format!("body={form}")));
        prop_assert!(saved.status == 303 || saved.status == 400);
        for op in [get(&target), get("/wiki/Fuzz"), get("/wiki/Fuzz/edit"), post(&target, "body=x")] {
            let r = one(&mut app, 2, op);
            let html = text(&r);
            prop_assert!(!html.contains("<script"), "{}", html);
        }
    }
}

fn form_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn rendering_escapes_script_in_every_place_user_text_appears() {
    let mut app = WikiApp::default();
    let evil = "%3Cscript%3Ealert(1)%3C%2Fscript%3E";
    one(
        &mut app,
        1,
        post("/wiki/X", &format!("body={evil}&summary={evil}")),
    );
    for target in [
        "/wiki/X",
        "/wiki/X/edit",
        "/wiki/X/history",
        "/wiki/X/rev/1",
        "/",
    ] {
        let html = text(&one(&mut app, 2, get(target)));
        assert!(!html.contains("<script"), "{target}: {html}");
    }
}
