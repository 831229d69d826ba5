"""Redis Lua scripts through plumb's gateway with redis-py: a lock (SET NX PX, then a
compare-and-delete script through register_script, which sends EVALSHA and falls back to
SCRIPT LOAD on NOSCRIPT), used by several threads around a read-modify-write."""

import sys
import threading
import uuid

import redis

port = int(sys.argv[1])
r = redis.Redis(port=port, socket_timeout=30)

UNLOCK = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
else
  return 0
end
"""

# EVAL, and the error shapes redis-py turns into exceptions.
assert r.eval("return redis.call('incr', KEYS[1])", 1, "py:n") == 1
assert r.eval("return {KEYS[1], ARGV[1], 3.7, true, false}", 1, "k", "v") == [b"k", b"v", 3, 1, None]
try:
    r.eval("return redis.call('nosuch')", 0)
    raise AssertionError("redis.call of an unknown command must fail")
except redis.exceptions.ResponseError as e:
    assert "Unknown Redis command called from script" in str(e), e

# EVALSHA of a script this gateway never saw: NOSCRIPT, which register_script handles.
r.script_flush()
unlock = r.register_script(UNLOCK)
assert r.script_exists(unlock.sha) == [False]
assert r.set("py:lock", "mine", nx=True, px=10000)
assert unlock(keys=["py:lock"], args=["not-mine"]) == 0
assert unlock(keys=["py:lock"], args=["mine"]) == 1
assert r.script_exists(unlock.sha) == [True]
assert r.get("py:lock") is None

# The lock around a read-modify-write that is not atomic by itself: no update is lost.
r.set("py:counter", 0)
THREADS, EACH = 4, 10


def worker():
    con = redis.Redis(port=port, socket_timeout=30)
    release = con.register_script(UNLOCK)
    for _ in range(EACH):
        token = uuid.uuid4().hex
        while not con.set("py:lock", token, nx=True, px=30000):
            pass
        value = int(con.get("py:counter"))
        con.set("py:counter", value + 1)
        assert release(keys=["py:lock"], args=[token]) == 1


threads = [threading.Thread(target=worker) for _ in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert int(r.get("py:counter")) == THREADS * EACH, r.get("py:counter")

# A script inside a transaction.
pipe = r.pipeline(transaction=True)
pipe.eval("return redis.call('incrby', KEYS[1], ARGV[1])", 1, "py:n", 10)
pipe.get("py:n")
assert pipe.execute() == [11, b"11"]
print(f"redis-py scripts: lock held {THREADS * EACH} times by {THREADS} threads, no update lost")
