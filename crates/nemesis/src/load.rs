//! The load: closed-loop Redis clients on the gateway, each running a small mix of SET (a
//! value never written before), GET and INCR over a few keys. Every operation goes into one
//! linearizability history (an error or timeout leaves it unanswered: it may or may not have
//! happened), and every success's time into the list the measurements read.

use crate::measure::Nanos;
use plumb_lincheck::kv::{BytesKv, KvOp, KvRet};
use plumb_lincheck::History;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Registers written with SET and read with GET; one linearizability partition each.
pub const REGISTERS: [&str; 8] = ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"];
/// The key incremented with INCR.
pub const COUNTER: &str = "ctr";
/// How long one call may take before its outcome is recorded as unknown.
pub const OP_TIMEOUT: Duration = Duration::from_secs(10);

/// The history and success times, on one clock.
#[derive(Clone)]
pub struct Recorder {
    start: Instant,
    history: Arc<Mutex<History<BytesKv>>>,
    successes: Arc<Mutex<Vec<Nanos>>>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            start: Instant::now(),
            history: Arc::new(Mutex::new(History::new())),
            successes: Arc::new(Mutex::new(Vec::new())),
        }
    }

    pub fn now(&self) -> Nanos {
        self.start.elapsed().as_nanos() as Nanos
    }

    fn run(
        &self,
        client: u64,
        op: KvOp<Vec<u8>, Vec<u8>>,
        redis: &mut Redis,
    ) -> Result<(), String> {
        let id = self
            .history
            .lock()
            .unwrap()
            .invoke(client, op.clone(), self.now());
        let ret = redis.call(&op)?;
        let t = self.now();
        self.history
            .lock()
            .unwrap()
            .complete(id, ret, t)
            .map_err(|e| format!("history: {e:?}"))?;
        self.successes.lock().unwrap().push(t);
        Ok(())
    }

    /// Every success so far, sorted.
    pub fn successes(&self) -> Vec<Nanos> {
        let mut s = self.successes.lock().unwrap().clone();
        s.sort_unstable();
        s
    }

    pub fn history(&self) -> std::sync::MutexGuard<'_, History<BytesKv>> {
        self.history.lock().unwrap()
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

/// One Redis connection running the key-value operations a checked history records (GET,
/// SET, INCR by 1), reopened after any error. The real-process tests use it too.
pub struct Redis {
    port: u16,
    timeout: Duration,
    con: Option<redis::Connection>,
}

impl Redis {
    /// A client of the Redis front end on 127.0.0.1:`port`; each operation times out after
    /// `timeout` (connecting, after 2 s).
    pub fn new(port: u16, timeout: Duration) -> Redis {
        Redis {
            port,
            timeout,
            con: None,
        }
    }

    /// Runs `op`; on any error the connection is dropped (the next call reconnects).
    pub fn call(&mut self, op: &KvOp<Vec<u8>, Vec<u8>>) -> Result<KvRet<Vec<u8>>, String> {
        let result = self.call_once(op);
        if result.is_err() {
            self.con = None;
        }
        result
    }

    fn connect(&self) -> Result<redis::Connection, String> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .map_err(|e| e.to_string())?;
        let con = client
            .get_connection_with_timeout(Duration::from_secs(2))
            .map_err(|e| e.to_string())?;
        con.set_read_timeout(Some(self.timeout))
            .map_err(|e| e.to_string())?;
        con.set_write_timeout(Some(self.timeout))
            .map_err(|e| e.to_string())?;
        Ok(con)
    }

    fn call_once(&mut self, op: &KvOp<Vec<u8>, Vec<u8>>) -> Result<KvRet<Vec<u8>>, String> {
        let con = match &mut self.con {
            Some(con) => con,
            None => self.con.insert(self.connect()?),
        };
        let e = |e: redis::RedisError| e.to_string();
        Ok(match op {
            KvOp::Get { key } => KvRet::Value(
                redis::cmd("GET")
                    .arg(key)
                    .query::<Option<Vec<u8>>>(con)
                    .map_err(e)?,
            ),
            KvOp::Set { key, value } => {
                let answer = redis::cmd("SET")
                    .arg(key)
                    .arg(value)
                    .query::<String>(con)
                    .map_err(e)?;
                if answer != "OK" {
                    return Err(format!("SET answered {answer:?}"));
                }
                KvRet::Ok
            }
            KvOp::Increment { key, delta: 1 } => {
                KvRet::Int(redis::cmd("INCR").arg(key).query::<i64>(con).map_err(e)?)
            }
            other => return Err(format!("not a GET, SET or INCR by 1: {other:?}")),
        })
    }
}

/// The operation client `client` issues `n`-th: 40% SET, 35% GET of a register, 20% INCR and
/// 5% GET of the counter.
fn operation(client: u64, n: u64) -> KvOp<Vec<u8>, Vec<u8>> {
    let register = REGISTERS[((n + client) % REGISTERS.len() as u64) as usize];
    match (n * 7 + client * 13) % 20 {
        0..=7 => KvOp::set(register.as_bytes(), format!("c{client}-{n}").into_bytes()),
        8..=14 => KvOp::get(register.as_bytes()),
        15..=18 => KvOp::increment(COUNTER.as_bytes(), 1),
        _ => KvOp::get(COUNTER.as_bytes()),
    }
}

/// The client threads.
pub struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    last_error: Arc<Mutex<Option<String>>>,
}

impl Load {
    pub fn start(recorder: &Recorder, port: u16, clients: u64) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let last_error = Arc::new(Mutex::new(None));
        let threads = (0..clients)
            .map(|client| {
                let (recorder, stop, last_error) =
                    (recorder.clone(), stop.clone(), last_error.clone());
                std::thread::spawn(move || {
                    let mut redis = Redis::new(port, OP_TIMEOUT);
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        if let Err(e) = recorder.run(client, operation(client, n), &mut redis) {
                            *last_error.lock().unwrap() = Some(e);
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                })
            })
            .collect();
        Load {
            stop,
            threads,
            last_error,
        }
    }

    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().unwrap().clone()
    }

    /// Stops the clients (each finishes its call in progress) and joins them.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Reads every key once more, retrying until `timeout`, so that a lost write shows up as a
/// stale final read in the history. Client id `client` must not be one of the load's.
pub fn final_reads(
    recorder: &Recorder,
    port: u16,
    client: u64,
    timeout: Duration,
) -> Result<(), String> {
    let start = Instant::now();
    let mut redis = Redis::new(port, OP_TIMEOUT);
    for key in REGISTERS.iter().chain([&COUNTER]) {
        loop {
            match recorder.run(client, KvOp::get(key.as_bytes()), &mut redis) {
                Ok(()) => break,
                Err(e) if start.elapsed() > timeout => {
                    return Err(format!("the final read of {key} failed: {e}"))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }
    Ok(())
}
