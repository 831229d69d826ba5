//! Unmodified HTTP clients against a web cluster's gateway (`--app web`): Debian's `curl`,
//! raw HTTP/1.1 over TCP (pipelining, HEAD, hostile bytes), and a real browser (headless
//! Chromium driven by Selenium through Debian's chromedriver). One cluster serves them all (a
//! cluster per client would cost minutes on a 2-core machine).
//!
//! The browser part needs Debian's `chromium` and `chromium-driver` and a Python with
//! selenium (`.ci/run` installs them: selenium into `target/web-venv`, and sets
//! `PLUMB_WEB_BROWSER_PYTHON`, so that CI fails rather than skips when they are missing);
//! without them that part says so and is skipped.

mod common;

use common::Cluster;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Port slot 110: nodes from 32000, HTTP clients on 32050.
const SLOT: u16 = 110;

fn start(fast_reads: bool) -> Cluster {
    Cluster::start_app(
        "web-clients",
        SLOT,
        "web",
        Some(fast_reads),
        "the web gateway did not answer GET /",
        |port| {
            raw(port, b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
                .is_some_and(|response| response.starts_with("HTTP/1.1 200 "))
        },
    )
}

/// Everything the gateway answers to `request` until it closes the connection.
fn raw(port: u16, request: &[u8]) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    s.write_all(request).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The gateway with `fast_reads`: GETs take the read-only path, and still see every edit
/// acknowledged before them.
#[test]
fn reads_on_the_read_only_path_see_acknowledged_edits() {
    let mut c = start(true);
    let port = c.resp_port;
    for i in 0..5 {
        let form = format!("body=edit+{i}");
        let post = format!(
            "POST /wiki/Fast HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
            form.len()
        );
        let saved = raw(port, post.as_bytes()).expect("an answer");
        assert!(saved.starts_with("HTTP/1.1 303 See Other\r\n"), "{saved}");
        let page = raw(
            port,
            b"GET /wiki/Fast HTTP/1.1\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        assert!(page.contains(&format!("<p>edit {i}</p>")), "{page}");
        assert!(page.contains(&format!("(revision {})", i + 1)), "{page}");
    }
    let status = c.gateway_status();
    let reads = status.get("reads").and_then(|v| v.as_u64()).unwrap_or(0);
    assert!(reads >= 6, "every GET went through the read seam: {status}");
    // And the read-only path served them (a GET that met a lagging replica falls back to the
    // ordered path, so not necessarily every one).
    let accepted = common::read_only_accepted(c.gateway_admin(), 3, || {
        let page = raw(
            port,
            b"GET /wiki/Fast HTTP/1.1\r\nConnection: close\r\n\r\n",
        );
        assert!(page.is_some_and(|p| p.contains("<p>edit 4</p>")));
    });
    eprintln!("{accepted} GETs answered on the read-only path");
    c.assert_running();
}

#[test]
fn unmodified_http_clients() {
    let mut c = start(false);
    let port = c.resp_port;
    let started = Instant::now();
    curl_session(port);
    eprintln!("curl: passed in {:?}", started.elapsed());
    raw_http(port);
    let status = c.gateway_status();
    let count = |k: &str| status.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    assert!(
        count("requests") >= 10
            && count("responses_2xx") >= 3
            && count("responses_3xx") >= 1
            && count("responses_4xx") >= 3
            && count("reads") >= 5
            && count("writes") >= 1
            && count("bad_requests") >= 2
            && count("bytes_out") > 1000,
        "the gateway counts requests by status class: {status}"
    );
    let started = Instant::now();
    browser(port, c.dir());
    eprintln!("browser: done in {:?}", started.elapsed());
    c.assert_running();
}

fn curl(args: &[&str]) -> Output {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "30"])
        .args(args)
        .output()
        .expect("curl runs (Debian's curl package)");
    assert!(
        out.status.success(),
        "curl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn curl_session(port: u16) {
    let base = format!("http://127.0.0.1:{port}");
    let index = stdout(&curl(&["-i", &format!("{base}/")]));
    assert!(index.starts_with("HTTP/1.1 200 OK\r\n"), "{index}");
    assert!(
        index.contains("\r\nDate: ") && index.contains("\r\nContent-Length: "),
        "{index}"
    );
    assert!(index.contains("All pages"), "{index}");

    // An edit, as a form post; user HTML in it.
    let saved = stdout(&curl(&[
        "-i",
        "--data-urlencode",
        "body=Hello from curl <script>alert(1)</script>\n\nSee [[Other]].",
        "--data-urlencode",
        "summary=first edit",
        &format!("{base}/wiki/Home"),
    ]));
    assert!(saved.starts_with("HTTP/1.1 303 See Other\r\n"), "{saved}");
    assert!(saved.contains("\r\nLocation: /wiki/Home\r\n"), "{saved}");

    let page = stdout(&curl(&["-i", &format!("{base}/wiki/Home")]));
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    assert!(
        page.contains("Hello from curl &lt;script&gt;alert(1)&lt;/script&gt;"),
        "{page}"
    );
    assert!(
        !page.contains("<script>"),
        "user HTML is never rendered raw: {page}"
    );
    assert!(page.contains("(revision 1)</p>"), "{page}");
    let etag = page
        .lines()
        .find_map(|l| l.strip_prefix("ETag: "))
        .expect("a page has an ETag")
        .trim()
        .to_string();

    // A revalidation with the ETag: 304, no body.
    let cached = stdout(&curl(&[
        "-i",
        "-H",
        &format!("If-None-Match: {etag}"),
        &format!("{base}/wiki/Home"),
    ]));
    assert!(
        cached.starts_with("HTTP/1.1 304 Not Modified\r\n"),
        "{cached}"
    );
    assert!(cached.ends_with("\r\n\r\n"), "a 304 has no body: {cached}");

    // Two URLs on one command line: curl reuses the keep-alive connection.
    let two = curl(&[
        "-v",
        "-o",
        "/dev/null",
        "-o",
        "/dev/null",
        &format!("{base}/"),
        &format!("{base}/wiki/Home"),
    ]);
    let log = String::from_utf8_lossy(&two.stderr);
    assert!(log.contains("Re-using existing connection"), "{log}");
    assert_eq!(log.matches("< HTTP/1.1 200 OK").count(), 2, "{log}");

    // HEAD: the GET's headers, Content-Length included.
    let head = stdout(&curl(&["-I", &format!("{base}/wiki/Home")]));
    let get_len = page.split("\r\n\r\n").nth(1).map(str::len).expect("a body");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains(&format!("Content-Length: {get_len}\r\n")),
        "{head} vs {get_len}"
    );

    // A missing page: 404, with a way to create it.
    let missing = curl(&["-w", "%{http_code}", &format!("{base}/wiki/Nope")]);
    let text = stdout(&missing);
    assert!(text.ends_with("404"), "{text}");
    assert!(text.contains("does not exist yet"), "{text}");

    // A bad page name: 400 that says why.
    let bad = stdout(&curl(&["-w", "%{http_code}", &format!("{base}/wiki/a.b")]));
    assert!(
        bad.ends_with("400") && bad.contains("none of them"),
        "{bad}"
    );

    // A body over the limit is refused before it is sent (curl waits for 100-continue).
    let big = std::env::temp_dir().join(format!("plumb-web-big-{}", std::process::id()));
    std::fs::write(&big, vec![b'a'; plumb_web::MAX_FORM_BYTES + 1]).unwrap();
    let refused = curl(&[
        "-i",
        "-H",
        "Content-Type: application/x-www-form-urlencoded",
        "--data-binary",
        &format!("@{}", big.display()),
        &format!("{base}/wiki/Big"),
    ]);
    let _ = std::fs::remove_file(&big);
    let refused = stdout(&refused);
    assert!(
        refused.contains("HTTP/1.1 413 Content Too Large\r\n"),
        "{refused}"
    );
    assert!(refused.contains("at most 262144 are accepted"), "{refused}");
    let still = stdout(&curl(&[
        "-w",
        "%{http_code}",
        "-o",
        "/dev/null",
        &format!("{base}/wiki/Big"),
    ]));
    assert_eq!(still, "404", "nothing was saved");
}

