"""kazoo (an unmodified ZooKeeper client library) against plumb's ZooKeeper front end: the basic
calls, watches, transactions, and kazoo's recipes Lock, Election, Barrier, Counter, Queue and
Party. Usage: recipes.py PORT. Exits nonzero on the first failure."""

import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
)
from kazoo.protocol.states import EventType

PORT = sys.argv[1]
HOSTS = f"127.0.0.1:{PORT}"


def client():
    zk = KazooClient(hosts=HOSTS, timeout=20)
    zk.start(timeout=20)
    return zk


def step(name):
    print(f"kazoo: {name}", flush=True)


def basics(zk):
    step("create/get/set/exists/children/delete")
    zk.ensure_path("/kz/basic")
    zk.create("/kz/basic/a", b"one")
    data, stat = zk.get("/kz/basic/a")
    assert data == b"one" and stat.version == 0, (data, stat)
    stat = zk.set("/kz/basic/a", b"two")
    assert stat.version == 1, stat
    try:
        zk.set("/kz/basic/a", b"x", version=0)
        raise AssertionError("a stale version was accepted")
    except BadVersionError:
        pass
    try:
        zk.create("/kz/basic/a", b"")
        raise AssertionError("created twice")
    except NodeExistsError:
        pass
    assert zk.exists("/kz/basic/none") is None
    try:
        zk.get("/kz/basic/none")
        raise AssertionError("read a missing node")
    except NoNodeError:
        pass
    seq = zk.create("/kz/basic/s-", b"", sequence=True)
    assert seq.startswith("/kz/basic/s-") and len(seq) == len("/kz/basic/s-") + 10, seq
    eph = zk.create("/kz/basic/e", b"", ephemeral=True)
    assert zk.exists(eph).ephemeralOwner == zk.client_id[0]
    assert sorted(zk.get_children("/kz/basic")) == sorted(["a", "e", seq.rsplit("/", 1)[1]])
    try:
        zk.delete("/kz/basic")
        raise AssertionError("deleted a node with children")
    except NotEmptyError:
        pass
    zk.delete("/kz/basic", recursive=True)
    assert zk.exists("/kz/basic") is None
    zk.sync("/kz")


def watches(zk):
    step("watches")
    zk.ensure_path("/kz/w")
    fired = []
    got = threading.Event()

    def on_data(event):
        fired.append(event)
        got.set()

    zk.get("/kz/w", watch=on_data)
    zk.set("/kz/w", b"changed")
    assert got.wait(10), "the data watch did not fire"
    assert fired[0].type == EventType.CHANGED and fired[0].path == "/kz/w", fired
    children = []
    kid = threading.Event()

    @zk.ChildrenWatch("/kz/w")
    def on_children(names):
        children.append(sorted(names))
        if names:
            kid.set()

    zk.create("/kz/w/c", b"")
    assert kid.wait(10), "the children watch did not fire"
    assert children[-1] == ["c"], children
    created = threading.Event()
    zk.exists("/kz/w/later", watch=lambda e: created.set())
    zk.create("/kz/w/later", b"")
    assert created.wait(10), "the exists watch did not fire on creation"


def transactions(zk):
    step("transactions (multi)")
    zk.ensure_path("/kz/tx")
    t = zk.transaction()
    t.create("/kz/tx/a", b"1")
    t.check("/kz/tx", 0)
    t.set_data("/kz/tx", b"v")
    results = t.commit()
    assert results[0] == "/kz/tx/a" and results[1] is True, results
    t = zk.transaction()
    t.create("/kz/tx/b", b"")
    t.delete("/kz/tx/missing")
    results = t.commit()
    assert isinstance(results[0], RolledBackError), results
    assert isinstance(results[1], NoNodeError), results
    assert zk.exists("/kz/tx/b") is None


def lock():
    step("Lock")
    a, b = client(), client()
    la, lb = a.Lock("/kz/lock", "a"), b.Lock("/kz/lock", "b")
    assert la.acquire(timeout=10)
    assert not lb.acquire(blocking=False)
    order = []

    def waiter():
        with lb:
            order.append("b")

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.5)
    order.append("a")
    la.release()
    t.join(20)
    assert order == ["a", "b"], order
    a.stop()
    b.stop()


