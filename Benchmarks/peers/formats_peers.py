#!/usr/bin/env python3
"""HEIC and AVIF decode time: `imagekit info` against Pillow (pillow-heif, pillow-avif-plugin)
and pyvips on the same files, one thread each. Outside the build; needs Pillow, pillow-heif,
pillow-avif-plugin and pyvips (pyvips-binary).

    python3 Benchmarks/peers/formats_peers.py [--imagekit .build/release/imagekit] [--runs 5] [FILE...]

Without files it writes a 12 MP (4000x3000) photo-like HEIC (x265 through pillow-heif) and AVIF
(libaom through pillow-avif-plugin) into a temporary directory. Each decoder decodes each file
`--count` times in one process (ImageKit: `imagekit info FILE FILE ...`, so process start is
amortised over the count) and the per-decode time is the median over `--runs`. One thread each:
pillow-heif's DECODE_THREADS and pillow-avif-plugin's DEFAULT_MAX_THREADS set to 1,
VIPS_CONCURRENCY=1; ImageKit decodes on one thread by design.
"""
import argparse, os, statistics, subprocess, sys, tempfile, time

os.environ.setdefault("VIPS_CONCURRENCY", "1")

def make_photo(path_heic, path_avif):
    import numpy as np
    from PIL import Image
    import pillow_heif, pillow_avif  # noqa: F401  (registers the AVIF plugin)
    pillow_heif.register_heif_opener()
    h, w = 3000, 4000
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    u, v = x / w, y / h
    rng = np.random.default_rng(1)
    grain = rng.integers(-8, 8, size=(h, w), dtype=np.int16).astype(np.float32)
    sky = 180 * (1 - v) + 40
    wave = 40 * np.sin(u * 9 + 1) * np.cos(v * 7)
    disc = np.where((u - 0.6) ** 2 + (v - 0.55) ** 2 < 0.04, 70.0, 0.0)
    rgb = np.stack([sky * 0.6 + wave + disc + grain, sky * 0.8 - wave * 0.5 + grain + 120 * u * v,
                    sky + wave * 0.3 - disc + grain], axis=-1)
    image = Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8), "RGB")
    image.save(path_heic, quality=85)
    image.save(path_avif, quality=75, speed=8)

def time_imagekit(binary, path, count):
    start = time.perf_counter()
    subprocess.run([binary, "info", *([path] * count)], check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - start) / count

def time_pillow(path, count):
    from PIL import Image
    import pillow_heif, pillow_avif  # noqa: F401
    pillow_heif.register_heif_opener()
    pillow_heif.options.DECODE_THREADS = 1
    import pillow_avif.AvifImagePlugin
    pillow_avif.AvifImagePlugin.DEFAULT_MAX_THREADS = 1  # its default is every core
    start = time.perf_counter()
    for _ in range(count):
        with Image.open(path) as image:
            image.load()
    return (time.perf_counter() - start) / count

def time_pyvips(path, count):
    import pyvips
    pyvips.cache_set_max(0)
    start = time.perf_counter()
    for _ in range(count):
        pyvips.Image.new_from_file(path, access="sequential").copy_memory()
    return (time.perf_counter() - start) / count

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*")
    parser.add_argument("--imagekit", default=".build/release/imagekit")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--count", type=int, default=5)
    args = parser.parse_args()
    files = args.files
    if not files:
        directory = tempfile.mkdtemp()
        files = [os.path.join(directory, "photo-12mp.heic"), os.path.join(directory, "photo-12mp.avif")]
        make_photo(*files)
    print(f"{'file':28} {'bytes':>9} {'ImageKit ms':>12} {'Pillow ms':>10} {'pyvips ms':>10} {'Pillow/IK':>10} {'pyvips/IK':>10}")
    for path in files:
        ik = statistics.median(time_imagekit(args.imagekit, path, args.count) for _ in range(args.runs)) * 1000
        pil = statistics.median(time_pillow(path, args.count) for _ in range(args.runs)) * 1000
        try:
            vips = statistics.median(time_pyvips(path, args.count) for _ in range(args.runs)) * 1000
            vips_text, ratio_text = f"{vips:10.1f}", f"{vips / ik:10.2f}"
        except Exception:  # pyvips-binary's libvips has no HEVC decoder
            vips_text, ratio_text = f"{'n/a':>10}", f"{'n/a':>10}"
        print(f"{os.path.basename(path):28} {os.path.getsize(path):9d} {ik:12.1f} {pil:10.1f} {vips_text} {pil / ik:10.2f} {ratio_text}")

if __name__ == "__main__":
    sys.exit(main())
