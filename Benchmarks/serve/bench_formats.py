#!/usr/bin/env python3
"""`make bench-serve FORMATS=1`: every source format through `imagekit serve`, beside libvips and
Pillow decoding the same files in process, in one run.

Sources (made once from Debian's lomiri-wallpapers photos, cached outside the repository): COUNT
per format, random crops resized to 1.5-2 MP (lossless WebP half that, animated GIF a third, 6
frames), written by Pillow (JPEG baseline and progressive, PNG RGB and RGBA, WebP lossy and
lossless, animated GIF, AVIF, TIFF with LZW), libheif's heif-enc (HEIC, with and without a
320-px thumbnail item, as phones write them) and libjxl's cjxl (JPEG XL, VarDCT).

Work: a 256x256 fit thumbnail, JPEG q80, on one core.
  imagekit      `imagekit serve --workers 1` pinned to core 0, nginx serving the sources on core 1,
                one request at a time (`/_/rs:fit:256:256/q:80/plain/http://…@jpg`): the CPU the
                service process spends per thumbnail, its HTTP, origin fetch, hashing and caches
                included (no --cache-dir: every request is a new result).
  libvips-8.14  Debian 12's libvips (pyvips in ABI mode), `thumbnail_buffer` + `jpegsave_buffer`,
                VIPS_CONCURRENCY=1 and the operation cache off.
  libvips-8.18  the same with pyvips-binary's libvips (no HEIC or JPEG XL loader in that build).
  pillow        Pillow 13: `draft` + `thumbnail` + `save` (no HEIC or JPEG XL without plugins).
The peers read the bytes from memory: they pay no HTTP. CPU per thumbnail is a median of ROUNDS
rounds (each round a fresh service process); a tool that cannot read a format has no row for it.

    ~/.cache/imagekit/peers-venv/bin/python Benchmarks/serve/bench_formats.py \\
        --imagekit .build/release/imagekit --vips-python ~/.cache/imagekit/vips-debian-venv/bin/python \\
        [--count 30] [--rounds 3] [--formats jpeg,heic] [--json]

JSON lines: {"tool", "format", "cpu_ms_per_thumbnail", "runs", "errors", "wrong_size"}, and one
{"format", "imagekit_over_best", "best"} per format.
"""
import argparse, glob, io, json, os, random, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CORPUS_VERSION = "v1"
BOX = 256
# name: (file extension, pixel area range)
FORMATS = {
    "jpeg": ("jpg", (1.5e6, 2e6)),
    "jpeg-progressive": ("jpg", (1.5e6, 2e6)),
    "png-rgb": ("png", (1.5e6, 2e6)),
    "png-rgba": ("png", (1.5e6, 2e6)),
    "webp-lossy": ("webp", (1.5e6, 2e6)),
    "webp-lossless": ("webp", (0.75e6, 1e6)),
    "gif-animated": ("gif", (0.5e6, 0.67e6)),
    "avif": ("avif", (1.5e6, 2e6)),
    "heic": ("heic", (1.5e6, 2e6)),
    "heic-thumbnail": ("heic", (1.5e6, 2e6)),
    "jxl": ("jxl", (1.5e6, 2e6)),
    "tiff-lzw": ("tif", (1.5e6, 2e6)),
}


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def fit(width, height):
    """imgproxy's rs:fit without enlarge (what the service answers): one scale, rounded half up."""
    if width <= BOX and height <= BOX:
        return width, height
    scale = min(BOX / width, BOX / height)
    return max(1, int(width * scale + 0.5)), max(1, int(height * scale + 0.5))


# MARK: Sources


