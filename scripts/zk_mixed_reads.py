#!/usr/bin/env python3
"""Reads under writes through a ZooKeeper server or plumb's ZooKeeper gateway (kazoo).

WRITERS sessions each set 1 KiB on a node of their own while READERS sessions each read one
other node, for SECONDS; prints how many of each completed. Against plumb, compare the
gateway's read-only-accepted and read-only-mismatch counters (its /metrics) before and after
to see how many reads the read-only path answered (docs/performance.md, "Reads under writes").

    python3 scripts/zk_mixed_reads.py 127.0.0.1:2181 [SECONDS] [WRITERS] [READERS]
"""
import sys
import threading
import time

from kazoo.client import KazooClient


def main():
    host = sys.argv[1]
    given = sys.argv[2:5]
    args = given + ["12", "4", "8"][len(given):]
    seconds, writers, readers = float(args[0]), int(args[1]), int(args[2])
    stop = time.time() + seconds
    done = {"reads": 0, "writes": 0}
    lock = threading.Lock()

    def count(kind):
        with lock:
            done[kind] += 1

    def writer(i):
        z = KazooClient(host)
        z.start()
        path = f"/mixed-w{i}"
        z.ensure_path(path)
        while time.time() < stop:
            z.set(path, b"x" * 1024)
            count("writes")
        z.stop()

    def reader(_):
        z = KazooClient(host)
        z.start()
        z.ensure_path("/mixed-r")
        while time.time() < stop:
            z.get("/mixed-r")
            count("reads")
        z.stop()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    threads += [threading.Thread(target=reader, args=(i,)) for i in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{done['reads']} reads, {done['writes']} writes in {seconds:g} s")


if __name__ == "__main__":
    main()
