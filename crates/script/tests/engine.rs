//! The engine's guarantees: determinism, the budget, the memory limit, the sandbox.

mod common;
use common::Local;
use plumb_kv::{EvalRequest, KvOp, KvResult, KvStore, Scripting};
use plumb_resp::Resp;
use plumb_script::{Engine, Limits};
use std::sync::Arc;

fn eval(script: &str, keys: &[&str], args: &[&str]) -> KvOp {
    KvOp::Eval {
        script: script.as_bytes().to_vec(),
        keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
        args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
        read_only: false,
    }
}

const NOW: u64 = 1_700_000_000_000_000;

/// A store whose scripts run under `limits`.
fn store_with(limits: Limits) -> KvStore {
    KvStore::with_scripting(Arc::new(Engine { limits }))
}

/// Runs each script on `store`, which must refuse it with an error starting `prefix`.
fn each_fails_with(store: &mut KvStore, scripts: &[&str], prefix: &str) {
    for script in scripts {
        let result = store.apply(&eval(script, &[], &[]), NOW);
        let KvResult::Error(text) = &result else {
            panic!("{script}: {result:?}")
        };
        assert!(text.starts_with(prefix), "{script}: {text}");
    }
}

#[test]
fn same_seed_same_reply_and_state() {
    let script = "
        local out = {}
        for i = 1, 5 do out[i] = math.random(1000000) end
        redis.call('sadd', 's', 'a', 'b', 'c', 'd', 'e', 'f')
        out[6] = redis.call('spop', 's')
        out[7] = tostring({})
        redis.call('set', 'r', tostring(math.random()))
        return out";
    let op = eval(script, &[], &[]);
    let (mut a, mut b) = (plumb_script::store(), plumb_script::store());
    let ra = a.apply_seeded(&op, NOW, 42);
    let rb = b.apply_seeded(&op, NOW, 42);
    assert_eq!(ra, rb);
    assert_eq!(a, b);
    assert!(matches!(ra, KvResult::Script(_)), "{ra:?}");
    // The table's text is a counter, not an address.
    let Some(Resp::Array(Some(items))) = (match &ra {
        KvResult::Script(bytes) => Resp::parse(bytes),
        _ => None,
    }) else {
        panic!("{ra:?}")
    };
    assert_eq!(items[6], Resp::bulk("table: 0x00000001"));
    // Another seed draws other numbers.
    let mut c = plumb_script::store();
    assert_ne!(c.apply_seeded(&op, NOW, 43), ra);
}

#[test]
fn runaway_script_stops_at_the_budget_and_keeps_its_writes() {
    let mut store = store_with(Limits {
        instructions: 2_000_000,
        ..Limits::default()
    });
    each_fails_with(
        &mut store,
        &[
            "redis.call('incr', 'n') while true do end",
            // pcall cannot swallow the budget's error, however deep.
            "redis.call('incr', 'n') while true do pcall(function() while true do pcall(function() while true do end end) end end) end",
            "redis.call('incr', 'n') local co = coroutine.create(function() while true do end end) while true do coroutine.resume(co) end",
            "redis.call('incr', 'n') while true do xpcall(function() while true do end end, function() while true do end end) end",
        ],
        "ERR plumb: the script ran past its budget of 2000000 Lua instructions",
    );
    // No rollback, as in Redis: the writes before the budget ran out stay.
    assert_eq!(
        store.apply(&KvOp::Get { key: b"n".to_vec() }, NOW),
        KvResult::Value(Some(b"4".to_vec()))
    );
}

#[test]
fn memory_limit() {
    let mut store = store_with(Limits {
        memory: 4 << 20,
        ..Limits::default()
    });
    each_fails_with(
        &mut store,
        &[
            "local t = {} for i = 1, 1e8 do t[i] = i end",
            "return string.rep('x', 1e9)",
            "local s = 'x' while true do s = s .. s end",
        ],
        "ERR plumb: the script used more than its 4194304 bytes",
    );
    // The store still runs scripts.
    assert!(matches!(
        store.apply(&eval("return 1", &[], &[]), NOW),
        KvResult::Script(_)
    ));
}