def make_corpus(directory, count, formats):
    """COUNT sources per format (plus one more for warming up), in DIRECTORY/FORMAT/; returns
    {format: [(path, (width, height))]}, the last of each list being the warm-up source."""
    from PIL import Image

    wallpapers = sorted(glob.glob("/usr/share/backgrounds/*.jpg"))
    if not wallpapers:
        sys.exit("no photos in /usr/share/backgrounds: install lomiri-wallpapers (make bench-serve does)")
    made = {}
    opened = {}
    for name in formats:
        extension, (low, high) = FORMATS[name]
        folder = os.path.join(directory, name)
        marker = os.path.join(folder, f".complete-{CORPUS_VERSION}-{count}")
        rng = random.Random(f"{name}-{CORPUS_VERSION}")
        specs = []
        for index in range(count + 1):
            wallpaper = wallpapers[(index * 7 + len(name)) % len(wallpapers)]
            area, aspect = rng.uniform(low, high), rng.choice((4 / 3, 3 / 2, 16 / 9, 3 / 4, 2 / 3, 1))
            width, height = int((area * aspect) ** 0.5), int((area / aspect) ** 0.5)
            specs.append((os.path.join(folder, f"{index:02}.{extension}"), wallpaper, width, height, rng.random(), rng.random()))
        made[name] = [(path, (width, height)) for path, _, width, height, _, _ in specs]
        if os.path.exists(marker):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        log(f"making {count + 1} {name} sources in {folder}")
        for path, wallpaper, width, height, fx, fy in specs:
            if wallpaper not in opened:
                opened[wallpaper] = Image.open(wallpaper).convert("RGB")
            photo = opened[wallpaper]
            # The largest window of the wanted shape, at a random place, resized to the size.
            scale = min(photo.width / width, photo.height / height)
            window = (int(width * scale), int(height * scale))
            x, y = int((photo.width - window[0]) * fx), int((photo.height - window[1]) * fy)
            picture = photo.crop((x, y, x + window[0], y + window[1])).resize((width, height), Image.LANCZOS)
            write(name, picture, path)
        open(marker, "w").close()
    return made


