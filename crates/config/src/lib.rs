//! Configuration and quorum arithmetic.
//!
//! Every replica count and quorum size in plumb comes from two numbers (seed 004 ch. 2, §6.1,
//! §6.2.1, Table 6.1): `u`, how many nodes may fail in any way while the service stays up, and
//! `r`, how many of those may fail by commission while every answer stays right.

use serde::{Deserialize, Serialize};

/// The failure model: live despite `u` failures of any kind, safe despite `r` commission
/// failures. `r <= u` is not required: `u = 0, r = 1` is safe-but-not-live-under-failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    pub u: u16,
    pub r: u16,
}

impl Faults {
    pub fn new(u: u16, r: u16) -> Faults {
        Faults { u, r }
    }

    fn uz(self) -> usize {
        self.u as usize
    }
    fn rz(self) -> usize {
        self.r as usize
    }
    fn max_ur(self) -> usize {
        self.uz().max(self.rz())
    }

    /// Authentication replicas: `u + max(u, r) + r + 1` (Table 6.1): indirect learning plus
    /// one-step transferability under MACs.
    pub fn min_auth(self) -> usize {
        self.uz() + self.max_ur() + self.rz() + 1
    }
    /// Order replicas: `2u + r + 1` (Table 6.1).
    pub fn min_order(self) -> usize {
        2 * self.uz() + self.rz() + 1
    }
    /// Execution replicas: `u + max(u, r) + 1` (Table 6.1): a single correct proposer plus
    /// indirect learning of checkpoints.
    pub fn min_exec(self) -> usize {
        self.uz() + self.max_ur() + 1
    }
}

/// Role counts of a concrete cluster, and every quorum derived from them and the fault model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quorums {
    pub faults: Faults,
    pub auth: usize,
    pub order: usize,
    pub exec: usize,
}

/// A role of a replica, used in error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Authentication,
    Order,
    Execution,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Authentication => "authentication",
            Role::Order => "order",
            Role::Execution => "execution",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("the {role} role has {given} replica(s) but u={u}, r={r} requires at least {required}; add {missing} more {role} replica(s) or lower u or r", missing = required - given)]
    TooFewReplicas {
        role: Role,
        given: usize,
        required: usize,
        u: u16,
        r: u16,
    },
    #[error("{field} must be {requirement}, got {value}")]
    BadValue {
        field: &'static str,
        requirement: &'static str,
        value: u64,
    },
}

impl Quorums {
    /// Check the role counts against the fault model.
    pub fn new(
        faults: Faults,
        auth: usize,
        order: usize,
        exec: usize,
    ) -> Result<Quorums, ConfigError> {
        for (role, given, required) in [
            (Role::Authentication, auth, faults.min_auth()),
            (Role::Order, order, faults.min_order()),
            (Role::Execution, exec, faults.min_exec()),
        ] {
            if given < required {
                return Err(ConfigError::TooFewReplicas {
                    role,
                    given,
                    required,
                    u: faults.u,
                    r: faults.r,
                });
            }
        }
        Ok(Quorums {
            faults,
            auth,
            order,
            exec,
        })
    }

    /// The smallest cluster for `faults`.
    pub fn minimal(faults: Faults) -> Quorums {
        Quorums {
            faults,
            auth: faults.min_auth(),
            order: faults.min_order(),
            exec: faults.min_exec(),
        }
    }

