"""A bounded HTTP/1.1 load client for the fleet tests and bench (standard library only).

Each of `concurrency` threads keeps one keep-alive connection and takes the next path from a
shared list until the list ends or `stop()` says so. As browsers and curl do, a request that
fails on a *reused* connection before any byte of its answer arrived (the server closed an idle
keep-alive connection at that moment: an nginx reload, a node restarting) is sent once more on a
new connection; it counts as `resent`, not as a failure. Every other error is a failure.
"""
import http.client
import random
import socket
import threading
import time


class Answer:
    __slots__ = ("path", "status", "headers", "body", "latency", "error", "resent", "finished")

    def __init__(self, path):
        self.path = path
        self.status = None
        self.headers = {}
        self.body = b""
        self.latency = 0.0
        self.error = None
        self.resent = False
        self.finished = 0.0

    @property
    def upstream(self):
        return self.headers.get("x-upstream", "")

    @property
    def cache(self):
        return self.headers.get("x-cache-status", "")


def image_size(body):
    """(width, height) of a JPEG, PNG or WebP body, or None."""
    if body[:8] == b"\x89PNG\r\n\x1a\n":
        return int.from_bytes(body[16:20], "big"), int.from_bytes(body[20:24], "big")
    if body[:4] == b"RIFF" and body[8:12] == b"WEBP":
        chunk = body[12:16]
        if chunk == b"VP8X":
            return 1 + int.from_bytes(body[24:27], "little"), 1 + int.from_bytes(body[27:30], "little")
        if chunk == b"VP8 ":
            return int.from_bytes(body[26:28], "little") & 0x3FFF, int.from_bytes(body[28:30], "little") & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(body[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        return None
    if body[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 < len(body):
        if body[i] != 0xFF:
            return None
        marker = body[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        length = int.from_bytes(body[i + 2:i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return int.from_bytes(body[i + 7:i + 9], "big"), int.from_bytes(body[i + 5:i + 7], "big")
        i += 2 + length
    return None


class Load:
    """`Load(host, port, paths, concurrency).start()`, then `.join()`; answers in `.answers`."""

    def __init__(self, host, port, paths, concurrency, headers=None, timeout=30.0, minimum=None):
        self.host, self.port = host, port
        self.paths = list(paths)
        self.concurrency = concurrency
        self.headers = headers or {}
        self.timeout = timeout
        self.answers = []
        self.minimum = minimum  # with stop(): keep going until this many were sent
        self._next = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []
        self.started = self.ended = 0.0

    @property
    def done(self):
        with self._lock:
            return len(self.answers)

    def stop(self):
        self._stop.set()

    def _take(self):
        with self._lock:
            if self._next >= len(self.paths):
                return None
            if self._stop.is_set() and (self.minimum is None or self._next >= self.minimum):
                return None
            path = self.paths[self._next]
            self._next += 1
            return path

    def _connection(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def _worker(self):
        connection, used = self._connection(), False
        while (path := self._take()) is not None:
            answer = Answer(path)
            began = time.monotonic()
            for attempt in (1, 2):
                try:
                    connection.request("GET", path, headers=self.headers)
                    response = connection.getresponse()
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as error:
                    connection.close()
                    connection = self._connection()
                    if used and attempt == 1:
                        answer.resent, used = True, False
                        continue
                    answer.error = f"{type(error).__name__}: {error}"
                    break
                except Exception as error:
                    connection.close()
                    connection, used = self._connection(), False
                    answer.error = f"{type(error).__name__}: {error}"
                    break
                try:
                    answer.body = response.read()
                    answer.status = response.status
                    answer.headers = {name.lower(): value for name, value in response.getheaders()}
                    used = True
                    if response.will_close:
                        connection.close()
                        connection, used = self._connection(), False
                except Exception as error:  # the answer broke off after its status line
                    answer.error = f"incomplete answer: {type(error).__name__}: {error}"
                    answer.status = response.status
                    connection.close()
                    connection, used = self._connection(), False
                break
            answer.latency = time.monotonic() - began
            answer.finished = time.monotonic()
            with self._lock:
                self.answers.append(answer)
        connection.close()

    def start(self):
        self.started = time.monotonic()
        self._threads = [threading.Thread(target=self._worker, daemon=True) for _ in range(self.concurrency)]
        for thread in self._threads:
            thread.start()
        return self

    def join(self):
        for thread in self._threads:
            thread.join()
        self.ended = time.monotonic()
        return self

    def run(self):
        return self.start().join()

    @property
    def seconds(self):
        return (self.ended or time.monotonic()) - self.started


def percentile(values, fraction):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def free_base_port(count, host="127.0.0.1"):
    """A port P with P…P+count all free on `host`, below the kernel's ephemeral range: a port
    in that range that is free now can be taken by any outgoing connection (the load client's
    own, thousands of them) before the fleet binds it (a node of `make fleet N=4` once found its
    port taken that way)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral_low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(10000, max(10001, ephemeral_low - count - 1))
        sockets = []
        try:
            for offset in range(count + 1):
                probe = socket.socket()
                sockets.append(probe)
                probe.bind((host, base + offset))
            return base
        except OSError:
            continue
        finally:
            for probe in sockets:
                probe.close()
    raise RuntimeError("no free range of ports on " + host)