def write(name, picture, path):
    from PIL import Image, ImageDraw

    if name == "jpeg":
        picture.save(path, "JPEG", quality=85, optimize=True)
    elif name == "jpeg-progressive":
        picture.save(path, "JPEG", quality=85, optimize=True, progressive=True)
    elif name == "png-rgb":
        picture.save(path, "PNG")
    elif name == "png-rgba":
        # A soft vignette in alpha: every pixel's alpha differs from its neighbours'.
        mask = Image.radial_gradient("L").resize(picture.size).point(lambda v: 255 - v)
        picture = picture.copy()
        picture.putalpha(mask)
        picture.save(path, "PNG")
    elif name == "webp-lossy":
        picture.save(path, "WEBP", quality=80)
    elif name == "webp-lossless":
        picture.save(path, "WEBP", lossless=True)
    elif name == "gif-animated":
        # Six frames: a window panning across the photo, each quantized on its own.
        step = max(1, picture.width // 24)
        frames = []
        for index in range(6):
            shifted = Image.new("RGB", picture.size)
            shifted.paste(picture.crop((index * step, 0, picture.width, picture.height)), (0, 0))
            frames.append(shifted.quantize(colors=255))
        frames[0].save(path, save_all=True, append_images=frames[1:], duration=100, loop=0)
    elif name == "avif":
        picture.save(path, "AVIF", quality=60)
    elif name in ("heic", "heic-thumbnail", "jxl"):
        with tempfile.NamedTemporaryFile(suffix=".png") as png:
            picture.save(png.name, "PNG", compress_level=1)
            if name == "jxl":
                command = ["cjxl", png.name, path, "-d", "1.0", "--quiet"]
            else:
                command = ["heif-enc", "-q", "50", "-o", path, png.name] + (["-t", "320"] if name == "heic-thumbnail" else [])
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elif name == "tiff-lzw":
        picture.save(path, "TIFF", compression="tiff_lzw")
    else:
        raise ValueError(name)


# MARK: Peers (run in their own processes: one libvips a process)


def peer_main(args):
    os.sched_setaffinity(0, {0})
    tool = args.peer
    if tool == "vips":
        os.environ["VIPS_CONCURRENCY"] = "1"
        import pyvips

        pyvips.cache_set_max(0)
        pyvips.concurrency_set(1)
        tool = f"libvips-{pyvips.version(0)}.{pyvips.version(1)}"

        def thumbnail(data):
            return pyvips.Image.thumbnail_buffer(data, BOX, height=BOX, size="down").jpegsave_buffer(Q=80)
    else:
        from PIL import Image

        tool = "pillow"

        def thumbnail(data):
            image = Image.open(io.BytesIO(data))
            image.draft("RGB", (BOX, BOX))
            image.thumbnail((BOX, BOX), Image.LANCZOS)
            if image.mode != "RGB":
                image = image.convert("RGB")
            buffer = io.BytesIO()
            image.save(buffer, "JPEG", quality=80)
            return buffer.getvalue()

    corpus = json.load(open(args.peer_corpus))
    for name, sources in corpus.items():
        files = [open(path, "rb").read() for path, _ in sources]
        errors, runs = 0, []
        try:
            thumbnail(files[-1])  # warm-up on the spare source; a tool that cannot read it has no row
        except Exception:
            continue
        for _ in range(args.rounds):
            start = time.process_time()
            for data in files[:-1]:
                try:
                    thumbnail(data)
                except Exception:
                    errors += 1
            runs.append((time.process_time() - start) * 1000 / (len(files) - 1))
        print(json.dumps({"tool": tool, "format": name, "cpu_ms_per_thumbnail": statistics.median(runs), "runs": runs,
                          "errors": errors, "wrong_size": 0}), flush=True)


# MARK: The service


class CPUMeter:
    """The CPU time of a process and every thread it ever had, in seconds: from a cgroup of its own
    (cgroup v2's cpu.stat or v1's cpuacct, nanoseconds or microseconds) where one can be made (as
    root), else /proc's stat, which counts in 10 ms ticks (a third of a millisecond per thumbnail
    over a format's 30 requests). Per-thread schedstat would miss the threads a decoder starts and
    ends (libde265's)."""

    def __init__(self, pid):
        self.pid, self.group, self.read_group = pid, None, None
        candidates = []
        if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            candidates.append(("/sys/fs/cgroup", lambda group: int(
                next(line.split()[1] for line in open(f"{group}/cpu.stat") if line.startswith("usage_usec"))) / 1e6))
        if os.path.isdir("/sys/fs/cgroup/cpuacct"):
            candidates.append(("/sys/fs/cgroup/cpuacct", lambda group: int(open(f"{group}/cpuacct.usage").read()) / 1e9))
        for root, reader in candidates:
            group = os.path.join(root, f"imagekit-bench-{pid}")
            try:
                os.mkdir(group)
                with open(os.path.join(group, "cgroup.procs"), "w") as f:
                    f.write(str(pid))
                reader(group)
                self.group, self.read_group = group, reader
                break
            except (OSError, StopIteration, ValueError):
                try:
                    os.rmdir(group)
                except OSError:
                    pass
        self.precision = "cgroup" if self.group else "ticks"

    def seconds(self):
        if self.group:
            return self.read_group(self.group)
        from bench_serve import cpu_seconds
        return cpu_seconds(self.pid)

    def close(self):
        """Call once the process has ended (a cgroup with a process in it cannot be removed)."""
        if self.group:
            try:
                os.rmdir(self.group)
            except OSError:
                pass


def start_service(imagekit, port):
    """`imagekit serve` with one worker pinned to core 0, unsigned URLs and loopback sources allowed,
    its CPU measured from its own cgroup; returns (process, meter) once it answers /healthz."""
    from bench_serve import wait_http

    process = subprocess.Popen(
        ["taskset", "-c", "0", imagekit, "serve", "--port", str(port), "--workers", "1", "--allow-unsafe",
         "--allow-address", "127.0.0.1/32", "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    meter = CPUMeter(process.pid)
    wait_http(port, "/healthz")
    return process, meter


def service_rows(args, corpus, root):
    from PIL import Image
    from bench_serve import free_port, request, start_origin

    work = tempfile.mkdtemp(prefix="bench-formats-")
    origin_port = free_port()
    nginx, _ = start_origin(work, root, origin_port, core=1)
    runs = {name: [] for name in corpus}
    errors = {name: 0 for name in corpus}
    wrong = {name: 0 for name in corpus}
    os.sched_setaffinity(0, {1})
    try:
        for round in range(args.rounds):
            port = free_port()
            process, meter = start_service(args.imagekit, port)
            try:
                connection = None
                import http.client

                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

                def path(source):
                    relative = os.path.relpath(source, root)
                    return f"/_/rs:fit:{BOX}:{BOX}/q:80/plain/http://127.0.0.1:{origin_port}/{relative}@jpg"

                for name, sources in corpus.items():
                    request(port, path(sources[-1][0]), connection)  # warm-up: the spare source
                    before = meter.seconds()
                    for source, (width, height) in sources[:-1]:
                        status, _, body = request(port, path(source), connection)
                        if status != 200:
                            errors[name] += 1
                            continue
                        image = Image.open(io.BytesIO(body))
                        if (image.width, image.height, image.format) != fit(width, height) + ("JPEG",):
                            wrong[name] += 1
                    runs[name].append((meter.seconds() - before) * 1000 / (len(sources) - 1))
                log(f"  imagekit round {round + 1} (CPU from {meter.precision}): " + ", ".join(f"{name} {runs[name][-1]:.2f}" for name in corpus))
            finally:
                process.terminate()
                process.wait(timeout=30)
                meter.close()
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(work, ignore_errors=True)
    return [{"tool": "imagekit", "format": name, "cpu_ms_per_thumbnail": statistics.median(runs[name]), "runs": runs[name],
             "errors": errors[name], "wrong_size": wrong[name]} for name in corpus]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--imagekit")
    parser.add_argument("--vips-python", help="a python whose pyvips loads Debian's libvips")
    parser.add_argument("--corpus", default=os.path.expanduser("~/.cache/imagekit/bench-formats"))
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--tools", default="imagekit,libvips,pillow")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--peer", choices=("vips", "pillow"), help=argparse.SUPPRESS)
    parser.add_argument("--peer-corpus", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:
        return peer_main(args)
    formats = [name for name in args.formats.split(",") if name]
    unknown = [name for name in formats if name not in FORMATS]
    if unknown:
        sys.exit(f"unknown formats: {', '.join(unknown)} (known: {', '.join(FORMATS)})")
    tools = args.tools.split(",")
    corpus = make_corpus(args.corpus, args.count, formats)
    listing = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(corpus, listing)
    listing.close()

    rows = []

    def emit(row):
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)

    try:
        peers = []
        if "libvips" in tools:
            if args.vips_python:
                peers.append(("vips", args.vips_python))
            peers.append(("vips", sys.executable))
        if "pillow" in tools:
            peers.append(("pillow", sys.executable))
        for peer, python in peers:
            log(f"{peer} ({python}) …")
            out = subprocess.run([python, os.path.abspath(__file__), "--peer", peer, "--peer-corpus", listing.name,
                                  "--rounds", str(args.rounds)], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                emit(json.loads(line))
        if "imagekit" in tools:
            if not args.imagekit:
                sys.exit("--imagekit: the imagekit binary to serve with")
            log("imagekit serve …")
            for row in service_rows(args, corpus, args.corpus):
                emit(row)
    finally:
        os.unlink(listing.name)

    peer_names = sorted({row["tool"] for row in rows if row["tool"] != "imagekit"})
    by = {(row["tool"], row["format"]): row for row in rows}
    for name in formats:
        ours = by.get(("imagekit", name))
        others = [by[(tool, name)] for tool in peer_names if (tool, name) in by and not by[(tool, name)]["errors"]]
        if ours and others:
            best = min(others, key=lambda row: row["cpu_ms_per_thumbnail"])
            ratio = {"format": name, "imagekit_over_best": ours["cpu_ms_per_thumbnail"] / best["cpu_ms_per_thumbnail"],
                     "best": best["tool"]}
            by[("ratio", name)] = ratio
            if args.json:
                print(json.dumps(ratio), flush=True)
    if not args.json:
        header = ["format", "imagekit (service)"] + peer_names + ["imagekit / best", "errors"]
        lines = [header]
        for name in formats:
            def cell(tool):
                row = by.get((tool, name))
                return "-" if row is None else f"{row['cpu_ms_per_thumbnail']:.2f}"
            ratio = by.get(("ratio", name))
            errors = sum(by[(tool, name)]["errors"] + by[(tool, name)]["wrong_size"]
                         for tool in ["imagekit"] + peer_names if (tool, name) in by)
            lines.append([name, cell("imagekit")] + [cell(tool) for tool in peer_names]
                         + ["-" if ratio is None else f"{ratio['imagekit_over_best']:.2f} ({ratio['best']})", str(errors)])
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        print("CPU ms per 256x256 JPEG thumbnail, one core, median of", args.rounds, "rounds")
        for line in lines:
            print("  ".join(cell.rjust(width) for cell, width in zip(line, widths)))


if __name__ == "__main__":
    main()