    /// Small quorum, `r + 1`: contains at least one correct replica.
    pub fn small(&self) -> usize {
        self.faults.rz() + 1
    }
    /// Order medium quorum, `n - u`: the most one may wait for; any two intersect in `r + 1`.
    pub fn order_medium(&self) -> usize {
        self.order - self.faults.uz()
    }
    /// AUTH-REQs the primary gathers before it proposes a request: `n_auth - u`
    /// (`max(u,r) + r + 1` in a minimal cluster, seed 004 §6.4.2).
    pub fn auth_gather(&self) -> usize {
        self.auth - self.faults.uz()
    }
    /// Valid matrix-signature rows a backup needs to accept a request: `r + 1`.
    pub fn matrix_valid(&self) -> usize {
        self.small()
    }
    /// VIEW-CHANGEs (or agreement messages) for higher views that make an order replica join
    /// a view change: `r + 1` include a correct replica; `u + 1` mean the current view can no
    /// longer gather `n - u` votes. Whichever comes first: `min(u, r) + 1`.
    pub fn view_change_join(&self) -> usize {
        self.faults.uz().min(self.faults.rz()) + 1
    }
    /// Matching CP-TOKENs for the order stage to learn an execution checkpoint:
    /// `max(u, r) + 1` (indirect learning: correct *and* fetchable, seed 004 §6.1).
    pub fn exec_checkpoint(&self) -> usize {
        self.faults.max_ur() + 1
    }
    /// Execution replicas that execute in ZZ mode (docs/zz.md): `max(u, r) + 1`, as many as the
    /// order stage needs matching tokens to learn a checkpoint, so checkpoints go on while the
    /// rest sleep.
    pub fn active_exec(&self) -> usize {
        self.exec_checkpoint()
    }
    /// Matching committed NEXT-BATCH, LOAD-CP or RETRANSMIT messages an execution replica
    /// acts on: `r + 1`.
    pub fn exec_learn(&self) -> usize {
        self.small()
    }
    /// Matching tentative NEXT-BATCH messages of one view an execution replica learns a batch
    /// from: `n_order - u`, as many replicas as a commit certificate names (docs/protocol.md,
    /// "Tentative agreement").
    pub fn exec_learn_tentative(&self) -> usize {
        self.order_medium()
    }
    /// Matching replies a client accepts: `r + 1`.
    pub fn reply(&self) -> usize {
        self.small()
    }
    /// Matching read-only replies a client accepts without ordering: all execution replicas
    /// (see docs/protocol.md: a smaller quorum can miss a completed write). Out of reach in ZZ
    /// mode, where the read-only path is not used ([`ProtocolConfig::unanimous_reads_ordered`]).
    pub fn read_only(&self) -> usize {
        self.exec
    }
    /// Preferred authentication quorum a client sends a first transmission to: `n_auth - u`.
    pub fn auth_preferred(&self) -> usize {
        self.auth - self.faults.uz()
    }
}

/// Protocol parameters. Times are in microseconds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolConfig {
    pub quorums: Quorums,
    /// Batches between checkpoints (`CP_interval`).
    pub checkpoint_interval: u64,
    /// Most requests in one batch.
    pub batch_max: usize,
    /// How long the primary waits to fill a batch.
    pub batch_timeout_us: u64,
    /// Requests with an operation up to this many bytes travel inline through the order stage
    /// (seed 004 §5.5: "small requests", 100 B there); larger ones as a digest.
    pub inline_max_bytes: usize,
    /// Client retransmission timeout: initial, and the cap it doubles up to (§5.7.1).
    pub client_retry_us: u64,
    pub client_retry_max_us: u64,
    /// Order replicas start a view change when a request they forwarded is not ordered, or no
    /// PRE-PREPARE arrives, within this time (doubling on each consecutive view change).
    pub view_change_timeout_us: u64,
    /// Authentication replicas resend a request to the order stage at most this often (4 s).
    pub auth_resend_us: u64,
    /// Execution and order replicas ask peers to fill gaps this often while behind.
    pub catch_up_us: u64,
    /// A backup accepts a primary's batch time only within this much of its own clock, before
    /// or after (unless `r + 1` peers vouch for it): agreed time then stays within this plus a
    /// correct clock's error of real time (docs/protocol.md, "Agreed time").
    pub max_clock_skew_us: u64,
    /// How long an authentication replica refuses a client caught misbehaving: two requests
    /// under one request number, or a validly MACed frame that is not a well-formed request
    /// (seed 004 §3.4.1: 10 minutes).
    pub blacklist_us: u64,
    /// While a request the primary provably holds waits, a backup expects a PRE-PREPARE at
    /// least this often, doubling on each expiry until one arrives (seed 004 §3.4.3: 40 ms).
    pub heartbeat_us: u64,
    /// The ordering rate over each window of `throughput_window_us` of busy time (1 s; seed 004
    /// §3.4.3 uses checkpoint intervals, which a slow primary stretches) must reach this
    /// fraction (per mille) of the best rate of the last `throughput_views` views (90%)...
    pub throughput_bar_permille: u32,
    pub throughput_views: usize,
    pub throughput_window_us: u64,
    /// ...and, after this grace period into a view (5 s), the bar rises by
    /// `throughput_raise_permille` per window (1%), so every primary is replaced eventually.
    pub throughput_grace_us: u64,
    pub throughput_raise_permille: u32,
    /// A backup declares the primary unfair when, while a client's request the primary provably
    /// holds waits, this many PRE-PREPAREs order requests of one other client (seed 004 §3.4.3:
    /// two). With one request outstanding per client, that client went through a whole round
    /// trip meanwhile.
    pub unfair_orders: u32,
    /// A node cuts off a peer that sends it more than `flood_factor` times what any other peer
    /// sends (seed 004 §3.4.2: 20) and more than `flood_floor_bytes` a second (64 MiB, above
    /// what a correct peer sends), for `flood_cut_us` (10 min).
    pub flood_factor: u64,
    pub flood_floor_bytes: u64,
    pub flood_cut_us: u64,
    /// A request that waits longer than this in a stage is logged and counted with the reason
    /// it waited (`plumb_slow_requests_total`, docs/operations.md). Clusters configured before
    /// this setting existed get the default.
    #[serde(default = "default_slow_request_us")]
    pub slow_request_us: u64,
    /// An execution replica that must load a checkpoint of an application with objects adopts
    /// its root and metadata at once and fetches objects as batches need them, verified, then
    /// the rest in the background (docs/objects.md "Partial state"), instead of fetching every
    /// object that differs before it executes again. Off by default.
    #[serde(default)]
    pub load_objects_on_demand: bool,
    /// Sleeping execution replicas (ZZ, seed 002; docs/zz.md): only the first
    /// [`Quorums::active_exec`] execution replicas execute; the others sleep, holding no running
    /// execution, until `r + 1` order replicas wake them. Off by default.
    #[serde(default)]
    pub zz: bool,
    /// ZZ: an order replica asks the sleepers to wake when an active execution replica's report
    /// of a batch is this late after another active's report of it (100 ms; docs/zz.md says
    /// why not 50), or differs from the agreed one.
    #[serde(default = "default_zz_report_timeout_us")]
    pub zz_report_timeout_us: u64,
    /// ZZ: the most the recent spreads between the actives' reports may raise that bound to
    /// (1 s; a floor above it stands). A faulty active can hold each of its replies back by up
    /// to the larger of the two before it is found late (docs/zz.md, "What wakes a sleeper").
    #[serde(default = "default_zz_report_timeout_max_us")]
    pub zz_report_timeout_max_us: u64,
    /// Tentative agreement (seed 004 §6.2.3; docs/protocol.md "Tentative agreement"): an order
    /// replica also sends a batch to the execution stage once it holds the batch's prepared
    /// certificate, and an execution replica learns it from `n - u` of those matching in one
    /// view, a round of COMMITs earlier than from `r + 1` committed ones.
    #[serde(default)]
    pub tentative_agreement: bool,
}

