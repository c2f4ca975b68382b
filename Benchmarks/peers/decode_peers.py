#!/usr/bin/env python3
"""Decode throughput: ImageKit against the raw C libraries, Pillow, pyvips and OpenCV, one run.

    python3 Benchmarks/peers/decode_peers.py --bench .build/release/bench --corpus DIR
        [--rounds 3] [--min-time 0.5] [--core 0] [--filter a,b] [--json]

The corpus is Benchmarks/peers/decode_corpus.py's (real photos re-encoded). Everything runs on
one core (`--core`, inherited by the bench process) and one thread per library. For each round,
case by case: the `bench` binary times ImageKit's `ImageCodersManager.decode` and its raw-C
column (the C library called directly) in alternating runs, then each peer decodes the same
bytes in this process. A case's figure is the median of the rounds' medians, in megapixels of
output per second (width x height x frames).

What each decoder produces, every frame materialised as separate pixels:
- ImageKit: RGBA frames (`DecodedImage`), composited, every frame when animated.
- raw C: libjpeg-turbo / libpng / giflib (DGifSlurp + the compositing loop) / libwebp
  (WebPDecodeRGBAInto; WebPAnimDecoder with each frame copied out) into RGBA.
- Pillow: `Image.open` + load; each frame of an animation `seek`ed and copied; a palette frame
  converted to RGB (RGBA when it has transparency). RGB files stay RGB: the peers are not
  charged a conversion to RGBA that ImageKit's figure includes.
- pyvips: `new_from_buffer` (with `n=-1` for an animation: all pages stacked into one image) and
  `write_to_memory`.
- OpenCV: `imdecode(IMREAD_UNCHANGED)`, or `imdecodeanimation` (a list of frames) when the
  file is animated.
"""
import argparse, io, json, os, statistics, subprocess, sys, time

