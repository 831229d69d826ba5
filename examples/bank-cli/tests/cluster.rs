//! The bank's README, run for real: `bank up` starts a local cluster of the ledger (u=1, r=0:
//! three node processes) and `bank call` talks to it with plumb's client. Money is neither
//! created nor destroyed, and an overdraft is refused.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BANK: &str = env!("CARGO_BIN_EXE_bank");

struct Up(Child);

impl Drop for Up {
    fn drop(&mut self) {
        // SIGTERM, so that `up` stops its nodes too.
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

fn call(config: &std::path::Path, words: &str) -> String {
    let out = Command::new(BANK)
        .arg("call")
        .arg("--config")
        .arg(config)
        .args(words.split_whitespace())
        .output()
        .expect("run bank call");
    assert!(out.status.success(), "bank call {words}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_local_bank_cluster_answers_its_own_client() {
    let dir = tempfile::tempdir().unwrap();
    let cluster_dir = dir.path().join("bank-local");
    let mut child = Command::new(BANK)
        .args([
            "up",
            "--u",
            "1",
            "--r",
            "0",
            "--base-port",
            "29600",
            "--dir",
        ])
        .arg(&cluster_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start bank up");
    let stdout = child.stdout.take().unwrap();
    let _up = Up(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut printed = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        if line.starts_with("ready") || Instant::now() > deadline {
            break;
        }
    }
    assert!(
        printed.contains("ready"),
        "bank up did not come up:\n{printed}"
    );

    let config = cluster_dir.join("cluster.toml");
    assert_eq!(call(&config, "open alice"), "ok: opened");
    assert_eq!(call(&config, "open bob"), "ok: opened");
    assert_eq!(call(&config, "deposit alice 100"), "ok: balance 100");
    assert_eq!(call(&config, "transfer alice bob 30"), "ok: transferred");
    assert_eq!(
        call(&config, "transfer alice bob 500"),
        "refused: InsufficientFunds { balance: 70 }"
    );
    assert_eq!(call(&config, "balance bob"), "ok: balance 30");
    assert_eq!(
        call(&config, "audit"),
        "ok: 2 accounts hold 100 (deposited 100, withdrawn 0)"
    );
}