fn default_zz_report_timeout_us() -> u64 {
    100_000
}

fn default_zz_report_timeout_max_us() -> u64 {
    1_000_000
}

fn default_slow_request_us() -> u64 {
    100_000
}

/// What [`ProtocolConfig::unanimous_reads_ordered`] says in ZZ mode.
pub const ZZ_UNANIMOUS_READS_ORDERED: &str = "in ZZ mode read-only and D-Prophecy reads are ordered: a sleeping execution replica answers nothing, and the max(u, r) + 1 actives alone can all answer alike without a write a woken sleeper acknowledged (docs/zz.md)";

/// The largest `max_clock_skew_us` a cluster may have (docs/protocol.md, "Agreed time").
pub const MAX_CLOCK_SKEW_US: u64 = 500_000;

/// The largest `checkpoint_interval` a cluster may have. A view change votes again on every
/// slot above the stable checkpoint, up to two intervals of them: a PREPARE and a COMMIT per
/// slot to every peer at once, which a peer's mailbox must hold (the node asserts that its
/// per-peer queue takes twice this burst). With a 16384 interval, 10 180 slots re-voted into
/// 4096-frame queues were dropped in every view, and a view change never completed.
pub const MAX_CHECKPOINT_INTERVAL: u64 = 512;

/// Frames one peer sends another in a view change with a full window: a PREPARE and a COMMIT
/// for each of `2 x MAX_CHECKPOINT_INTERVAL` slots.
pub const VIEW_CHANGE_BURST_FRAMES: usize = 4 * MAX_CHECKPOINT_INTERVAL as usize;

