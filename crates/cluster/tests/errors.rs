//! A bad configuration is refused with a message naming the file, the field and what to do.

use plumb_cluster::{init, Cluster, InitOptions};
use std::path::PathBuf;

fn fresh() -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let o = InitOptions {
        gateway_clients: 2,
        cli_clients: 1,
        ..InitOptions::default()
    };
    let path = init(dir.path(), &o).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    (dir, path, text)
}

fn error_for(path: &PathBuf, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    match Cluster::load(path) {
        Ok(_) => panic!("configuration was accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn too_few_nodes_for_a_role_names_role_given_and_required() {
    let (_d, path, text) = fresh();
    // Drop the last node: 3 authentication replicas for u=1, r=1 (needs 4).
    let cut = text.rfind("[[node]]").unwrap();
    let rest = &text[cut..];
    let end = rest.find("[[client]]").unwrap();
    let text = format!("{}{}", &text[..cut], &rest[end..]);
    let e = error_for(&path, &text);
    assert!(e.contains("cluster.toml"), "{e}");
    assert!(e.contains("authentication role has 3"), "{e}");
    assert!(e.contains("requires at least 4"), "{e}");
}

#[test]
fn malformed_fields_are_named() {
    let (_d, path, text) = fresh();
    let e = error_for(&path, &text.replacen("127.0.0.1:7400", "nowhere", 1));
    assert!(e.contains("node 0: field `address`"), "{e}");
    let e = error_for(&path, &text.replacen("u = 1", "u = \"one\"", 1));
    assert!(e.contains("not a valid cluster file"), "{e}");
    let e = error_for(&path, &text.replacen("roles = [", "roles = [\"cook\", ", 1));
    assert!(e.contains("cook"), "{e}");
    let e = error_for(
        &path,
        &text.replacen("[protocol]\n", "[protocol]\nbatch_max = 0\n", 1),
    );
    assert!(e.contains("batch_max must be at least 1"), "{e}");
    let e = error_for(&path, &text.replacen("7401", "7400", 1));
    assert!(e.contains("also used"), "{e}");
}

/// Why node `node`'s first principal cannot load its key ring from the node's secret file.
fn key_ring_error(c: &Cluster, node: u16) -> String {
    c.key_ring(
        c.node(node).unwrap().principals[0],
        &c.node_secret_path(node),
    )
    .err()
    .unwrap()
    .to_string()
}

#[test]
fn missing_or_wrong_key_files_are_explained() {
    let (dir, path, _text) = fresh();
    let c = Cluster::load(&path).unwrap();
    std::fs::write(c.node_secret_path(1), "zz").unwrap();
    let e = key_ring_error(&c, 1);
    assert!(e.contains("64 hex digits"), "{e}");
    std::fs::remove_file(dir.path().join("keys/node-2.key")).unwrap();
    let e = key_ring_error(&c, 2);
    assert!(e.contains("plumb init"), "{e}");
}

#[test]
fn an_application_name_that_cannot_be_one_is_refused() {
    let (_d, path, text) = fresh();
    assert!(
        text.starts_with('#') && text.contains("\napp = \"kv\"\n"),
        "{text}"
    );
    let e = error_for(
        &path,
        &text.replacen("app = \"kv\"", "app = \"my app!\"", 1),
    );
    assert!(e.contains("field `app`"), "{e}");
    assert!(e.contains("my app!"), "{e}");
}