fn raw_http(port: u16) {
    // Two pipelined requests in one write, the second closing: answered in order.
    let both = raw(
        port,
        b"GET /wiki/Home HTTP/1.1\r\nHost: x\r\n\r\nGET /wiki/Nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .expect("an answer");
    let first = both.find("HTTP/1.1 200 OK").expect("the first answer");
    let second = both
        .find("HTTP/1.1 404 Not Found")
        .expect("the second answer");
    assert!(first < second, "{both}");
    assert!(both.ends_with("</html>\n"), "{both}");

    // HEAD over raw TCP: headers, then nothing.
    let head = raw(
        port,
        b"HEAD /wiki/Home HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert!(
        head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"),
        "{head}"
    );
    assert!(head.contains("Connection: close\r\n"), "{head}");

    // HTTP/1.0 closes unless asked to keep the connection.
    let old = raw(port, b"GET / HTTP/1.0\r\n\r\n").unwrap();
    assert!(old.starts_with("HTTP/1.1 200 OK\r\n"), "{old}");

    // Other methods: 405 with Allow.
    let delete = raw(
        port,
        b"DELETE /wiki/Home HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert!(
        delete.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{delete}"
    );
    assert!(delete.contains("Allow: GET, HEAD, POST\r\n"), "{delete}");

    // Hostile bytes: 400 and the connection closes; a chunked body: 411.
    let garbage = raw(port, b"\x00\x01\x02garbage\r\n\r\n").unwrap();
    assert!(
        garbage.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{garbage}"
    );
    let chunked = raw(
        port,
        b"POST /wiki/Home HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nbody=\r\n0\r\n\r\n",
    )
    .unwrap();
    assert!(
        chunked.starts_with("HTTP/1.1 411 Length Required\r\n"),
        "{chunked}"
    );
    // The service still answers.
    let after = raw(port, b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
    assert!(after.starts_with("HTTP/1.1 200 OK\r\n"), "{after}");
}

/// A Python with selenium: `PLUMB_WEB_BROWSER_PYTHON`, the venv `.ci/run` makes under
/// target/, or a python3 on the PATH that has it. With `PLUMB_WEB_BROWSER_PYTHON` set (as
/// `.ci/run` sets it), a missing selenium or browser fails the test instead of skipping.
fn browser_python() -> Option<PathBuf> {
    let has_selenium = |p: &PathBuf| {
        Command::new(p)
            .args(["-c", "import selenium"])
            .status()
            .is_ok_and(|s| s.success())
    };
    let browser_installed = std::path::Path::new("/usr/bin/chromium").exists()
        && std::path::Path::new("/usr/bin/chromedriver").exists();
    if let Some(required) = std::env::var_os("PLUMB_WEB_BROWSER_PYTHON") {
        let required = PathBuf::from(required);
        assert!(
            has_selenium(&required),
            "PLUMB_WEB_BROWSER_PYTHON={required:?} cannot import selenium"
        );
        assert!(
            browser_installed,
            "PLUMB_WEB_BROWSER_PYTHON is set but /usr/bin/chromium or /usr/bin/chromedriver is missing (Debian's chromium and chromium-driver)"
        );
        return Some(required);
    }
    if !browser_installed {
        return None;
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/web-venv/bin/python3");
    [venv, PathBuf::from("python3")]
        .into_iter()
        .find(has_selenium)
}

fn browser(port: u16, cluster_dir: &std::path::Path) {
    let Some(python) = browser_python() else {
        common::tool_missing(
            "chromium, chromedriver or a python with selenium",
            ".ci/run installs them",
        );
        return;
    };
    let script = format!("{}/tests/web_py/browser.py", env!("CARGO_MANIFEST_DIR"));
    let screenshot = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/web-browser.png");
    let mut child = Command::new(python)
        .arg(&script)
        .arg(port.to_string())
        .arg(&screenshot)
        // Selenium must not try to download a driver or a browser: Debian's are used.
        .env("SE_OFFLINE", "true")
        .env("HOME", cluster_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "the browser test failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        screenshot.exists(),
        "a screenshot in {}",
        screenshot.display()
    );
}
