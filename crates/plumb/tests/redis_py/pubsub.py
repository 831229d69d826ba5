"""Pub/sub through plumb's gateway with redis-py: a subscriber on one connection, a publisher
on another. Usage: pubsub.py PORT. Exits non-zero on the first difference from Redis."""
import sys
import time

import redis

port = int(sys.argv[1])
pub = redis.Redis(port=port, socket_timeout=30)
sub = redis.Redis(port=port, socket_timeout=30).pubsub()


def next_message(timeout=20.0):
    """The next message (not a confirmation), or fail after `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = sub.get_message(ignore_subscribe_messages=True, timeout=1.0)
        if m is not None:
            return m
    raise AssertionError("no message within %.0f s" % timeout)


sub.subscribe("news")
confirm = sub.get_message(timeout=10)
assert confirm == {"type": "subscribe", "pattern": None, "channel": b"news", "data": 1}, confirm

n = pub.publish("news", "hello")
assert n == 1, n
m = next_message()
assert m == {"type": "message", "pattern": None, "channel": b"news", "data": b"hello"}, m

# Messages of one publisher arrive in publish order.
for i in range(5):
    assert pub.publish("news", "m%d" % i) == 1
got = [next_message()["data"] for _ in range(5)]
assert got == [b"m0", b"m1", b"m2", b"m3", b"m4"], got

sub.psubscribe("n*")
sub.get_message(timeout=10)
assert pub.pubsub_numpat() == 1
assert pub.pubsub_numsub("news", "none") == [(b"news", 1), (b"none", 0)]
assert pub.pubsub_channels() == [b"news"]
assert pub.publish("news", "both") == 2
first, second = next_message(), next_message()
assert first["type"] == "message" and first["data"] == b"both", first
assert second == {"type": "pmessage", "pattern": b"n*", "channel": b"news", "data": b"both"}, second
assert pub.publish("nothing-else", "p") == 1
m = next_message()
assert m["type"] == "pmessage" and m["channel"] == b"nothing-else", m

sub.unsubscribe("news")
sub.punsubscribe("n*")
# Wait for both confirmations: after them, the cluster has counted the unsubscriptions.
seen = []
deadline = time.time() + 20
while len(seen) < 2 and time.time() < deadline:
    c = sub.get_message(timeout=1.0)
    if c is not None:
        seen.append(c["type"])
assert seen == ["unsubscribe", "punsubscribe"], seen
n = pub.publish("news", "gone")
assert n == 0, n
assert pub.pubsub_channels() == []
sub.close()
print("redis-py pub/sub: ok")
