//! The fault scoreboard (`plumb bench --scenario`): the same key-value load on a fresh cluster,
//! fault-free and then under each adversary, in one run, as in seed 004 Tables 3.1 and 3.3-3.6.
//!
//! Faulty replicas are `plumb node --adversary NAME` processes, so the plumb executable must be
//! a test build (feature `adversary`). Faulty clients are tasks of this process that send what
//! no client library sends. Every run also drives client 0 alone in its own closed loop: a
//! starving primary picks on it, and its throughput against the others' per-client average is
//! the fairness column.

use crate::app::BenchApp;
use crate::load::{self, Load, RunSpec};
use crate::plumb::{Placement, Plumb, PlumbShape};
use crate::target::Target;
use crate::workload::Workload;
use futures_util::SinkExt;
use plumb_gateway::Pool;
use plumb_wire::{Principal, ReqNo};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The client identity a starving primary ignores (`plumb_adversary::STARVED_CLIENT`): the
/// scoreboard's victim, kept out of the pool.
const VICTIM: u32 = plumb_adversary::STARVED_CLIENT;
/// The faulty client's identity.
const ATTACKER: u32 = 1;
/// Identities outside the pool: the victim and the attacker.
const RESERVED: u32 = 2;
/// Frames per second a flooding client sends in all. The machine's two cores run the cluster
/// and this process alike, so an unbounded flood would measure stolen CPU, not the defences:
/// this rate is about what the correct clients send.
const FLOOD_FRAMES_PER_S: u64 = 8_000;
/// Connections a connection-flooding client keeps open per node while it opens new ones.
const FLOOD_CONNECTIONS: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAttack {
    /// Requests with MACs that fail.
    BadMacs,
    /// Validly MACed frames whose body does not decode.
    Malformed,
    /// Two operations under each request number.
    ReusedIds,
    /// Fresh request numbers as fast as the flood rate allows.
    RequestFlood,
    /// TCP connections opened and dropped without end.
    ConnectionFlood,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Node `node` runs `plumb node --adversary behaviour`.
    Node {
        node: u16,
        behaviour: String,
    },
    Client(ClientAttack),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    pub name: String,
    pub fault: Fault,
}

/// Every scenario, in the order of the scoreboard. Node 0 hosts the first primary (o0); node 1
/// a backup, an authentication and an execution replica.
pub fn catalogue() -> Vec<Scenario> {
    let client = |name: &str, a| Scenario {
        name: name.to_string(),
        fault: Fault::Client(a),
    };
    let node = |name: &str, node: u16, behaviour: &str| Scenario {
        name: name.to_string(),
        fault: Fault::Node {
            node,
            behaviour: behaviour.to_string(),
        },
    };
    vec![
        client("client-bad-macs", ClientAttack::BadMacs),
        client("client-malformed", ClientAttack::Malformed),
        client("client-reused-ids", ClientAttack::ReusedIds),
        client("client-request-flood", ClientAttack::RequestFlood),
        client("client-connection-flood", ClientAttack::ConnectionFlood),
        node("primary-delay-1ms", 0, "slow-primary-1ms"),
        node("primary-delay-10ms", 0, "slow-primary-10ms"),
        node("primary-delay-100ms", 0, "slow-primary-100ms"),
        node("primary-starves-client", 0, "starve"),
        node("primary-equivocates", 0, "equivocate"),
        node("primary-invalid-batches", 0, "invalid-batch"),
        node("replica-down", 1, crate::plumb::DOWN),
        node("replica-silent", 1, "silent"),
        node("replica-flood", 1, "flood"),
        node("replica-wrong-digests", 1, "conflicting-votes"),
        node("exec-wrong-replies", 1, "wrong-replies"),
        node("exec-wrong-checkpoints", 1, "wrong-checkpoint"),
    ]
}

/// `all`, one name, or a comma-separated list.
pub fn select(text: &str) -> Result<Vec<Scenario>, String> {
    let all = catalogue();
    if text == "all" {
        return Ok(all);
    }
    text.split(',')
        .map(|name| {
            all.iter()
                .find(|s| s.name == name.trim())
                .cloned()
                .ok_or_else(|| {
                    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
                    format!(
                        "unknown scenario {name:?}; `all` or one of: {}",
                        names.join(", ")
                    )
                })
        })
        .collect()
}

/// One line of the scoreboard.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Score {
    pub scenario: String,
    pub baseline_ops_per_s: f64,
    pub faulty_ops_per_s: f64,
    pub ratio: f64,
    /// Client 0's operations per second, and the other clients' per-client average.
    pub victim_ops_per_s: f64,
    pub others_per_client_ops_per_s: f64,
    pub p99_ms: f64,
}

pub struct Scoreboard {
    /// The application plumb runs, and the executable that registers it.
    pub app: Arc<dyn BenchApp>,
    pub exe: PathBuf,
    pub dir: PathBuf,
    pub base_port: u16,
    pub shape: PlumbShape,
    pub workload: Workload,
    pub clients: usize,
    pub warmup: Duration,
    pub duration: Duration,
    pub progress: bool,
}

