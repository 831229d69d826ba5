//! A pool of library clients over TCP: the client side of plumb for a process that serves many
//! callers (the gateway, `plumb bench`) or one (`plumb kv`).
//!
//! The pool is a [`plumb_client::net::Client`] with many identities: every identity runs the
//! pure client core, all of them on one thread as one stage with one durable store, so the
//! group commit covers every identity's outstanding request (CS3) with one `fdatasync`.
//! Callers queue operations; a free identity takes the oldest, so callers are served in
//! arrival order and every identity keeps one request outstanding at most (CS2). The
//! identities share one TCP link per node; replies find their identity by the envelope's
//! receiver. What the pool adds is how it picks its store: one for all identities, or the
//! first identity whose store no other process holds, and adopting the stores of earlier
//! versions.

use plumb_client::net::{key_prefix, Client, ClientError, ClientOptions, Identity};
use plumb_cluster::Cluster;
use plumb_core::StoreOp;
use plumb_storage::{Store, StoreError};
use plumb_wire::Principal;
use std::path::Path;

pub struct Pool {
    client: Client,
    pub clients: Vec<u32>,
}

/// Why a pool call failed: the pool stopped, or the client refused the operation (it is too
/// large for a request).
#[derive(Debug)]
pub struct PoolError(pub ClientError);

impl std::fmt::Display for PoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            ClientError::Closed => {
                f.write_str("the client pool stopped before the operation completed")
            }
            other => other.fmt(f),
        }
    }
}

impl Pool {
    /// Start a pool of client identities `ids` of `cluster`, keeping their state under `dir`.
    /// Must run inside a tokio runtime.
    ///
    /// With `need_all`, the pool has every identity and one store, `dir/pool`; it is an error
    /// if another process holds it. Without, the pool is one identity: the first of `ids` whose
    /// store (`dir/pool-c<id>`) no other process holds, so several short-lived processes (such
    /// as `plumb kv`) can run at once.
    pub fn start(
        cluster: &Cluster,
        ids: &[u32],
        dir: &Path,
        need_all: bool,
    ) -> Result<Pool, String> {
        let (ids, mut store, mut recovered) = if need_all {
            let store_dir = dir.join("pool");
            let (store, recovered) = Store::open(&store_dir).map_err(|e| {
                format!(
                    "cannot open the client pool's store in {}: {e}",
                    store_dir.display()
                )
            })?;
            (ids.to_vec(), store, recovered)
        } else {
            let mut found = None;
            for &c in ids {
                match Store::open(&dir.join(format!("pool-{}", Principal::Client(c)))) {
                    Ok((store, recovered)) => {
                        found = Some((vec![c], store, recovered));
                        break;
                    }
                    Err(StoreError::Locked { .. }) => continue,
                    Err(e) => return Err(format!("client {c}: cannot open its store: {e}")),
                }
            }
            found.ok_or_else(|| {
                format!(
                    "every client identity ({ids:?}) is in use by another process (their stores under {} are locked); stop one or add client identities to the configuration",
                    dir.display()
                )
            })?
        };
        if ids.is_empty() {
            return Err("a client pool needs at least one client identity".into());
        }
        adopt_per_client_stores(&ids, dir, &mut store, &mut recovered)?;
        let identities = ids
            .iter()
            .map(|&c| Identity::issued(cluster, c))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        // No time limit: a caller that gives up drops its future (the gateway when its Redis
        // connection closes, `plumb kv` on its own timeout).
        let options = ClientOptions {
            op_timeout: None,
            ..ClientOptions::default()
        };
        let client = Client::start_with_store(cluster, &identities, store, recovered, &options)
            .map_err(|e| e.to_string())?;
        Ok(Pool {
            client,
            clients: ids,
        })
    }

    /// Run `op` (a key-value operation's bytes) and wait for the result the cluster agreed on.
    pub async fn call(&self, op: Vec<u8>, read_only: bool) -> Result<Vec<u8>, PoolError> {
        let answer = if read_only {
            self.client.invoke_read_only(op).await
        } else {
            self.client.invoke(op).await
        };
        answer.map_err(PoolError)
    }

    /// Run `op` by `route` and say how it was answered (`plumb_client::net::Client::invoke_on`):
    /// the sketcher's fast and replicated reads.
    pub async fn call_on(
        &self,
        op: Vec<u8>,
        route: plumb_client::net::Route,
    ) -> Result<plumb_client::net::Answer, PoolError> {
        self.client.invoke_on(op, route).await.map_err(PoolError)
    }

    /// The push events sent to the pool's identities from now on.
    pub fn push_events(&self) -> plumb_client::net::PushEvents {
        self.client.push_events()
    }

    /// The pool clients' protocol counters (see `plumb_client::net::Client::counters`).
    pub fn counters(&self) -> plumb_core::Counters {
        self.client.counters()
    }

    /// Operations waiting for a free client.
    pub fn backlog(&self) -> usize {
        self.client.backlog()
    }

    /// Stop the client thread once it has made everything it wrote durable (also on drop).
    pub fn stop(self) {}
}

/// Earlier versions kept each client identity in a store of its own, `dir/c<id>`. Copy what
/// such a store holds into the pool's store under the client's prefix, make it durable, and
/// only then remove the old store, so a client never forgets its last request number.
fn adopt_per_client_stores(
    ids: &[u32],
    dir: &Path,
    store: &mut Store,
    recovered: &mut plumb_core::Recovered,
) -> Result<(), String> {
    let mut adopted = Vec::new();
    for &c in ids {
        let old_dir = dir.join(Principal::Client(c).to_string());
        if !old_dir.join(plumb_storage::LOG_FILE).exists() {
            continue;
        }
        let (old, old_recovered) = Store::open(&old_dir).map_err(|e| {
            format!(
                "client {c}: cannot open its store of an earlier version in {}: {e}",
                old_dir.display()
            )
        })?;
        let prefix = key_prefix(c);
        for (key, value) in old_recovered.records {
            let key = prefix.clone() + &key;
            store
                .apply(StoreOp::Put {
                    key: key.clone(),
                    value: value.clone(),
                })
                .map_err(|e| e.to_string())?;
            recovered.records.insert(key, value);
        }
        recovered.corrupt.extend(
            old_recovered
                .corrupt
                .into_iter()
                .map(|k| prefix.clone() + &k),
        );
        adopted.push((old, old_dir));
    }
    if adopted.is_empty() {
        return Ok(());
    }
    store.apply(StoreOp::Sync).map_err(|e| e.to_string())?;
    for (old, old_dir) in adopted {
        drop(old);
        std::fs::remove_dir_all(&old_dir)
            .map_err(|e| format!("cannot remove {}: {e}", old_dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_per_client_store_of_an_earlier_version_is_adopted_then_removed() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut old, _) = Store::open(&dir.path().join("c3")).unwrap();
            old.apply(StoreOp::Put {
                key: "client/out".into(),
                value: b"record".to_vec(),
            })
            .unwrap();
            old.apply(StoreOp::Sync).unwrap();
        }
        let (mut store, mut recovered) = Store::open(&dir.path().join("pool")).unwrap();
        adopt_per_client_stores(&[2, 3], dir.path(), &mut store, &mut recovered).unwrap();
        assert_eq!(recovered.records.get("c3/client/out").unwrap(), b"record");
        assert!(!dir.path().join("c3").exists());
        drop(store);
        // It is on disk, not only in what the pool was handed.
        let (_, reopened) = Store::open(&dir.path().join("pool")).unwrap();
        assert_eq!(reopened.records.get("c3/client/out").unwrap(), b"record");
    }
}
