//! `plumb init`: write a cluster configuration and every key file.

use crate::file::{ClientEntry, ClientRange, ClusterFile, GatewayEntry, NodeEntry, RoleKeys};
use crate::keys::{identity_for, public_to_hex, write_secret};
use crate::{Cluster, ClusterError, ProtocolOverrides, RoleName, WanEntry};
use plumb_config::{Faults, Quorums};
use plumb_wire::{AuthId, ExecId, OrderId, Principal, SPEC_GROUP};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct InitOptions {
    /// The application the cluster replicates (`app` in the file).
    pub app: String,
    pub u: u16,
    pub r: u16,
    /// Execution replicas; `None` is the minimum, `u + max(u, r) + 1`. More give selective
    /// execution room to spread work (docs/odrc.md); every quorum stays what `u` and `r` make it.
    pub exec: Option<usize>,
    /// One host name or address per node; empty means every node on 127.0.0.1.
    pub hosts: Vec<String>,
    /// Node `i` listens on `base_port + 2i` and serves admin HTTP on `base_port + 2i + 1`;
    /// the gateway's admin endpoint takes the next port after the nodes'.
    pub base_port: u16,
    /// Host and port where the gateway serves Redis clients.
    pub gateway_host: String,
    pub resp_port: u16,
    pub gateway_clients: u32,
    /// The gateway's `fast_reads` (reads that set no watch take the read-only path).
    pub fast_reads: bool,
    pub cli_clients: u32,
    /// Give each stage replica a node of its own instead of co-locating one replica of each
    /// stage per node (seed 004 Fig. 6.9 against 6.10).
    pub split: bool,
    /// An emulated wide-area network to write as `[wan]` (docs/wan-emulation.md).
    pub wan: Option<WanEntry>,
    /// Protocol parameters to write into `[protocol]` (none: every default).
    pub protocol: ProtocolOverrides,
}

impl Default for InitOptions {
    fn default() -> InitOptions {
        InitOptions {
            app: crate::DEFAULT_APP.to_string(),
            u: 1,
            r: 1,
            exec: None,
            hosts: Vec::new(),
            base_port: 7400,
            gateway_host: "127.0.0.1".to_string(),
            resp_port: 7379,
            gateway_clients: 32,
            fast_reads: false,
            cli_clients: 8,
            split: false,
            wan: None,
            protocol: ProtocolOverrides::default(),
        }
    }
}

