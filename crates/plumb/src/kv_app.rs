//! The key-value store as the `plumb` binary's application: its name in cluster files, and the
//! Redis gateway `plumb up` starts beside its nodes.

use plumb::cli::{Cli, FrontEnd, Serving};
use plumb_cluster::Cluster;

/// The key-value store's name in cluster files. It is the name a file without `app` means,
/// because every cluster written before files named their application ran this store.
pub const KV_APP: &str = plumb_cluster::DEFAULT_APP;

/// The `plumb` binary's shared commands: the key-value store (with the Lua engine for Redis
/// scripts), with the Redis gateway as its front end, and the coordination application
/// (`--app coord`), with the ZooKeeper gateway as its front end, and the web application
/// (`--app web`), with the HTTP gateway as its front end.
pub fn cli() -> Cli {
    Cli::new("plumb")
        .app(KV_APP, plumb_script::store)
        .front_end(KV_APP, redis_gateway())
        .app(COORD_APP, plumb_coord::CoordApp::default)
        .front_end(COORD_APP, zk_gateway())
        .app(WEB_APP, plumb_web::WikiApp::default)
        .front_end(WEB_APP, http_gateway())
        // `plumb bench prophecy`'s application: reads with settable CPU work.
        .app(
            plumb_bench::readwork::READWORK_APP,
            plumb_bench::readwork::ReadWork::default,
        )
        // `plumb bench zz`'s application: the key-value store, each operation after a settable
        // CPU burn.
        .app(
            plumb_bench::burnkv::BURNKV_APP,
            plumb_bench::burnkv::BurnKv::default,
        )
        // Client speculation's application (`plumb bench speculation`, docs/speculation.md):
        // counters and a small file store behind the predicated-request shim.
        .app(plumb_speculation::app::SPECBENCH_APP, || {
            plumb_speculation::Speculative::new(
                plumb_speculation::SpecBench::default,
                SPEC_TRUNCATE_EVERY,
            )
        })
}

/// Batches between truncations of `specbench`'s reply log: a reply stays 64 to 128 batches,
/// far longer than a speculative client's pipeline takes to commit (a few batches), so
/// dependent requests come back Retry only after a long stall.
pub const SPEC_TRUNCATE_EVERY: u64 = 64;

/// Where every gateway front end of this binary listens: the cluster file's `[gateway] resp`
/// (the Redis, ZooKeeper or HTTP port, depending on the application).
fn gateway_address(cluster: &Cluster) -> Result<std::net::SocketAddr, String> {
    cluster.gateway.as_ref().map(|g| g.resp).ok_or_else(|| {
        format!(
            "{}: the configuration has no [gateway] section",
            cluster.path.display()
        )
    })
}

/// The port of the cluster file's `[gateway] resp` (0 without one), for the hints.
fn gateway_port(cluster: &Cluster) -> u16 {
    cluster.gateway.as_ref().map(|g| g.resp.port()).unwrap_or(0)
}

/// `plumb gateway --config FILE` as the front end of an application: it listens on the file's
/// `[gateway] resp` with identities of its own and runs `serve`; `hints` are what `up` prints
/// for its clients.
fn gateway(
    serve: fn(Cluster, Option<u32>) -> Serving,
    hints: fn(&Cluster) -> Vec<String>,
    default_port: Option<u16>,
    fast_reads: bool,
) -> FrontEnd {
    FrontEnd {
        name: "gateway",
        args: vec!["gateway".to_string()],
        address: gateway_address,
        hints,
        needs_gateway_section: true,
        default_port,
        fast_reads,
        serve,
    }
}

/// `plumb gateway --config FILE`, serving Redis clients on the file's `[gateway] resp`.
fn redis_gateway() -> FrontEnd {
    let hints = |cluster: &Cluster| {
        let port = gateway_port(cluster);
        vec![format!(
            "redis-cli -p {port}                           # the replicated key-value store"
        )]
    };
    let serve = |cluster, sketchers| -> Serving {
        Box::pin(plumb_script::gateway::serve(cluster, sketchers))
    };
    gateway(serve, hints, None, false)
}

/// The coordination application's name in cluster files.
pub const COORD_APP: &str = "coord";

/// ZooKeeper's client port, where `plumb up --app coord` serves ZooKeeper clients by default.
pub const ZK_DEFAULT_PORT: u16 = 2181;

/// `plumb gateway --config FILE` of a coordination cluster: ZooKeeper clients on the file's
/// `[gateway] resp` address (for this application it is the ZooKeeper port).
fn zk_gateway() -> FrontEnd {
    let hints = |cluster: &Cluster| {
        let port = gateway_port(cluster);
        vec![
            format!("/usr/share/zookeeper/bin/zkCli.sh -server 127.0.0.1:{port}   # ZooKeeper clients: the coordination service"),
            format!("python3 -c 'from kazoo.client import KazooClient; z=KazooClient(\"127.0.0.1:{port}\"); z.start(); print(z.get_children(\"/\"))'"),
        ]
    };
    // No sketchers in front of ZooKeeper reads.
    let serve = |cluster, _sketchers| -> Serving { Box::pin(plumb_coord::gateway::serve(cluster)) };
    gateway(serve, hints, Some(ZK_DEFAULT_PORT), true)
}

/// The web application's name in cluster files (docs/web.md).
pub const WEB_APP: &str = "web";

/// Where `plumb up --app web` serves HTTP clients by default.
pub const HTTP_DEFAULT_PORT: u16 = 8080;

/// `plumb gateway --config FILE` of a web cluster: HTTP clients (browsers, curl) on the
/// file's `[gateway] resp` address (for this application it is the HTTP port).
fn http_gateway() -> FrontEnd {
    let hints = |cluster: &Cluster| {
        let port = gateway_port(cluster);
        vec![
            format!("http://127.0.0.1:{port}/                      # the replicated wiki, in a browser"),
            format!("curl -d body=Hello http://127.0.0.1:{port}/wiki/Home   # an edit from the command line"),
        ]
    };
    let serve =
        |cluster, sketchers| -> Serving { Box::pin(plumb_web::gateway::serve(cluster, sketchers)) };
    gateway(serve, hints, Some(HTTP_DEFAULT_PORT), false)
}

/// `Ok(cluster)` if it replicates the key-value store; `plumb kv`, which speaks its operations,
/// refuses any other cluster rather than send it requests it cannot decode.
pub fn refuse_other_apps(cluster: Cluster) -> Result<Cluster, String> {
    if cluster.app == KV_APP {
        Ok(cluster)
    } else {
        Err(format!(
            "{}: the cluster replicates the application {:?}, not the key-value store ({KV_APP:?}); this command speaks only to the latter",
            cluster.path.display(),
            cluster.app
        ))
    }
}
