//! The gateway's connections as `CLIENT LIST`, `CLIENT KILL` and `CLIENT UNBLOCK` see them.
//!
//! Every connection registers here for its life ([`Clients::register`]; dropping the
//! [`Registration`] takes it out) and keeps its entry current as it reads commands. Another
//! connection can then list it, close it (its task is told through [`Registration::killed`]
//! and ends at its next step) or wake it from a blocking command
//! ([`Registration::unblocked`]).

use plumb_resp::{ClientFilter, ClientKind};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::Notify;

/// How `CLIENT UNBLOCK` ends a blocked command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unblock {
    /// As if it timed out (a nil reply).
    Timeout,
    /// With the `UNBLOCKED` error.
    Error,
}

struct Entry {
    addr: String,
    laddr: String,
    name: Vec<u8>,
    created: Instant,
    last: Instant,
    /// The last command, as Redis names it (`client|list`).
    cmd: String,
    sub: usize,
    psub: usize,
    /// Commands queued in `MULTI`, or -1 outside one.
    multi: i64,
    resp: u8,
    kill: Arc<Notify>,
    /// Set while the connection waits in a blocking command.
    blocked: Option<Arc<Mutex<Option<Unblock>>>>,
    unblock: Arc<Notify>,
}

impl Entry {
    fn kind(&self) -> ClientKind {
        if self.sub + self.psub > 0 {
            ClientKind::Pubsub
        } else {
            ClientKind::Normal
        }
    }

    fn flags(&self) -> String {
        let mut flags = String::new();
        if self.blocked.is_some() {
            flags.push('b');
        }
        if self.kind() == ClientKind::Pubsub {
            flags.push('P');
        }
        if self.multi >= 0 {
            flags.push('x');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        flags
    }

    fn matches(&self, id: u64, filter: &ClientFilter) -> bool {
        filter.ids.as_ref().is_none_or(|ids| ids.contains(&id))
            && filter.kind.is_none_or(|k| k == self.kind())
            && filter.addr.as_ref().is_none_or(|a| a == self.addr.as_bytes())
            && filter.laddr.as_ref().is_none_or(|a| a == self.laddr.as_bytes())
            // Every connection is the default user's: the gateway has no ACL users.
            && filter.user.as_ref().is_none_or(|u| u == b"default")
    }

    /// The connection's `CLIENT LIST` line, in Redis 7.0's field order. Fields about Redis'
    /// memory (buffers, file descriptor) have no counterpart here and read 0.
    fn line(&self, id: u64, now: Instant) -> String {
        format!(
            "id={id} addr={} laddr={} fd=0 name={} age={} idle={} flags={} db=0 sub={} psub={} \
             ssub=0 multi={} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 \
             omem=0 tot-mem=0 events=r cmd={} user=default redir=-1 resp={}",
            self.addr,
            self.laddr,
            String::from_utf8_lossy(&self.name),
            now.duration_since(self.created).as_secs(),
            now.duration_since(self.last).as_secs(),
            self.flags(),
            self.sub,
            self.psub,
            self.multi,
            self.cmd,
            self.resp,
        )
    }
}

#[derive(Default)]
pub struct Clients {
    entries: Mutex<BTreeMap<u64, Entry>>,
}

impl Clients {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Entry>> {
        // Each update is one insert, remove or field store: a panic elsewhere leaves the map
        // consistent.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register connection `id` until the returned registration is dropped.
    pub fn register(
        self: &Arc<Self>,
        id: u64,
        addr: Option<SocketAddr>,
        laddr: Option<SocketAddr>,
    ) -> Registration {
        let now = Instant::now();
        let kill = Arc::new(Notify::new());
        let unblock = Arc::new(Notify::new());
        let show = |a: Option<SocketAddr>| a.map_or_else(|| "?:0".to_string(), |a| a.to_string());
        self.lock().insert(
            id,
            Entry {
                addr: show(addr),
                laddr: show(laddr),
                name: Vec::new(),
                created: now,
                last: now,
                cmd: "NULL".into(),
                sub: 0,
                psub: 0,
                multi: -1,
                resp: 2,
                kill: kill.clone(),
                blocked: None,
                unblock: unblock.clone(),
            },
        );
        Registration {
            clients: self.clone(),
            id,
            kill,
            unblock,
        }
    }

    /// The `CLIENT LIST` lines of the connections `filter` matches, by id.
    pub fn list(&self, filter: &ClientFilter) -> String {
        let now = Instant::now();
        let mut out = String::new();
        for (id, entry) in self.lock().iter() {
            if entry.matches(*id, filter) {
                out.push_str(&entry.line(*id, now));
                out.push('\n');
            }
        }
        out
    }

    /// Connection `id`'s line (`CLIENT INFO`), with a newline as Redis ends it.
    pub fn info(&self, id: u64) -> String {
        self.lock()
            .get(&id)
            .map(|e| format!("{}\n", e.line(id, Instant::now())))
            .unwrap_or_default()
    }

    /// Close the connections `filter` matches (leaving `me` out if it says so); how many.
    pub fn kill(&self, me: u64, filter: &ClientFilter) -> usize {
        let entries = self.lock();
        let mut killed = 0;
        for (id, entry) in entries.iter() {
            if entry.matches(*id, filter) && !(filter.skip_me && *id == me) {
                // A stored permit: the connection sees it at its next step even if it is
                // not waiting for it now.
                entry.kill.notify_one();
                killed += 1;
            }
        }
        killed
    }

