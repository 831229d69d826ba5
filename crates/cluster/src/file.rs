//! The TOML layout of a cluster file and its validation.

use crate::keys::public_from_hex;
use crate::{Cluster, ClusterError, Gateway, Node};
use plumb_config::{Faults, ProtocolConfig, Quorums};
use plumb_crypto::PublicIdentity;
use plumb_wire::{AuthId, ExecId, OrderId, Principal, SPEC_GROUP};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    /// The application the cluster replicates, by the name a node binary registers it under.
    /// Files written before the field existed all ran the key-value store, so it defaults to
    /// [`DEFAULT_APP`].
    #[serde(default = "default_app")]
    pub app: String,
    /// Failures of any kind tolerated while the service stays up.
    pub u: u16,
    /// Commission failures tolerated while every answer stays right.
    pub r: u16,
    #[serde(default)]
    pub protocol: ProtocolOverrides,
    #[serde(rename = "node", default)]
    pub nodes: Vec<NodeEntry>,
    #[serde(rename = "client", default)]
    pub clients: Vec<ClientEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayEntry>,
    /// Client identities for command-line tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_clients: Option<ClientRange>,
    /// An emulated wide-area network (docs/wan-emulation.md); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wan: Option<WanEntry>,
}

/// `[wan]`: the site of every node and of the clients, and the one-way delay between sites.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WanEntry {
    /// The site of each node, indexed by node id: `["a", "b", "b", "b"]`.
    pub sites: Vec<String>,
    /// One-way delay between different sites, in milliseconds (0 within a site).
    pub delay_ms: u64,
    /// The clients' site; absent: a site of their own, `delay_ms` from every node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_site: Option<String>,
}

/// The gateway's clients and the command-line clients are two owners (the gateway's users
/// and whoever runs `plumb kv`): a speculative request may depend on replies to any client of
/// its speculation group (`SPEC_GROUP` ids), so no group may hold ids of both, or one could
/// test guesses about the other's replies (docs/speculation.md).
fn one_owner_per_group(
    path: &Path,
    gateway: &ClientRange,
    cli: &ClientRange,
) -> Result<(), ClusterError> {
    let groups = |r: &ClientRange| (r.first / SPEC_GROUP)..=(r.last / SPEC_GROUP);
    let (g, c) = (groups(gateway), groups(cli));
    if g.start() <= c.end() && c.start() <= g.end() {
        let first_free = (gateway.last / SPEC_GROUP + 1) * SPEC_GROUP;
        return Err(ClusterError::new(
            path,
            format!(
                "gateway clients {}-{} and cli_clients {}-{} share a speculation group of {SPEC_GROUP} ids, so either could learn about the other's replies; give cli_clients ids from {first_free} on, with their [[client]] entries (plumb init does)",
                gateway.first, gateway.last, cli.first, cli.last
            ),
        ));
    }
    Ok(())
}

/// The longest delay `[wan]` accepts: beyond it every protocol timer would fire first.
const WAN_DELAY_MAX_MS: u64 = 10_000;

fn wan(path: &Path, w: &WanEntry, nodes: &[Node]) -> Result<plumb_config::Wan, ClusterError> {
    let err = |what: String| ClusterError::new(path, format!("[wan] {what}"));
    if w.delay_ms > WAN_DELAY_MAX_MS {
        return Err(err(format!(
            "field `delay_ms`: {} is more than {WAN_DELAY_MAX_MS}",
            w.delay_ms
        )));
    }
    for n in nodes {
        if n.id as usize >= w.sites.len() {
            return Err(err(format!(
                "field `sites`: node {} has no site ({} listed; the list is indexed by node id)",
                n.id,
                w.sites.len()
            )));
        }
    }
    let named = |s: &str| !s.is_empty() && s.len() <= 64 && !s.chars().any(char::is_whitespace);
    if let Some(bad) = w.sites.iter().chain(&w.client_site).find(|s| !named(s)) {
        return Err(err(format!(
            "site {bad:?} is not a site name (1 to 64 characters, no spaces)"
        )));
    }
    Ok(plumb_config::Wan {
        sites: w.sites.clone(),
        delay_us: w.delay_ms * 1000,
        client_site: w
            .client_site
            .clone()
            .unwrap_or_else(|| plumb_config::CLIENT_SITE_DEFAULT.to_string()),
    })
}

/// The application of a cluster file that names none: the key-value store, which every
/// cluster ran before the file named its application.
pub const DEFAULT_APP: &str = "kv";

fn default_app() -> String {
    DEFAULT_APP.to_string()
}