def election():
    step("Election")
    a, b = client(), client()
    won = []
    ea = a.Election("/kz/election", "a")
    eb = b.Election("/kz/election", "b")
    ready = threading.Event()

    def lead_a():
        won.append("a")
        ready.set()
        time.sleep(1)

    def lead_b():
        won.append("b")

    ta = threading.Thread(target=ea.run, args=(lead_a,))
    ta.start()
    assert ready.wait(10)
    tb = threading.Thread(target=eb.run, args=(lead_b,))
    tb.start()
    assert sorted(eb.contenders()) == ["a", "b"], eb.contenders()
    ta.join(20)
    tb.join(20)
    assert won == ["a", "b"], won
    a.stop()
    b.stop()


def barrier():
    step("Barrier and DoubleBarrier")
    a, b = client(), client()
    bar = a.Barrier("/kz/barrier")
    bar.create()
    passed = []
    t = threading.Thread(target=lambda: passed.append(b.Barrier("/kz/barrier").wait(20)))
    t.start()
    time.sleep(0.5)
    assert not passed
    bar.remove()
    t.join(20)
    assert passed == [True], passed
    results = []

    def member(zk, name):
        d = zk.DoubleBarrier("/kz/double", 2, identifier=name)
        d.enter()
        results.append(name)
        d.leave()

    ts = [threading.Thread(target=member, args=(zk, n)) for zk, n in ((a, "a"), (b, "b"))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert sorted(results) == ["a", "b"], results
    a.stop()
    b.stop()


def counter(zk):
    step("Counter")
    c = zk.Counter("/kz/counter")
    c += 5
    c -= 2
    assert c.value == 3, c.value
    other = client()
    c2 = other.Counter("/kz/counter")
    c2 += 10
    assert c.value == 13, c.value
    other.stop()


def queue(zk):
    step("Queue and LockingQueue")
    q = zk.Queue("/kz/queue")
    for item in (b"x", b"y", b"z"):
        q.put(item)
    assert len(q) == 3
    assert [q.get(), q.get(), q.get()] == [b"x", b"y", b"z"]
    assert q.get() is None
    lq = zk.LockingQueue("/kz/lqueue")
    lq.put(b"first", priority=10)
    lq.put(b"urgent", priority=1)
    assert lq.get(timeout=10) == b"urgent"
    assert lq.consume()
    assert lq.get(timeout=10) == b"first"
    assert lq.consume()


def party():
    step("Party and ShallowParty")
    a, b = client(), client()
    pa = a.Party("/kz/party", "a")
    pb = b.Party("/kz/party", "b")
    pa.join()
    pb.join()
    assert sorted(pa) == ["a", "b"], list(pa)
    assert len(pa) == 2
    pb.leave()
    assert list(pa) == ["a"], list(pa)
    sa = a.ShallowParty("/kz/shallow", "a")
    sa.join()
    assert list(sa) == ["a"]
    # A member whose session ends leaves the party: its node was ephemeral.
    pb.join()
    b.stop()
    b.close()
    assert list(pa) == ["a"], list(pa)
    a.stop()


def session_resume(zk):
    step("session resumed on a new connection")
    session_id, password = zk.client_id
    other = KazooClient(hosts=HOSTS, client_id=(session_id, password), timeout=20)
    other.start(timeout=20)
    assert other.client_id[0] == session_id
    other.stop()
    bad = KazooClient(hosts=HOSTS, client_id=(session_id, b"\0" * 16), timeout=5, connection_retry={"max_tries": 1})
    try:
        bad.start(timeout=5)
        raise AssertionError("resumed with a wrong password")
    except Exception:
        pass
    finally:
        bad.stop()


def main():
    zk = client()
    basics(zk)
    watches(zk)
    transactions(zk)
    counter(zk)
    queue(zk)
    lock()
    election()
    barrier()
    party()
    session_resume(zk)
    zk.stop()
    print("kazoo: all passed", flush=True)


if __name__ == "__main__":
    main()
