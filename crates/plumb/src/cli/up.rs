//! `up`: a whole cluster on this machine, one OS process per node plus the application's front
//! end (the key-value store's gateway), with progress while it starts, where to connect, a
//! live one-line summary, and a clean stop on Ctrl-C or SIGTERM. Every process is this same
//! binary, so the nodes have the applications it registers.

use super::{fetch_status, runtime, terminated, Cli, FrontEnd, DEFAULT_DIR};
use clap::Args;
use plumb_cluster::{init, Cluster, InitOptions};
use std::fs::OpenOptions;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Arguments of `up`.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// The application a new cluster replicates [default: the binary's first; for plumb, kv].
    #[arg(long)]
    app: Option<String>,
    /// Failures tolerated while up [default: 1, or what the directory's cluster was made with].
    #[arg(long)]
    u: Option<u16>,
    /// Commission failures tolerated while right [default: 1, or as above].
    #[arg(long)]
    r: Option<u16>,
    /// Execution replicas, for a new cluster directory [default: the minimum, u + max(u, r) + 1];
    /// those beyond the nodes' count get nodes of their own.
    #[arg(long)]
    exec: Option<usize>,
    /// Cluster directory: created if missing, reused (with its data) if it exists.
    #[arg(long, default_value = DEFAULT_DIR)]
    dir: PathBuf,
    /// The gateway's Redis port (for a new cluster directory) [default: 7379].
    #[arg(long)]
    resp_port: Option<u16>,
    /// The ZooKeeper front end's port, for an application served to ZooKeeper clients
    /// (`--app coord`; for a new cluster directory) [default: 2181].
    #[arg(long, conflicts_with = "resp_port")]
    zk_port: Option<u16>,
    /// The HTTP front end's port, for an application served to browsers (`--app web`; for a
    /// new cluster directory) [default: 8080].
    #[arg(long, conflicts_with_all = ["resp_port", "zk_port"])]
    http_port: Option<u16>,
    /// Nodes take consecutive ports from here (for a new cluster directory) [default: 7400].
    #[arg(long)]
    base_port: Option<u16>,
    /// Restart a node or the gateway that dies.
    #[arg(long)]
    restart: bool,
    /// Serve reads through this many Prophecy sketchers (the front end's `--sketchers`;
    /// docs/prophecy.md): a read is answered by one execution replica when the sketcher's
    /// history vouches for the answer. Overrides the cluster file's `[gateway] sketchers`.
    #[arg(long)]
    sketchers: Option<u32>,
    /// Shorthand for `--sketchers 1`.
    #[arg(long, conflicts_with = "sketchers")]
    sketcher: bool,
    /// Sleeping execution replicas (ZZ, docs/zz.md), for a new cluster directory: only
    /// max(u, r) + 1 execution replicas execute, the other u sleep inside their nodes until
    /// r + 1 order replicas wake them. Needs u of at least 1.
    #[arg(long)]
    zz: bool,
}

struct Proc {
    name: String,
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Proc {
    fn spawn(&mut self) -> Result<(), String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find this program's executable: {e}"))?;
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("cannot open {}: {e}", self.log.display()))?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(exe)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.name))?;
        self.child = Some(child);
        Ok(())
    }

    /// `Some(description)` if the process has exited.
    fn exited(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => {
                self.child = None;
                Some(format!(
                    "{} exited ({status}); its log: {}",
                    self.name,
                    self.log.display()
                ))
            }
            _ => None,
        }
    }

    fn signal(&self, sig: i32) {
        if let Some(c) = &self.child {
            // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
            unsafe {
                libc::kill(c.id() as i32, sig);
            }
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    }
}