impl ProtocolConfig {
    pub fn new(quorums: Quorums) -> ProtocolConfig {
        ProtocolConfig {
            quorums,
            checkpoint_interval: 128,
            batch_max: 64,
            batch_timeout_us: 1_000,
            inline_max_bytes: 100,
            client_retry_us: 500_000,
            client_retry_max_us: 4_000_000,
            view_change_timeout_us: 1_000_000,
            auth_resend_us: 4_000_000,
            catch_up_us: 200_000,
            max_clock_skew_us: 250_000,
            blacklist_us: 600_000_000,
            heartbeat_us: 40_000,
            throughput_bar_permille: 900,
            throughput_views: 5,
            throughput_window_us: 1_000_000,
            throughput_grace_us: 5_000_000,
            throughput_raise_permille: 10,
            unfair_orders: 2,
            flood_factor: 20,
            flood_floor_bytes: 64 << 20,
            flood_cut_us: 600_000_000,
            slow_request_us: default_slow_request_us(),
            load_objects_on_demand: false,
            zz: false,
            zz_report_timeout_us: default_zz_report_timeout_us(),
            zz_report_timeout_max_us: default_zz_report_timeout_max_us(),
            tentative_agreement: false,
        }
    }

    /// Whether execution replica `e` sleeps until woken: in ZZ mode, every one past the
    /// [`Quorums::active_exec`] first.
    pub fn is_sleeper(&self, e: u16) -> bool {
        self.zz && usize::from(e) >= self.quorums.active_exec()
    }

    /// How many execution replicas execute from the start, `e0 .. e(n - 1)`: every one, or in
    /// ZZ mode the [`Quorums::active_exec`] actives. The replicas a client asks on its own, by
    /// name, to execute something for it (a Prophecy fast read, a D-Prophecy executor, a
    /// speculative early reply) are these: a sleeper answers nothing, and a woken one is not
    /// known to clients.
    pub fn executing_replicas(&self) -> usize {
        if self.zz {
            self.quorums.active_exec().min(self.quorums.exec)
        } else {
            self.quorums.exec
        }
    }

    /// Why reads that need every execution replica's answer (the read-only path, D-Prophecy's
    /// vouching) are ordered instead in this configuration, or `None` where they are not.
    ///
    /// In ZZ mode they are always ordered. Unanimity over every execution replica is out of
    /// reach while a sleeper sleeps. Unanimity over the actives alone is not safe: a woken
    /// sleeper acknowledges writes like any replica (`r + 1` matching replies, of which maybe
    /// one correct: the woken one), so a write acknowledged by a woken sleeper and a faulty
    /// active can be missing from a correct active that lags, whose old answer the faulty active
    /// repeats; every active then answers alike, and wrongly. No quorum of actives includes a
    /// replica that a client cannot know is awake.
    pub fn unanimous_reads_ordered(&self) -> Option<&'static str> {
        self.zz.then_some(ZZ_UNANIMOUS_READS_ORDERED)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        Quorums::new(
            self.quorums.faults,
            self.quorums.auth,
            self.quorums.order,
            self.quorums.exec,
        )?;
        let checks: [(&'static str, &'static str, u64, bool); 8] = [
            (
                "checkpoint_interval",
                "between 2 and 512 (a view change votes again on up to two intervals of batches at once, and larger bursts overflow the peers' queues)",
                self.checkpoint_interval,
                (2..=MAX_CHECKPOINT_INTERVAL).contains(&self.checkpoint_interval),
            ),
            (
                "batch_max",
                "at least 1",
                self.batch_max as u64,
                self.batch_max >= 1,
            ),
            (
                "client_retry_us",
                "at least 1",
                self.client_retry_us,
                self.client_retry_us >= 1,
            ),
            (
                "client_retry_max_us",
                "at least client_retry_us",
                self.client_retry_max_us,
                self.client_retry_max_us >= self.client_retry_us,
            ),
            (
                "heartbeat_us",
                "at least 1",
                self.heartbeat_us,
                self.heartbeat_us >= 1,
            ),
            (
                "throughput_bar_permille",
                "at most 1000",
                self.throughput_bar_permille as u64,
                self.throughput_bar_permille <= 1000,
            ),
            (
                "unfair_orders",
                "at least 1",
                self.unfair_orders as u64,
                self.unfair_orders >= 1,
            ),
            // Sessions pinged in time must outlive any faulty primary: the minimum session
            // timeout (4 s) must exceed the ping interval (4/3 s) plus twice the time bound
            // (1.5 x skew) plus the pings' ordering delay (docs/protocol.md, "Agreed time").
            (
                "max_clock_skew_us",
                "between 1 and 500000 (larger skews let agreed time expire sessions pinged in time)",
                self.max_clock_skew_us,
                (1..=MAX_CLOCK_SKEW_US).contains(&self.max_clock_skew_us),
            ),
        ];
        if self.zz && self.quorums.exec <= self.quorums.active_exec() {
            return Err(ConfigError::BadValue {
                field: "zz",
                requirement: "off with only max(u, r) + 1 execution replicas (none would sleep; add execution replicas or turn zz off)",
                value: 1,
            });
        }
        // ZZ's sleepers stand in for the `u` replicas that may fail; more would only sleep, and
        // a client that lost its record could no longer hear `n_exec - u` of them while they do
        // (found by `plumb sim --zz --extra-exec 1`, seed 4).
        if self.zz && self.quorums.exec > self.quorums.faults.min_exec() {
            return Err(ConfigError::BadValue {
                field: "zz",
                requirement: "off with more than u + max(u, r) + 1 execution replicas (ZZ keeps max(u, r) + 1 executing and u asleep; use the minimum or turn zz off)",
                value: 1,
            });
        }
        for (field, requirement, value, ok) in checks {
            if !ok {
                return Err(ConfigError::BadValue {
                    field,
                    requirement,
                    value,
                });
            }
        }
        Ok(())
    }
}

