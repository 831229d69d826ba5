//! Systems under test other than plumb, each started on loopback and driven through its own
//! client library.
//!
//! Each system starts its servers as direct children of this process (no wrapper scripts), so
//! the pids the generator charges CPU time to are the servers' own, and each server's output
//! goes to a log file that start-up errors name.

pub mod etcd;
pub mod redis;
pub mod zookeeper;

use std::fs::File;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::target::ServerProcess;

/// Makes sure every `(path, package)` is present: `path` is a file path if it contains a `/`,
/// otherwise a program looked up on `PATH`. As root, installs the missing packages with apt-get
/// (so CI sets itself up), blocking meanwhile; otherwise says which `apt-get install` to run.
pub fn ensure_installed(what: &[(&str, &str)]) -> Result<(), String> {
    // Several systems may start at once (tests run in parallel); dpkg allows one apt-get at a
    // time, and the second would find the packages the first is installing.
    static APT: Mutex<()> = Mutex::new(());
    let _apt = APT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let absent: Vec<&(&str, &str)> = what.iter().filter(|(path, _)| !present(path)).collect();
    if absent.is_empty() {
        return Ok(());
    }
    let mut missing: Vec<&str> = Vec::new();
    for &&(_, package) in &absent {
        if !missing.contains(&package) {
            missing.push(package);
        }
    }
    let packages = missing.join(" ");
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        let paths: Vec<&str> = absent.iter().map(|(path, _)| *path).collect();
        return Err(format!(
            "{} not found; install with `sudo apt-get install -y --no-install-recommends {packages}`",
            paths.join(", ")
        ));
    }
    eprintln!("installing {packages} with apt-get (needed by the comparison benchmarks)");
    let install = ["install", "-y", "--no-install-recommends"];
    if apt_get(&install, &missing).is_err() {
        // A fresh machine has no package lists yet.
        apt_get(&["update"], &[])?;
        apt_get(&install, &missing)?;
    }
    match what.iter().find(|(path, _)| !present(path)) {
        Some((path, package)) => Err(format!(
            "installed {package} but {path} is still missing; check that this is Debian bookworm or later"
        )),
        None => Ok(()),
    }
}

fn present(path: &str) -> bool {
    if path.contains('/') {
        return Path::new(path).exists();
    }
    std::env::var_os("PATH")
        .is_some_and(|dirs| std::env::split_paths(&dirs).any(|dir| dir.join(path).is_file()))
}

/// Runs apt-get non-interactively, waiting for a dpkg lock another process holds. Its output
/// is kept out of the way and only its tail shown if it fails.
fn apt_get(args: &[&str], packages: &[&str]) -> Result<(), String> {
    let shown = format!("apt-get {} {}", args.join(" "), packages.join(" "));
    let output = Command::new("apt-get")
        .args(["-q", "-o", "DPkg::Lock::Timeout=300"])
        .args(args)
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run `{shown}`: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&output.stderr);
    let text = if text.trim().is_empty() {
        String::from_utf8_lossy(&output.stdout)
    } else {
        text
    };
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(5)..].join("\n");
    Err(format!("`{shown}` failed ({}):\n{tail}", output.status))
}

/// A server this process started, and the file its stdout and stderr go to.
pub(crate) struct Launched {
    pub process: ServerProcess,
    pub log: PathBuf,
}

/// Starts `command` as a child whose stdout and stderr go to `log` (created anew), named `name`
/// in errors.
pub(crate) fn launch(name: &str, mut command: Command, log: PathBuf) -> Result<Launched, String> {
    let out = File::create(&log).map_err(|e| format!("could not create {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("could not reopen {}: {e}", log.display()))?;
    let program = command.get_program().to_string_lossy().into_owned();
    let child = command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("could not start {name} ({program}): {e}"))?;
    Ok(Launched {
        process: ServerProcess {
            name: name.to_string(),
            child,
        },
        log,
    })
}

/// Retries `attempt` (each try bounded by the time left) until it succeeds, failing early if a
/// server exits and at `deadline` otherwise; both errors name the logs to look at.
pub(crate) async fn wait_until<F, Fut>(
    servers: &mut [Launched],
    what: &str,
    deadline: Instant,
    mut attempt: F,
) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut last = String::from("no attempt finished");
    loop {
        for server in servers.iter_mut() {
            if let Some(status) = server.process.exited() {
                return Err(format!(
                    "{} exited ({status}) while waiting for {what}; the end of {}:\n{}",
                    server.process.name,
                    server.log.display(),
                    log_tail(&server.log, 5)
                ));
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let logs: Vec<String> = servers
                .iter()
                .map(|s| s.log.display().to_string())
                .collect();
            return Err(format!(
                "gave up waiting for {what} (last error: {last}); see {}",
                logs.join(", ")
            ));
        }
        match tokio::time::timeout(left, attempt()).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => last = e,
            Err(_) => last = "the last attempt did not finish in time".into(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The last `lines` lines of a server's log, indented, so an error that names the log still
/// explains itself once a test's temporary directory is gone.
fn log_tail(log: &Path, lines: usize) -> String {
    match std::fs::read_to_string(log) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..]
                .iter()
                .map(|l| format!("  {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        }
        Err(e) => format!("  (cannot read it: {e})"),
    }
}

/// Waits until `addr` accepts TCP connections, failing early if a server exits and at
/// `deadline` otherwise.
pub(crate) async fn wait_for_port(
    servers: &mut [Launched],
    addr: SocketAddr,
    deadline: Instant,
) -> Result<(), String> {
    wait_until(
        servers,
        &format!("{addr} to accept connections"),
        deadline,
        || async {
            tokio::net::TcpStream::connect(addr)
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        },
    )
    .await
}

/// Fails if something already listens on one of `ports`, typically a server left running by
/// an earlier run that was killed: the new server could not bind, and the readiness checks would
/// otherwise talk to the old one.
pub(crate) fn ensure_free(ports: &[u16]) -> Result<(), String> {
    for &port in ports {
        std::net::TcpListener::bind(local(port)).map_err(|e| {
            format!(
                "127.0.0.1:{port} is not free ({e}); stop whatever holds it (`ss -ltnp 'sport = :{port}'` shows it) or pick other ports"
            )
        })?;
    }
    Ok(())
}

/// `"3 nodes"`, `"1 node"`.
pub(crate) fn nodes(n: usize) -> String {
    if n == 1 {
        "1 node".into()
    } else {
        format!("{n} nodes")
    }
}

/// The loopback address of `port`.
pub(crate) fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// `base + offset`, or an error saying the port range runs past 65535.
pub(crate) fn port(base: u16, offset: usize) -> Result<u16, String> {
    u16::try_from(offset)
        .ok()
        .and_then(|o| base.checked_add(o))
        .ok_or_else(|| format!("port {base} + {offset} is past 65535; pick a lower base port"))
}
