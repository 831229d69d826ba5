#!/usr/bin/env python3
"""Redis 7.0's own test suite against redis-server and against plumb, side by side.

Runs the units of Redis 7.0.15's test suite (Debian's source package `redis`) in their
external-server mode, first against a `redis-server` started here, then against a `plumb up`
cluster's gateway, and reports, per unit and in all, how many of the tests that pass on
redis-server also pass on plumb. The failing tests and their first error line go to
`<out>/plumb-failures.txt`, the raw logs to `<out>/<system>-<unit>.log`.

How the suite is run, the same for both systems:
- `--singledb`: the suite would otherwise `SELECT 9`;
- `--ignore-encoding`, `--ignore-digest`: the suite's switches for servers other than Redis
  itself (no `OBJECT ENCODING` listpack/hashtable checks, no `DEBUG DIGEST`);
- `--durable`: a test that raises an error (a command the server refuses outside an
  `assert_error`) counts as failed and the unit goes on, instead of ending the unit;
- redis-server in its default configuration: `DEBUG` is refused, so the tests that need it
  (`DEBUG RELOAD`, `DEBUG OBJECT`, `DEBUG SLEEP`) fail there and are not counted;
- `--tags -needs:repl`, and the tests that read the server's replication stream
  (`attach_to_replication_stream`) are skipped: they test Redis' master-replica protocol,
  which plumb does not speak (its replicas are its own protocol's);
- each unit runs in its own harness with a time limit, so a hang ends that unit only (its
  remaining tests count as failed).

Usage (as root on a fresh machine: it installs redis-server and tcl if missing and fetches the
suite with `apt-get source`):

    python3 scripts/redis_suite.py                      # both systems, the default units
    python3 scripts/redis_suite.py --units unit/type/incr --plumb-only
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERSION = "7.0.15"
DEFAULT_UNITS = [
    "unit/type/string",
    "unit/type/incr",
    "unit/type/hash",
    "unit/type/list",
    "unit/type/list-2",
    "unit/type/list-3",
    "unit/type/set",
    "unit/type/zset",
    "unit/expire",
    "unit/keyspace",
    "unit/info",
    "unit/protocol",
]
# The gate `--check-floors` (`.ci/run`) fails a run in which, in any unit, redis-server passes
# fewer tests than its floor below (then the harness is broken: a taken port, a missing tool,
# and the run must not read as 100%), or plumb fails a test redis-server passed that is not
# named in KNOWN_FAILURES or RACES. Naming them, rather than allowing a count, means a new
# failure fails the run even where a fix elsewhere in the unit would have made up the count.
# The floors are redis-server's measured passes less one for timing on a loaded machine.
REF_FLOORS = {
    "unit/type/string": 74,
    "unit/type/incr": 23,
    "unit/type/hash": 71,
    "unit/type/list": 214,
    "unit/type/list-2": 2,
    "unit/type/list-3": 11,
    "unit/type/set": 93,
    "unit/type/zset": 286,
    "unit/expire": 56,
    "unit/keyspace": 41,
    "unit/protocol": 16,
}
# What plumb does not do, each for the reason docs/redis.md ("Redis' own test suite") gives.
# One that passes is reported, to be taken off the list.
KNOWN_FAILURES = {
    "unit/type/string": {
        "trim on SET with big value": "runs only on a server whose INFO names jemalloc",
    },
    "unit/type/incr": {
        "INCR uses shared objects in the 0-9999 range": "OBJECT REFCOUNT is 1: no shared integers",
    },
    "unit/type/hash": {
        "Hash ziplist of various encodings": "no DUMP",
        "Hash ziplist of various encodings - sanitize dump": "no DUMP",
    },
    "unit/type/list": {
        "List ziplist of various encodings": "no DUMP",
        "List ziplist of various encodings - sanitize dump": "no DUMP",
        "BLPOP when result key is created by SORT..STORE": "no SORT",
        "BLMPOP_LEFT when result key is created by SORT..STORE": "no SORT",
        "BLPOP: with 0.001 timeout should not block indefinitely":
            "the SORT tests before it leave their callers blocked",
        "BLMPOP_LEFT when new key is moved into place":
            "a RENAME onto a key a pop waits on serves another element (not analysed)",
    },
    "unit/keyspace": {
        "COPY basic usage for stream": "no streams",
        "COPY basic usage for stream-cgroups": "no streams",
    },
}
# Tests that read the lists right after the push that wakes two chained blocked moves, and
# pass only if both waiters were served before that read. Redis serves them inside the push;
# plumb's waiters try again after the push is answered (docs/redis.md, "Blocking commands"),
# so the read races their retries and a loaded machine loses (CI run of 151124c: both failed
# together; the same binary on the unit alone passed them 3 times of 3). Counted neither way.
RACES = {
    "unit/type/list": {"Circular BRPOPLPUSH", "Linked LMOVEs"},
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
RESULT = re.compile(r"^\[(ok|err|exception|ignore|skip)\]: (.*?)(?: \(\d+ ms\))?$")


def log(msg):
    print(msg, flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, **kw)


def ensure_packages():
    missing = [p for p, probe in [("redis-server", "redis-server"), ("tcl", "tclsh")]
               if shutil.which(probe) is None]
    if missing:
        log(f"installing {' '.join(missing)}")
        sh("apt-get update -qq")
        sh(f"DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends {' '.join(missing)} >/dev/null")


def ensure_suite(root: Path) -> Path:
    """The unpacked Redis source tree (its tests/ are what we run), fetched if absent."""
    tree = root / f"redis-{VERSION}"
    if (tree / "tests" / "test_helper.tcl").exists():
        return tree
    root.mkdir(parents=True, exist_ok=True)
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    src = Path("/etc/apt/sources.list.d/plumb-deb-src.sources")
    if not src.exists() and sources.exists():
        # apt-get source needs the deb-src twin of the machine's own Debian sources.
        text = sources.read_text().replace("Types: deb\n", "Types: deb-src\n")
        src.write_text(text)
        sh("apt-get update -qq")
    log(f"fetching Redis {VERSION}'s sources (Debian's source package) into {root}")
    sh("apt-get source --download-only -qq redis", cwd=root, stderr=subprocess.DEVNULL)
    orig = root / f"redis_{VERSION}.orig.tar.gz"
    if not orig.exists():
        sys.exit(f"redis_suite: apt-get source did not bring {orig.name}; is Debian's redis still {VERSION}?")
    sh(f"tar xzf {orig.name}", cwd=root)
    return tree


def replication_stream_tests(tree: Path, unit: str):
    """Names of the tests in `unit` that read the replication stream."""
    names, current = [], None
    for line in (tree / "tests" / f"{unit}.tcl").read_text(errors="replace").splitlines():
        m = re.match(r'\s*test\s+[{"](.*?)[}"]\s', line)
        if m:
            current = m.group(1)
        if "attach_to_replication_stream" in line and current:
            names.append(current)
    return names


def run_unit(tree: Path, port: int, unit: str, out: Path, system: str, limit: int, resp3=True,
             suite_port=21111):
    """Run one unit against 127.0.0.1:port; returns {test name: (status, first error line)}.
    Without `resp3` the suite leaves out its RESP3 tests (`-resp3`, the suite's switch for a
    server without `HELLO 3`); they then count as not passed (`--no-resp3`: how plumb was
    measured before it spoke RESP3)."""
    tags = "-needs:repl" if resp3 else "-needs:repl -resp3"
    args = ["tclsh", "tests/test_helper.tcl", "--host", "127.0.0.1", "--port", str(port),
            "--singledb", "--durable", "--ignore-encoding", "--ignore-digest", "--clients", "1",
            "--tags", tags, "--single", unit,
            # The harness listens on the 32 ports below this one: another run beside this
            # one needs its own.
            "--baseport", str(suite_port)]
    for name in replication_stream_tests(tree, unit):
        args += ["--skiptest", name]
    logfile = out / f"{system}-{unit.replace('/', '_')}.log"
    with open(logfile, "w") as f:
        proc = subprocess.Popen(args, cwd=tree, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=limit)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            timed_out = True
    results, last = {}, None
    lines = ANSI.sub("", logfile.read_text(errors="replace")).splitlines()
    for i, line in enumerate(lines):
        m = RESULT.match(line)
        if not m:
            continue
        status, name = m.groups()
        detail = ""
        if status == "err":
            # "[err]: name in tests/unit/x.tcl" then the message on the next line.
            name = re.sub(r" in tests/\S+$", "", name)
            detail = lines[i + 1].strip() if i + 1 < len(lines) else ""
        results[name] = (status, detail)
        last = name
    if timed_out:
        results["(unit timed out)"] = ("err", f"after {limit} s; last finished test: {last}")
    return results


def wait_port(port, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        r = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True)
        if r.stdout.strip() == "PONG":
            return True
        time.sleep(0.2)
    return False


class RedisServer:
    def __init__(self, port, out):
        self.port, self.out = port, out

    def __enter__(self):
        # An empty directory each time: a unit that turned saving on leaves a dump.rdb the
        # next server would load.
        shutil.rmtree(self.out, ignore_errors=True)
        self.out.mkdir(parents=True)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", str(self.out)],
            stdout=open(self.out / "redis-server.log", "w"), stderr=subprocess.STDOUT)
        if not wait_port(self.port):
            sys.exit("redis_suite: redis-server did not answer PING")
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait()


class PlumbUp:
    def __init__(self, binary, port, base_port, out, u, r, cluster_dir):
        self.binary, self.port, self.base_port, self.out, self.u, self.r = binary, port, base_port, out, u, r
        self.cluster_dir = cluster_dir

    def __enter__(self):
        d = self.cluster_dir
        shutil.rmtree(d, ignore_errors=True)
        self.proc = subprocess.Popen(
            [str(self.binary), "up", "--dir", str(d), "--base-port", str(self.base_port),
             "--resp-port", str(self.port), "--u", str(self.u), "--r", str(self.r)],
            stdout=open(self.out / "plumb-up.log", "w"), stderr=subprocess.STDOUT,
            start_new_session=True)
        if not wait_port(self.port, 120):
            sys.exit(f"redis_suite: plumb up did not answer PING (see {self.out / 'plumb-up.log'})")
        return self

    def __exit__(self, *exc):
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
        shutil.rmtree(self.cluster_dir, ignore_errors=True)


def passed(results):
    return {n for n, (s, _) in results.items() if s == "ok"}


def gate(redis, plumb, units):
    """What fails `--check-floors` on plumb's side: a test redis-server passed that plumb did
    not, unless KNOWN_FAILURES or RACES name it. Logs the races lost and the known failures
    that passed."""
    failed = []
    for unit in units:
        if unit not in redis:
            continue
        known = KNOWN_FAILURES.get(unit, {})
        races = RACES.get(unit, set())
        ours = passed(plumb[unit])
        for name in sorted(passed(redis[unit]) - ours):
            if name in races:
                log(f"redis_suite: {unit}: lost the race in {name!r} (RACES)")
            elif name not in known:
                status, detail = plumb[unit].get(name, ("not run", ""))
                failed.append(f"{unit}: plumb failed {name!r} ({status}: {detail[:120]}); "
                              f"redis-server passed it")
        for name in sorted(ours & set(known)):
            log(f"redis_suite: {unit}: {name!r} passes now: take it off KNOWN_FAILURES")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--units", nargs="*", default=DEFAULT_UNITS)
    ap.add_argument("--out", type=Path, default=REPO / "target" / "redis-suite" / "run")
    ap.add_argument("--suite-dir", type=Path, default=REPO / "target" / "redis-suite")
    ap.add_argument("--plumb", type=Path, default=REPO / "target" / "release" / "plumb")
    ap.add_argument("--u", type=int, default=1)
    ap.add_argument("--r", type=int, default=1)
    ap.add_argument("--redis-port", type=int, default=26379)
    ap.add_argument("--plumb-port", type=int, default=26380)
    ap.add_argument("--base-port", type=int, default=26400)
    ap.add_argument("--unit-timeout", type=int, default=300, help="seconds a unit may run")
    ap.add_argument("--plumb-only", action="store_true",
                    help="skip redis-server: report plumb's passes over all tests it ran")
    ap.add_argument("--reuse-baseline", action="store_true",
                    help="take redis-server's passes from the last run's baseline file, for "
                         "the units it has, if it was made by this redis-server version")
    ap.add_argument("--cluster-dir", type=Path, default=None,
                    help="where plumb's cluster keeps its data (default <out>/cluster); CI "
                         "puts it on tmpfs: the suite checks Redis semantics, not the disk, "
                         "and a 2-core VM's syncs take half its time")
    ap.add_argument("--min-percent", type=float, default=0.0,
                    help="exit non-zero if plumb passes less than this share")
    ap.add_argument("--check-floors", action="store_true",
                    help="exit non-zero if, in any unit, redis-server passes fewer tests than "
                         "its floor (REF_FLOORS in this script), or plumb fails a test "
                         "redis-server passed that KNOWN_FAILURES or RACES does not name")
    ap.add_argument("--suite-port", type=int, default=21111,
                    help="the suite harness' --baseport (it listens just below it); give "
                         "two runs on one machine different ones")
    ap.add_argument("--no-resp3", action="store_true",
                    help="leave the suite's RESP3 tests out of plumb's run (tag -resp3); "
                         "they then count as failed")
    a = ap.parse_args()

    ensure_packages()
    tree = ensure_suite(a.suite_dir)
    a.out.mkdir(parents=True, exist_ok=True)
    if not a.plumb.exists():
        sys.exit(f"redis_suite: no plumb binary at {a.plumb}; run `cargo build --release -p plumb` first")

    redis = {}
    baseline = a.suite_dir / f"redis-{VERSION}-passes.json"
    server = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip()
    saved = json.loads(baseline.read_text()) if baseline.exists() else {}
    if saved.get("server") != server:
        saved = {"server": server, "units": {}}
    if a.reuse_baseline and saved["units"]:
        redis = {u: {n: ("ok", "") for n in names}
                 for u, names in saved["units"].items() if u in a.units}
        log(f"redis-server's passes for {len(redis)} units from {baseline} ({server})")
    if not a.plumb_only:
        for unit in a.units:
            if unit in redis:
                continue
            # A fresh server per unit: a unit's CONFIG SETs (appendonly, proto-max-bulk-len)
            # would change what the next one sees.
            with RedisServer(a.redis_port, a.out / "redis-server"):
                t0 = time.time()
                redis[unit] = run_unit(tree, a.redis_port, unit, a.out, "redis", a.unit_timeout,
                                       suite_port=a.suite_port)
                log(f"redis-server {unit}: {len(passed(redis[unit]))} passed ({time.time() - t0:.0f} s)")
        # Only a run that met every floor is kept to be reused: a broken harness is not.
        short = [u for u in a.units if u in REF_FLOORS and len(passed(redis[u])) < REF_FLOORS[u]]
        if not short:
            saved["units"].update({u: sorted(passed(r)) for u, r in redis.items()})
            baseline.write_text(json.dumps(saved))
    plumb = {}
    cluster_dir = a.cluster_dir or a.out / "cluster"
    with PlumbUp(a.plumb, a.plumb_port, a.base_port, a.out, a.u, a.r, cluster_dir):
        for unit in a.units:
            t0 = time.time()
            # The suite's RESP3 tests (HELLO 3) run too, unless --no-resp3.
            plumb[unit] = run_unit(tree, a.plumb_port, unit, a.out, "plumb", a.unit_timeout,
                                   resp3=not a.no_resp3, suite_port=a.suite_port)
            log(f"plumb {unit}: {len(passed(plumb[unit]))} passed ({time.time() - t0:.0f} s)")
            if "(unit timed out)" in plumb[unit]:
                # The tests after the one that hung did not run: they count as failed.
                log(f"plumb {unit} timed out: {plumb[unit]['(unit timed out)'][1]}")

    total_ref = total_both = 0
    rows = []
    with open(a.out / "plumb-failures.txt", "w") as fails:
        for unit in a.units:
            ref = passed(redis[unit]) if unit in redis else set(plumb[unit]) - {"(unit timed out)"}
            ours = passed(plumb[unit])
            both = ref & ours
            total_ref += len(ref)
            total_both += len(both)
            rows.append((unit, len(ref), len(both)))
            for name in sorted(ref - ours):
                status, detail = plumb[unit].get(name, ("not run", ""))
                fails.write(f"{unit}\t{name}\t{status}\t{detail}\n")
            if "(unit timed out)" in plumb[unit]:
                fails.write(f"{unit}\t(unit timed out)\terr\t{plumb[unit]['(unit timed out)'][1]}\n")
    base = "redis-server" if redis else "plumb ran"
    log(f"\nRedis {VERSION} test suite, external-server mode, plumb u={a.u} r={a.r}")
    log(f"{'unit':<20} {base:>14} {'plumb passes':>13} {'share':>7}")
    for unit, ref, both in rows:
        share = 100.0 * both / ref if ref else 100.0
        log(f"{unit.replace('unit/', ''):<20} {ref:>14} {both:>13} {share:>6.1f}%")
    share = 100.0 * total_both / total_ref if total_ref else 100.0
    log(f"{'all':<20} {total_ref:>14} {total_both:>13} {share:>6.1f}%")
    log(f"failures: {a.out / 'plumb-failures.txt'}")
    failed = []
    if total_ref == 0:
        failed.append("no test passed on the reference: nothing was compared")
    if share < a.min_percent:
        failed.append(f"{share:.1f}% is under the required {a.min_percent}%")
    if a.check_floors:
        if not redis:
            failed.append("--check-floors needs redis-server's run (not --plumb-only)")
        for unit, ref, _ in rows:
            if unit not in REF_FLOORS:
                failed.append(f"{unit} has no floor in REF_FLOORS")
            elif ref < REF_FLOORS[unit]:
                failed.append(f"{unit}: redis-server passed {ref} tests, expected at least "
                              f"{REF_FLOORS[unit]} (is the harness broken? see {a.out})")
        failed += gate(redis, plumb, a.units)
    for f in failed:
        log(f"redis_suite: {f}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
