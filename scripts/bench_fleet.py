#!/usr/bin/env python3
"""The fleet figures of scripts/bench.sh --fleet: many mounts of one
bucket, each serving an agent that reads a little every few seconds.
Standard library only.

Subcommands
  rounds BIN BOOKS_FILE CHAPTERS PERIOD DURATION SEED MNT...
        one agent per mountpoint, all at once: every PERIOD seconds for
        DURATION seconds a round (cat novel_books.txt, one random book's
        novel_chapters.txt, one random chapter's offset-1.txt). Each
        mount's `novelfs status --json` counters are read right before
        the first round and after the last; prints one line per mount:
        INDEX ROUNDS PAGES LIST GET RANGED_GET HEAD NOT_MODIFIED ERRORS
        FAILED_READS ROUND_MEDIAN_S ROUND_MAX_S SNAPSHOT
  reader MNT BOOK CHAPTERS   chapters 1..CHAPTERS of BOOK in order, each
        page after the one its footer names; prints SECONDS PAGES
  keys PORT                  the proxy's log since its reset, counted by
        access key: one line KEY LIST GET RANGED_GET HEAD a key
  counts PORT                the proxy's counts: LIST GET RANGED_GET HEAD PUT
"""

import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time

NEXT = re.compile(r"offset=(\d+)")


