#!/usr/bin/env python3
"""fit-in/256x256 JPEG q80 on the same photos: ImageKit's pipeline in process (`bench --corpus
DIR --filter serve/corpus`) and a real thumbor 7.8 serving them cold over loopback (no result or
source storage), whose CPU per thumbnail is read from /proc (utime + stime of its process).
Different layers, stated as such: thumbor's figure includes its HTTP handling, ImageKit's has
none yet (the HTTP service is to come; `make bench-serve` will compare like with like).

    Benchmarks/peers/serve_thumbor.py --bench .build/release/bench [--count 60] [--runs 3]
    (run with the thumbor venv's python: ~/.cache/imagekit/thumbor-7.8.0-venv/bin/python)
"""
import argparse, json, os, random, socket, statistics, subprocess, sys, tempfile, threading, time, urllib.request
from http.server import ThreadingHTTPServer, SimpleHTTPRequestHandler
from PIL import Image, ImageFilter

def photos(directory, count):
    """Photo-like JPEGs: noise blurred into texture over gradients, long side 800-2000 px, q85,
    a fifth progressive, 4:2:0 and 4:2:2 mixed."""
    random.seed(7)
    base = Image.effect_noise((2400, 1800), 60).convert("RGB").filter(ImageFilter.GaussianBlur(1.2))
    tint = Image.linear_gradient("L").resize((2400, 1800)).convert("RGB")
    base = Image.blend(base, tint, 0.35)
    for index in range(count):
        long = random.randint(800, 2000)
        w, h = (long, int(long * random.uniform(0.56, 0.8))) if index % 3 else (int(long * 0.75), long)
        x, y = random.randint(0, 2400 - min(w, 2400)), random.randint(0, 1800 - min(h, 1800))
        crop = base.crop((x, y, x + min(w, 2400), y + min(h, 1800))).resize((w, h))
        crop.save(os.path.join(directory, f"{index:03}.jpg"), quality=85, progressive=index % 5 == 0,
                  subsampling=1 if index % 2 else 2)

def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        directory = os.path.join(work, "photos")
        os.makedirs(directory)
        photos(directory, args.count)
        names = sorted(os.listdir(directory))
        sizes = [os.path.getsize(os.path.join(directory, n)) for n in names]
        print(f"{len(names)} photos, median {statistics.median(sizes) // 1024} KB", file=sys.stderr)

        imagekit = []
        for _ in range(args.runs):
            out = subprocess.run([args.bench, "--corpus", directory, "--filter", "serve/corpus", "--json"],
                                 capture_output=True, text=True, check=True).stdout
            rows = [row for row in (json.loads(l) for l in out.splitlines() if l.startswith("{"))
                    if row.get("case", "").startswith("serve/corpus")]
            imagekit.append(rows[0]["ms_per_image"])

        origin_port, thumbor_port = free_port(), free_port()
        origin = ThreadingHTTPServer(("127.0.0.1", origin_port), lambda *a, **k: Quiet(*a, directory=directory, **k))
        threading.Thread(target=origin.serve_forever, daemon=True).start()
        config = os.path.join(work, "thumbor.conf")
        with open(config, "w") as f:
            f.write("ALLOW_UNSAFE_URL = True\nRESULT_STORAGE = None\nSTORAGE = 'thumbor.storages.no_storage'\n"
                    "QUALITY = 80\nAUTO_WEBP = False\nENGINE_THREADPOOL_SIZE = 0\nRESPECT_ORIENTATION = True\n")
        thumbor = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "thumbor"), "-p", str(thumbor_port),
                                    "-i", "127.0.0.1", "-c", config, "-l", "error"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{thumbor_port}/healthcheck", timeout=1)
                    break
                except Exception:
                    time.sleep(0.1)
            def ask(name):
                url = f"http://127.0.0.1:{thumbor_port}/unsafe/fit-in/256x256/filters:quality(80)/127.0.0.1:{origin_port}/{name}"
                return urllib.request.urlopen(url, timeout=60).read()
            for name in names[:3]:
                ask(name)  # warm-up (imports, first allocations)
            per_thumbnail, wall = [], []
            for _ in range(args.runs):
                before, start = cpu_seconds(thumbor.pid), time.perf_counter()
                for name in names:
                    ask(name)
                per_thumbnail.append((cpu_seconds(thumbor.pid) - before) * 1000 / len(names))
                wall.append((time.perf_counter() - start) * 1000 / len(names))
        finally:
            thumbor.terminate()
            thumbor.wait(timeout=10)
            origin.shutdown()
        ik, th = statistics.median(imagekit), statistics.median(per_thumbnail)
        print(f"ImageKit pipeline, in process (wall = CPU, one thread): {ik:.2f} ms per thumbnail (runs: "
              + ", ".join(f"{v:.2f}" for v in imagekit) + ")")
        print(f"thumbor 7.8 cold over loopback, CPU of its process:       {th:.2f} ms per thumbnail (runs: "
              + ", ".join(f"{v:.2f}" for v in per_thumbnail) + f"); wall {statistics.median(wall):.2f} ms")
        print(f"ratio ImageKit / thumbor: {ik / th:.2f}")
        print(json.dumps({"tool": "imagekit", "phase": "inprocess", "cpu_ms_per_thumbnail": ik}))
        print(json.dumps({"tool": "thumbor", "phase": "cold", "concurrency": 1, "cpu_ms_per_thumbnail": th}))

if __name__ == "__main__":
    main()