/// One measured run: the pool's result, and the victim's rate.
struct Measured {
    ops_per_s: f64,
    p99_ms: f64,
    victim_ops_per_s: f64,
}

impl Scoreboard {
    /// The baseline, then every scenario, then the baseline again; a scenario that could not
    /// be measured is an error line in the returned list, not the end of the run.
    ///
    /// The fault-free figure is the mean of the two baselines: the first cluster of a run
    /// starts on a cold machine, and one figure from either end would tilt every ratio.
    pub async fn run(&self, scenarios: &[Scenario]) -> (Vec<Score>, Vec<String>) {
        let mut scores = Vec::new();
        let mut failures = Vec::new();
        let first = match self.measure("baseline", None, 0).await {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("baseline: {e}"));
                return (scores, failures);
            }
        };
        let mut measured = Vec::new();
        for (i, s) in scenarios.iter().enumerate() {
            match self.measure(&s.name, Some(&s.fault), i + 1).await {
                Ok(m) => measured.push((s, m)),
                Err(e) => {
                    eprintln!("{}: {e}", s.name);
                    failures.push(format!("{}: {e}", s.name));
                }
            }
        }
        let last = self
            .measure("baseline-again", None, scenarios.len() + 1)
            .await;
        let baseline = match last {
            Ok(l) => Measured {
                ops_per_s: (first.ops_per_s + l.ops_per_s) / 2.0,
                ..first
            },
            Err(e) => {
                failures.push(format!("baseline-again: {e}"));
                first
            }
        };
        for (s, m) in measured {
            scores.push(Score {
                scenario: s.name.clone(),
                baseline_ops_per_s: baseline.ops_per_s,
                faulty_ops_per_s: m.ops_per_s,
                ratio: if baseline.ops_per_s > 0.0 {
                    m.ops_per_s / baseline.ops_per_s
                } else {
                    0.0
                },
                victim_ops_per_s: m.victim_ops_per_s,
                others_per_client_ops_per_s: m.ops_per_s / self.clients.max(1) as f64,
                p99_ms: m.p99_ms,
            });
        }
        (scores, failures)
    }

    async fn measure(
        &self,
        name: &str,
        fault: Option<&Fault>,
        i: usize,
    ) -> Result<Measured, String> {
        let dir = self.dir.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        if self.progress {
            eprintln!(
                "{name}: starting a fresh cluster (data in {})",
                dir.display()
            );
        }
        let faulty = match fault {
            Some(Fault::Node { node, behaviour }) => Some((*node, behaviour.as_str())),
            _ => None,
        };
        let port = self.base_port + 100 * (i % 8) as u16;
        let plumb = Plumb::start(
            self.app.clone(),
            &self.exe,
            &dir,
            &self.shape,
            port,
            self.clients as u32,
            RESERVED,
            faulty,
            &Placement::default(),
        )
        .await?;
        let cluster = plumb.cluster().clone();
        let stop = Arc::new(AtomicBool::new(false));
        let attacker = match fault {
            Some(Fault::Client(a)) => Some(tokio::spawn(attack(cluster.clone(), *a, stop.clone()))),
            _ => None,
        };
        let victim_pool = Pool::start(&cluster, &[VICTIM], &dir.join("victim"), true)?;
        let victim_done = Arc::new(AtomicU64::new(0));
        let measuring_from = Instant::now() + self.warmup;
        let victim = tokio::spawn(victim_loop(
            self.app.clone(),
            victim_pool,
            stop.clone(),
            victim_done.clone(),
            measuring_from,
        ));
        let spec = RunSpec {
            workload: self.workload.clone(),
            load: Load::Closed {
                clients: self.clients,
            },
            warmup: self.warmup,
            duration: self.duration,
            max_ops: None,
            progress: self.progress,
            syscalls: false,
        };
        let result = load::run(&plumb as &dyn Target, &spec).await;
        let measured_for = Instant::now().saturating_duration_since(measuring_from);
        stop.store(true, Ordering::Relaxed);
        if let Some(a) = attacker {
            a.abort();
        }
        victim.abort();
        let result = result?;
        let victim_ops = victim_done.load(Ordering::Relaxed);
        Ok(Measured {
            ops_per_s: result.ops_per_s,
            p99_ms: result.p99_ms,
            victim_ops_per_s: victim_ops as f64 / measured_for.as_secs_f64().max(0.001),
        })
    }
}

