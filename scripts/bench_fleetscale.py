#!/usr/bin/env python3
"""The figures of scripts/bench.sh --fleet --chapters N (see
scripts/bench_fleetscale.sh): a published library of N chapters against
the targets of a fleet at scale. Standard library only.

Subcommands
  counts PORT     the proxy's counts: LIST GET RANGED_GET HEAD PUT
                  DOWN_BYTES UP_BYTES MAX_IN_FLIGHT (bytes of bodies, each
                  way, every kind)
  put PORT BUCKET KEY FILE   PUTs FILE at KEY, straight to the server
  classify PORT   the proxy's log since its reset by what each request
                  fetched: PAGES (GETs of the library's objects) HEADS
                  (of .novelfs/snapshot.json) PIECES (.novelfs/pieces/)
                  INDEX (.novelfs/index.sqlite) LISTS OTHER
"""

import http.client
import json
import sys
from urllib.parse import quote, unquote

KINDS = ("LIST", "GET", "RANGED_GET", "HEAD", "PUT", "OTHER")
# S3 Standard's list prices, dollars per request.
PRICE_LIST = 0.005 / 1000  # LIST and PUT alike
PRICE_GET = 0.0004 / 1000  # GET and HEAD alike
AGENTS = 1000
MIB = 1 << 20
KIB = 1 << 10


def control(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    return conn.getresponse().read()


def cmd_counts(a):
    c = json.loads(control(a.port, "/__proxy/counts"))
    down = sum(c.get(f"down_{k}", 0) for k in KINDS)
    up = sum(c.get(f"up_{k}", 0) for k in KINDS)
    print(c["LIST"], c["GET"], c["RANGED_GET"], c["HEAD"], c["PUT"], down, up, c["max_in_flight"])


def cmd_put(a):
    with open(a.file, "rb") as f:
        body = f.read()
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=60)
    conn.request("PUT", f"/{a.bucket}/{quote(a.key)}", body=body, headers={
        "Authorization": "AWS4-HMAC-SHA256 Credential=novelfs-bench/20240101/us-east-1/s3/aws4_request, "
                         "SignedHeaders=host, Signature=0",
        "Content-Length": str(len(body))})
    resp = conn.getresponse()
    resp.read()
    if resp.status != 200:
        sys.exit(f"bench_fleetscale: PUT {a.key}: {resp.status}")


def cmd_classify(a):
    n = dict(pages=0, heads=0, pieces=0, index=0, lists=0, other=0)
    for line in control(a.port, "/__proxy/log").decode("utf-8", "replace").splitlines():
        # KIND START END KEY [BYTES] PATH: the path is the last column.
        parts = line.split("\t")
        if len(parts) < 5:
            continue
        kind, path = parts[0], unquote(parts[-1])
        if kind == "LIST":
            n["lists"] += 1
        elif kind not in ("GET", "RANGED_GET", "HEAD"):
            n["other"] += 1
        elif "/.novelfs/snapshot.json" in path:
            n["heads"] += 1
        elif "/.novelfs/pieces/" in path:
            n["pieces"] += 1
        elif "/.novelfs/index.sqlite" in path:
            n["index"] += 1
        elif "/.novelfs/" in path:
            n["other"] += 1
        else:
            n["pages"] += 1
    print(n["pages"], n["heads"], n["pieces"], n["index"], n["lists"], n["other"])


def size(b):
    if b >= MIB:
        return f"{b / MIB:.2f} MiB"
    if b >= KIB:
        return f"{b / KIB:.1f} KiB"
    return f"{b} B"


