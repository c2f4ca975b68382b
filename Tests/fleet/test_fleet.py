#!/usr/bin/env python3
"""`make test-fleet`: a fleet of `imagekit serve` nodes behind nginx, driven through the
Makefile's own targets (`make fleet N=…`, `fleet-restart`), on loopback only.

A counting origin (origin.py) serves distinct JPEGs; a bounded load client (fleetload.py) sends
thumbor and imgproxy URLs through nginx. Each test uses sources of its own, so it starts cold.
Every figure the issue asks for is printed as `fleet: …` lines.

    python3 Tests/fleet/test_fleet.py --binary .build-test/release/imagekit [-k NAME]
"""
import argparse
import base64
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from fleetload import Load, free_base_port, image_size, percentile  # noqa: E402

HOST = "127.0.0.1"
# The corpus the Swift tests use: IMAGEKIT_CORPUS, ../shared/corpus, else the repository's subset.
CORPUS_ROOT = os.environ.get("IMAGEKIT_CORPUS") or next(
    (path for path in (os.path.join(REPO, "..", "shared", "corpus"),) if os.path.exists(os.path.join(path, "MANIFEST.tsv"))),
    os.path.join(REPO, "Tests", "Corpus", "conformance"))
CORPUS = os.path.join(CORPUS_ROOT, "jpeg", "exif-orientation-examples")
BINARY = os.path.join(REPO, ".build-test", "release", "imagekit")
# The nodes' own defaults otherwise (workers, queue): locality at 16 concurrent requests holds
# with them (issue 41: a 4 × workers queue sent bursts to the next node, which fetched again).
NODE_ARGS = "--allow-unsafe --allow-address 127.0.0.0/8 --grace 15"


def report(message):
    print(f"fleet: {message}", flush=True)