/// Write `dir/cluster.toml` and `dir/keys/*.key`. Refuses to overwrite an existing
/// configuration (its keys would no longer match the running nodes').
pub fn init(dir: &Path, o: &InitOptions) -> Result<PathBuf, ClusterError> {
    let path = dir.join("cluster.toml");
    if path.exists() {
        return Err(ClusterError::new(
            &path,
            "a cluster configuration already exists here; use another directory or remove it",
        ));
    }
    let faults = Faults::new(o.u, o.r);
    let exec = o.exec.unwrap_or(faults.min_exec());
    let q = Quorums::new(faults, faults.min_auth(), faults.min_order(), exec)
        .map_err(|e| ClusterError::new(&path, e.to_string()))?;
    let (auth, order) = (q.auth, q.order);
    // The roles of each node.
    let layout: Vec<Vec<RoleName>> = if o.split {
        [
            (RoleName::Auth, auth),
            (RoleName::Order, order),
            (RoleName::Exec, exec),
        ]
        .into_iter()
        .flat_map(|(role, n)| std::iter::repeat_n(vec![role], n))
        .collect()
    } else {
        (0..auth.max(order).max(exec))
            .map(|i| {
                [
                    (RoleName::Auth, auth),
                    (RoleName::Order, order),
                    (RoleName::Exec, exec),
                ]
                .into_iter()
                .filter(|&(_, n)| i < n)
                .map(|(role, _)| role)
                .collect()
            })
            .collect()
    };
    let needed = layout.len();
    let hosts: Vec<String> = if o.hosts.is_empty() {
        vec!["127.0.0.1".to_string(); needed]
    } else if o.hosts.len() == needed {
        o.hosts.clone()
    } else {
        return Err(ClusterError::new(
            &path,
            format!(
                "u={}, r={} needs {needed} nodes ({auth} authentication, {order} order, {exec} execution replicas, {}); {} hosts were given",
                o.u,
                o.r,
                if o.split { "each on its own node" } else { "co-located" },
                o.hosts.len()
            ),
        ));
    };
    let port = |k: usize| -> Result<u16, ClusterError> {
        u16::try_from(o.base_port as usize + k)
            .map_err(|_| ClusterError::new(&path, "base port too high: ports run past 65535"))
    };
    let keys = dir.join("keys");
    let mut nodes = Vec::new();
    let mut rank = [0u16; 3];
    for (i, host) in hosts.iter().enumerate() {
        let id = i as u16;
        let secret = write_secret(&keys.join(format!("node-{id}.key")))?;
        let roles = layout[i].clone();
        let mut role_keys = RoleKeys::default();
        let mut public = |slot: usize, p: fn(u16) -> Principal| {
            let principal = p(rank[slot]);
            rank[slot] += 1;
            Some(public_to_hex(&identity_for(&secret, principal).public()))
        };
        for role in &roles {
            match role {
                RoleName::Auth => role_keys.auth = public(0, |i| Principal::Auth(AuthId(i))),
                RoleName::Order => role_keys.order = public(1, |i| Principal::Order(OrderId(i))),
                RoleName::Exec => role_keys.exec = public(2, |i| Principal::Exec(ExecId(i))),
            }
        }
        nodes.push(NodeEntry {
            id,
            address: format!("{host}:{}", port(2 * i)?),
            admin: format!("{host}:{}", port(2 * i + 1)?),
            roles,
            keys: role_keys,
        });
    }
    // The command-line clients start a speculation group of their own: they are another
    // owner than the gateway (file.rs, `one_owner_per_group`).
    let cli_first = o.gateway_clients.div_ceil(SPEC_GROUP) * SPEC_GROUP;
    let cli_last = cli_first + o.cli_clients.max(1) - 1;
    let cli_ids = (cli_first..=cli_last).take(o.cli_clients as usize);
    let mut clients = Vec::new();
    for c in (0..o.gateway_clients).chain(cli_ids) {
        let secret = write_secret(&keys.join(format!("client-{c}.key")))?;
        clients.push(ClientEntry {
            id: c,
            key: public_to_hex(&identity_for(&secret, Principal::Client(c)).public()),
        });
    }
    let file = ClusterFile {
        app: o.app.clone(),
        u: o.u,
        r: o.r,
        protocol: o.protocol.clone(),
        nodes,
        clients,
        gateway: (o.gateway_clients > 0).then(|| GatewayEntry {
            resp: format!("{}:{}", o.gateway_host, o.resp_port),
            admin: format!(
                "{}:{}",
                o.gateway_host,
                o.base_port as usize + 2 * hosts.len()
            ),
            clients: ClientRange {
                first: 0,
                last: o.gateway_clients - 1,
            },
            fast_reads: o.fast_reads,
            sketchers: 0,
        }),
        cli_clients: (o.cli_clients > 0).then_some(ClientRange {
            first: cli_first,
            last: cli_last,
        }),
        wan: o.wan.clone(),
    };
    // Validate before writing, so a bad option never leaves a broken file behind.
    Cluster::from_file(&path, file.clone())?;
    let text = toml::to_string(&file)
        .map_err(|e| ClusterError::new(&path, format!("cannot encode: {e}")))?;
    let header = format!(
        "# plumb cluster replicating the application {:?}: u={} (failures tolerated while up), r={} (commission failures tolerated while right).\n# Field-by-field reference: docs/operations.md. Secret keys are in keys/ beside this file.\n\n",
        o.app, o.u, o.r
    );
    std::fs::write(&path, header + &text)
        .map_err(|e| ClusterError::new(&path, format!("cannot write: {e}")))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_writes_a_config_that_loads_with_matching_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = init(dir.path(), &InitOptions::default()).unwrap();
        let c = Cluster::load(&path).unwrap();
        assert_eq!(c.nodes.len(), 4);
        let q = c.quorums();
        assert_eq!((q.auth, q.order, q.exec), (4, 4, 3));
        assert_eq!(c.gateway.as_ref().unwrap().clients.len(), 32);
        // The command-line clients begin a speculation group of their own.
        assert_eq!(c.cli_clients, (128..136).collect::<Vec<_>>());
        for n in &c.nodes {
            for p in &n.principals {
                c.key_ring(*p, &c.node_secret_path(n.id)).unwrap();
            }
        }
        c.key_ring(Principal::Client(129), &c.client_secret_path(129))
            .unwrap();
        // A key file of another principal is refused with a clear message.
        let e = c
            .key_ring(Principal::Order(OrderId(1)), &c.node_secret_path(0))
            .err()
            .unwrap();
        assert!(e.to_string().contains("does not match"), "{e}");
        // A second init into the same directory is refused.
        assert!(init(dir.path(), &InitOptions::default()).is_err());
    }

    #[test]
    fn a_file_whose_gateway_and_command_line_clients_share_a_speculation_group_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = init(dir.path(), &InitOptions::default()).unwrap();
        // What init wrote before owners had groups of their own: cli_clients right after the
        // gateway's 32, in group 0 with them.
        let mut file: ClusterFile =
            toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (i, c) in file.clients.iter_mut().skip(32).enumerate() {
            c.id = 32 + i as u32;
        }
        file.cli_clients = Some(ClientRange {
            first: 32,
            last: 39,
        });
        let e = Cluster::from_file(&path, file).err().unwrap().to_string();
        assert!(
            e.contains("share a speculation group") && e.contains("from 128 on"),
            "{e}"
        );
    }

    #[test]
    fn every_fault_model_initialises() {
        for (u, r) in [(1, 0), (0, 1), (2, 1), (0, 0)] {
            let dir = tempfile::tempdir().unwrap();
            let o = InitOptions {
                u,
                r,
                gateway_clients: 2,
                cli_clients: 1,
                ..InitOptions::default()
            };
            let c = Cluster::load(&init(dir.path(), &o).unwrap()).unwrap();
            assert_eq!(c.faults(), Faults::new(u, r));
        }
    }

    #[test]
    fn execution_replicas_beyond_the_minimum_get_nodes_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let o = InitOptions {
            exec: Some(6),
            ..InitOptions::default()
        };
        let c = Cluster::load(&init(dir.path(), &o).unwrap()).unwrap();
        let q = c.quorums();
        assert_eq!((q.auth, q.order, q.exec), (4, 4, 6));
        // Four nodes with a replica of each stage, two with an execution replica only.
        assert_eq!(c.nodes.len(), 6);
        assert!(c.nodes[4..]
            .iter()
            .all(|n| n.principals == [Principal::Exec(ExecId(n.id))]));
        // The quorums are still those of u=1, r=1.
        assert_eq!((q.reply(), q.exec_checkpoint()), (2, 2));
        // Fewer than the minimum is refused, saying what is needed.
        let o = InitOptions {
            exec: Some(2),
            ..InitOptions::default()
        };
        let e = init(tempfile::tempdir().unwrap().path(), &o).err().unwrap();
        assert!(e.to_string().contains("requires at least 3"), "{e}");
    }

    #[test]
    fn split_gives_every_stage_replica_its_own_node() {
        let dir = tempfile::tempdir().unwrap();
        let o = InitOptions {
            u: 1,
            r: 0,
            split: true,
            ..InitOptions::default()
        };
        let c = Cluster::load(&init(dir.path(), &o).unwrap()).unwrap();
        let q = c.quorums();
        // u=1, r=0: 3 authentication, 3 order, 3 execution replicas (Table 6.1).
        assert_eq!(c.nodes.len(), 3 + 3 + 3);
        assert!(c.nodes.iter().all(|n| n.principals.len() == 1));
        assert_eq!((q.auth, q.order, q.exec), (3, 3, 3));
        for n in &c.nodes {
            c.key_ring(n.principals[0], &c.node_secret_path(n.id))
                .unwrap();
        }
    }

    #[test]
    fn protocol_overrides_reach_the_configuration_and_unknown_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = init(dir.path(), &InitOptions::default()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\n[protocol]\n"), "{text}");
        let with = |lines: &str| {
            std::fs::write(
                &path,
                text.replacen("\n[protocol]\n", &format!("\n[protocol]\n{lines}\n"), 1),
            )
            .unwrap();
            Cluster::load(&path)
        };
        let c = with("slow_request_us = 7000\nload_objects_on_demand = true").unwrap();
        assert_eq!(c.protocol.slow_request_us, 7000);
        assert!(c.protocol.load_objects_on_demand);
        let c = with("").unwrap();
        assert!(!c.protocol.load_objects_on_demand);
        assert!(!c.protocol.zz);
        let c = with("zz = true\nzz_report_timeout_us = 80000\nzz_report_timeout_max_us = 400000")
            .unwrap();
        assert!(c.protocol.zz);
        assert_eq!(c.protocol.zz_report_timeout_us, 80_000);
        assert_eq!(c.protocol.zz_report_timeout_max_us, 400_000);
        assert!(
            c.protocol.load_objects_on_demand,
            "ZZ loads on demand unless told"
        );
        let c = with("zz = true\nload_objects_on_demand = false").unwrap();
        assert!(c.protocol.zz && !c.protocol.load_objects_on_demand);
        let e = with("load_objects_lazily = true")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("load_objects_lazily"), "{e}");
    }

    #[test]
    fn the_file_names_its_application_and_older_files_mean_the_key_value_store() {
        let dir = tempfile::tempdir().unwrap();
        let o = InitOptions {
            app: "counter".to_string(),
            ..InitOptions::default()
        };
        let path = init(dir.path(), &o).unwrap();
        assert_eq!(Cluster::load(&path).unwrap().app, "counter");
        // A file written before `app` existed: every such cluster ran the key-value store.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("app = \"counter\"\n", "", 1)).unwrap();
        assert_eq!(Cluster::load(&path).unwrap().app, crate::DEFAULT_APP);
    }

    #[test]
    fn wan_section_round_trips_and_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let o = InitOptions {
            wan: Some(WanEntry {
                sites: ["a", "b", "b", "b"].map(String::from).to_vec(),
                delay_ms: 15,
                client_site: Some("a".into()),
            }),
            ..InitOptions::default()
        };
        let path = init(dir.path(), &o).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("[wan]"), "{text}");
        let c = Cluster::load(&path).unwrap();
        let ms = std::time::Duration::from_millis;
        assert_eq!(c.node_delay(0, 1), ms(15));
        assert_eq!(c.node_delay(2, 3), ms(0));
        assert_eq!(c.client_delay(0), ms(0));
        assert_eq!(c.client_delay(1), ms(15));

        // Without [wan]: no delay anywhere.
        let plain = tempfile::tempdir().unwrap();
        let c = Cluster::load(&init(plain.path(), &InitOptions::default()).unwrap()).unwrap();
        assert!(c.wan.is_none());
        assert_eq!(c.node_delay(0, 1), ms(0));

        // Too few sites, and a client site left out (its own site: far from every node).
        let short = text.replace(r#"sites = ["a", "b", "b", "b"]"#, r#"sites = ["a", "b"]"#);
        assert_ne!(short, text);
        std::fs::write(&path, &short).unwrap();
        let e = Cluster::load(&path).err().unwrap().to_string();
        assert!(
            e.contains("[wan]") && e.contains("node 2 has no site"),
            "{e}"
        );
        std::fs::write(&path, text.replace("client_site = \"a\"\n", "")).unwrap();
        let c = Cluster::load(&path).unwrap();
        assert_eq!(c.client_delay(0), ms(15));
    }
}
