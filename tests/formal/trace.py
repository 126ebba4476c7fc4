#!/usr/bin/env python3
"""Print a SymbiYosys VCD trace as a table: one row per step, one column per chosen signal.

    python tests/formal/trace.py build/formal/<job>/spec_prove/engine_0/trace.vcd [NAME ...]

NAME is a substring of the hierarchical signal name (top-level signals if none given).
"""

import sys


def read_vcd(path):
    ids, vals, times, cur, scope = {}, {}, [], {}, []
    with open(path) as f:
        for line in f:
            tok = line.split()
            if not tok:
                continue
            if tok[0] == "$scope":
                scope.append(tok[2])
            elif tok[0] == "$upscope":
                scope.pop()
            elif tok[0] == "$var":
                ids.setdefault(tok[3], []).append(".".join(scope[1:] + [tok[4]]))
            elif tok[0].startswith("#"):
                if times:
                    vals[times[-1]] = dict(cur)
                times.append(int(tok[0][1:]))
            elif tok[0][0] in "01xz" and len(tok) == 1:
                cur[tok[0][1:]] = tok[0][0]
            elif tok[0][0] == "b":
                cur[tok[1]] = tok[0][1:]
    if times:
        vals[times[-1]] = dict(cur)
    return ids, times, vals


def main():
    path, names = sys.argv[1], sys.argv[2:]
    ids, times, vals = read_vcd(path)
    cols = []
    for code, full in ids.items():
        for nm in full:
            if (not names and "." not in nm) or any(s in nm for s in names):
                cols.append((nm, code))
    cols.sort()
    steps = sorted({t for t in times})
    step_t = steps[::2] if len(steps) > 1 and all(t % 10 == 0 for t in steps) else steps
    for nm, code in cols:
        row = []
        for t in step_t:
            v = vals[t].get(code, "?")
            try:
                v = hex(int(v, 2))
            except ValueError:
                pass
            row.append(v)
        print(f"{nm[:40]:<40} " + " ".join(f"{x:>10}" for x in row))


if __name__ == "__main__":
    main()
