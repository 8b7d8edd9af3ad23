#!/usr/bin/env python3
"""An HTTP proxy of the tests' own in front of a local S3 server (moto),
so that tests can assert how many requests of each kind a workload costs
and how it behaves when the server is slow, stalls or drops connections.

Usage: proxy.py --upstream-port PORT [--port 0] [--gcs-put]

It serves any of the emulators the tests use (moto, fake-gcs-server,
Azurite): a LIST is S3's and Google's ListObjectsV2 (`list-type=2`) or
Azure's List Blobs (`comp=list`). With --gcs-put, a PUT of an object (the
XML API's upload, which fake-gcs-server lacks) is forwarded as the JSON
API's media upload of the same bytes, its answer given the XML API's
`ETag` and `x-goog-generation` headers: the same write, counted as a PUT.

It listens on 127.0.0.1 (port 0: any free one) and prints `PORT <n>` on
its standard output once it accepts connections. It forwards every request
to 127.0.0.1:UPSTREAM and nowhere else.

Control requests (never forwarded, never counted):
  GET  /__proxy/counts   the counts as JSON: LIST (a GET of the bucket
                         itself, ListObjects V2 or V1),
                         GET, RANGED_GET (GET with a Range header), HEAD,
                         PUT, OTHER; stalled, cut, dropped;
                         max_in_flight, the most requests forwarded to the
                         server at once; up_KIND and down_KIND, the bytes
                         of the bodies of that kind's requests and of
                         their answers (headers aside)
  GET  /__proxy/log      the requests since the reset, one a line in the
                         order they came: KIND, START, END, the access key
                         ID the request was signed with (another scheme's
                         name, e.g. SharedKey; "-": unsigned) and
                         the request's path, tab-separated; START and END
                         are the wall clock's seconds (time.time()) at its
                         arrival and just before its answer is written (END
                         "-" while unanswered or cut): the client cannot
                         have the answer before END, so a request it sent
                         on having it always STARTs at or after that END
  POST /__proxy/reset    counts back to zero (settings stay)
  POST /__proxy/set?latency_ms=N&stall=N&cut=N&drop=N
                         latency added before forwarding each request;
                         stall: hold the next N requests unanswered
                         (-1: every request until stall=0 is set, which
                         releases the ones held); cut: answer the next N
                         requests with their status and headers and half
                         their body, then close the connection; drop:
                         close the connection of the next N requests
                         without answering
  POST /__proxy/set?only=KIND&stall_after=N
                         only: the faults apply only to requests of that
                         kind (LIST, GET, RANGED_GET, ...; empty: to all);
                         stall_after: the next N requests the faults apply
                         to pass before the stall starts
  POST /__proxy/set?reply=N&reply_status=S&reply_body=TEXT
                         answer the next N requests (-1: every one until
                         reply=0 is set) with status S and TEXT as an XML
                         body, without forwarding them (what a server that
                         is not moto says: AWS's PermanentRedirect, ...)
  POST /__proxy/set?list_etags=0
                         answers of a LIST carry no ETag (1: as the server
                         gave them), as some S3-compatible stores list
  POST /__proxy/set?hold=TEXT&hold_ms=N
                         a request whose path, decoded, holds TEXT waits,
                         before its latency, until another request of its
                         directory has come since the reset (before or
                         after it), or N ms; empty: none waits
"""

import argparse
import http.client
import json
import os
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
}
KINDS = ("LIST", "GET", "RANGED_GET", "HEAD", "PUT", "OTHER")
# An object's ETag in a ListObjectsV2 answer.
LISTED_ETAG = re.compile(rb"<ETag>[^<]*</ETag>")
# A stalled request is held at most this long, so that a test that forgets
# to release it cannot keep the proxy's threads forever.
STALL_LIMIT_S = 300


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.released = threading.Condition(self.lock)
        self.counts = {}
        self.in_flight = 0
        self.reset()
        self.latency_ms = 0
        self.stall = 0
        self.cut = 0
        self.drop = 0
        self.only = ""
        self.stall_after = 0
        self.generation = 0
        self.hold = ""
        self.hold_ms = 0
        self.reply = 0
        self.reply_status = 200
        self.reply_body = ""
        self.list_etags = 1

    def reset(self):
        self.counts = {k: 0 for k in KINDS + ("stalled", "cut", "dropped")}
        self.counts["max_in_flight"] = 0
        for kind in KINDS:
            self.counts[f"up_{kind}"] = 0
            self.counts[f"down_{kind}"] = 0
        self.log = []
        # Requests come since the reset, by directory (what `hold` waits on).
        self.arrived = {}

    def take(self, name):
        """Whether this request gets the fault `name`, using up one."""
        n = getattr(self, name)
        if n == 0:
            return False
        if n > 0:
            setattr(self, name, n - 1)
        return True


