#!/usr/bin/env python3
"""Soak sweeps: the simulator's seed ranges far past what CI runs, for every shape and application.

CI runs a few hundred seeds per shape (`.ci/run`); this runs as many as you ask for, in chunks,
resumably: each chunk's result is appended to `<out>/chunks.tsv`, so running the same command
again (after a reboot, or to extend `--seeds`) carries on where it stopped. Every failing seed is
written to `<out>/failures.txt` with the command that replays it, and the summary table (shape,
application, seeds, violations, slowest settled operation, seeds per second) to
`<out>/summary.md` and stdout.

    python3 scripts/soak.py --seeds 100000                  # everything (hours: run it in the
                                                            # background, e.g. under nohup)
    python3 scripts/soak.py --seeds 5000 --only kv:1:1 coord:2:1
    python3 scripts/soak.py --summary                       # the table so far

It uses `target/release/plumb` (`cargo build --release -p plumb`), or `--plumb`.
"""

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# (application as `plumb sim` takes it, u, r): kv at every shape CI runs, the others at (1,1)
# and (2,1). `partial`, `redis-partial` and `coord-partial` are kv, redis and coord on replicas
# holding part of the state (`--partial`).
SHAPES = [("kv", 1, 0), ("kv", 1, 1), ("kv", 2, 1), ("kv", 0, 1)] + [
    (app, u, r)
    for app in [
        "redis",
        "coord",
        "bank",
        "spec",
        "sketcher",
        "partial",
        "redis-partial",
        "coord-partial",
    ]
    for (u, r) in [(1, 1), (2, 1)]
]

RUNS = re.compile(r"^sim: (\d+) runs, (\d+) violations$")
SLOWEST = re.compile(r"^slowest operation .*: ([0-9.]+) s \(seed (\d+)\)$")
ELAPSED = re.compile(r"^elapsed ([0-9.]+) s")
FAILING = re.compile(r"^seed \d+ \(u=\d+ r=\d+\): ")


def app_args(app):
    if app == "sketcher":
        return ["--sketcher"]
    if app == "partial":
        return ["--partial"]
    if app.endswith("-partial"):
        return ["--app", app.removesuffix("-partial"), "--partial"]
    return ["--app", app]


def key(app, u, r):
    return f"{app}:{u}:{r}"


def load_chunks(path):
    """{shape key: [(start, seeds, violations, slowest, slowest_seed, seconds)]}"""
    chunks = {}
    if path.exists():
        for line in path.read_text().splitlines():
            k, start, seeds, violations, slowest, slowest_seed, seconds = line.split("\t")
            chunks.setdefault(k, []).append(
                (int(start), int(seeds), int(violations), float(slowest), int(slowest_seed), float(seconds)))
    return chunks


def run_chunk(plumb, app, u, r, start, seeds, jobs, failures):
    cmd = [str(plumb), "sim", *app_args(app), "--u", str(u), "--r", str(r), "--start", str(start),
           "--seeds", str(seeds), "--jobs", str(jobs)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    runs = violations = None
    slowest, slowest_seed, seconds = 0.0, 0, 0.0
    with open(failures, "a") as f:
        for line in proc.stdout.splitlines():
            if FAILING.match(line) or line.startswith("sim: ") and "undecided" in line:
                f.write(f"{key(app, u, r)}\t{line}\n")
            if m := RUNS.match(line):
                runs, violations = int(m.group(1)), int(m.group(2))
            if m := SLOWEST.match(line):
                slowest, slowest_seed = float(m.group(1)), int(m.group(2))
            if m := ELAPSED.match(line):
                seconds = float(m.group(1))
    if runs != seeds:
        # The sweep itself broke (a crash of the simulator, not a violation): say so and stop.
        sys.exit(f"soak: {' '.join(cmd)} ran {runs} of {seeds} seeds (exit {proc.returncode}):\n"
                 f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    # Undecided seeds fail the sweep without counting as violations: count them here.
    if proc.returncode != 0 and violations == 0:
        violations = sum(1 for l in proc.stdout.splitlines() if FAILING.match(l))
    return violations, slowest, slowest_seed, seconds


def summary(chunks, out):
    rows = ["| application | u | r | seeds | violations | slowest settled op | seeds/s |",
            "|---|---|---|---:|---:|---:|---:|"]
    for app, u, r in SHAPES:
        c = chunks.get(key(app, u, r), [])
        if not c:
            continue
        seeds = sum(x[1] for x in c)
        violations = sum(x[2] for x in c)
        slowest = max(c, key=lambda x: x[3])
        seconds = sum(x[5] for x in c)
        rate = seeds / seconds if seconds else 0.0
        rows.append(f"| {app} | {u} | {r} | {seeds} | {violations} | {slowest[3]:.3f} s (seed {slowest[4]}) | {rate:.1f} |")
    text = "\n".join(rows) + "\n"
    (out / "summary.md").write_text(text)
    print(text, end="")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10000, help="seeds per shape, from seed 0")
    ap.add_argument("--chunk", type=int, default=1000, help="seeds per plumb sim call")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", nargs="*", help="shapes as app:u:r (e.g. kv:1:1 sketcher:2:1)")
    ap.add_argument("--out", type=Path, default=REPO / "target" / "soak")
    ap.add_argument("--plumb", type=Path, default=REPO / "target" / "release" / "plumb")
    ap.add_argument("--summary", action="store_true", help="print the table so far and stop")
    a = ap.parse_args()

    a.out.mkdir(parents=True, exist_ok=True)
    chunks_file = a.out / "chunks.tsv"
    if a.summary:
        summary(load_chunks(chunks_file), a.out)
        return
    if not a.plumb.exists():
        sys.exit(f"soak: no plumb binary at {a.plumb}; run `cargo build --release -p plumb` first")
    shapes = [s for s in SHAPES if not a.only or key(*s) in a.only]
    unknown = set(a.only or []) - {key(*s) for s in SHAPES}
    if unknown:
        sys.exit(f"soak: unknown shapes {sorted(unknown)}; known: {[key(*s) for s in SHAPES]}")
    for app, u, r in shapes:
        done = sum(x[1] for x in load_chunks(chunks_file).get(key(app, u, r), []))
        while done < a.seeds:
            n = min(a.chunk, a.seeds - done)
            t0 = time.time()
            violations, slowest, slowest_seed, seconds = run_chunk(
                a.plumb, app, u, r, done, n, a.jobs, a.out / "failures.txt")
            with open(chunks_file, "a") as f:
                f.write(f"{key(app, u, r)}\t{done}\t{n}\t{violations}\t{slowest}\t{slowest_seed}\t{seconds or time.time() - t0}\n")
            print(f"soak {key(app, u, r)}: seeds {done}..{done + n}: {violations} violations "
                  f"({time.time() - t0:.0f} s)", flush=True)
            done += n
    summary(load_chunks(chunks_file), a.out)


if __name__ == "__main__":
    main()
