"""Transactions, pipelines and blocking queues through plumb's gateway with redis-py, a
client library nobody on the project wrote. Run by crates/plumb/tests/redis_clients.rs:

    python3 clients.py PORT

Exits non-zero (an AssertionError or a redis error) on any wrong reply.
"""

import sys
import threading
import time

import redis

port = int(sys.argv[1])
r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=20)

# A transaction pipeline: MULTI, the commands, EXEC in one write; replies per command.
r.delete("py:tx", "py:list")
with r.pipeline(transaction=True) as p:
    p.incr("py:tx").rpush("py:list", "a", "b").lrange("py:list", 0, -1).incr("py:tx")
    assert p.execute() == [1, 2, [b"a", b"b"], 2], "transaction replies"

# An error inside EXEC is that command's reply; the others still ran (Redis semantics).
with r.pipeline(transaction=True) as p:
    p.set("py:s", "x").incr("py:s").set("py:t", "y")
    replies = p.execute(raise_on_error=False)
    assert replies[0] is True and isinstance(replies[1], redis.ResponseError), replies
    assert r.get("py:t") == b"y"

# Optimistic locking: concurrent read-modify-write under WATCH loses no update.
r.set("py:counter", 0)
THREADS, EACH = 4, 25
retries = [0]


def bump(times):
    me = redis.Redis(host="127.0.0.1", port=port, socket_timeout=20)
    for _ in range(times):
        def body(pipe):
            value = int(pipe.get("py:counter"))
            pipe.multi()
            pipe.set("py:counter", value + 1)
        me.transaction(body, "py:counter")


threads = [threading.Thread(target=bump, args=(EACH,)) for _ in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert int(r.get("py:counter")) == THREADS * EACH, r.get("py:counter")

# A plain pipeline of 1000 INCRs against the same INCRs one by one.
N = 1000
r.delete("py:p", "py:q")
started = time.monotonic()
with r.pipeline(transaction=False) as p:
    for _ in range(N):
        p.incr("py:p")
    assert p.execute() == list(range(1, N + 1)), "pipelined INCR replies in order"
pipelined = time.monotonic() - started
started = time.monotonic()
for i in range(N):
    assert r.incr("py:q") == i + 1
one_by_one = time.monotonic() - started
print(
    f"redis-py: {N} INCRs pipelined {pipelined:.3f} s, one by one {one_by_one:.3f} s "
    f"({one_by_one / pipelined:.1f}x)"
)

# A job queue: consumers block in BLPOP on an empty list before the producers start; every
# job is taken exactly once, and each producer's jobs reach a consumer in the order pushed
# whenever one consumer takes two of them.
PRODUCERS, CONSUMERS, JOBS = 3, 3, 40
r.delete("py:jobs", "py:done")
taken = [[] for _ in range(CONSUMERS)]


def consume(me):
    c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30)
    while True:
        got = c.blpop(["py:other", "py:jobs"], timeout=5)
        if got is None:
            return
        key, job = got
        assert key == b"py:jobs", got
        if job == b"stop":
            return
        taken[me].append(job.decode())


def produce(me):
    p = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30)
    for n in range(JOBS):
        p.rpush("py:jobs", f"{me}:{n}")


consumers = [threading.Thread(target=consume, args=(i,)) for i in range(CONSUMERS)]
for t in consumers:
    t.start()
time.sleep(0.5)
assert int(r.info("clients")["blocked_clients"]) == CONSUMERS, r.info("clients")
started = time.monotonic()
producers = [threading.Thread(target=produce, args=(i,)) for i in range(PRODUCERS)]
for t in producers:
    t.start()
for t in producers:
    t.join()
r.rpush("py:jobs", *["stop"] * CONSUMERS)
for t in consumers:
    t.join()
elapsed = time.monotonic() - started
everything = sorted(job for jobs in taken for job in jobs)
expected = sorted(f"{p}:{n}" for p in range(PRODUCERS) for n in range(JOBS))
assert everything == expected, (len(everything), len(expected))
for jobs in taken:
    for p in range(PRODUCERS):
        mine = [int(j.split(":")[1]) for j in jobs if j.startswith(f"{p}:")]
        assert mine == sorted(mine), (p, mine)
print(
    f"redis-py queue: {PRODUCERS * JOBS} jobs from {PRODUCERS} producers to {CONSUMERS} "
    f"blocked consumers, each exactly once, in {elapsed:.2f} s "
    f"(taken {[len(t) for t in taken]})"
)

# BRPOPLPUSH as a reliable queue step, and a timeout.
r.delete("py:src", "py:work")
assert r.brpoplpush("py:src", "py:work", timeout=0.2) is None
r.rpush("py:src", "job")
assert r.brpoplpush("py:src", "py:work", timeout=1) == b"job"
assert r.lrange("py:work", 0, -1) == [b"job"]

# SCAN over 10 000 keys, written through a pipeline: each key exactly once, in steps.
with r.pipeline(transaction=False) as p:
    for i in range(10_000):
        p.set(f"scan:{i}", i)
    p.execute()
seen = {}
steps = 0
cursor = 0
while True:
    cursor, keys = r.scan(cursor=cursor, match="scan:*", count=500)
    steps += 1
    for k in keys:
        seen[k] = seen.get(k, 0) + 1
    if cursor == 0:
        break
assert len(seen) == 10_000 and set(seen.values()) == {1}, (len(seen), set(seen.values()))
assert steps > 10, steps
assert sorted(r.sscan_iter("py:none")) == []
r.hset("py:h", mapping={"a": 1, "b": 2})
assert dict(r.hscan_iter("py:h")) == {b"a": b"1", b"b": b"2"}
print(f"redis-py SCAN: 10000 keys, each exactly once, in {steps} steps")
print("redis-py transactions, pipelines, blocking queues and scans: all replies as Redis gives them")