STATE = State()


# The parameters of a listing: a GET of the bucket itself with no others
# is a ListObjects, V2 (list-type=2, novelfs's) or V1 (s3fs's default).
LIST_PARAMS = {
    "list-type", "prefix", "delimiter", "max-keys", "encoding-type", "marker",
    "continuation-token", "start-after", "fetch-owner",
}


def kind_of(method, path, query, headers):
    if method == "GET":
        params = query.split("&")
        if "list-type=2" in params or "comp=list" in params:
            return "LIST"
        if "/" not in path.strip("/"):
            params = {kv.split("=", 1)[0] for kv in query.split("&") if kv}
            return "LIST" if params <= LIST_PARAMS else "OTHER"
        if headers.get("Range"):
            return "RANGED_GET"
        return "GET"
    if method in ("HEAD", "PUT"):
        return method
    return "OTHER"


def access_key_of(headers):
    """The access key ID of a SigV4 Authorization header; of another,
    its scheme (`SharedKey`, `Bearer`); "-": none, an unsigned request."""
    auth = headers.get("Authorization", "")
    _, found, rest = auth.partition("Credential=")
    if found and rest:
        return rest.split("/", 1)[0]
    return auth.split(" ", 1)[0] if auth.strip() else "-"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream_port = 0
    gcs_put = False

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without NODELAY,
        # Nagle holds the body for the client's delayed ACK (40 ms), a
        # latency of the proxy's own on top of the one it is set to add.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self):
        self.handle_any()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def reply_json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def control(self, path, query):
        q = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
        if path == "/__proxy/counts":
            with STATE.lock:
                return self.reply_json(dict(STATE.counts))
        if path == "/__proxy/log":
            with STATE.lock:
                lines = [
                    f"{k}\t{s:.6f}\t{'-' if e is None else f'{e:.6f}'}\t{a}\t{n}\t{p}\n"
                    for k, p, s, e, a, n in STATE.log
                ]
            data = "".join(lines).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        if path == "/__proxy/reset":
            with STATE.lock:
                STATE.reset()
            return self.reply_json({"ok": True})
        if path == "/__proxy/set":
            with STATE.lock:
                for name in ("latency_ms", "stall", "cut", "drop", "stall_after", "hold_ms",
                             "reply", "reply_status", "list_etags"):
                    if name in q:
                        setattr(STATE, name, int(q[name]))
                if "only" in q:
                    STATE.only = q["only"]
                if "hold" in q:
                    STATE.hold = q["hold"]
                if "reply_body" in q:
                    STATE.reply_body = q["reply_body"]
                if STATE.stall == 0:
                    STATE.generation += 1
                    STATE.released.notify_all()
            return self.reply_json({"ok": True})
        return self.reply_json({"error": "no such control path"}, 404)

    def handle_any(self):
        split = urlsplit(self.path)
        body = self.read_body()
        if split.path.startswith("/__proxy/"):
            return self.control(split.path, split.query)
        kind = kind_of(self.command, split.path, split.query, self.headers)
        # The body's bytes are set once it is written.
        logged = [kind, self.path, time.time(), None, access_key_of(self.headers), 0]
        directory = split.path.rsplit("/", 1)[0]
        with STATE.lock:
            STATE.counts[kind] += 1
            STATE.log.append(logged)
            STATE.arrived[directory] = STATE.arrived.get(directory, 0) + 1
            STATE.released.notify_all()
            if STATE.hold and STATE.hold in unquote(split.path):
                deadline = time.monotonic() + STATE.hold_ms / 1000
                while STATE.arrived.get(directory, 0) < 2:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    STATE.released.wait(timeout=left)
            latency = STATE.latency_ms
            list_etags = STATE.list_etags
            STATE.counts[f"up_{kind}"] += len(body)
            faulted = STATE.only in ("", kind)
            passes = faulted and STATE.stall != 0 and STATE.stall_after > 0
            if passes:
                STATE.stall_after -= 1
            stall = faulted and not passes and STATE.take("stall")
            drop = faulted and not stall and STATE.take("drop")
            cut = faulted and not stall and not drop and STATE.take("cut")
            reply = None
            if faulted and not (stall or drop or cut) and STATE.take("reply"):
                reply = (STATE.reply_status, STATE.reply_body.encode())
            if stall:
                STATE.counts["stalled"] += 1
                generation = STATE.generation
                deadline = time.monotonic() + STALL_LIMIT_S
                while STATE.generation == generation and time.monotonic() < deadline:
                    STATE.released.wait(timeout=1)
            if drop:
                STATE.counts["dropped"] += 1
            if cut:
                STATE.counts["cut"] += 1
        if drop:
            self.close_now()
            return
        if reply is not None:
            status, data = reply
            logged[3] = time.time()
            self.send_response(status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            logged[5] = len(data)
            return
        with STATE.lock:
            STATE.in_flight += 1
            STATE.counts["max_in_flight"] = max(STATE.counts["max_in_flight"], STATE.in_flight)
        try:
            if latency:
                time.sleep(latency / 1000)
            if self.gcs_put and self.command == "PUT":
                status, reason, headers, data = self.forward_gcs_put(split.path, body)
            else:
                status, reason, headers, data = self.forward(body)
        finally:
            with STATE.lock:
                STATE.in_flight -= 1
        if kind == "LIST" and not list_etags:
            data = LISTED_ETAG.sub(b"", data)
        if self.command != "HEAD":
            with STATE.lock:
                STATE.counts[f"down_{kind}"] += len(data)
        if not cut:
            # Taken before the first byte goes out, never after the last:
            # on a busy machine this thread may run again only after the
            # client has read the answer and sent its next request.
            logged[3] = time.time()
        self.send_response(status, reason)
        for k, v in headers:
            if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                self.send_header(k, v)
        if self.command == "HEAD":
            length = dict((k.lower(), v) for k, v in headers).get("content-length", "0")
            self.send_header("Content-Length", length)
            self.end_headers()
            self.wfile.flush()
            return
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if cut:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            logged[5] = len(data) // 2
            self.close_now()
            return
        self.wfile.write(data)
        self.wfile.flush()
        logged[5] = len(data)

    def close_now(self):
        """Ends the connection at once, without a proper close of HTTP."""
        try:
            self.wfile.flush()
        except OSError:
            pass
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    def forward_gcs_put(self, path, body):
        bucket, _, key = path.lstrip("/").partition("/")
        upload = (f"/upload/storage/v1/b/{bucket}/o?uploadType=media"
                  f"&name={quote(unquote(key), safe='')}")
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
        try:
            conn.request("POST", upload, body=body,
                         headers={"Content-Type": "application/octet-stream",
                                  "Content-Length": str(len(body))})
            resp = conn.getresponse()
            data = resp.read()
            headers = [(k, v) for k, v in resp.getheaders()
                       if k.lower() not in ("etag", "content-type")]
            if resp.status == 200:
                meta = json.loads(data)
                headers.append(("ETag", f'"{meta["etag"]}"'))
                headers.append(("x-goog-generation", str(meta["generation"])))
                data = b""
            return resp.status, resp.reason, headers, data
        finally:
            conn.close()

    def forward(self, body):
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
        try:
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            # Content-Length is set once, here: a second one in another
            # case is a request Azurite's parser refuses (400).
            headers = {
                k: v for k, v in self.headers.items()
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"
            }
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            conn.request(self.command, self.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, resp.reason, resp.getheaders(), data
        finally:
            conn.close()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that hangs up on a stalled or cut request is what the
        # tests do on purpose: no traceback for it.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--upstream-port", type=int, required=True)
    ap.add_argument("--gcs-put", action="store_true")
    args = ap.parse_args()
    Handler.upstream_port = args.upstream_port
    Handler.gcs_put = args.gcs_put
    server = Server(("127.0.0.1", args.port), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