/// An emulated wide-area network (the cluster file's `[wan]` section, docs/wan-emulation.md):
/// every node and every client is at a named site, and a frame between two different sites
/// waits `delay_us` before it is written (or handed over). Within a site there is no added
/// delay. No loss, no jitter, no bandwidth limit: only a fixed one-way delay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wan {
    /// Site of each node, indexed by node id.
    pub sites: Vec<String>,
    /// One-way delay between two different sites, in microseconds.
    pub delay_us: u64,
    /// Site of every client of the cluster (the client library, gateways, tools).
    pub client_site: String,
}

/// The site clients are at when `[wan]` names none: a site of their own, `delay_us` from every
/// node.
pub const CLIENT_SITE_DEFAULT: &str = "clients";

impl Wan {
    /// The site of node `id` (`None`: not listed).
    pub fn site(&self, id: u16) -> Option<&str> {
        self.sites.get(id as usize).map(String::as_str)
    }

    /// The one-way delay between two sites.
    pub fn between(&self, a: &str, b: &str) -> std::time::Duration {
        if a == b {
            std::time::Duration::ZERO
        } else {
            std::time::Duration::from_micros(self.delay_us)
        }
    }

    /// The one-way delay from node `a` to node `b` (zero for a node not listed).
    pub fn node_to_node(&self, a: u16, b: u16) -> std::time::Duration {
        match (self.site(a), self.site(b)) {
            (Some(x), Some(y)) => self.between(x, y),
            _ => std::time::Duration::ZERO,
        }
    }

    /// The one-way delay between the clients and node `id`, either way.
    pub fn client_to_node(&self, id: u16) -> std::time::Duration {
        match self.site(id) {
            Some(s) => self.between(&self.client_site, s),
            None => std::time::Duration::ZERO,
        }
    }

    /// One line for a node's start-up log and status: `site b, 15 ms to other sites`.
    pub fn describe(&self, id: u16) -> String {
        format!(
            "site {}, {} to other sites, clients at site {}",
            self.site(id).unwrap_or("?"),
            millis(self.delay_us),
            self.client_site
        )
    }
}

