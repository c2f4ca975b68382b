#!/usr/bin/env python3
"""`make bench-serve QUALITY=1`: autoquality and the `best` format through `imagekit serve`, on
photos and graphics, scored with SSIMULACRA2.

Corpus (made once, cached outside the repository): COUNT photos from bench_serve's set (Debian's
lomiri-wallpapers, cropped and scaled) and COUNT/3 graphics drawn with Pillow (flat UI mock-ups,
charts, logos on gradients, text). Every answer is fitted in 800x800; the reference of each
image is the service's own lossless PNG of that same answer, so only the encoding differs.

For each lossy format (JPEG, WebP, AVIF):
  q80        every image at fixed quality 80;
  fixed*     the lowest fixed quality (bisected over 1-95) at which every image scores >= TARGET
             (or, for an image that cannot reach TARGET even at 95, what it scores at 95, which is
             what aq answers it with): what an operator must pick to promise what aq promises;
  aq         `aq:ssimulacra2:TARGET` per image.
Bytes are summed over the corpus; scores come from `imagekit compare` (ImageKit's SSIMULACRA2,
equal to PyPI's ssimulacra2 within 0.05 on the test pairs; a sample is re-scored with PyPI's when
--peer-python is given). The search's cost is the service's encode stage
(`imagekit_stage_duration_seconds_sum{stage="encode"}`, one worker on one core) for the aq run
over the q80 run: each is single-threaded CPU work.
best:      `aq:ssimulacra2:TARGET/f:best` with Accept listing WebP and AVIF, against each single
           format's aq answer, image by image.

    ~/.cache/imagekit/peers-venv/bin/python Benchmarks/serve/bench_quality.py --imagekit .build/release/imagekit \\
        [--count 30] [--target 70] [--json]
"""
import argparse, glob, http.client, json, math, os, random, shutil, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_serve import free_port, make_photos, wait_http

