#!/usr/bin/env python3
"""Sets a bucket up in a test-owned emulator of Google Cloud Storage
(fake-gcs-server) or Azure Blob Storage (Azurite), straight to the
emulator, not through the counting proxy, so that setting up costs the
counts nothing. Standard library only.

Usage:
  cloud_setup.py gcs PORT BUCKET                    create the bucket
  cloud_setup.py azure PORT CONTAINER [--public]    create the container
                                                    (--public: anonymous
                                                    reads and lists)
then, for either, objects to write on standard input, one a line:
  KEY<TAB>HEX-OF-THE-BODY
  -KEY                                              delete the object

Azurite takes the well-known development account (devstoreaccount1) and
its key, signed here with Shared Key as Azure's clients sign.
"""

import base64
import hashlib
import hmac
import http.client
import json
import sys
import time
from urllib.parse import quote

AZ_ACCOUNT = "devstoreaccount1"
AZ_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq"
          "/K1SZFPTOtr/KBHBeksoGMGw==")
AZ_VERSION = "2021-08-06"


def request(port, method, path, body=b"", headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        if resp.status >= 300 and not (method == "DELETE" and resp.status == 404):
            sys.exit(f"{method} {path}: {resp.status} {data[:300]!r}")
        return data
    finally:
        conn.close()


def gcs_create(port, bucket):
    body = json.dumps({"name": bucket}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/storage/v1/b", body=body,
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    # 409: there already (a second setup of the same bucket).
    if resp.status >= 300 and resp.status != 409:
        sys.exit(f"create {bucket}: {resp.status} {data[:300]!r}")


def gcs_put(port, bucket, key, body):
    path = (f"/upload/storage/v1/b/{quote(bucket, safe='')}/o"
            f"?uploadType=media&name={quote(key, safe='')}")
    request(port, "POST", path, body, {"Content-Type": "application/octet-stream"})


def gcs_delete(port, bucket, key):
    request(port, "DELETE",
            f"/storage/v1/b/{quote(bucket, safe='')}/o/{quote(key, safe='')}")


def az_sign(method, path, query, headers):
    """Shared Key: the string to sign of Azure's Blob service."""
    h = {k.lower(): v for k, v in headers.items()}
    std = ["content-encoding", "content-language", "content-length", "content-md5",
           "content-type", "date", "if-modified-since", "if-match", "if-none-match",
           "if-unmodified-since", "range"]
    values = [h.get(k, "") for k in std]
    if values[2] == "0":
        values[2] = ""
    canon_headers = "".join(f"{k}:{h[k]}\n" for k in sorted(h) if k.startswith("x-ms-"))
    resource = f"/{AZ_ACCOUNT}{path}"
    for k in sorted(query):
        resource += f"\n{k.lower()}:{query[k]}"
    text = f"{method}\n" + "\n".join(values) + "\n" + canon_headers + resource
    mac = hmac.new(base64.b64decode(AZ_KEY), text.encode(), hashlib.sha256)
    return f"SharedKey {AZ_ACCOUNT}:{base64.b64encode(mac.digest()).decode()}"


def az_request(port, method, container, key, query, body=b"", extra=None):
    path = f"/{AZ_ACCOUNT}/{container}" + (f"/{quote(key)}" if key else "")
    headers = {
        "x-ms-date": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime()),
        "x-ms-version": AZ_VERSION,
        "Content-Length": str(len(body)),
    }
    headers.update(extra or {})
    headers["Authorization"] = az_sign(method, path, query, headers)
    qs = "&".join(f"{k}={quote(v)}" for k, v in query.items())
    return request(port, method, path + (f"?{qs}" if qs else ""), body, headers)


def az_create(port, container, public):
    extra = {"x-ms-blob-public-access": "container"} if public else {}
    conn_path_query = {"restype": "container"}
    try:
        az_request(port, "PUT", container, None, conn_path_query, b"", extra)
    except SystemExit as e:
        if "409" not in str(e):
            raise


def az_put(port, container, key, body):
    az_request(port, "PUT", container, key, {}, body,
               {"x-ms-blob-type": "BlockBlob",
                "Content-Type": "application/octet-stream"})


def az_delete(port, container, key):
    az_request(port, "DELETE", container, key, {})


def main():
    cloud, port, bucket = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    public = "--public" in sys.argv[4:]
    if cloud == "gcs":
        gcs_create(port, bucket)
        put, delete = gcs_put, gcs_delete
    elif cloud == "azure":
        az_create(port, bucket, public)
        put, delete = az_put, az_delete
    else:
        sys.exit(f"unknown cloud {cloud}")
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        if line.startswith("-"):
            delete(port, bucket, line[1:])
            continue
        key, hexbody = line.split("\t", 1)
        put(port, bucket, key, bytes.fromhex(hexbody))
    print("ok", flush=True)


if __name__ == "__main__":
    main()
