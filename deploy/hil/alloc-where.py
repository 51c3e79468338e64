#!/usr/bin/env python3
"""Places the call stacks the allocation counter kept (alloc-count.c, ALLOC_COUNT_TRACE) with the
traced process's /proc/PID/maps: library + offset, and the nearest symbol (addr2line for the
binary's own debug symbols, the dynamic symbol table otherwise), demangled.
Usage: alloc-where.py COUNTS MAPS [ROOT_PREFIX [PATTERN]]   (prefix: where the process's root is
on this host). With PATTERN (a regular expression), ends with "samples N matching M": how many stacks name it."""
import bisect, re, subprocess, sys

counts, maps = sys.argv[1], sys.argv[2]
prefix = sys.argv[3] if len(sys.argv) > 3 else ""
pattern = sys.argv[4] if len(sys.argv) > 4 else None
regions = []
for line in open(maps):
    f = line.split()
    if len(f) < 6 or not f[5].startswith("/"):
        continue
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    regions.append((lo, hi, int(f[2], 16), f[5]))
regions.sort()
symbols = {}

def dynamic(path):
    if path not in symbols:
        out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True).stdout
        table = sorted((int(x.split()[0], 16), x.split()[2]) for x in out.splitlines() if len(x.split()) == 3)
        symbols[path] = table
    return symbols[path]

def host_path(path):
    # The job reads the maps from outside a userland's chroot: its files show under /run/userland.
    if path.startswith("/run/userland/"):
        path = path[len("/run/userland"):]
    for candidate in (prefix + path, path):
        try:
            open(candidate, "rb").close()
            return candidate
        except OSError:
            pass
    return path

def name(addr):
    i = bisect.bisect_right([r[0] for r in regions], addr) - 1
    if i < 0 or addr >= regions[i][1]:
        return hex(addr)
    lo, hi, off, path = regions[i]
    rel = addr - lo + off
    p = host_path(path)
    fn = subprocess.run(["addr2line", "-f", "-e", p, hex(rel - 1)], capture_output=True, text=True).stdout.split("\n")[0]
    if not fn or fn == "??":
        table = dynamic(p)
        j = bisect.bisect_right([t[0] for t in table], rel) - 1
        fn = table[j][1] if j >= 0 else "?"
    fn = subprocess.run(["swift", "demangle", "--simplified", "--compact", fn], capture_output=True, text=True).stdout.strip() or fn
    return f"{path.rsplit('/', 1)[-1]}+{rel:#x} {fn[:110]}"

samples = matching = 0
for line in open(counts):
    if line.startswith("trace"):
        frames = [name(int(a, 16)) for a in line.split()[1:]]
        samples += 1
        matching += pattern is not None and any(re.search(pattern, f) for f in frames)
        print("allocation:")
        for f in frames:
            print("   ", f)
if pattern is not None:
    print(f"samples {samples} matching {matching}")