/// Whether `name` can name an application: what an operator can type and a file name can hold.
pub fn valid_app_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Protocol parameters; each one left out keeps its default.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolOverrides {
    pub checkpoint_interval: Option<u64>,
    pub batch_max: Option<usize>,
    pub batch_timeout_us: Option<u64>,
    pub inline_max_bytes: Option<usize>,
    pub client_retry_us: Option<u64>,
    pub client_retry_max_us: Option<u64>,
    pub view_change_timeout_us: Option<u64>,
    pub auth_resend_us: Option<u64>,
    pub catch_up_us: Option<u64>,
    pub max_clock_skew_us: Option<u64>,
    pub blacklist_us: Option<u64>,
    pub heartbeat_us: Option<u64>,
    pub throughput_bar_permille: Option<u32>,
    pub throughput_views: Option<usize>,
    pub throughput_window_us: Option<u64>,
    pub throughput_grace_us: Option<u64>,
    pub throughput_raise_permille: Option<u32>,
    /// Called `unfair_batches` before the rule counted one other client's requests.
    #[serde(alias = "unfair_batches")]
    pub unfair_orders: Option<u32>,
    pub flood_factor: Option<u64>,
    pub flood_floor_bytes: Option<u64>,
    pub flood_cut_us: Option<u64>,
    pub slow_request_us: Option<u64>,
    pub load_objects_on_demand: Option<bool>,
    pub zz: Option<bool>,
    pub zz_report_timeout_us: Option<u64>,
    pub zz_report_timeout_max_us: Option<u64>,
    pub tentative_agreement: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoleName {
    Auth,
    Order,
    Exec,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    pub id: u16,
    /// `host:port` peers and clients connect to.
    pub address: String,
    /// `host:port` of the admin HTTP endpoint.
    pub admin: String,
    pub roles: Vec<RoleName>,
    /// Public key of each role principal, 128 hex digits, as `plumb init` writes them.
    pub keys: RoleKeys,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleKeys {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientEntry {
    pub id: u32,
    pub key: String,
}

/// An inclusive range of client ids.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientRange {
    pub first: u32,
    pub last: u32,
}

impl ClientRange {
    pub fn ids(&self) -> Vec<u32> {
        (self.first..=self.last).collect()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayEntry {
    /// `host:port` where Redis clients connect.
    pub resp: String,
    /// `host:port` of the gateway's admin HTTP endpoint.
    pub admin: String,
    /// Client identities of the gateway's pool.
    pub clients: ClientRange,
    #[serde(default)]
    pub fast_reads: bool,
    /// Prophecy sketchers in front of the reads (0: none; docs/prophecy.md).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sketchers: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn address(path: &Path, field: &str, text: &str) -> Result<SocketAddr, ClusterError> {
    text.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            ClusterError::new(
                path,
                format!("{field}: {text:?} is not a host:port address"),
            )
        })
}

fn protocol(
    path: &Path,
    q: Quorums,
    o: &ProtocolOverrides,
) -> Result<ProtocolConfig, ClusterError> {
    let mut p = ProtocolConfig::new(q);
    macro_rules! take {
        ($($f:ident),*) => { $( if let Some(v) = o.$f { p.$f = v; } )* };
    }
    take!(
        checkpoint_interval,
        batch_max,
        batch_timeout_us,
        inline_max_bytes,
        client_retry_us,
        client_retry_max_us,
        view_change_timeout_us,
        auth_resend_us,
        catch_up_us,
        max_clock_skew_us,
        blacklist_us,
        heartbeat_us,
        throughput_bar_permille,
        throughput_views,
        throughput_window_us,
        throughput_grace_us,
        throughput_raise_permille,
        unfair_orders,
        flood_factor,
        flood_floor_bytes,
        flood_cut_us,
        slow_request_us,
        load_objects_on_demand,
        zz,
        zz_report_timeout_us,
        zz_report_timeout_max_us,
        tentative_agreement
    );
    // A woken sleeper answers before it holds the state only if it loads on demand
    // (docs/zz.md): ZZ mode's default. `load_objects_on_demand = false` asks for the eager
    // transfer (`plumb bench zz` compares the two).
    if p.zz && o.load_objects_on_demand.is_none() {
        p.load_objects_on_demand = true;
    }
    p.validate()
        .map_err(|e| ClusterError::new(path, format!("[protocol] {e}")))?;
    Ok(p)
}

pub(crate) fn validate(path: &Path, file: ClusterFile) -> Result<Cluster, ClusterError> {
    if !valid_app_name(&file.app) {
        return Err(ClusterError::new(
            path,
            format!(
                "field `app`: {:?} is not an application name (letters, digits, `-` and `_`, at most 64)",
                file.app
            ),
        ));
    }
    let faults = Faults::new(file.u, file.r);
    if file.nodes.is_empty() {
        return Err(ClusterError::new(path, "no [[node]] entries"));
    }
    let mut ids = BTreeSet::new();
    let mut addresses = HashMap::new();
    let mut counts = [0u16; 3];
    let mut nodes = Vec::new();
    let mut directory: HashMap<Principal, PublicIdentity> = HashMap::new();
    for entry in &file.nodes {
        let id = entry.id;
        if !ids.insert(id) {
            return Err(ClusterError::new(
                path,
                format!("node {id} is listed twice"),
            ));
        }
        let field = |f: &str| format!("node {id}: field `{f}`");
        let addr = address(path, &field("address"), &entry.address)?;
        let admin = address(path, &field("admin"), &entry.admin)?;
        for (what, a) in [("address", addr), ("admin", admin)] {
            if let Some(other) = addresses.insert(a, format!("node {id} {what}")) {
                return Err(ClusterError::new(
                    path,
                    format!("node {id}: {what} {a} is also used as {other}"),
                ));
            }
        }
        if entry.roles.is_empty() {
            return Err(ClusterError::new(
                path,
                format!(
                    "{}: a node needs at least one role (auth, order, exec)",
                    field("roles")
                ),
            ));
        }
        let roles: BTreeSet<RoleName> = entry.roles.iter().copied().collect();
        let mut principals = Vec::new();
        for role in roles {
            let (slot, key, p) = match role {
                RoleName::Auth => (0, &entry.keys.auth, Principal::Auth(AuthId(counts[0]))),
                RoleName::Order => (1, &entry.keys.order, Principal::Order(OrderId(counts[1]))),
                RoleName::Exec => (2, &entry.keys.exec, Principal::Exec(ExecId(counts[2]))),
            };
            counts[slot] += 1;
            let name = format!("keys.{}", format!("{role:?}").to_lowercase());
            let key = key.as_deref().ok_or_else(|| {
                ClusterError::new(
                    path,
                    format!(
                        "{}: missing; the node has this role, so it needs its public key",
                        field(&name)
                    ),
                )
            })?;
            let public = public_from_hex(key).ok_or_else(|| {
                ClusterError::new(
                    path,
                    format!("{}: not a 128-hex-digit public key", field(&name)),
                )
            })?;
            directory.insert(p, public);
            principals.push(p);
        }
        nodes.push(Node {
            id,
            address: addr,
            admin,
            principals,
        });
    }
    let q = Quorums::new(
        faults,
        counts[0] as usize,
        counts[1] as usize,
        counts[2] as usize,
    )
    .map_err(|e| ClusterError::new(path, e.to_string()))?;
    let protocol = protocol(path, q, &file.protocol)?;
    let mut client_ids = BTreeSet::new();
    for c in &file.clients {
        if !client_ids.insert(c.id) {
            return Err(ClusterError::new(
                path,
                format!("client {} is listed twice", c.id),
            ));
        }
        let public = public_from_hex(&c.key).ok_or_else(|| {
            ClusterError::new(
                path,
                format!(
                    "client {}: field `key`: not a 128-hex-digit public key",
                    c.id
                ),
            )
        })?;
        directory.insert(Principal::Client(c.id), public);
    }
    let listed = |range: &ClientRange, what: &str| -> Result<Vec<u32>, ClusterError> {
        if range.first > range.last {
            return Err(ClusterError::new(path, format!("{what}: first > last")));
        }
        let ids = range.ids();
        if let Some(missing) = ids.iter().find(|c| !client_ids.contains(c)) {
            return Err(ClusterError::new(
                path,
                format!("{what}: client {missing} has no [[client]] entry with its public key"),
            ));
        }
        Ok(ids)
    };
    let gateway = match &file.gateway {
        None => None,
        Some(g) => {
            let resp = address(path, "gateway: field `resp`", &g.resp)?;
            let admin = address(path, "gateway: field `admin`", &g.admin)?;
            for (what, a) in [("resp", resp), ("admin", admin)] {
                if let Some(other) = addresses.insert(a, format!("gateway {what}")) {
                    return Err(ClusterError::new(
                        path,
                        format!("gateway: {what} {a} is also used as {other}"),
                    ));
                }
            }
            Some(Gateway {
                resp,
                admin,
                clients: listed(&g.clients, "gateway: field `clients`")?,
                fast_reads: g.fast_reads,
                sketchers: g.sketchers,
            })
        }
    };
    let cli_clients = match &file.cli_clients {
        Some(r) => listed(r, "field `cli_clients`")?,
        None => Vec::new(),
    };
    if let (Some(g), Some(c)) = (&file.gateway, &file.cli_clients) {
        one_owner_per_group(path, &g.clients, c)?;
    }
    let wan = match &file.wan {
        Some(w) => Some(wan(path, w, &nodes)?),
        None => None,
    };
    Ok(Cluster {
        wan,
        path: path.to_path_buf(),
        app: file.app,
        protocol: Arc::new(protocol),
        nodes,
        directory: Arc::new(directory),
        gateway,
        cli_clients,
    })
}
