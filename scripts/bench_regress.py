#!/usr/bin/env python3
"""Compares a bench result file with the last committed quiet result of the
same command, figure by figure, and says REGRESSED for each figure whose
ratio (novelfs against the baseline measured in the same run, which cancels
much of a machine's state) grew past the tolerance. The zero-work floor's
own rows (`[T] floor: ...`) are a baseline, not novelfs: they are shown as
such and never count (a change to novelfs cannot move them, the machine can).

Usage: bench_regress.py RESULT_FILE RESULTS_DIR [--tolerance 0.20] [--max-load 1.5]

The earlier result is the newest file in RESULTS_DIR that git tracks (a
result someone committed, so read and kept on purpose), whose `command:`
line has the same options as RESULT_FILE's, and whose load at start (the
1-minute average) was below --max-load. Exit status 3 when a figure
regressed, 0 otherwise (also when there is nothing to compare with).
"""

import argparse
import os
import re
import subprocess
import sys


def seconds(cell):
    """A time cell of the table (`19.990 s`, `44.6 µs`, `2.0 ms`) in seconds."""
    m = re.match(r"([0-9.]+) (s|ms|µs)$", cell)
    if not m:
        return None
    return float(m.group(1)) * {"s": 1, "ms": 1e-3, "µs": 1e-6}[m.group(2)]


# The cold grep's row and the floor's (by their labels in bench.sh), and
# only them: other rows name grep -r and cold too (the tools' figures).
COLD_GREP = re.compile(r"(\[[a-z_]+\]) whole library \([0-9,]+ chapters\): grep -r WORD ")
FLOOR_COLD_GREP = re.compile(r"(\[[a-z_]+\]) floor: cold grep -r ")


def read(path):
    """The file's command, its load at start and its ratios by figure: each
    row's ratio, and for each transport the cold grep's time over the
    zero-work floor's in the same run (`[T] cold grep -r vs the floor`)."""
    command, load, ratios = None, None, {}
    cold, floor = {}, {}
    for line in open(path, encoding="utf-8"):
        if line.startswith("command:"):
            command = line.split(":", 1)[1].strip()
        elif line.startswith("load:") and "start:" in line:
            m = re.search(r"load average: ([0-9.]+)", line)
            load = float(m.group(1)) if m else None
        elif line.startswith("| ") and "×" in line:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 4 or "limit" in cells[3]:
                continue
            m = re.match(r"([0-9.]+)×", cells[3])
            if m:
                ratios[cells[0]] = float(m.group(1))
            t = COLD_GREP.match(cells[0]) or FLOOR_COLD_GREP.match(cells[0])
            if t:
                (floor if t.re is FLOOR_COLD_GREP else cold)[t.group(1)] = seconds(cells[1])
    for transport, c in cold.items():
        f = floor.get(transport)
        if c and f:
            ratios[f"{transport} cold grep -r vs the floor"] = c / f
    return command, load, ratios


def is_baseline(figure):
    """Whether a figure is the zero-work floor's own, measured beside novelfs."""
    return re.match(r"\[[a-z_]+\] floor: ", figure) is not None


def options(command):
    """The command's options, as a set (their order does not matter), less
    `--runs N`: more runs measure the same figures."""
    words = (command or "").split()[1:]
    kept, skip = [], False
    for w in words:
        if skip:
            skip = False
        elif w == "--runs":
            skip = True
        elif not w.startswith("--runs="):
            kept.append(w)
    return frozenset(kept)


def committed(results_dir):
    """The result files of RESULTS_DIR git tracks, newest name first."""
    try:
        out = subprocess.run(
            ["git", "-C", results_dir, "ls-files", "--", "."],
            capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    names = [n for n in out.split() if n.endswith(".txt")]
    return [os.path.join(results_dir, os.path.basename(n)) for n in sorted(names, reverse=True)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("results_dir")
    ap.add_argument("--tolerance", type=float, default=0.20)
    ap.add_argument("--max-load", type=float, default=1.5)
    a = ap.parse_args()
    command, _, now = read(a.result)
    earlier = None
    for path in committed(a.results_dir):
        if os.path.abspath(path) == os.path.abspath(a.result):
            continue
        c, load, ratios = read(path)
        if options(c) == options(command) and load is not None and load < a.max_load and ratios:
            earlier = (path, ratios)
            break
    if earlier is None:
        print(f"regression check: no committed quiet result of `{command}` to compare with")
        return 0
    path, then = earlier
    regressed = 0
    print(f"regression check against {os.path.basename(path)} (tolerance {a.tolerance:.0%}):")
    for figure, ratio in now.items():
        if figure not in then:
            continue
        before = then[figure]
        if is_baseline(figure):
            print(f"  baseline: {figure}: {ratio:.2f}× (was {before:.2f}×)")
        elif before > 0 and ratio > before * (1 + a.tolerance):
            regressed += 1
            print(f"  REGRESSED: {figure}: {ratio:.2f}× (was {before:.2f}×)")
        else:
            print(f"  within: {figure}: {ratio:.2f}× (was {before:.2f}×)")
    return 3 if regressed else 0


if __name__ == "__main__":
    sys.exit(main())
