//! The wiki as objects: every batch runs alike on a fresh instance holding only its access
//! set's buckets and the metadata (what a replica loading on demand holds after fetching
//! them), writes nothing outside the set, and the whole state as objects loads back equal.

use plumb_app::{Application, Command, NonDeterminism, ObjectState};
use plumb_web::{WebOp, WikiApp};
use plumb_wire::{Life, ReqNo, Seq};
use proptest::prelude::*;

const NAMES: [&str; 5] = ["Home", "A", "b-2", "Zed_", "x%41"];

/// An operation from three random bytes: reads of every route and saves whose text links to
/// other pages (a link's colour asks whether its page exists).
fn op_of([kind, n, arg]: [u8; 3]) -> Vec<u8> {
    let name = NAMES[usize::from(n) % NAMES.len()];
    let other = NAMES[usize::from(arg) % NAMES.len()];
    let get = |target: String| WebOp::Get { target };
    match kind % 8 {
        0 => get("/".into()),
        1 => get(format!("/wiki/{name}")),
        2 => get(format!("/wiki/{name}/edit")),
        3 => get(format!("/wiki/{name}/history")),
        4 => get(format!("/wiki/{name}/rev/{}", arg % 4)),
        5 => get(format!("/new?name={name}")),
        _ => WebOp::Post {
            target: format!("/wiki/{name}"),
            content_type: Some("application/x-www-form-urlencoded".into()),
            body: format!("body=see+[[{other}]]+{}&summary=s{}", arg % 3, arg % 2).into_bytes(),
        },
    }
    .encode()
}

fn holding(whole: &WikiApp, ids: &[plumb_app::ObjectId]) -> WikiApp {
    let mut part = WikiApp::default();
    for id in ids {
        part.load_object(*id, whole.bucket_bytes(*id).as_deref())
            .unwrap();
    }
    part.load_object_metadata(&whole.object_metadata()).unwrap();
    part
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn batches_run_alike_on_their_access_sets(
        batches in prop::collection::vec(prop::collection::vec(any::<[u8; 3]>(), 1..6), 1..20)
    ) {
        let mut whole = WikiApp::default();
        for (i, batch) in batches.iter().enumerate() {
            let ops: Vec<Vec<u8>> = batch.iter().map(|b| op_of(*b)).collect();
            let cmds: Vec<Command<'_>> =
                ops.iter().map(|op| Command::new(1, Life(0), ReqNo(0), op)).collect();
            let nd = NonDeterminism { time: 1_700_000_000_000_000 + i as u64 * 1000, seed: 0 };
            let refs: Vec<&[u8]> = ops.iter().map(Vec::as_slice).collect();
            let set = whole.batch_access_set(&refs, nd.time);
            let ids = set.ids().expect("no wiki operation needs the whole state").to_vec();
            let mut part = holding(&whole, &ids);
            let out = whole.execute(Seq(i as u64 + 1), &cmds, nd);
            prop_assert_eq!(&part.execute(Seq(i as u64 + 1), &cmds, nd), &out, "batch {}", i);
            for (id, bytes) in whole.take_changed_objects() {
                prop_assert!(set.contains(id), "batch {}: bucket {} outside {:?}", i, id.0, set);
                prop_assert_eq!(part.bucket_bytes(id), bytes, "batch {}", i);
            }
        }
        let ids: Vec<_> = whole.wiki().pages.keys().map(|n| plumb_web::bucket_of(n)).collect();
        prop_assert_eq!(&holding(&whole, &ids), &whole);
    }
}