def fleetscale_table(lines, fmt_time, print_rows):
    """Result lines (tab-separated):
    flsinfo BOOKS KEYS GETS_PER_S LISTS_PER_S MOUNTS PERIOD DURATION;
    flsfig FIGURE SECONDS LIST GET RANGED HEAD PUT DOWN UP MAX_IN_FLIGHT LOAD:
    one figure with the proxy's counts during it;
    flspub ROUNDS LIST GET RANGED HEAD PUT DOWN UP MAX_IN_FLIGHT LOAD: the
    publisher's rounds with nothing changed;
    flssixteen N SECONDS...: each of the 16 mounts' first page;
    flsrounds ROUNDS FAILED PAGES HEADS PIECES INDEX LISTS OTHER: the
    agents' rounds by what their requests fetched.
    Prints the figures and the targets; returns the MISS count."""
    info, figs, pub, sixteen, rounds = None, {}, None, None, None
    for p in lines:
        if p[0] == "flsinfo":
            info = dict(books=int(p[1]), keys=int(p[2]), rate=float(p[3]), lrate=float(p[4]),
                        mounts=int(p[5]), period=float(p[6]), duration=float(p[7]),
                        server=p[8] if len(p) > 8 else "moto")
        elif p[0] == "flsfig":
            c = [int(x) for x in p[3:11]]
            figs[p[1]] = dict(secs=float(p[2]), list=c[0], get=c[1] + c[2], head=c[3], put=c[4],
                              down=c[5], up=c[6], mif=c[7], load=float(p[11]))
        elif p[0] == "flspub":
            c = [int(x) for x in p[2:10]]
            pub = dict(rounds=int(p[1]), list=c[0], get=c[1] + c[2], head=c[3], put=c[4], down=c[5],
                       up=c[6], load=float(p[10]))
        elif p[0] == "flssixteen":
            sixteen = (int(p[1]), [float(x) for x in p[2].split()])
        elif p[0] == "flsrounds":
            rounds = dict(zip(("rounds", "failed", "pages", "heads", "pieces", "index", "lists", "other"),
                              (int(x) for x in p[1:9])))
    if not info:
        return 0
    chapters = info["books"] * 100
    served = ("moto" if info["server"] == "moto" else
              "s3s-fs serving the generated folder (its listings give no ETag)")
    print(f"A fleet at scale: {info['books']:,} books x 100 chapters ({info['keys']:,} keys) in {served} behind "
          f"tests/s3/proxy.py at 20 ms a request; every mount fresh (default options, an empty --index-dir)"
          + (f"; moto's own rate {info['rate']:.0f} GETs/s, {info['lrate']:.0f} LISTs/s" if info["rate"] else ""))
    print()
    rows = [("figure", "time", "LIST / GET / HEAD / PUT", "fetched", "written", "in flight", "load")]
    text = {
        "publisher-first": "publisher's first run (index --publish)",
        "fresh-first-page": "fresh mount: novelfs mount to the end of a first page",
        "fresh-books": "fresh mount: first cat novel_books.txt",
        "sixteen": "16 fresh mounts at once: slowest first page (all 16 mounts' requests)",
        "replaced-publish": "one chapter replaced: the publisher's run",
        "replaced-read-book": "… a mount that had read that book, until it shows",
        "replaced-other-book": "… a mount that had read another book only, until it shows",
        "rounds": f"agent rounds, {info['mounts']} mounts, {info['duration']:g} s, publisher --every 300",
    }
    for key, label in text.items():
        f = figs.get(key)
        if not f:
            continue
        shown = "never (60 s)" if f["secs"] < 0 else fmt_time(f["secs"])
        rows.append((label, shown, f"{f['list']:,} / {f['get']:,} / {f['head']:,} / {f['put']:,}",
                     size(f["down"]), size(f["up"]), str(f["mif"]), f"{f['load']:.2f}"))
    if pub and pub["rounds"]:
        r = pub["rounds"]
        rows.append((f"publisher --every 1, nothing changed: a round (of {r})", "",
                     f"{pub['list'] / r:.1f} / {pub['get'] / r:.1f} / {pub['head'] / r:.1f} / {pub['put'] / r:.1f}",
                     size(pub["down"] // r), size(pub["up"] // r), "", f"{pub['load']:.2f}"))
    print_rows(rows)
    print()

    misses = 0
    notes = []
    trows = [("target (200,000 chapters, 20 ms)", "measured", "limit", "result")]

    def target(label, shown, limit, ok):
        nonlocal misses
        misses += not ok
        trows.append((label, shown, limit, "PASS" if ok else "MISS"))

    f = figs.get("fresh-first-page")
    if f:
        target("fresh mount: first page after novelfs mount starts", fmt_time(f["secs"]), "≤ 0.5 s", f["secs"] <= 0.5)
        target("fresh mount: bytes fetched before its first page", size(f["down"]), "≤ 1 MiB", f["down"] <= MIB)
    f = figs.get("fresh-books")
    if f:
        target("fresh mount: novel_books.txt", fmt_time(f["secs"]), "≤ 1 s", f["secs"] <= 1)
    if sixteen:
        n, secs = sixteen
        worst = max(secs) if secs else float("inf")
        target(f"16 fresh mounts at once: every first page ({n} of 16 read)", fmt_time(worst), "≤ 2 s",
               n == 16 and worst <= 2)
    f = figs.get("replaced-publish")
    if f:
        target("one chapter replaced: the publisher writes", size(f["up"]), "≤ 1 MiB", f["up"] <= MIB)
    f = figs.get("replaced-read-book")
    if f:
        target("… a mount that had read the book fetches", size(f["down"]), "≤ 256 KiB", f["down"] <= 256 * KIB)
        target("… and shows it within (TTL 1 s + 2 s)", "never" if f["secs"] < 0 else fmt_time(f["secs"]),
               "≤ 3 s", 0 <= f["secs"] <= 3)
    f = figs.get("replaced-other-book")
    if f:
        target("… a mount that had not read it fetches", size(f["down"]), "≤ 128 KiB", f["down"] <= 128 * KIB)
    f = figs.get("publisher-first")
    if f:
        per_s = chapters / f["secs"] if f["secs"] > 0 else 0
        # 200,000 chapters in 3 min.
        want = 200_000 / 180
        target(f"publisher's first run: chapters a second ({chapters:,} in {fmt_time(f['secs'])})",
               f"{per_s:,.0f}/s", f"≥ {want:,.0f}/s", per_s >= want)
        if info["rate"] and f["secs"] > 0 and f["get"] / f["secs"] >= 0.6 * info["rate"]:
            notes.append(f"moto caps the publisher's first run: {f['get'] / f['secs']:.0f} GETs/s against its "
                         f"own {info['rate']:.0f}/s (GETs in flight at most {f['mif']})")
    if pub and pub["rounds"]:
        r = pub["rounds"]
        reqs = (pub["list"] + pub["get"] + pub["head"] + pub["put"]) / r
        # The keys it lists are the library's and its own: every object its
        # first run wrote (pieces, root, index, head).
        first = figs.get("publisher-first")
        keys = info["keys"] + (first["put"] if first else 0)
        limit = -(-keys // 1000) + 2
        target("a publisher's round with nothing changed: requests", f"{reqs:.1f}",
               f"≤ {limit} (a LIST per 1,000 of {keys:,} keys + 2)", reqs <= limit)
    f = figs.get("rounds")
    if f and rounds and rounds["rounds"]:
        n = rounds["rounds"]
        reqs = f["list"] + f["get"] + f["head"]
        steady = reqs - rounds["pieces"] - rounds["index"]
        day = 86400 / info["period"] * AGENTS
        bill = day * (f["list"] * PRICE_LIST + (f["get"] + f["head"]) * PRICE_GET) / n
        bill_steady = day * (f["list"] * PRICE_LIST
                             + (f["get"] + f["head"] - rounds["pieces"] - rounds["index"]) * PRICE_GET) / n
        target(f"requests per agent round, the books' pieces aside ({n:,} rounds)", f"{steady / n:.2f}", "≤ 1.1",
               steady / n <= 1.1)
        target("1,000 agents a day, a round every 2 s (S3 Standard list prices)", f"${bill_steady:,.2f}", "≤ $20",
               bill_steady <= 20)
        notes.append(f"the rounds' requests by what they fetched: {rounds['pages']:,} pages, {rounds['heads']:,} "
                     f"head checks, {rounds['pieces']:,} books' pieces, {rounds['index']:,} index, "
                     f"{rounds['lists']:,} LISTs, {rounds['other']:,} other ({reqs / n:.2f} a round with the "
                     f"pieces, ${bill:,.2f} a day at that rate; a piece is fetched once a mount a book)")
        if rounds["failed"]:
            notes.append(f"{rounds['failed']} rounds had a read fail")
    if pub and pub["rounds"]:
        r = pub["rounds"]
        day = 288 * ((pub["list"] + pub["put"]) * PRICE_LIST + (pub["get"] + pub["head"]) * PRICE_GET) / r
        notes.append(f"the publisher at --every 300 with nothing changed: ${day:.2f} a day, whatever the fleet")
    print_rows(trows)
    print()
    for note in notes:
        print(f"  fleet at scale: {note}")
    print(f"\n{misses} MISS (fleet-at-scale targets)")
    return misses


def main():
    import argparse
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("counts")
    c.add_argument("port", type=int)
    pt = sub.add_parser("put")
    pt.add_argument("port", type=int)
    pt.add_argument("bucket")
    pt.add_argument("key")
    pt.add_argument("file")
    cl = sub.add_parser("classify")
    cl.add_argument("port", type=int)
    a = p.parse_args()
    {"counts": cmd_counts, "put": cmd_put, "classify": cmd_classify}[a.cmd](a)


if __name__ == "__main__":
    main()