os.environ["VIPS_CONCURRENCY"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
import cv2
import pyvips
from PIL import Image

cv2.setNumThreads(1)
pyvips.cache_set_max(0)


def pillow_decode(data):
    image = Image.open(io.BytesIO(data))
    frames = []
    for index in range(getattr(image, "n_frames", 1)):
        if index:
            image.seek(index)
        image.load()
        if image.mode in ("RGB", "RGBA"):
            frames.append(image.copy())
        else:
            frames.append(image.convert("RGBA" if image.has_transparency_data else "RGB"))
    return sum(frame.width * frame.height for frame in frames)


def pyvips_decode(data, animated):
    # n=-1: every page stacked into one tall image (only the multi-page loaders take it).
    image = pyvips.Image.new_from_buffer(data, "", **({"n": -1} if animated else {}), access="sequential")
    image.write_to_memory()
    return image.width * image.height


def opencv_decode(data, animated):
    buffer = np.frombuffer(data, np.uint8)
    if animated:
        ok, animation = cv2.imdecodeanimation(buffer)
        if not ok:
            raise RuntimeError("imdecodeanimation failed")
        return sum(frame.shape[0] * frame.shape[1] for frame in animation.frames)
    image = cv2.imdecode(buffer, cv2.IMREAD_UNCHANGED)
    if image is None:
        raise RuntimeError("imdecode failed")
    return image.shape[0] * image.shape[1]


def rate(decode, megapixels, min_time, min_runs=5):
    """Median megapixels/s over runs of about min_time / min_runs seconds each (one warm-up)."""
    start = time.perf_counter()
    decode()
    warm = time.perf_counter() - start
    repeats = max(1, int(min_time / min_runs / max(warm, 1e-7)))
    rates = []
    begin = time.perf_counter()
    while len(rates) < min_runs or time.perf_counter() - begin < min_time:
        start = time.perf_counter()
        for _ in range(repeats):
            decode()
        rates.append(megapixels * repeats / (time.perf_counter() - start))
        if len(rates) >= 200:
            break
    return statistics.median(rates)


def imagekit_rates(bench, corpus, name, min_time):
    """ImageKit's and the raw C column's MP/s for one case, from the bench binary."""
    result = subprocess.run([bench, "--corpus", corpus, "--filter", f"decode/{name}", "--json", "--min-time", str(min_time)],
                            check=True, capture_output=True, text=True)
    for line in result.stdout.splitlines():
        row = json.loads(line)
        if row.get("case") == f"decode/{name}":
            return row
    raise RuntimeError(f"bench printed no decode/{name} row: {result.stderr.strip()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--core", type=int, default=0)
    parser.add_argument("--filter")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.core})

    names = sorted(os.path.splitext(f)[0] for f in os.listdir(args.corpus) if not f.startswith("partial-"))
    if args.filter:
        names = [n for n in names if any(part in n for part in args.filter.split(","))]
    files = {n: next(os.path.join(args.corpus, f) for f in os.listdir(args.corpus) if os.path.splitext(f)[0] == n) for n in names}
    data = {n: open(path, "rb").read() for n, path in files.items()}
    columns = ["imagekit", "raw", "pillow", "pyvips", "opencv"]
    results = {n: {c: [] for c in columns} for n in names}
    shape = {}
    for round_index in range(args.rounds):
        for name in names:
            row = imagekit_rates(args.bench, args.corpus, name, args.min_time)
            results[name]["imagekit"].append(row["imagekit_mps"])
            results[name]["raw"].append(row["raw_mps"])
            frames = row["frames"]
            megapixels = row["width"] * row["height"] * frames / 1e6
            shape[name] = (row["width"], row["height"], frames)
            peers = {"pillow": lambda: pillow_decode(data[name]),
                     "pyvips": lambda: pyvips_decode(data[name], frames > 1),
                     "opencv": lambda: opencv_decode(data[name], frames > 1)}
            for peer, decode in peers.items():
                try:
                    pixels = decode()
                except Exception as error:  # a peer that cannot read the file has no figure
                    print(f"{peer} cannot decode {name}: {error}", file=sys.stderr)
                    continue
                if pixels != row["width"] * row["height"] * frames:
                    print(f"{peer} gave {pixels} pixels for {name}, ImageKit {row['width']}x{row['height']}x{frames}: no figure",
                          file=sys.stderr)
                    continue
                results[name][peer].append(rate(decode, megapixels, args.min_time))
        print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)

    table = []
    for name in names:
        medians = {c: statistics.median(v) if v else None for c, v in results[name].items()}
        peers = {p: medians[p] for p in ("pillow", "pyvips", "opencv") if medians[p]}
        best = max(peers, key=peers.get) if peers else None
        width, height, frames = shape[name]
        entry = {"case": name, "width": width, "height": height, "frames": frames, **{f"{c}_mps": medians[c] for c in columns},
                 "best_peer": best, "vs_best_peer": medians["imagekit"] / peers[best] if best else None,
                 "vs_raw": medians["imagekit"] / medians["raw"], "rounds": args.rounds}
        table.append(entry)
        if args.json:
            print(json.dumps(entry), flush=True)
    if args.json:
        return
    def cell(value, digits=1):
        return "—" if value is None else f"{value:.{digits}f}"
    print(f"\nDecode to pixels, MP/s of output (median of {args.rounds} rounds, one core, one thread)\n")
    print("| case | size × frames | ImageKit | raw C | Pillow | pyvips | OpenCV | ImageKit / best peer | ImageKit / raw C |")
    print("|---|---|---|---|---|---|---|---|---|")
    for e in table:
        best = f"{cell(e['vs_best_peer'], 2)} ({e['best_peer']})" if e["best_peer"] else "—"
        print(f"| {e['case']} | {e['width']}×{e['height']} × {e['frames']} | {cell(e['imagekit_mps'])} | {cell(e['raw_mps'])} | "
              f"{cell(e['pillow_mps'])} | {cell(e['pyvips_mps'])} | {cell(e['opencv_mps'])} | {best} | {cell(e['vs_raw'], 2)} |")
    behind = [e["case"] for e in table if e["vs_best_peer"] is not None and e["vs_best_peer"] < 1.0]
    below_raw = [e["case"] for e in table if e["vs_raw"] < 0.95]
    print(f"\nbehind the best peer: {', '.join(behind) or 'none'}; below 0.95x raw C: {', '.join(below_raw) or 'none'}")


if __name__ == "__main__":
    main()