GRAPHICS_VERSION = "v1"
BOX = 800
FORMATS = ("jpeg", "webp", "avif")
EXTENSION = {"jpeg": "jpg", "webp": "webp", "avif": "avif"}


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def make_graphics(directory, count):
    from PIL import Image, ImageDraw, ImageFont

    folder = os.path.join(directory, f"graphics-{GRAPHICS_VERSION}")
    marker = os.path.join(folder, f".complete-{count}")
    paths = [os.path.join(folder, f"g{index:03}.png") for index in range(count)]
    if os.path.exists(marker):
        return paths
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(61)
    font = ImageFont.load_default()
    for index, path in enumerate(paths):
        kind = index % 4
        width, height = rng.randint(640, 1200), rng.randint(480, 900)
        if kind == 3:  # a logo on a gradient
            image = Image.new("RGB", (width, height))
            top, bottom = [tuple(rng.randint(0, 255) for _ in range(3)) for _ in range(2)]
            pixels = image.load()
            for y in range(height):
                t = y / (height - 1)
                colour = tuple(int(a + (b - a) * t) for a, b in zip(top, bottom))
                for x in range(width):
                    pixels[x, y] = colour
        else:
            image = Image.new("RGB", (width, height), tuple(rng.randint(200, 255) for _ in range(3)))
        draw = ImageDraw.Draw(image)
        palette = [tuple(rng.randint(0, 255) for _ in range(3)) for _ in range(6)]
        if kind == 0:  # a UI mock-up: bars, buttons, text
            draw.rectangle((0, 0, width, 60), fill=palette[0])
            for row in range(8):
                y = 90 + row * 70
                draw.rounded_rectangle((40, y, width - 40, y + 50), radius=10, fill=palette[1 + row % 3])
                draw.text((60, y + 18), f"Item {row + 1}: the quick brown fox {rng.randint(0, 999)}", fill=(0, 0, 0),
                          font=font)
        elif kind == 1:  # a chart
            for series in range(3):
                points = [(x, height // 2 + int(math.sin(x / 60 + series) * height / 4 + rng.randint(-20, 20)))
                          for x in range(0, width, 20)]
                draw.line(points, fill=palette[series], width=3)
            for x in range(0, width, 80):
                draw.line([(x, 0), (x, height)], fill=(220, 220, 220))
                draw.text((x + 4, height - 16), str(x), fill=(40, 40, 40), font=font)
        else:  # text and shapes
            for line in range(30):
                draw.text((20, 20 + line * 16), " ".join(rng.choice(["lorem", "ipsum", "dolor", "sit", "amet"])
                                                         for _ in range(12)), fill=palette[line % 3], font=font)
            for _ in range(6):
                x, y = rng.randint(0, width - 100), rng.randint(0, height - 100)
                draw.ellipse((x, y, x + 90, y + 90), fill=palette[rng.randint(0, 5)])
        if kind == 3:
            draw.ellipse((width // 3, height // 3, width // 3 + 200, height // 3 + 200), fill=palette[0])
            draw.text((width // 3 + 40, height // 3 + 90), "IMAGEKIT", fill=(255, 255, 255), font=font)
        image.save(path)
    open(marker, "w").close()
    return paths


class Service:
    def __init__(self, imagekit, root):
        self.port = free_port()
        self.process = subprocess.Popen(
            ["taskset", "-c", "0", imagekit, "serve", "--port", str(self.port), "--workers", "1", "--allow-unsafe",
             "--local-root", root, "--memory-limit", "0", "--log-level", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_http(self.port, "/healthz")
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)

    def get(self, path, accept=None):
        headers = {"Accept": accept} if accept else {}
        self.connection.request("GET", path, headers=headers)
        response = self.connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()

    def encode_seconds(self):
        _, _, body = self.get("/metrics")
        for line in body.decode().splitlines():
            if line.startswith('imagekit_stage_duration_seconds_sum{stage="encode"}'):
                return float(line.split()[-1])
        return 0.0

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def score(imagekit, reference, files):
    out = subprocess.run([imagekit, "compare", "--json", reference] + files, capture_output=True, text=True,
                         check=True).stdout
    return [json.loads(line)["ssimulacra2"] for line in out.splitlines() if line.startswith("{")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--imagekit", required=True)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--target", type=float, default=70)
    parser.add_argument("--photos", default=os.path.expanduser("~/.cache/imagekit/bench-serve-photos"))
    parser.add_argument("--peer-python", help="a Python with PyPI's ssimulacra2, to re-score a sample")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    make_photos(args.photos, max(args.count, 1000))
    photos = sorted(glob.glob(os.path.join(args.photos, "*.jpg")))[:args.count]
    graphics = make_graphics(os.path.expanduser("~/.cache/imagekit"), max(4, args.count // 3))
    root = tempfile.mkdtemp(prefix="bench-quality-")
    sources = []
    for path in photos + graphics:
        name = ("p-" if path in photos else "g-") + os.path.basename(path)
        shutil.copyfile(path, os.path.join(root, name))  # local:/// follows no links
        sources.append(name)
    out = tempfile.mkdtemp(prefix="bench-quality-out-")
    try:
        rows = measure(args, sources, root, out)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    report(args, rows, len(photos), len(graphics))


def measure(args, sources, root, out):
    service = Service(args.imagekit, root)
    target = args.target
    fit = f"rs:fit:{BOX}:{BOX}"
    rows, aq_by_format = [], {}
    try:
        references = {}
        for name in sources:
            status, _, body = service.get(f"/_/{fit}/plain/local:///{name}@png")
            assert status == 200, (name, status)
            references[name] = os.path.join(out, name + ".ref.png")
            open(references[name], "wb").write(body)

        def run(format, option, label):
            """Every source through `option`: (bytes by source, scores by source, encode seconds)."""
            before = service.encode_seconds()
            sizes, files, qualities = {}, {}, {}
            for name in sources:
                status, headers, body = service.get(f"/_/{fit}/{option}/plain/local:///{name}@{EXTENSION[format]}")
                assert status == 200, (name, option, status, body[:200])
                path = os.path.join(out, f"{name}.{label}.{EXTENSION[format]}")
                open(path, "wb").write(body)
                sizes[name], files[name] = len(body), path
                qualities[name] = headers.get("X-ImageKit-Quality")
            seconds = service.encode_seconds() - before
            scores = {name: score(args.imagekit, references[name], [files[name]])[0] for name in sources}
            return sizes, scores, seconds, files, qualities

        for format in FORMATS:
            log(f"{format}: q80, the lowest fixed quality keeping every image >= {target:g}, aq")
            q80 = run(format, "q:80", "q80")
            cache = {}

            def fixed(quality):
                if quality not in cache:
                    cache[quality] = run(format, f"q:{quality}", f"q{quality}")
                return cache[quality]

            aq = run(format, f"aq:ssimulacra2:{target:g}", "aq")
            # Some images never reach the target in a 4:2:0 format (graphics with sharp colour
            # edges): aq answers those at its highest quality. The comparison is over the images
            # that can reach it, each kind on its own — what an operator serving only that kind
            # would pick as one quality.
            ceiling = fixed(95)[1]
            kinds = {"all": sources, "photos": [s for s in sources if s.startswith("p-")],
                     "graphics": [s for s in sources if s.startswith("g-")]}
            for kind, names in kinds.items():
                reachable = [n for n in names if ceiling[n] >= target]
                if not reachable:
                    continue
                low, high = 0, 95  # invariant: high keeps every reachable image >= target
                while high - low > 1:
                    middle = (low + high) // 2
                    if all(fixed(middle)[1][n] >= target for n in reachable):
                        high = middle
                    else:
                        low = middle
                best_fixed = fixed(high)

                def total(result):
                    return sum(result[0][n] for n in reachable)
                encodes = [int(q.split("encodes=")[1]) for q in (aq[4][n] for n in names) if q and "encodes=" in q]
                row = {
                    "format": format, "images": kind, "count": len(names), "reachable": len(reachable),
                    "target": target,
                    "q80_bytes": total(q80), "q80_min_score": min(q80[1][n] for n in reachable),
                    "fixed_quality": high, "fixed_bytes": total(best_fixed),
                    "fixed_min_score": min(best_fixed[1][n] for n in reachable),
                    "aq_bytes": total(aq), "aq_min_score": min(aq[1][n] for n in reachable),
                    "aq_median_score": statistics.median(aq[1][n] for n in reachable),
                    "aq_below_target": sum(1 for n in reachable if aq[1][n] < target),
                    "aq_saving_vs_fixed": 1 - total(aq) / total(best_fixed),
                    "aq_saving_vs_q80": 1 - total(aq) / total(q80),
                    "aq_mean_encodes": statistics.mean(encodes) if encodes else None,
                }
                if kind == "all":
                    row["aq_encode_cost_vs_one_encode"] = aq[2] / q80[2] if q80[2] else None
                    row["aq_qualities"] = sorted(int(q.split(";")[0]) for q in aq[4].values() if q)
                rows.append(row)
            if format == "jpeg" and args.peer_python:
                sample = sources[:: max(1, len(sources) // 8)]
                peer = []
                for name in sample:
                    out_text = subprocess.run(
                        [args.peer_python, "-c",
                         "import sys; from ssimulacra2 import compute_ssimulacra2 as c; print(c(sys.argv[1], sys.argv[2]))",
                         references[name], aq[3][name]], capture_output=True, text=True, check=True).stdout
                    peer.append(abs(float(out_text.strip().splitlines()[-1]) - aq[1][name]))
                rows.append({"check": "pypi-ssimulacra2", "images": len(sample), "max_difference": max(peer)})
            aq_by_format[format] = aq
        log("best: aq + f:best against each single format's aq answer")
        larger, best_total, single_totals = 0, 0, {f: 0 for f in FORMATS}
        for name in sources:
            status, headers, body = service.get(f"/_/{fit}/aq:ssimulacra2:{target:g}/f:best/plain/local:///{name}",
                                                accept="image/avif,image/webp,image/*")
            assert status == 200, (name, status)
            best_total += len(body)
            singles = [aq_by_format[f][0][name] for f in FORMATS]
            for f, size in zip(FORMATS, singles):
                single_totals[f] += size
            if len(body) > min(singles):
                larger += 1
        rows.append({"format": "best", "images": "all", "count": len(sources), "best_bytes": best_total,
                     **{f"{f}_aq_bytes": single_totals[f] for f in FORMATS}, "best_larger_than_smallest_single": larger})
    finally:
        service.close()
    return rows


def report(args, rows, photo_count, graphic_count):
    target = args.target
    if args.json:
        for row in rows:
            print(json.dumps(row), flush=True)
        return
    print(f"\nautoquality: aq:ssimulacra2:{target:g} against fixed qualities, answers fitted in {BOX}x{BOX} "
          f"({photo_count} photos, {graphic_count} graphics)\n")
    print("Bytes and scores over the images that reach the target at q95 (reachable of count); fixed q: the")
    print("lowest one quality keeping all of them >= the target; search cost: aq's encode stage over q80's.\n")
    print(f"{'format':7} {'images':9} {'reach':>6} {'q80 KB':>8} {'min':>5} {'fixed q':>7} {'KB':>8} {'min':>5} "
          f"{'aq KB':>8} {'min':>5} {'median':>6} {'saved vs fixed':>14} {'vs q80':>7} {'encodes':>7} {'search cost':>11}")
    for row in rows:
        if "q80_bytes" not in row:
            continue
        cost = row.get("aq_encode_cost_vs_one_encode")
        print(f"{row['format']:7} {row['images']:9} {row['reachable']:>3}/{row['count']:<2} "
              f"{row['q80_bytes'] / 1000:8.1f} {row['q80_min_score']:5.1f} "
              f"{row['fixed_quality']:7} {row['fixed_bytes'] / 1000:8.1f} {row['fixed_min_score']:5.1f} "
              f"{row['aq_bytes'] / 1000:8.1f} {row['aq_min_score']:5.1f} {row['aq_median_score']:6.1f} "
              f"{row['aq_saving_vs_fixed'] * 100:13.1f}% {row['aq_saving_vs_q80'] * 100:6.1f}% "
              f"{row['aq_mean_encodes'] or 0:7.2f} {(f'{cost:.2f}x' if cost else '-'):>11}")
    for row in rows:
        if row.get("format") == "best":
            print(f"\nbest (aq, Accept: avif, webp): {row['best_bytes'] / 1000:.1f} KB; single formats with aq: "
                  + ", ".join(f"{f} {row[f + '_aq_bytes'] / 1000:.1f} KB" for f in FORMATS)
                  + f"; images where best was larger than the smallest single format: "
                    f"{row['best_larger_than_smallest_single']}")
        if row.get("check"):
            print(f"PyPI ssimulacra2 on {row['images']} JPEG aq answers: largest difference {row['max_difference']:.3f}")


if __name__ == "__main__":
    main()