fn prepare(cli: &Cli, a: &UpArgs) -> Result<Cluster, String> {
    let path = a.dir.join("cluster.toml");
    if !path.exists() {
        let app = cli.chosen_app(a.app.as_deref())?;
        let mut o = InitOptions {
            gateway_clients: cli.default_gateway_clients(&app),
            fast_reads: cli.default_fast_reads(&app),
            app,
            ..InitOptions::default()
        };
        o.u = a.u.unwrap_or(o.u);
        o.r = a.r.unwrap_or(o.r);
        o.exec = a.exec;
        let front_end_port = cli.front_ends.get(&o.app).and_then(|f| f.default_port);
        o.resp_port = a
            .resp_port
            .or(a.zk_port)
            .or(a.http_port)
            .or(front_end_port)
            .unwrap_or(o.resp_port);
        o.base_port = a.base_port.unwrap_or(o.base_port);
        o.protocol.zz = a.zz.then_some(true);
        let path = init(&a.dir, &o).map_err(|e| e.to_string())?;
        let cluster = Cluster::load(&path).map_err(|e| e.to_string())?;
        plumb_node::init_stores(&cluster)?;
        out!(
            "{} up: new u={} r={} cluster of {:?} in {}",
            cli.bin,
            o.u,
            o.r,
            o.app,
            a.dir.display()
        );
    }
    let cluster = Cluster::load(&path).map_err(|e| e.to_string())?;
    let f = cluster.faults();
    let gw_port = cluster.gateway.as_ref().map(|g| g.resp.port());
    let base = cluster.nodes.first().map(|n| n.address.port());
    let clashes = [
        (
            "--app",
            a.app.as_ref().is_some_and(|app| *app != cluster.app),
        ),
        ("--u", a.u.is_some_and(|u| u != f.u)),
        ("--r", a.r.is_some_and(|r| r != f.r)),
        (
            "--exec",
            a.exec.is_some_and(|e| e != cluster.quorums().exec),
        ),
        (
            "--resp-port",
            a.resp_port.is_some_and(|p| Some(p) != gw_port),
        ),
        ("--zk-port", a.zk_port.is_some_and(|p| Some(p) != gw_port)),
        (
            "--http-port",
            a.http_port.is_some_and(|p| Some(p) != gw_port),
        ),
        ("--base-port", a.base_port.is_some_and(|p| Some(p) != base)),
        ("--zz", a.zz && !cluster.protocol.zz),
    ];
    if let Some((flag, _)) = clashes.iter().find(|(_, c)| *c) {
        return Err(format!(
            "{} holds an existing u={} r={} cluster of {:?} that {flag} does not match; use another --dir for a new cluster, or drop the flag to reuse this one",
            a.dir.display(),
            f.u,
            f.r,
            cluster.app
        ));
    }
    cli.apps.check(&cluster)?;
    if let Some(front_end) = cli.front_ends.get(&cluster.app) {
        (front_end.address)(&cluster)?;
    }
    Ok(cluster)
}

