#!/usr/bin/env python3
"""`make bench-fleet`: the `make bench-serve` photos and mixed workload through nginx in front of
N `imagekit serve` nodes (`make fleet`), for each N asked (default 1, 2, 4), in one run.

Each N starts from empty caches: a fresh fleet directory, nginx's result cache empty. Every
photo is asked at 3 sizes + a crop + a WebP (thumbor URLs, shuffled), at concurrency 16, twice:
  pass 1  cold: thumbnails/s, p50/p99, CPU ms per thumbnail (every node and nginx process, from
          /proc; the load client and the origin are not counted), origin requests per source
  pass 2  the same URLs again: the share nginx's result cache answered (X-Cache-Status: HIT)
Nodes run with --workers 1, so one node is one core's worth of processing and N=2 can be
compared with 2x N=1 on a 2-core machine. The origin is a separate nginx serving the photos.

Run with the thumbor venv's python (it has Pillow, which makes the photos once):
    ~/.cache/imagekit/thumbor-7.8.0-venv/bin/python Benchmarks/fleet/bench_fleet.py \\
        --imagekit .build/release/imagekit [--nodes 1,2,4] [--count 1000] [--json]
"""
import argparse, json, os, random, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "Benchmarks", "serve"))
sys.path.insert(0, os.path.join(REPO, "Tests", "fleet"))
from bench_serve import make_photos, fit, log, start_origin  # noqa: E402
from fleetload import Load, free_base_port, image_size, percentile  # noqa: E402
from PIL import Image  # noqa: E402

FIELDS = ["nodes", "pass", "requests", "thumbnails_per_s", "p50_ms", "p99_ms", "cpu_ms_per_thumbnail",
          "origin_requests_per_source", "result_cache_hits", "mean_result_bytes", "fleet_cores", "client_cores",
          "machine_busy", "errors", "wrong_size"]


def cpu_seconds(pid):
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except FileNotFoundError:
        return 0.0


def machine_jiffies():
    """(busy, total) jiffies of all cores, from /proc/stat."""
    values = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
            except (FileNotFoundError, IndexError):
                pass
    return found


