//! `SCAN` walks hash buckets in order from its cursor, and a key never changes bucket: every
//! key present from the first step to the last is returned exactly once, whatever is written
//! in between.

use plumb_kv::*;
use std::collections::BTreeMap;

fn set(store: &mut KvStore, key: &str) {
    store.apply(
        &KvOp::Set {
            key: key.as_bytes().to_vec(),
            value: b"v".to_vec(),
            expire: None,
        },
        1,
    );
}

#[test]
fn every_key_present_throughout_is_returned_exactly_once() {
    let mut store = KvStore::new();
    for i in 0..10_000 {
        set(&mut store, &format!("stable:{i}"));
        set(&mut store, &format!("doomed:{i}"));
    }
    let mut seen: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    let (mut cursor, mut steps, mut written) = (0, 0, 0);
    loop {
        let op = KvOp::Scan {
            cursor,
            count: 100,
            pattern: None,
            kind: None,
        };
        let KvResult::Cursor(next, keys) = store.read(&op) else {
            panic!("not a cursor")
        };
        for k in keys {
            *seen.entry(k).or_default() += 1;
        }
        steps += 1;
        // Between steps: new keys come, doomed ones go.
        for _ in 0..20 {
            set(&mut store, &format!("new:{written}"));
            store.apply(
                &KvOp::Delete {
                    key: format!("doomed:{written}").into_bytes(),
                },
                1,
            );
            written += 1;
        }
        if next == 0 {
            break;
        }
        assert!(next > cursor, "the cursor only moves forward");
        cursor = next;
    }
    for i in 0..10_000 {
        assert_eq!(
            seen.get(format!("stable:{i}").as_bytes()),
            Some(&1),
            "stable:{i}"
        );
    }
    assert!(seen.values().all(|&n| n == 1), "no key twice");
    assert!(steps > 100, "{steps} steps of about 100 keys");
}

#[test]
fn match_and_type_filter_after_counting() {
    let mut store = KvStore::new();
    for i in 0..50 {
        set(&mut store, &format!("user:{i}"));
    }
    store.apply(
        &KvOp::HSet {
            key: b"user:h".to_vec(),
            fields: vec![(b"f".to_vec(), b"v".to_vec())],
        },
        1,
    );
    let scan_all = |pattern: Option<&str>, kind: Option<&str>| {
        let mut found = Vec::new();
        let mut cursor = 0;
        loop {
            let op = KvOp::Scan {
                cursor,
                count: 7,
                pattern: pattern.map(|p| p.as_bytes().to_vec()),
                kind: kind.map(|k| k.as_bytes().to_vec()),
            };
            let KvResult::Cursor(next, keys) = store.read(&op) else {
                panic!()
            };
            found.extend(keys);
            if next == 0 {
                return found;
            }
            cursor = next;
        }
    };
    assert_eq!(scan_all(None, None).len(), 51);
    assert_eq!(scan_all(Some("user:1*"), None).len(), 11);
    assert_eq!(scan_all(None, Some("hash")), vec![b"user:h".to_vec()]);
}
