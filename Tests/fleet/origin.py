#!/usr/bin/env python3
"""A loopback origin for the fleet tests that counts requests per path.

    origin.py PORT_FILE IMAGE...

Serves `/src/NAME.jpg`: the IMAGE (JPEG) chosen by a hash of NAME with a comment segment naming
NAME inserted after SOI, so every source has its own bytes (strong ETag, Last-Modified,
max-age=3600). `/__counts` answers {path: requests} as JSON; `/__reset` clears them;
`/__change?name=NAME` changes that source to the next IMAGE (a changed original). Listens
on 127.0.0.1, port 0; the port is written to PORT_FILE once it listens.
"""
import hashlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

IMAGES = [open(path, "rb").read() for path in sys.argv[2:]]
COUNTS = {}
VERSIONS = {}
LOCK = threading.Lock()


def source(name):
    with LOCK:
        version = VERSIONS.get(name, 0)
    base = IMAGES[(int(hashlib.sha256(name.encode()).hexdigest(), 16) + version) % len(IMAGES)]
    comment = f"imagekit fleet test source {name}".encode()
    return base[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + base[2:]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/__counts":
            with LOCK:
                body = json.dumps(COUNTS).encode()
            return self.answer(200, body, "application/json")
        if path == "/__reset":
            with LOCK:
                COUNTS.clear()
            return self.answer(200, b"{}", "application/json")
        if path == "/__change":
            name = self.path.split("name=", 1)[1]
            with LOCK:
                VERSIONS[name] = VERSIONS.get(name, 0) + 1
            return self.answer(200, b"{}", "application/json")
        with LOCK:
            COUNTS[path] = COUNTS.get(path, 0) + 1
        if path.startswith("/src/") and path.endswith(".jpg"):
            body = source(path[5:-4])
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            return self.answer(200, body, "image/jpeg", [("ETag", etag), ("Cache-Control", "max-age=3600"),
                                                          ("Last-Modified", "Tue, 24 Nov 2026 10:00:00 GMT")])
        self.answer(404, b"not found", "text/plain")

    do_HEAD = do_GET


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


if __name__ == "__main__":
    server = Server(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()