def http_get(port, path, headers=None, timeout=30):
    request = urllib.request.Request(f"http://{HOST}:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


class Fleet:
    """One fleet in its own directory, run through the Makefile."""

    def __init__(self, name, args):
        self.dir = os.path.join(REPO, ".build-test", f"fleet-{name}")
        self.port = free_base_port(6)
        self.args = args
        subprocess.run(["make", "-s", "--no-print-directory", "fleet-clean", f"FLEET_DIR={self.dir}"], cwd=REPO,
                       capture_output=True)

    def make(self, target, **variables):
        command = ["make", "-s", "--no-print-directory", target, f"FLEET_DIR={self.dir}", f"FLEET_BIN={BINARY}",
                   f"FLEET_PORT={self.port}", f"FLEET_ARGS={self.args}"]
        command += [f"{name}={value}" for name, value in variables.items()]
        started = time.monotonic()
        result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        if result.returncode != 0:
            raise AssertionError(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
        return time.monotonic() - started, result.stdout

    def node_port(self, k):
        return self.port + k

    def node_address(self, k):
        return f"{HOST}:{self.port + k}"

    def node_pid(self, k):
        with open(os.path.join(self.dir, "run", f"node-{k}.pid")) as f:
            return int(f.read())

    def access_log(self):
        """nginx's log lines as dicts (the buffer is flushed every second)."""
        time.sleep(1.2)
        pattern = re.compile(r'"(?P<method>\S+) (?P<path>\S+) [^"]*" (?P<status>\d+) \d+ cache=(?P<cache>\S*) '
                             r'upstream="(?P<upstream>[^"]*)" upstream_status="(?P<upstream_status>[^"]*)"')
        lines = []
        with open(os.path.join(self.dir, "nginx", "log", "access.log")) as f:
            for line in f:
                if match := pattern.search(line):
                    lines.append(match.groupdict())
        return lines

    def requests_seen_by_nodes(self, nodes):
        total = 0
        for k in range(1, nodes + 1):
            _, _, body = http_get(self.node_port(k), "/metrics")
            for line in body.decode().splitlines():
                if line.startswith("imagekit_requests_total{"):
                    total += float(line.rsplit(" ", 1)[1])
        return total


class Origin:
    def __init__(self):
        images = sorted(os.path.join(CORPUS, name) for name in os.listdir(CORPUS) if name.endswith(".jpg"))
        report(f"origin: {len(images)} photos from {os.path.normpath(CORPUS)}")
        port_file = os.path.join(REPO, ".build-test", "fleet-origin.port")
        if os.path.exists(port_file):
            os.remove(port_file)
        self.process = subprocess.Popen([sys.executable, os.path.join(HERE, "origin.py"), port_file, *images])
        deadline = time.monotonic() + 10
        while not os.path.exists(port_file):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("the origin did not start")
            time.sleep(0.02)
        with open(port_file) as f:
            self.port = int(f.read())

    def counts(self):
        return json.loads(http_get(self.port, "/__counts")[2])

    def source(self, name):
        return f"http://{HOST}:{self.port}/src/{name}.jpg"

    def stop(self):
        self.process.terminate()
        self.process.wait()


# The variants asked of every source: (expected width, height, path maker). Thumbor and imgproxy
# plain URLs both carry the source as `http://…`, so they hash alike and may be mixed per source;
# a base64 source is a different key, so its variants are all base64.
def thumbor(size):
    return lambda src: f"/unsafe/{size}/{src}"


def plain(options):
    return lambda src: f"/insecure/{options}/plain/{src}"


def encoded(options):
    return lambda src: f"/insecure/{options}/" + base64.urlsafe_b64encode(src.encode()).decode().rstrip("=")


VARIANT_SETS = [
    [(120, 80, thumbor("120x80")), (240, 160, thumbor("240x160")), (320, 240, thumbor("320x240")),
     (200, 100, thumbor("10x10:210x110"))],
    [(120, 80, thumbor("120x80")), (240, 160, plain("rs:fill:240:160")), (320, 240, plain("rs:fill:320:240")),
     (200, 100, plain("c:200:100"))],
    [(120, 80, encoded("rs:fill:120:80")), (240, 160, encoded("rs:fill:240:160")),
     (320, 240, encoded("rs:fill:320:240")), (200, 100, encoded("c:200:100"))],
]


def source_form(origin, name, index, width, height):
    """A `width`×`height` fill of source `name` written as VARIANT_SETS[index % 3] writes it (one hash key)."""
    src = origin.source(name)
    if index % 3 == 2:
        return encoded(f"rs:fill:{width}:{height}")(src)
    return thumbor(f"{width}x{height}")(src)


def variant_requests(origin, prefix, count, seed):
    """Every variant of `count` sources named `prefix-i`, shuffled: [(path, (w, h), source path)]."""
    requests = []
    for i in range(count):
        src = origin.source(f"{prefix}-{i}")
        for width, height, make in VARIANT_SETS[i % 3]:
            requests.append((make(src), (width, height), f"/src/{prefix}-{i}.jpg"))
    random.Random(seed).shuffle(requests)
    return requests


def failures(load, expected):
    """Answers that are not a 200 with an image of the expected size."""
    bad = []
    for answer in load.answers:
        if answer.error or answer.status != 200:
            bad.append(f"{answer.path}: {answer.status} {answer.error or answer.body[:200]!r}")
        elif image_size(answer.body) != expected[answer.path]:
            bad.append(f"{answer.path}: size {image_size(answer.body)}, expected {expected[answer.path]}")
    return bad


def summary(load):
    latencies = [a.latency * 1000 for a in load.answers]
    return (f"{len(load.answers)} requests in {load.seconds:.2f} s ({len(load.answers) / load.seconds:.0f}/s), "
            f"p50 {percentile(latencies, 0.5):.1f} ms, p99 {percentile(latencies, 0.99):.1f} ms, "
            f"resent on a new connection: {sum(a.resent for a in load.answers)}")


def answers_http(port):
    """Whether something on 127.0.0.1:PORT answers an HTTP request (any status)."""
    try:
        status, _, _ = http_get(port, "/", timeout=3)
        return status > 0
    except OSError:
        return False


class FleetTests(unittest.TestCase):
    origin = None
    fleet = None

    @classmethod
    def setUpClass(cls):
        # A web server of the host's own on :80 (Debian's nginx, say) must answer after the fleet as
        # before: the fleet's nginx has its own prefix, config and ports, and nothing here stops,
        # reloads or reconfigures a service of the host.
        cls.host_port_80 = answers_http(80)
        cls.origin = Origin()
        cls.fleet = Fleet("test", NODE_ARGS)
        seconds, output = cls.fleet.make("fleet", N=3)
        report(f"make fleet N=3: {seconds:.2f} s")

    @classmethod
    def tearDownClass(cls):
        if cls.fleet:
            cls.fleet.make("fleet-stop")
        if cls.origin:
            cls.origin.stop()

    def test_9_the_hosts_own_web_server_still_answers(self):
        if not self.host_port_80:
            report("nothing of the host's answered on 127.0.0.1:80 before the tests: nothing to check there")
            return
        self.assertTrue(answers_http(80), "the host's own server on :80 answered before the fleet tests, not after")
        report("the host's own server on 127.0.0.1:80 still answers")

    def load(self, requests, concurrency=16, **options):
        paths = [path for path, _, _ in requests]
        return Load(HOST, self.fleet.port, paths, concurrency, **options)

    # 1
    def test_1_locality(self):
        requests = variant_requests(self.origin, "t1", 300, seed=1)
        expected = {path: size for path, size, _ in requests}
        load = self.load(requests).run()
        self.assertEqual(failures(load, expected), [])
        counts = self.origin.counts()
        sources = {source for _, _, source in requests}
        fetched = {path: counts.get(path, 0) for path in sources}
        self.assertEqual({path for path, n in fetched.items() if n != 1}, set(),
                         "every source must be fetched from the origin exactly once")
        per_node = {}
        for answer in load.answers:
            per_node[answer.upstream] = per_node.get(answer.upstream, 0) + 1
        report(f"locality: {summary(load)}; origin fetches per source: min {min(fetched.values())}, "
               f"max {max(fetched.values())}; requests per node {dict(sorted(per_node.items()))}")

    # 2
    def test_2_kill_a_node(self):
        requests = variant_requests(self.origin, "t2", 600, seed=2)
        expected = {path: size for path, size, _ in requests}
        victim = 2
        load = self.load(requests).start()
        while load.done < len(requests) // 3:
            time.sleep(0.01)
        killed_at = time.monotonic()
        os.kill(self.fleet.node_pid(victim), signal.SIGKILL)
        load.join()
        bad = failures(load, expected)
        excused = [line for line in bad if "incomplete answer" in line]
        self.assertEqual([line for line in bad if line not in excused], [])
        after = [a for a in load.answers if a.finished > killed_at]
        retried = [line for line in self.fleet.access_log() if self.fleet.node_address(victim) + ", " in line["upstream"]]
        report(f"kill -9 node {victim} after {len(requests) // 3} requests: {summary(load)}; failed: {len(bad)} "
               f"(excused, cut off mid-body: {len(excused)}); answered after the kill: {len(after)}; "
               f"sent to the dead node and retried on the next: {len(retried)}")
        self.assertGreater(len(retried), 0, "the kill should have happened under load")

        # Sources the victim held before the kill: after it is back, new variants go to it.
        source_of = {path: source for path, _, source in requests}
        held = sorted({source_of[a.path] for a in load.answers
                       if a.upstream == self.fleet.node_address(victim) and a.finished < killed_at})
        seconds, output = self.fleet.make("fleet-restart")
        report(f"make fleet-restart (node {victim} dead): {seconds:.2f} s")
        self.assertIn(f"node {victim}: was not running; started", output)
        names = [source[len("/src/"):-len(".jpg")] for source in held]
        back = Load(HOST, self.fleet.port, [source_form(self.origin, name, int(name.split("-")[1]), 64, 64) for name in names], 8).run()
        self.assertTrue(all(a.status == 200 for a in back.answers))
        elsewhere = [a.upstream for a in back.answers if a.upstream != self.fleet.node_address(victim)]
        report(f"node {victim} rejoined: {len(held) - len(elsewhere)} of {len(held)} of its sources went back to it")
        self.assertEqual(elsewhere, [])

    # 3
    def test_3_rolling_restart(self):
        requests = variant_requests(self.origin, "t3", 1500, seed=3)
        expected = {path: size for path, size, _ in requests}
        load = self.load(requests, minimum=2000).start()
        while load.done < 200:
            time.sleep(0.01)
        seconds, output = self.fleet.make("fleet-restart")
        during = load.done
        load.stop()
        load.join()
        report(f"rolling restart under load: make fleet-restart took {seconds:.2f} s "
               f"({output.count('drained and exited')} nodes drained); {summary(load)}; "
               f"answered while it ran: {during - 200}")
        self.assertEqual(failures(load, expected), [])
        self.assertEqual(output.count("drained and exited"), 3)
        self.assertGreaterEqual(len(load.answers), 2000)

    # 4
    def test_4_same_bytes_from_every_node(self):
        checked = 0
        for i in range(6):
            src = self.origin.source(f"t4-{i}")
            for _, _, make in VARIANT_SETS[i % 3][:2]:
                path = make(src)
                answers = [http_get(self.fleet.node_port(k), path) for k in (1, 2, 3)]
                self.assertTrue(all(status == 200 for status, _, _ in answers), path)
                self.assertEqual(len({body for _, _, body in answers}), 1, f"{path}: bodies differ between nodes")
                etags = {headers["etag"] for _, headers, _ in answers}
                self.assertEqual(len(etags), 1, f"{path}: ETags differ between nodes: {etags}")
                status, _, body = http_get(self.fleet.node_port(3), path, {"If-None-Match": etags.pop()})
                self.assertEqual((status, body), (304, b""))
                checked += 1
        report(f"determinism: {checked} URLs asked of each of 3 nodes: identical bytes and ETags, 304 on revalidation")

    # 5
    def test_5_scale_out_and_in(self):
        sources = 400
        first = [(plain("rs:fill:120:80")(self.origin.source(f"t5-{i}")), (120, 80), f"/src/t5-{i}.jpg") for i in range(sources)]
        self.assertEqual(failures(self.load(first).run(), {p: s for p, s, _ in first}), [])

        # Under load (other sources), scale 3 → 4.
        background = variant_requests(self.origin, "t5b", 1000, seed=5)
        load = self.load(background, minimum=600).start()
        while load.done < 100:
            time.sleep(0.01)
        seconds, output = self.fleet.make("fleet", N=4)
        load.stop()
        load.join()
        self.assertEqual(failures(load, {p: s for p, s, _ in background}), [])
        report(f"make fleet N=4 under load: {seconds:.2f} s; {summary(load)}, none failed")

        # The same sources, a new variant: the share fetched again is the share that moved.
        second = [(plain("rs:fill:240:160")(self.origin.source(f"t5-{i}")), (240, 160), f"/src/t5-{i}.jpg") for i in range(sources)]
        after = self.load(second).run()
        self.assertEqual(failures(after, {p: s for p, s, _ in second}), [])
        counts = self.origin.counts()
        moved = [source for _, _, source in second if counts.get(source) == 2]
        to_new = [a for a in after.answers if a.upstream == self.fleet.node_address(4)]
        share = len(moved) / sources
        report(f"scale out 3 → 4: {len(moved)} of {sources} sources fetched again ({share:.1%}; 1/4 expected); "
               f"node 4 now answers {len(to_new)} of them")
        self.assertEqual(len(moved), len(to_new), "exactly the sources that moved to node 4 are fetched again")
        self.assertGreater(share, 0.12)
        self.assertLess(share, 0.40)

        # And back to 3 under load: node 4 is taken out of nginx, then drained.
        load = self.load(variant_requests(self.origin, "t5c", 1000, seed=6), minimum=600).start()
        while load.done < 100:
            time.sleep(0.01)
        seconds, output = self.fleet.make("fleet", N=3)
        load.stop()
        load.join()
        self.assertIn("node 4: drained and stopped", output)
        self.assertEqual([a for a in load.answers if a.error or a.status != 200], [])
        report(f"make fleet N=3 (scale in) under load: {seconds:.2f} s; {summary(load)}, none failed")

    # 6
    def test_6_hot_key(self):
        path = thumbor("200x200")(self.origin.source("t6-hot"))
        before = self.fleet.requests_seen_by_nodes(3)
        load = Load(HOST, self.fleet.port, [path] * 5000, 64).run()
        seen = self.fleet.requests_seen_by_nodes(3) - before
        statuses = {}
        for answer in load.answers:
            statuses[answer.cache] = statuses.get(answer.cache, 0) + 1
        report(f"hot key: {summary(load)}; cache statuses {statuses}; requests the nodes saw: {seen:.0f}; "
               f"origin fetches: {self.origin.counts().get('/src/t6-hot.jpg')}")
        self.assertTrue(all(a.status == 200 and image_size(a.body) == (200, 200) for a in load.answers))
        self.assertEqual(seen, 1)
        self.assertEqual(statuses.get("MISS"), 1)

    # 7
    def test_7_overload_is_retried_on_the_next_node(self):
        self.fleet.make("fleet-stop")
        fleet = Fleet("overload", "--allow-unsafe --allow-address 127.0.0.0/8 --workers 1 --queue 0")
        try:
            fleet.make("fleet", N=3)
            requests = variant_requests(self.origin, "t7", 300, seed=7)
            load = Load(HOST, fleet.port, [p for p, _, _ in requests], 48).run()
            lines = [line for line in fleet.access_log() if "/t7-" in line["path"]]
            by_client = {}
            for answer in load.answers:
                by_client[answer.status] = by_client.get(answer.status, 0) + 1
            tries = [line["upstream_status"].split(", ") for line in lines]
            retried_ok = [t for t in tries if t[0] == "503" and t[-1] == "200"]
            all_full = [t for t in tries if t == ["503"] * 3]
            report(f"overload (1 worker, no queue per node): client statuses {by_client}; "
                   f"503 then 200 on a next node: {len(retried_ok)}; all 3 tried nodes full: {len(all_full)}; "
                   f"most nodes tried for one request: {max(len(t) for t in tries)}")
            self.assertEqual(set(by_client) - {200, 503}, set())
            self.assertTrue(all(len(t) <= 3 for t in tries))
            self.assertGreater(len(retried_ok), 0)
            for line, t in zip(lines, tries):
                if line["status"] == "503":
                    self.assertEqual(t, ["503"] * 3, "a client sees 503 only when every node it tried was full")
            for answer in load.answers:
                if answer.status == 503:
                    self.assertIn("retry-after", answer.headers)
                    self.assertEqual(json.loads(answer.body)["error"], "busy")
        finally:
            fleet.make("fleet-stop")

    # 8
    def test_8_purge_through_the_front_door(self):
        self.fleet.make("fleet-stop")
        key = "fleet-admin-key"
        fleet = Fleet("purge", f"{NODE_ARGS} --admin-key {key}")
        try:
            fleet.make("fleet", N=3)
            changed, other = self.origin.source("t8-changed"), self.origin.source("t8-other")
            sizes = [(60 + 20 * i, 40 + 10 * i) for i in range(10)]
            # 20 variants of the source (thumbor and imgproxy plain URLs, one hash key), 5 of them
            # also asked with a WebP Accept (another key of nginx's cache), and 5 of another source.
            paths = [thumbor(f"{w}x{h}")(changed) for w, h in sizes] + [plain(f"rs:fill:{w}:{h}")(changed) for w, h in sizes]
            expected = dict(zip(paths, sizes + sizes))
            asks = [(path, {}) for path in paths] + [(path, {"Accept": "image/webp,*/*"}) for path in paths[:5]]
            others = [(thumbor(f"{w}x{h}")(other), {}) for w, h in sizes[:5]]

            def fetch(requests):
                return {(path, tuple(headers.items())): http_get(fleet.port, path, headers) for path, headers in requests}

            def purge(authorization):
                request = urllib.request.Request(
                    f"http://{HOST}:{fleet.port}/admin/purge?source={changed}", method="POST",
                    data=json.dumps({"source": changed}).encode(),
                    headers={"Authorization": authorization, "Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        return response.status, json.loads(response.read())
                except urllib.error.HTTPError as error:
                    return error.code, json.loads(error.read() or b"{}")

            before = fetch(asks + others)
            warm = fetch(asks + others)
            self.assertEqual({answer[1].get("x-cache-status") for answer in warm.values()}, {"HIT"})
            counts = self.origin.counts()
            http_get(self.origin.port, "/__change?name=t8-changed")
            stale = fetch(asks)
            self.assertTrue(all(stale[k][2] == before[k][2] for k in stale), "nginx keeps the old bytes until purged")

            status, answer = purge("Bearer wrong-key")
            self.assertEqual((status, answer), (403, {"error": "forbidden", "message": "not allowed"}))
            unchanged = fetch(asks)
            self.assertTrue(all(unchanged[k][2] == before[k][2] for k in unchanged), "a wrong key changes nothing")
            self.assertEqual(self.origin.counts(), counts)

            status, answer = purge(f"Bearer {key}")
            self.assertEqual(status, 200, answer)
            report(f"purge: the owner dropped {len(answer['dropped'])} node entries and asked nginx to drop "
                   f"{len(answer.get('frontCacheKeys', []))} keys ({answer.get('frontCacheRemoved')} were cached)")
            after = fetch(asks)
            for k, (status, headers, body) in after.items():
                self.assertEqual(status, 200, k)
                self.assertNotEqual(body, before[k][2],
                                    f"{k}: the old bytes after the purge ({len(body)} bytes, {headers.get('x-cache-status')})")
                self.assertEqual(image_size(body), expected[k[0]], k)
            counts_after = self.origin.counts()
            self.assertEqual(counts_after.get("/src/t8-changed.jpg", 0), counts.get("/src/t8-changed.jpg", 0) + 1,
                             "the changed source is fetched once for all its variants")
            untouched = fetch(others)
            self.assertTrue(all(untouched[k][2] == before[k][2] for k in untouched))
            self.assertEqual({answer[1].get("x-cache-status") for answer in untouched.values()}, {"HIT"})
            self.assertEqual(self.origin.counts().get("/src/t8-other.jpg"), counts.get("/src/t8-other.jpg"))
            report(f"purge: {len(after)} variants answered the new bytes with one origin fetch; "
                   f"{len(untouched)} variants of another source still cached")
        finally:
            fleet.make("fleet-stop")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=BINARY)
    parser.add_argument("-k", action="append", default=[])
    options, rest = parser.parse_known_args()
    BINARY = os.path.abspath(options.binary)
    argv = [sys.argv[0], "-v"] + [item for name in options.k for item in ("-k", name)] + rest
    unittest.main(argv=argv)