    /// Wake connection `id` from its blocking command; false if it is not blocked.
    pub fn unblock(&self, id: u64, how: Unblock) -> bool {
        let entries = self.lock();
        let Some(entry) = entries.get(&id) else {
            return false;
        };
        let Some(slot) = &entry.blocked else {
            return false;
        };
        let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            // Unblocked already, not yet woken: once is enough.
            return false;
        }
        *slot = Some(how);
        entry.unblock.notify_one();
        true
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A connection's entry in [`Clients`], for its life.
pub struct Registration {
    clients: Arc<Clients>,
    id: u64,
    kill: Arc<Notify>,
    unblock: Arc<Notify>,
}

impl Registration {
    fn update(&self, f: impl FnOnce(&mut Entry)) {
        if let Some(entry) = self.clients.lock().get_mut(&self.id) {
            f(entry);
        }
    }

    /// The connection read `command` (its first one or two words, for `cmd=`).
    pub fn command(&self, args: &[Vec<u8>], multi: Option<usize>) {
        let mut cmd = args
            .first()
            .map(|c| String::from_utf8_lossy(c).to_ascii_lowercase())
            .unwrap_or_default();
        if let Some(sub) = args.get(1).filter(|_| has_subcommands(&cmd)) {
            cmd = format!(
                "{cmd}|{}",
                String::from_utf8_lossy(sub).to_ascii_lowercase()
            );
        }
        // At most 64 bytes, cut at a character boundary (the name may be any bytes, shown
        // lossily: truncating inside a character would panic).
        let mut end = cmd.len().min(64);
        while !cmd.is_char_boundary(end) {
            end -= 1;
        }
        cmd.truncate(end);
        self.update(|e| {
            e.last = Instant::now();
            e.cmd = cmd;
            e.multi = multi.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        });
    }

    pub fn set_name(&self, name: Option<&[u8]>) {
        let name = name.unwrap_or_default().to_vec();
        self.update(|e| e.name = name);
    }

    pub fn set_subscriptions(&self, channels: usize, patterns: usize) {
        self.update(|e| {
            e.sub = channels;
            e.psub = patterns;
        });
    }

    pub fn set_protocol(&self, resp: u8) {
        self.update(|e| e.resp = resp);
    }

    /// Resolves once another connection killed this one.
    pub async fn killed(&self) {
        self.kill.notified().await
    }

    /// The connection enters a blocking command; it is in it until the guard drops.
    pub fn blocking(&self) -> Blocked<'_> {
        let slot = Arc::new(Mutex::new(None));
        self.update(|e| e.blocked = Some(slot.clone()));
        Blocked { reg: self, slot }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.clients.lock().remove(&self.id);
    }
}

/// A connection's time in a blocking command.
pub struct Blocked<'a> {
    reg: &'a Registration,
    slot: Arc<Mutex<Option<Unblock>>>,
}

impl Blocked<'_> {
    /// Resolves with how `CLIENT UNBLOCK` ended the wait.
    pub async fn unblocked(&self) -> Unblock {
        loop {
            if let Some(how) = *self.slot.lock().unwrap_or_else(|p| p.into_inner()) {
                return how;
            }
            self.reg.unblock.notified().await;
        }
    }
}

impl Drop for Blocked<'_> {
    fn drop(&mut self) {
        self.reg.update(|e| e.blocked = None);
    }
}

/// Commands Redis names with their subcommand in `cmd=` (`client|list`, `config|get`).
fn has_subcommands(cmd: &str) -> bool {
    matches!(
        cmd,
        "client" | "config" | "command" | "script" | "object" | "memory" | "pubsub" | "function"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter() -> ClientFilter {
        ClientFilter::default()
    }

    #[tokio::test]
    async fn kill_and_unblock_reach_the_named_connection_only() {
        let clients = Arc::new(Clients::default());
        let a = clients.register(1, None, None);
        let b = clients.register(2, None, None);
        b.command(&[b"CLIENT".to_vec(), b"LIST".to_vec()], None);
        let list = clients.list(&filter());
        assert_eq!(list.lines().count(), 2);
        assert!(list.lines().nth(1).unwrap().contains("cmd=client|list"));
        // Not blocked: nothing to unblock.
        assert!(!clients.unblock(1, Unblock::Error));
        let blocked = a.blocking();
        assert!(clients.info(1).contains("flags=b"));
        assert!(clients.unblock(1, Unblock::Error));
        assert!(!clients.unblock(1, Unblock::Timeout), "once");
        assert_eq!(blocked.unblocked().await, Unblock::Error);
        drop(blocked);
        assert!(clients.info(1).contains("flags=N"));
        let only_a = ClientFilter {
            ids: Some(vec![1]),
            skip_me: true,
            ..filter()
        };
        assert_eq!(clients.kill(1, &only_a), 0, "skip me");
        assert_eq!(clients.kill(2, &only_a), 1);
        tokio::time::timeout(std::time::Duration::from_millis(100), a.killed())
            .await
            .expect("a was killed");
        // A command name of any bytes, long and not UTF-8, is shown cut, never a panic.
        let mut hostile = vec![0xE2u8; 40];
        hostile.extend_from_slice("é".repeat(40).as_bytes());
        b.command(&[hostile], None);
        assert!(clients.info(2).contains("cmd="));
        drop(b);
        assert_eq!(clients.len(), 1);
        drop(a);
        assert!(clients.is_empty());
    }
}