def status(binary, mnt):
    out = subprocess.run([binary, "status", mnt, "--json"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        sys.exit(f"bench_fleet: novelfs status {mnt}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def agent(mnt, books, chapters, period, duration, seed, t_end, out):
    """Rounds on one mount until t_end, one every `period` seconds from a
    random phase (the agents of a fleet do not tick together)."""
    rng = random.Random(seed)
    rounds = pages = failed = 0
    took = []
    next_at = time.monotonic() + rng.uniform(0, period)
    while True:
        now = time.monotonic()
        if next_at > now:
            time.sleep(next_at - now)
        if next_at >= t_end:
            break
        t0 = time.monotonic()
        book = rng.choice(books)
        try:
            read(f"{mnt}/novel_books.txt")
            read(f"{mnt}/{book}/novel_chapters.txt")
            read(f"{mnt}/{book}/{rng.randint(1, chapters)}/offset-1.txt")
            pages += 1
        except OSError as e:
            failed += 1
            print(f"bench_fleet: {mnt}: {e}", file=sys.stderr)
        took.append(time.monotonic() - t0)
        rounds += 1
        # A round that outlasts the period starts the next one at once.
        next_at = max(next_at + period, time.monotonic())
    out.update(rounds=rounds, pages=pages, failed=failed, took=took)


KEYS = (("list_requests", "LIST"), ("get_requests", "GET"), ("ranged_get_requests", "RANGED_GET"),
        ("head_requests", "HEAD"), ("not_modified", "NOT_MODIFIED"), ("errors", "ERRORS"))


def cmd_rounds(a):
    with open(a.books_file, encoding="utf-8") as f:
        books = [ln.rstrip("\n") for ln in f if ln.strip()]
    before = [status(a.bin, m) for m in a.mnts]
    t_end = time.monotonic() + a.duration
    results = [{} for _ in a.mnts]
    threads = [threading.Thread(target=agent, args=(m, books, a.chapters, a.period, a.duration,
                                                    a.seed * 1000 + i, t_end, results[i]))
               for i, m in enumerate(a.mnts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, m in enumerate(a.mnts):
        after = status(a.bin, m)
        r = results[i]
        took = r["took"] or [0.0]
        counts = [int(after.get(k, 0)) - int(before[i].get(k, 0)) for k, _ in KEYS]
        print(i, r["rounds"], r["pages"], *counts, r["failed"], f"{statistics.median(took):.4f}",
              f"{max(took):.4f}", str(after.get("snapshot", "?")).replace(" ", "_") or "-")


def cmd_reader(a):
    """A reader of one book from its first chapter to its last: each
    chapter's first page, then the pages its footers name."""
    t0 = time.perf_counter()
    pages = 0
    for n in range(1, a.chapters + 1):
        offset = 1
        while True:
            text = read(f"{a.mnt}/{a.book}/{n}/offset-{offset}.txt").decode("utf-8", "replace")
            pages += 1
            tail = text[-300:]
            m = NEXT.search(tail) if "继续阅读" in tail else None
            if not m or int(m.group(1)) <= offset:
                break
            offset = int(m.group(1))
    print(f"{time.perf_counter() - t0:.6f} {pages}")


def cmd_keys(a):
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=30)
    conn.request("GET", "/__proxy/log")
    counts = {}
    for line in conn.getresponse().read().decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) < 4:
            continue
        c = counts.setdefault(parts[3], {"LIST": 0, "GET": 0, "RANGED_GET": 0, "HEAD": 0})
        if parts[0] in c:
            c[parts[0]] += 1
    for key, c in sorted(counts.items()):
        print(key, c["LIST"], c["GET"], c["RANGED_GET"], c["HEAD"])


# ---------------------------------------------------------------------------
# The table (bench_lib.py table calls fleet_table with the flt* lines)
# ---------------------------------------------------------------------------

# S3 Standard's list prices, dollars per request.
PRICE_LIST = 0.005 / 1000
PRICE_GET = 0.0004 / 1000  # GET and HEAD alike
AGENTS = 1000


def fleet_table(lines, fmt_time, print_rows):
    """Result lines (tab-separated):
    fltinfo BOOKS PER MOUNTS PERIOD DURATION RUNS KEYS;
    fltrate GETS_PER_S LISTS_PER_S LOAD: moto's own rate;
    fltmount LAT FRESH N LIST GET OTHER: the requests of mounting N;
    fltproxy LAT FRESH N LIST GET RANGED HEAD MAX_IN_FLIGHT LOAD SECONDS:
    the proxy's counts of the rounds;
    fltround LAT FRESH N INDEX ROUNDS PAGES LIST GET RANGED HEAD
    NOT_MODIFIED ERRORS FAILED MEDIAN_S MAX_S SNAPSHOT LOAD: one mount's
    rounds and its own status counters;
    fltkey LAT FRESH N KEY LIST GET RANGED HEAD: the proxy's log by key;
    flttimed LAT FRESH WORKLOAD SECONDS LIST GET RANGED HEAD MAX_IN_FLIGHT
    LOAD FLAG: one run of the reader or the grep.
    Prints the figures and the targets; returns the MISS count."""
    info = rate = publisher = None
    mounts, proxy, rounds, keys, timed = {}, {}, {}, {}, {}
    for p in lines:
        k = p[0]
        if k == "fltinfo":
            info = dict(books=int(p[1]), per=int(p[2]), mounts=int(p[3]), period=float(p[4]),
                        duration=float(p[5]), runs=int(p[6]), keys=int(p[7]))
        elif k == "fltrate":
            rate = (float(p[1]), float(p[2]))
        elif k == "fltmount":
            mounts[(int(p[1]), p[2], int(p[3]))] = tuple(int(x) for x in p[4:7])
        elif k == "fltproxy":
            proxy[(int(p[1]), p[2], int(p[3]))] = (tuple(int(x) for x in p[4:9]), float(p[9]), float(p[10]))
        elif k == "fltround":
            rounds.setdefault((int(p[1]), p[2], int(p[3])), []).append(dict(
                idx=int(p[4]), rounds=int(p[5]), pages=int(p[6]), list=int(p[7]), get=int(p[8]),
                ranged=int(p[9]), head=int(p[10]), nm=int(p[11]), errors=int(p[12]), failed=int(p[13]),
                med=float(p[14]), max=float(p[15]), snapshot=p[16], load=float(p[17])))
        elif k == "fltkey":
            keys.setdefault((int(p[1]), p[2], int(p[3])), {})[p[4]] = tuple(int(x) for x in p[5:9])
        elif k == "fltpub":
            publisher = dict(rounds=int(p[1]), counts=tuple(int(x) for x in p[2:7]), load=float(p[7]))
        elif k == "flttimed":
            timed.setdefault((int(p[1]), p[2], p[3]), []).append(dict(
                secs=float(p[4]), counts=tuple(int(x) for x in p[5:9]), mif=int(p[9]),
                load=float(p[10]), flag=p[11] if len(p) > 11 else ""))
    if not info:
        return 0
    day_rounds = 86400 / info["period"]
    print(f"A fleet: {info['books']} books x {info['per']} chapters ({info['keys']:,} keys) in moto behind "
          f"tests/s3/proxy.py, index and snapshot published once (novelfs index --publish); every mount "
          f"fresh (default options, an empty --index-dir), an agent round on each every "
          f"{info['period']:g} s for {info['duration']:g} s (novel_books.txt, a random book's "
          f"novel_chapters.txt, a random chapter's offset-1.txt); reader and grep: {info['runs']} run(s), "
          f"a fresh mount each" + (f"; moto's own rate {rate[0]:.0f} GETs/s, {rate[1]:.0f} LISTs/s" if rate else ""))
    print()

    def per_round(key):
        rs = rounds.get(key, [])
        n = sum(r["rounds"] for r in rs)
        return rs, max(n, 1)

    def mount_reqs(r):
        return (r["list"] + r["get"] + r["ranged"] + r["head"]) / max(r["rounds"], 1)

    def bill(key):
        (l, g, rg, h, _), _, _ = proxy[key]
        _, n = per_round(key)
        return AGENTS * day_rounds * ((l * PRICE_LIST) + (g + rg + h) * PRICE_GET) / n

    def gets_per_page(rs):
        pages = sum(r["pages"] for r in rs)
        return sum(r["get"] + r["ranged"] - r["nm"] for r in rs) / max(pages, 1)

    rows = [("latency", "freshness", "mounts", "rounds", "per round: LIST / GET (304) / RANGED / HEAD",
             "per round, each mount", "GETs per random page", "round median / max", "status = proxy",
             "1,000 agents a day", "load")]
    notes = []
    order = {"published": 0, "listing": 1}
    for key in sorted(proxy, key=lambda k: (k[0], order.get(k[1], 2), k[2])):
        lat, fresh, n = key
        (l, g, rg, h, mif), load, secs = proxy[key]
        rs, total = per_round(key)
        nm = sum(r["nm"] for r in rs)
        each = [mount_reqs(r) for r in rs] or [0.0]
        agree = 0
        for r in rs:
            c = keys.get(key, {}).get(f"fleet-{r['idx']}", (0, 0, 0, 0))
            agree += c == (r["list"], r["get"], r["ranged"], r["head"])
        rows.append((f"{lat} ms", fresh, str(n), f"{total:,}",
                     f"{l / total:.2f} / {g / total:.2f} ({nm / total:.2f}) / {rg / total:.2f} / {h / total:.2f}",
                     f"{min(each):.2f}–{max(each):.2f}", f"{gets_per_page(rs):.2f}",
                     f"{fmt_time(max(statistics.median([r['med'] for r in rs]), 0))} / "
                     f"{fmt_time(max(r['max'] for r in rs))}",
                     f"{agree}/{len(rs)}", f"${bill(key):,.2f}", f"{load:.2f}"))
        if rate and secs > 0 and l / secs >= 0.5 * rate[1]:
            notes.append(f"{lat} ms, {fresh}, {n} mount{'s' if n != 1 else ''}: moto caps the rounds: {l / secs:.0f} LISTs/s "
                         f"against its own {rate[1]:.0f}/s (a round's longest {max(r['max'] for r in rs):.2f} s)")
        if any(r["failed"] for r in rs):
            notes.append(f"{lat} ms, {fresh}, {n} mount{'s' if n != 1 else ''}: {sum(r['failed'] for r in rs)} rounds had a read fail")
        if fresh == "published" and any(not r["snapshot"].startswith('"') for r in rs):
            notes.append(f"{lat} ms, published, {n} mount{'s' if n != 1 else ''}: a mount followed no snapshot")
        m = mounts.get(key)
        if m and n == max(k[2] for k in mounts if k[:2] == key[:2]):
            notes.append(f"{lat} ms, {fresh}: mounting {n} took LIST {m[0]}, GET {m[1]}, other {m[2]} "
                         f"({m[0] / n:.1f} LIST and {m[1] / n:.1f} GET a mount, not in the rounds)")
    print_rows(rows)
    print()

    def tfig(lat, fresh, wl):
        r = timed.get((lat, fresh, wl))
        if not r:
            return None
        return dict(secs=statistics.median(x["secs"] for x in r), mif=max(x["mif"] for x in r),
                    counts=tuple(max(x["counts"][i] for x in r) for i in range(4)),
                    err=any(x["flag"] for x in r), runs=[x["secs"] for x in r],
                    loads=[x["load"] for x in r])

    rows = [("workload", "freshness", "0 ms", "20 ms", "20 ms ÷ 0 ms", "requests at 20 ms: LIST / GET",
             "GETs in flight (max) at 20 ms", "runs 0 ms · 20 ms (load)")]
    for wl, text in (("reader", "in-order reader of one book (100 chapters)"), ("grep", "grep -r of the mount")):
        for fresh in ("published", "listing"):
            a, b = tfig(0, fresh, wl), tfig(20, fresh, wl)
            if not a or not b:
                continue
            bad = " (FAILED)" if a["err"] or b["err"] else ""
            rows.append((text + bad, fresh, fmt_time(a["secs"]), fmt_time(b["secs"]),
                         f"{b['secs'] / a['secs']:.2f}×", f"{b['counts'][0]:,} / {b['counts'][1] + b['counts'][2]:,}",
                         str(b["mif"]),
                         ", ".join(fmt_time(x) for x in a["runs"]) + " · " + ", ".join(fmt_time(x) for x in b["runs"])
                         + f" ({min(a['loads'] + b['loads']):.2f}–{max(a['loads'] + b['loads']):.2f})"))
            gets = a["counts"][1] + a["counts"][2]
            if rate and a["secs"] > 0 and gets / a["secs"] >= 0.6 * rate[0]:
                notes.append(f"0 ms, {fresh}: moto caps the {wl}: {gets / a['secs']:.0f} GETs/s against its own "
                             f"{rate[0]:.0f}/s, so its 20 ms ÷ 0 ms is that of a capped server")
    print_rows(rows)
    print()

    misses = 0
    trows = [("target", "--freshness published", "listing (baseline)", "limit", "result")]

    def target(text, pub, base, limit, ok):
        nonlocal misses
        misses += not ok
        trows.append((text, pub, base, limit, "PASS" if ok else "MISS"))

    n = info["mounts"]
    for lat in sorted({k[0] for k in proxy}):
        for m in sorted({1, n}):
            key_p, key_l = (lat, "published", m), (lat, "listing", m)
            if key_p not in proxy:
                continue
            worst = max(mount_reqs(r) for r in rounds[key_p])
            base = max(mount_reqs(r) for r in rounds[key_l]) if key_l in rounds else None
            target(f"{lat} ms: requests per agent round, {'one mount' if m == 1 else f'each of {m} mounts'} (worst)",
                   f"{worst:.2f}", "" if base is None else f"{base:.2f}", "≤ 3", worst <= 3)
        key_p, key_l = (lat, "published", n), (lat, "listing", n)
        l = sum(proxy[(lat, "published", m)][0][0] for m in {1, n} if (lat, "published", m) in proxy)
        lb = sum(proxy[(lat, "listing", m)][0][0] for m in {1, n} if (lat, "listing", m) in proxy)
        target(f"{lat} ms: LISTs during the rounds, a published snapshot followed", f"{l:,}", f"{lb:,}", "0", l == 0)
        gp = gets_per_page(rounds[key_p])
        gb = gets_per_page(rounds[key_l]) if key_l in rounds else None
        target(f"{lat} ms: GETs per random page ({n} mounts; conditional GETs aside)", f"{gp:.2f}",
               "" if gb is None else f"{gb:.2f}", "≤ 1.5", gp <= 1.5)
        bp = bill(key_p)
        bb = bill(key_l) if key_l in proxy else None
        target(f"{lat} ms: a day of 1,000 agents, a round every {info['period']:g} s (S3 Standard list prices)",
               f"${bp:,.2f}", "" if bb is None else f"${bb:,.2f}", "≤ $100", bp <= 100)
    for wl, text in (("reader", "in-order reader"), ("grep", "grep -r")):
        a, b = tfig(0, "published", wl), tfig(20, "published", wl)
        la, lb = tfig(0, "listing", wl), tfig(20, "listing", wl)
        if a and b:
            r = b["secs"] / a["secs"]
            rb = f"{lb['secs'] / la['secs']:.2f}×" if la and lb else ""
            target(f"{text}: 20 ms ÷ 0 ms", f"{r:.2f}×", rb, "≤ 1.5×", r <= 1.5 and not (a["err"] or b["err"]))
            target(f"{text}: GETs in flight at 20 ms (max)", str(b["mif"]), str(lb["mif"]) if lb else "", "≥ 8",
                   b["mif"] >= 8)
    print_rows(trows)
    print()
    if publisher and publisher["rounds"]:
        l, g, rg, h, put = publisher["counts"]
        r = publisher["rounds"]
        notes.append(f"the publisher (index --publish --every 1, nothing changed): {r} rounds, a round "
                     f"LIST {l / r:.1f}, GET {(g + rg) / r:.1f}, HEAD {h / r:.1f}, PUT {put / r:.1f} "
                     f"(load {publisher['load']:.2f}); with --every 300 a day costs "
                     f"${288 * (l * PRICE_LIST + (g + rg + h) * PRICE_GET + put * PRICE_LIST) / r:.2f}")
    for note in notes:
        print(f"  fleet: {note}")
    print(f"\n{misses} MISS (fleet targets)")
    return misses


def cmd_counts(a):
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=30)
    conn.request("GET", "/__proxy/counts")
    c = json.loads(conn.getresponse().read())
    print(c["LIST"], c["GET"], c["RANGED_GET"], c["HEAD"], c["PUT"])


def main():
    import argparse
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rounds")
    r.add_argument("bin")
    r.add_argument("books_file")
    r.add_argument("chapters", type=int)
    r.add_argument("period", type=float)
    r.add_argument("duration", type=float)
    r.add_argument("seed", type=int)
    r.add_argument("mnts", nargs="+")
    rd = sub.add_parser("reader")
    rd.add_argument("mnt")
    rd.add_argument("book")
    rd.add_argument("chapters", type=int)
    k = sub.add_parser("keys")
    k.add_argument("port", type=int)
    c = sub.add_parser("counts")
    c.add_argument("port", type=int)
    a = p.parse_args()
    {"rounds": cmd_rounds, "reader": cmd_reader, "keys": cmd_keys, "counts": cmd_counts}[a.cmd](a)


if __name__ == "__main__":
    main()