/// Client 0 in a closed loop of its own, counting what completes once measuring started.
async fn victim_loop(
    app: Arc<dyn BenchApp>,
    pool: Pool,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    from: Instant,
) {
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let op = app.write(&format!("victim:{}", i % 16), &[b'v'; 16]);
        if pool.call(op, false).await.is_err() {
            return;
        }
        if Instant::now() >= from {
            done.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The faulty client: sends `a` to every node until stopped.
async fn attack(cluster: plumb_cluster::Cluster, a: ClientAttack, stop: Arc<AtomicBool>) {
    let me = Principal::Client(ATTACKER);
    let Ok(ring) = cluster.key_ring(me, &cluster.client_secret_path(ATTACKER)) else {
        return;
    };
    let addresses: Vec<std::net::SocketAddr> = cluster.nodes.iter().map(|n| n.address).collect();
    if a == ClientAttack::ConnectionFlood {
        connection_flood(&addresses, &stop).await;
        return;
    }
    // The authentication replicas, each with the connection to its node.
    let mut targets = Vec::new();
    for n in &cluster.nodes {
        for p in n
            .principals
            .iter()
            .filter(|p| matches!(p, Principal::Auth(_)))
        {
            if let Ok(stream) = tokio::net::TcpStream::connect(n.address).await {
                targets.push((*p, plumb_runtime::link::framed(stream)));
            }
        }
    }
    if targets.is_empty() {
        return;
    }
    let count = targets.len();
    let tick = Duration::from_millis(10);
    let per_tick = (FLOOD_FRAMES_PER_S / 100).max(1) as usize;
    // Each round sends one request to every authentication replica, as a client does.
    let mut sent = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for k in 0..per_tick {
            let (to, conn) = &mut targets[k % count];
            let round = sent / count as u64;
            sent += 1;
            let op = format!("attack {round}").into_bytes();
            let frame = match a {
                ClientAttack::BadMacs => {
                    plumb_adversary::client::bad_mac(&ring, *to, ReqNo(round + 1), &op)
                }
                ClientAttack::Malformed => plumb_adversary::client::malformed(&ring, *to),
                // Each number twice, with different operations.
                ClientAttack::ReusedIds => {
                    plumb_adversary::client::request(&ring, *to, ReqNo(round / 2 + 1), &op)
                }
                ClientAttack::RequestFlood => {
                    plumb_adversary::client::request(&ring, *to, ReqNo(round + 1), &op)
                }
                ClientAttack::ConnectionFlood => None,
            };
            if let Some(f) = frame {
                if conn.send(bytes::Bytes::from(f)).await.is_err() {
                    return;
                }
            }
        }
        tokio::time::sleep(tick).await;
    }
}

/// The attacker's own source address: on loopback every correct client is 127.0.0.1, and a
/// per-source limit can only tell the attacker apart if it comes from elsewhere, as a real
/// attacker would.
const FLOOD_SOURCE: [u8; 4] = [127, 0, 0, 250];

/// A connection to `to` from [`FLOOD_SOURCE`] (from any address if `to` is not IPv4).
async fn connect_from_flood_source(
    to: std::net::SocketAddr,
) -> std::io::Result<tokio::net::TcpStream> {
    if !to.is_ipv4() {
        return tokio::net::TcpStream::connect(to).await;
    }
    let socket = tokio::net::TcpSocket::new_v4()?;
    // Choose the port at connect, per destination, as an unbound connect does: bound to a
    // port at `bind`, thousands of connections a second in TIME_WAIT would exhaust the
    // ports and weaken the attack.
    {
        use std::os::fd::AsRawFd;
        let on: libc::c_int = 1;
        // SAFETY: a valid socket descriptor and a c_int option value of the right size.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_BIND_ADDRESS_NO_PORT,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
    socket.bind(std::net::SocketAddr::from((FLOOD_SOURCE, 0)))?;
    socket.connect(to).await
}

/// Open connections to every node as fast as they are accepted, keeping the newest
/// `FLOOD_CONNECTIONS` per node open.
async fn connection_flood(addresses: &[std::net::SocketAddr], stop: &AtomicBool) {
    let mut open: Vec<std::collections::VecDeque<tokio::net::TcpStream>> =
        addresses.iter().map(|_| Default::default()).collect();
    let per_tick = (FLOOD_FRAMES_PER_S / 100).max(1) as usize;
    while !stop.load(Ordering::Relaxed) {
        for k in 0..per_tick {
            let i = k % addresses.len().max(1);
            if let Ok(Ok(s)) = tokio::time::timeout(
                Duration::from_millis(50),
                connect_from_flood_source(addresses[i]),
            )
            .await
            {
                open[i].push_back(s);
                if open[i].len() > FLOOD_CONNECTIONS {
                    open[i].pop_front();
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_select_by_name_or_all() {
        assert_eq!(select("all").unwrap().len(), catalogue().len());
        let two = select("primary-delay-10ms,client-bad-macs").unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(
            two[0].fault,
            Fault::Node {
                node: 0,
                behaviour: "slow-primary-10ms".into()
            }
        );
        assert!(select("nope").unwrap_err().contains("replica-flood"));
    }

    /// Every node behaviour the scoreboard asks for is one the adversary library knows.
    #[test]
    fn node_behaviours_exist() {
        for s in catalogue() {
            if let Fault::Node { behaviour, .. } = s.fault {
                if behaviour == crate::plumb::DOWN {
                    continue;
                }
                assert!(
                    plumb_adversary::Behaviour::parse(&behaviour).is_ok(),
                    "{behaviour}"
                );
            }
        }
    }
}