def make(target, **variables):
    command = ["make", "-s", "--no-print-directory", "-C", REPO, target] + [f"{k}={v}" for k, v in variables.items()]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--imagekit", required=True)
    parser.add_argument("--nodes", default="1,2,4")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--photos", default=os.path.expanduser("~/.cache/imagekit/bench-serve-photos"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    make_photos(args.photos, args.count)
    names = sorted(name for name in os.listdir(args.photos) if name.endswith(".jpg"))[:args.count]
    dimensions = {name: Image.open(os.path.join(args.photos, name)).size for name in names}
    mean_source = sum(os.path.getsize(os.path.join(args.photos, name)) for name in names) / len(names)
    log(f"{len(names)} photos, mean {mean_source / 1024:.0f} KB")

    work = tempfile.mkdtemp(prefix="bench-fleet-")
    origin_port = free_base_port(0)
    origin, origin_conf = start_origin(work, args.photos, origin_port, access_log=os.path.join(work, "origin.log"))
    source = f"http://127.0.0.1:{origin_port}"
    jobs = []
    for name in names:
        w, h = dimensions[name]
        jobs += [(f"/unsafe/fit-in/256x256/filters:quality(80)/{source}/{name}", fit(w, h, 256, 256)),
                 (f"/unsafe/fit-in/512x512/{source}/{name}", fit(w, h, 512, 512)),
                 (f"/unsafe/128x128/{source}/{name}", (128, 128)),
                 (f"/unsafe/0x0:{min(w, 400)}x{min(h, 300)}/{source}/{name}", (min(w, 400), min(h, 300))),
                 (f"/unsafe/fit-in/256x256/filters:format(webp)/{source}/{name}", fit(w, h, 256, 256))]
    random.Random(2026).shuffle(jobs)
    expected = dict(jobs)
    rows = []
    try:
        for nodes in [int(n) for n in args.nodes.split(",")]:
            directory = os.path.join(work, f"fleet-{nodes}")
            port = free_base_port(nodes)
            settings = dict(FLEET_DIR=directory, FLEET_PORT=port, FLEET_BIN=os.path.abspath(args.imagekit), N=nodes,
                            FLEET_ARGS="--allow-unsafe --allow-address 127.0.0.0/8 --workers 1 --queue 64")
            make("fleet", **settings)
            open(os.path.join(work, "origin.log"), "w").close()
            subprocess.run(["nginx", "-c", origin_conf, "-p", work, "-s", "reopen"], capture_output=True)
            pids = [int(open(os.path.join(directory, "run", f"node-{k}.pid")).read()) for k in range(1, nodes + 1)]
            nginx_pid = int(open(os.path.join(directory, "run", "nginx.pid")).read())
            for number in (1, 2):
                processes = pids + [nginx_pid] + children(nginx_pid)
                before = {pid: cpu_seconds(pid) for pid in processes}
                busy_before, total_before = machine_jiffies()
                own_before = sum(os.times()[:2])
                load = Load("127.0.0.1", port, [path for path, _ in jobs], args.concurrency).run()
                cpu = sum(cpu_seconds(pid) - before[pid] for pid in processes)
                busy_after, total_after = machine_jiffies()
                client = sum(os.times()[:2]) - own_before
                answers = load.answers
                errors = sum(1 for a in answers if a.error or a.status != 200)
                wrong = sum(1 for a in answers if a.status == 200 and image_size(a.body) != expected[a.path])
                latencies = [a.latency * 1000 for a in answers]
                row = dict(nodes=nodes, requests=len(answers), errors=errors, wrong_size=wrong,
                           thumbnails_per_s=round(len(answers) / load.seconds, 1),
                           p50_ms=round(percentile(latencies, 0.5), 1), p99_ms=round(percentile(latencies, 0.99), 1),
                           cpu_ms_per_thumbnail=round(cpu * 1000 / len(answers), 2),
                           result_cache_hits=round(sum(a.cache == "HIT" for a in answers) / len(answers), 3),
                           mean_result_bytes=round(sum(len(a.body) for a in answers) / max(1, len(answers))),
                           fleet_cores=round(cpu / load.seconds, 2), client_cores=round(client / load.seconds, 2),
                           machine_busy=round((busy_after - busy_before) / max(1, total_after - total_before), 3))
                row["pass"] = "cold" if number == 1 else "again"
                if number == 1:
                    time.sleep(1.2)  # the origin's access log buffer
                    fetched = sum(1 for line in open(os.path.join(work, "origin.log")) if line.strip())
                    row["origin_requests_per_source"] = round(fetched / len(names), 3)
                rows.append(row)
                if args.json:
                    print(json.dumps({field: row.get(field) for field in FIELDS}), flush=True)
                log(f"N={nodes} {row['pass']}: {row}")
            make("fleet-clean", **settings)
    finally:
        origin.terminate()
        origin.wait()
        shutil.rmtree(work, ignore_errors=True)

    if not args.json:
        print("| N | pass | requests | thumbnails/s | p50 ms | p99 ms | CPU ms/thumbnail (nodes + nginx) | origin requests/source "
              "| result-cache hits | cores: fleet / load client / machine busy | errors |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['nodes']} | {r['pass']} | {r['requests']} | {r['thumbnails_per_s']} | {r['p50_ms']} | {r['p99_ms']} | "
                  f"{r['cpu_ms_per_thumbnail']} | {r.get('origin_requests_per_source', '')} | {r['result_cache_hits']:.1%} | "
                  f"{r['fleet_cores']} / {r['client_cores']} / {r['machine_busy']:.0%} | {r['errors'] + r['wrong_size']} |")
        cold = {r["nodes"]: r["thumbnails_per_s"] for r in rows if r["pass"] == "cold"}
        if 1 in cold and 2 in cold:
            print(f"\nN=2 cold: {cold[2] / cold[1]:.2f}x N=1 (2x would be linear)")
        print(f"sources: mean {mean_source / 1024:.0f} KB")


if __name__ == "__main__":
    main()