#[test]
fn sandbox() {
    let mut local = Local::new();
    let error = |r: Resp| match r {
        Resp::Error(text) => text,
        other => panic!("{other:?}"),
    };
    for (script, wanted) in [
        ("return os.clock()", "nonexistent global variable 'os'"),
        (
            "return io.open('/etc/passwd')",
            "nonexistent global variable 'io'",
        ),
        (
            "return debug.getinfo(1)",
            "nonexistent global variable 'debug'",
        ),
        (
            "return require('x')",
            "nonexistent global variable 'require'",
        ),
        (
            "setmetatable(_G, nil)",
            "cannot change a protected metatable",
        ),
        ("KEYS = {}", "Attempt to modify a readonly table"),
        ("function f() end", "Attempt to modify a readonly table"),
        (
            "return loadstring(string.dump(function() return 1 end))()",
            "attempt to call a nil value",
        ),
    ] {
        let text = error(local.run(&["eval", script, "0"]));
        assert!(text.contains(wanted), "{script}: {text}");
    }
    // Locals, and functions in locals, are fine.
    assert_eq!(
        local.run(&[
            "eval",
            "local function f(x) return x * 2 end return f(21)",
            "0"
        ]),
        Resp::Integer(42)
    );
    // A script's KEYS and ARGV, and the store it shares with plain commands.
    assert_eq!(
        local.run(&[
            "eval",
            "redis.call('set', KEYS[1], ARGV[1]) return redis.call('get', KEYS[1])",
            "1",
            "k",
            "v"
        ]),
        Resp::bulk("v")
    );
    assert_eq!(local.run(&["get", "k"]), Resp::bulk("v"));
}

#[test]
fn scripts_inside_transactions_and_pipelines() {
    let mut store = plumb_script::store();
    let script = eval("return redis.call('incr', KEYS[1])", &["c"], &[]);
    let tx = KvOp::Transaction {
        watched: Vec::new(),
        ops: vec![
            script.encode(),
            script.encode(),
            KvOp::Get { key: b"c".to_vec() }.encode(),
        ],
    };
    let KvResult::Each(results) = store.apply(&tx, NOW) else {
        panic!()
    };
    let results: Vec<KvResult> = results
        .iter()
        .map(|r| KvResult::decode(r).unwrap())
        .collect();
    assert_eq!(results[2], KvResult::Value(Some(b"2".to_vec())));
    assert_eq!(
        plumb_resp::render(&plumb_resp::Render::Plain, results[1].clone()),
        Resp::Integer(2)
    );
    let pipeline = KvOp::Pipeline {
        ops: vec![script.encode(), script.encode()],
    };
    assert!(matches!(store.apply(&pipeline, NOW), KvResult::Each(r) if r.len() == 2));
}

#[test]
fn a_store_without_an_engine_refuses_and_the_engine_survives_checkpoints() {
    let op = eval("return 1", &[], &[]);
    assert_eq!(
        KvStore::new().apply(&op, NOW),
        KvResult::error(plumb_kv::ERR_NO_SCRIPTING)
    );
    let mut store = plumb_script::store();
    store.apply(
        &KvOp::Set {
            key: b"k".to_vec(),
            value: b"v".to_vec(),
            expire: None,
        },
        NOW,
    );
    let checkpoint = plumb_app::Application::take_checkpoint(&mut store);
    let mut other = plumb_script::store();
    plumb_app::Application::load_checkpoint(&mut other, &checkpoint).unwrap();
    assert!(other.has_scripting());
    assert_eq!(other, store);
    assert!(matches!(other.apply(&op, NOW), KvResult::Script(_)));
    // The read-only path refuses a script (it needs the agreed time and the seed).
    assert_eq!(
        other.read(&op),
        KvResult::error(plumb_kv::ERR_NOT_READ_ONLY)
    );
}

#[test]
fn hostile_input_never_panics() {
    let mut store = plumb_script::store();
    for script in [
        "\x1bLua",
        "#!python\nreturn 1",
        "#!lua flags=bogus\nreturn 1",
        "return ...",
        "local t = {} t[1] = t return t",
        "return {{{{{{{{{{{{{{{{{{{{}}}}}}}}}}}}}}}}}}}}",
        "return redis.call(string.rep('x', 1000))",
        "return redis.call('set', 'k', nil)",
        "error(setmetatable({}, {__index = function() error('x') end}))",
        "return string.rep('a', 100):find(string.rep('a?', 20))",
    ] {
        let _ = store.apply(&eval(script, &["k"], &["\u{0}\u{ff}"]), NOW);
    }
    // A reply nested past the limit is an error, not a stack overflow.
    let deep =
        "local t = {} local r = t for i = 1, 100000 do local n = {} t[1] = n t = n end return r";
    assert!(matches!(
        store.apply(&eval(deep, &[], &[]), NOW),
        KvResult::Error(_) | KvResult::Script(_)
    ));
    assert_eq!(Resp::parse(b"*1\r\n"), None);
    assert_eq!(Resp::parse(&b"*1\r\n".repeat(100_000)), None);
}

#[test]
fn shebang_no_writes_is_read_only() {
    let mut local = Local::new();
    let reply = local.run(&[
        "eval",
        "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')",
        "0",
    ]);
    assert!(
        matches!(&reply, Resp::Error(t) if t.starts_with("ERR Write commands are not allowed from read-only scripts. script: ") && t.ends_with("on @user_script:2.")),
        "{reply:?}"
    );
}

#[allow(dead_code)]
fn engine_is_scripting(e: Engine) -> Arc<dyn Scripting> {
    let _ = EvalRequest {
        script: b"",
        keys: &[],
        args: &[],
        read_only: false,
    };
    Arc::new(e)
}
