"""Transactions and pipelines through plumb's gateway with redis-py, a client library
nobody on the project wrote. Run by crates/plumb/tests/redis_transactions.rs:

    python3 transactions.py PORT

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
print("redis-py transactions and pipelines: all replies as Redis gives them")