/// `15 ms`, or `0.5 ms`.
fn millis(us: u64) -> String {
    if us.is_multiple_of(1000) {
        format!("{} ms", us / 1000)
    } else {
        format!("{} ms", us as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wan_delays_by_site() {
        let wan = Wan {
            sites: ["a", "b", "b", "b"].map(String::from).to_vec(),
            delay_us: 15_000,
            client_site: "a".into(),
        };
        let ms = std::time::Duration::from_millis;
        assert_eq!(wan.node_to_node(0, 1), ms(15));
        assert_eq!(wan.node_to_node(1, 0), ms(15));
        assert_eq!(wan.node_to_node(1, 2), ms(0));
        assert_eq!(wan.client_to_node(0), ms(0));
        assert_eq!(wan.client_to_node(3), ms(15));
        // A node the list does not reach gets no delay rather than a made-up one.
        assert_eq!(wan.node_to_node(0, 9), ms(0));
        assert_eq!(
            wan.describe(1),
            "site b, 15 ms to other sites, clients at site a"
        );
    }

    /// Seed 004 Table 2.1(d) / Table 6.1: the classic configurations.
    #[test]
    fn table_6_1_counts() {
        let cft = Faults::new(1, 0);
        assert_eq!((cft.min_auth(), cft.min_order(), cft.min_exec()), (3, 3, 3));
        let bft = Faults::new(1, 1);
        assert_eq!((bft.min_auth(), bft.min_order(), bft.min_exec()), (4, 4, 3));
        let hybrid = Faults::new(2, 1);
        assert_eq!(
            (hybrid.min_auth(), hybrid.min_order(), hybrid.min_exec()),
            (6, 6, 5)
        );
        let safe_only = Faults::new(0, 1);
        assert_eq!(
            (
                safe_only.min_auth(),
                safe_only.min_order(),
                safe_only.min_exec()
            ),
            (3, 2, 2)
        );
    }

    #[test]
    fn too_few_order_replicas_names_role_and_counts() {
        let e = Quorums::new(Faults::new(1, 1), 4, 3, 3).unwrap_err();
        assert_eq!(
            e,
            ConfigError::TooFewReplicas {
                role: Role::Order,
                given: 3,
                required: 4,
                u: 1,
                r: 1
            }
        );
        let text = e.to_string();
        assert!(text.contains("order role has 3"), "{text}");
        assert!(text.contains("at least 4"), "{text}");
    }

    #[test]
    fn bad_parameter_is_named() {
        let mut c = ProtocolConfig::new(Quorums::minimal(Faults::new(1, 1)));
        c.checkpoint_interval = 1;
        let e = c.validate().unwrap_err();
        assert!(e.to_string().contains("checkpoint_interval"));
        c.checkpoint_interval = MAX_CHECKPOINT_INTERVAL;
        c.validate().unwrap();
        c.checkpoint_interval = MAX_CHECKPOINT_INTERVAL + 1;
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("between 2 and 512") && e.contains("view change"),
            "{e}"
        );
    }

    #[test]
    fn only_actives_execute_in_zz_and_unanimous_reads_are_ordered() {
        for (u, r, actives) in [(1, 1, 2), (2, 1, 3), (1, 0, 2)] {
            let f = Faults::new(u, r);
            let q = Quorums::minimal(f);
            let mut c = ProtocolConfig::new(q);
            assert_eq!(c.executing_replicas(), q.exec);
            assert_eq!(c.unanimous_reads_ordered(), None);
            c.zz = true;
            c.validate().unwrap();
            assert_eq!(c.executing_replicas(), actives, "u={u} r={r}");
            // The executing ones are exactly those that do not sleep.
            for e in 0..q.exec as u16 {
                assert_eq!(c.is_sleeper(e), usize::from(e) >= c.executing_replicas());
            }
            // The read-only quorum is out of reach of the actives.
            assert!(q.read_only() > c.executing_replicas());
            let why = c.unanimous_reads_ordered().unwrap();
            assert!(why.contains("ZZ") && why.contains("woken sleeper"), "{why}");
        }
        // More execution replicas than the minimum would only sleep: refused, saying why.
        let f = Faults::new(1, 1);
        let q = Quorums::new(f, f.min_auth(), f.min_order(), f.min_exec() + 1).unwrap();
        let mut c = ProtocolConfig::new(q);
        c.zz = true;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("more than u + max(u, r) + 1"), "{e}");
    }

    proptest::proptest! {
        /// Two medium order quorums intersect in at least r+1 replicas, and a medium quorum is
        /// reachable with u replicas down, for every u, r and every legal cluster size.
        #[test]
        fn order_quorums_intersect(u in 0u16..6, r in 0u16..6, extra in 0usize..4) {
            let f = Faults::new(u, r);
            let q = Quorums::new(f, f.min_auth(), f.min_order() + extra, f.min_exec()).unwrap();
            let m = q.order_medium();
            proptest::prop_assert!(2 * m >= q.order + q.small());
            proptest::prop_assert!(m + u as usize <= q.order);
        }

        /// The primary's AUTH-REQ gathering leaves at least max(u,r)+1 correct vouchers
        /// (bodies fetchable despite u failures and right despite r) and each backup can find
        /// r+1 valid rows even if r of the gathered rows are bogus.
        #[test]
        fn auth_quorums(u in 0u16..6, r in 0u16..6, extra in 0usize..4) {
            let f = Faults::new(u, r);
            let q = Quorums::new(f, f.min_auth() + extra, f.min_order(), f.min_exec()).unwrap();
            let g = q.auth_gather();
            proptest::prop_assert!(g > r as usize + (u.max(r) as usize));
            proptest::prop_assert!(g - r as usize >= q.matrix_valid());
        }
    }
}
