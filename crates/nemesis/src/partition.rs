//! Cutting one node off: packet-filter rules that drop everything from and to the node's
//! loopback address, in a table of the harness's own (`inet plumb_nemesis`) so that healing
//! and cleaning up never touch anyone else's rules. Needs root and `nft` (Debian's nftables).

use std::net::Ipv4Addr;
use std::process::Command;

const TABLE: &str = "plumb_nemesis";

pub struct Firewall {
    _private: (),
}

impl Firewall {
    /// The firewall, or why partitions cannot be made here (not root, no `nft`, no rights).
    pub fn open() -> Result<Firewall, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(
                "partitions need root (packet-filter rules); run as root to include them".into(),
            );
        }
        nft(&["--version"])
            .map_err(|e| format!("partitions need nft (apt-get install nftables): {e}"))?;
        let _ = nft(&["delete", "table", "inet", TABLE]);
        nft(&["add", "table", "inet", TABLE])?;
        nft(&[
            "add",
            "chain",
            "inet",
            TABLE,
            "input",
            "{ type filter hook input priority -10 ; policy accept ; }",
        ])?;
        Ok(Firewall { _private: () })
    }

    /// Drop every packet from or to `addr`: its connections stall as over a cut cable (no
    /// reset), new ones time out.
    pub fn isolate(&self, addr: Ipv4Addr) -> Result<(), String> {
        let a = addr.to_string();
        nft(&[
            "add", "rule", "inet", TABLE, "input", "ip", "saddr", &a, "drop",
        ])?;
        nft(&[
            "add", "rule", "inet", TABLE, "input", "ip", "daddr", &a, "drop",
        ])
    }

    /// Remove every rule: the network is whole again.
    pub fn heal(&self) -> Result<(), String> {
        nft(&["flush", "chain", "inet", TABLE, "input"])
    }
}

impl Drop for Firewall {
    fn drop(&mut self) {
        let _ = nft(&["delete", "table", "inet", TABLE]);
    }
}

fn nft(args: &[&str]) -> Result<(), String> {
    let out = Command::new("nft")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run nft: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "nft {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