pub(crate) fn up_cmd(cli: &Cli, a: UpArgs) -> ExitCode {
    let bin = cli.bin;
    let cluster = match prepare(cli, &a) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{bin} up: {e}");
            return ExitCode::from(2);
        }
    };
    let front_end = cli.front_ends.get(&cluster.app);
    let logs = a.dir.join("logs");
    if let Err(e) = std::fs::create_dir_all(&logs) {
        eprintln!("{bin} up: cannot create {}: {e}", logs.display());
        return ExitCode::from(2);
    }
    let config = cluster.path.to_string_lossy().to_string();
    let mut procs: Vec<Proc> = cluster
        .nodes
        .iter()
        .map(|n| Proc {
            name: format!("node {}", n.id),
            args: vec![
                "node".into(),
                "--config".into(),
                config.clone(),
                "--id".into(),
                n.id.to_string(),
            ],
            log: logs.join(format!("node-{}.log", n.id)),
            child: None,
        })
        .collect();
    if let Some(f) = front_end {
        let mut args = f.args.clone();
        args.extend(["--config".to_string(), config.clone()]);
        if let Some(n) = a.sketchers.or(a.sketcher.then_some(1)) {
            args.extend(["--sketchers".to_string(), n.to_string()]);
        }
        procs.push(Proc {
            name: f.name.to_string(),
            args,
            log: logs.join(format!("{}.log", f.name)),
            child: None,
        });
    }
    let rt = runtime();
    let code = rt.block_on(run(bin, &cluster, front_end, &a, &mut procs));
    for p in &procs {
        p.signal(libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    for p in &mut procs {
        while p.child.is_some() && p.exited().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        p.signal(libc::SIGKILL);
    }
    out!(
        "{bin} up: stopped; the data stays in {} (run `{bin} up` again to resume it)",
        a.dir.display()
    );
    code
}

async fn started(
    cluster: &Cluster,
    front_end: Option<&FrontEnd>,
    procs: &mut [Proc],
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    for (i, n) in cluster.nodes.iter().enumerate() {
        print_flush(&format!("  {} ({}) ", procs[i].name, n.address));
        loop {
            if let Some(e) = procs[i].exited() {
                out!("failed");
                return Err(format!("{e}\n{}", procs[i].log_tail()));
            }
            if fetch_status(n.admin).await.is_some() {
                out!("up");
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{} did not come up in 30 s; its log: {}",
                    procs[i].name,
                    procs[i].log.display()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // `prepare` checked the front end's address.
    let front = front_end.and_then(|f| Some((f.name, (f.address)(cluster).ok()?)));
    let last = procs.len() - 1;
    if let Some((name, addr)) = front {
        print_flush(&format!("  {name} ({addr}) "));
        loop {
            if let Some(e) = procs[last].exited() {
                out!("failed");
                return Err(format!("{e}\n{}", procs[last].log_tail()));
            }
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                out!("up");
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the {name} did not come up in 30 s; its log: {}",
                    procs[last].log.display()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

fn print_flush(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}

async fn run(
    bin: &str,
    cluster: &Cluster,
    front_end: Option<&FrontEnd>,
    a: &UpArgs,
    procs: &mut [Proc],
) -> ExitCode {
    let f = cluster.faults();
    out!(
        "{bin} up: starting a u={} r={} cluster of {} nodes replicating {:?}{} (logs in {})",
        f.u,
        f.r,
        cluster.nodes.len(),
        cluster.app,
        front_end.map_or(String::new(), |f| format!(" and a {}", f.name)),
        a.dir.join("logs").display()
    );
    for p in procs.iter_mut() {
        if let Err(e) = p.spawn() {
            eprintln!("{bin} up: {e}");
            return ExitCode::from(2);
        }
    }
    if let Err(e) = started(cluster, front_end, procs).await {
        eprintln!("{bin} up: {e}");
        return ExitCode::from(1);
    }
    let admin0 = cluster
        .nodes
        .first()
        .map(|n| n.admin.to_string())
        .unwrap_or_default();
    out!("");
    out!("ready. Connect with:");
    for hint in front_end.map(|f| (f.hints)(cluster)).unwrap_or_default() {
        out!("  {hint}");
    }
    out!("  curl http://{admin0}/status            # a node's state (/metrics for Prometheus)");
    out!("  {bin} status --config {}", cluster.path.display());
    out!("Ctrl-C stops the cluster.");
    let tty = std::io::stdout().is_terminal();
    let mut last_line = Instant::now() - Duration::from_secs(60);
    let stop = terminated();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => {
                if tty { out!(""); }
                return ExitCode::SUCCESS;
            }
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        for p in procs.iter_mut() {
            if let Some(e) = p.exited() {
                if tty {
                    out!("");
                }
                out!("{bin} up: {e}");
                if a.restart {
                    out!("{bin} up: restarting {}", p.name);
                    if let Err(e) = p.spawn() {
                        eprintln!("{bin} up: {e}");
                    }
                }
            }
        }
        let mut up = 0;
        let (mut view, mut primary, mut committed, mut executed, mut stable) =
            (None, None, 0u64, 0u64, 0u64);
        for n in &cluster.nodes {
            if let Some(v) = fetch_status(n.admin).await {
                up += 1;
                let get = |k: &str| v.get(k).and_then(|x| x.as_u64());
                if let Some(x) = get("view") {
                    if view.is_none_or(|w| x > w) {
                        view = Some(x);
                        primary = get("primary_node");
                    }
                }
                committed = committed.max(get("last_committed").unwrap_or(0));
                executed = executed.max(get("last_executed").unwrap_or(0));
                stable = stable.max(get("stable_checkpoint").unwrap_or(0));
            }
        }
        let line = format!(
            "nodes up {up}/{} | view {} (primary node {}) | committed {committed} | executed {executed} | stable checkpoint {stable}",
            cluster.nodes.len(),
            view.map_or("-".into(), |v| v.to_string()),
            primary.map_or("-".into(), |v| v.to_string()),
        );
        if tty {
            print_flush(&format!("\r{line}\x1b[K"));
        } else if last_line.elapsed() >= Duration::from_secs(10) {
            out!("{line}");
            last_line = Instant::now();
        }
    }
}
