#!/usr/bin/env python3
"""Fails if two files of one crate import each other (issue 36: every file of a crate depends
one way). A file's imports are the `crate::a::b` paths in its code (comments and the test module
at its end left out), resolved to the file defining the deepest module named; the crate root
(lib.rs, main.rs), which declares every module, is left out."""
import collections, glob, os, re, sys

def module_files(src):
    files = {}
    for f in glob.glob(src + "/**/*.rs", recursive=True):
        rel = os.path.relpath(f, src)[:-3].split(os.sep)
        if rel[-1] == "mod":
            rel = rel[:-1]
        if rel in (["lib"], ["main"]) or rel[0] in ("bin", "tests"):
            continue
        files[tuple(rel)] = f
    return files

def code(path):
    text = open(path).read()
    text = re.split(r"#\[cfg\(test\)\]\s*mod tests\s*\{", text)[0]
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))

def imports(text, files):
    found = set()
    paths = re.findall(r"crate::((?:\w+::)*\w+)", text)
    for group_prefix, group in re.findall(r"crate::((?:\w+::)*)\{([^}]*)\}", text):
        paths += [group_prefix + x for x in re.findall(r"\w+", group)]
    for p in paths:
        parts = tuple(x for x in p.split("::") if x)
        for n in range(len(parts), 0, -1):
            if parts[:n] in files:
                found.add(parts[:n])
                break
    return found

cycles = []
for src in sorted(glob.glob("crates/*/src") + glob.glob("examples/*/src")):
    files = module_files(src)
    deps = {m: imports(code(f), files) - {m} for m, f in files.items()}
    for a in deps:
        for b in deps[a]:
            if a < b and a in deps.get(b, ()):
                cycles.append(f"{src}: {'::'.join(a)} <-> {'::'.join(b)}")
for c in cycles:
    print("import cycle:", c)
sys.exit(1 if cycles else 0)
