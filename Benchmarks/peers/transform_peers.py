#!/usr/bin/env python3
"""ImageKit's transforms against Pillow, libvips (pyvips) and OpenCV, single-threaded, in one run.

Not part of the build or the tests: a script for the numbers in the README and the issue notes.
It needs `pip install pillow pyvips pyvips-binary opencv-python-headless numpy`.

    python3 Benchmarks/peers/transform_peers.py PHOTO.jpg [--runs 7] [--bench PATH] [--json]

For PHOTO (a 12 MP photo, say) and a 1 MP copy of it (written to a temporary PNG with Pillow's
LANCZOS), it runs `bench --filter transform/ --transform-source …` and then each peer on the
same decoded RGB pixels, and prints milliseconds per image (median of --runs) with the ratio
peer-time / ImageKit-time (above 1: ImageKit is faster).
"""
import argparse, json, os, subprocess, sys, tempfile, time

os.environ["VIPS_CONCURRENCY"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
import cv2
import pyvips
from PIL import Image, ImageDraw, ImageFilter, ImageOps

cv2.setNumThreads(1)
pyvips.cache_set_max(0)
pyvips.concurrency_set(1) if hasattr(pyvips, "concurrency_set") else None

OPS = ["resize-fill-256", "resize-fit-1024", "rotate-90", "rotate-30", "blur-sigma-4",
       "round-corner-32", "crop-center", "grayscale"]


def median_ms(fn, runs):
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return times[len(times) // 2]


def fit_size(w, h, box_w, box_h):
    scale = min(box_w / w, box_h / h)
    return max(1, round(w * scale)), max(1, round(h * scale))


def fill_crop(w, h, box_w, box_h):
    """The source rectangle that, scaled, fills box_w × box_h (centred)."""
    scale = max(box_w / w, box_h / h)
    cw, ch = box_w / scale, box_h / scale
    return (w - cw) / 2, (h - ch) / 2, cw, ch


def pillow_ops(im):
    w, h = im.size
    fw, fh = fit_size(w, h, 1024, 1024)
    cx, cy = w // 4, h // 4
    mask = Image.new("L", (w, h), 0)

    def round_corner():
        m = Image.new("L", (w, h), 0)
        ImageDraw.Draw(m).rounded_rectangle((0, 0, w - 1, h - 1), radius=32, fill=255)
        out = im.copy()
        out.putalpha(m)
        return out

    return {
        "resize-fill-256": lambda: ImageOps.fit(im, (256, 256), Image.LANCZOS),
        "resize-fit-1024": lambda: im.resize((fw, fh), Image.LANCZOS),
        "rotate-90": lambda: im.transpose(Image.ROTATE_90),
        "rotate-30": lambda: im.rotate(30, Image.BILINEAR, expand=True),
        "blur-sigma-4": lambda: im.filter(ImageFilter.GaussianBlur(4)),
        "round-corner-32": round_corner,
        "crop-center": lambda: im.crop((cx, cy, cx + w // 2, cy + h // 2)),
        "grayscale": lambda: im.convert("L"),
    }


def vips_ops(array):
    h, w, bands = array.shape
    im = pyvips.Image.new_from_memory(np.ascontiguousarray(array).data, w, h, bands, "uchar")
    fw, fh = fit_size(w, h, 1024, 1024)
    cx, cy = w // 4, h // 4

    def run(image):
        image.write_to_memory()

    def round_corner():
        mask = pyvips.Image.black(w, h).copy_memory()
        # a rounded-rectangle mask: two rectangles and four circles, drawn in place
        mask = mask.draw_rect(255, 32, 0, w - 64, h, fill=True)
        mask = mask.draw_rect(255, 0, 32, w, h - 64, fill=True)
        for x, y in ((32, 32), (w - 33, 32), (32, h - 33), (w - 33, h - 33)):
            mask = mask.draw_circle(255, x, y, 32, fill=True)
        run(im.bandjoin(mask))

    def fill():
        x, y, cw, ch = fill_crop(w, h, 256, 256)
        run(im.crop(int(x), int(y), int(cw), int(ch)).resize(256 / cw, kernel="lanczos3"))

    return {
        "resize-fill-256": fill,
        "resize-fit-1024": lambda: run(im.resize(fw / w, kernel="lanczos3")),
        "rotate-90": lambda: run(im.rot90()),
        "rotate-30": lambda: run(im.rotate(30)),
        "blur-sigma-4": lambda: run(im.gaussblur(4)),
        "round-corner-32": round_corner,
        "crop-center": lambda: run(im.crop(cx, cy, w // 2, h // 2)),
        "grayscale": lambda: run(im.colourspace("b-w")),
    }


def opencv_ops(array):
    h, w = array.shape[:2]
    fw, fh = fit_size(w, h, 1024, 1024)
    cx, cy = w // 4, h // 4

    def fill(interpolation):
        x, y, cw, ch = fill_crop(w, h, 256, 256)
        region = array[int(y):int(y + ch), int(x):int(x + cw)]
        return cv2.resize(region, (256, 256), interpolation=interpolation)

    def rotate30():
        matrix = cv2.getRotationMatrix2D((w / 2, h / 2), 30, 1.0)
        cos, sin = abs(matrix[0, 0]), abs(matrix[0, 1])
        nw, nh = int(h * sin + w * cos + 0.5), int(h * cos + w * sin + 0.5)
        matrix[0, 2] += nw / 2 - w / 2
        matrix[1, 2] += nh / 2 - h / 2
        return cv2.warpAffine(array, matrix, (nw, nh), flags=cv2.INTER_LINEAR)

    def round_corner():
        mask = np.zeros((h, w), np.uint8)
        cv2.rectangle(mask, (32, 0), (w - 33, h - 1), 255, -1)
        cv2.rectangle(mask, (0, 32), (w - 1, h - 33), 255, -1)
        for x, y in ((32, 32), (w - 33, 32), (32, h - 33), (w - 33, h - 33)):
            cv2.circle(mask, (x, y), 32, 255, -1, lineType=cv2.LINE_AA)
        return np.dstack((array, mask))

    return {
        "resize-fill-256": lambda: fill(cv2.INTER_AREA),
        "resize-fill-256/lanczos4": lambda: fill(cv2.INTER_LANCZOS4),
        "resize-fit-1024": lambda: cv2.resize(array, (fw, fh), interpolation=cv2.INTER_AREA),
        "resize-fit-1024/lanczos4": lambda: cv2.resize(array, (fw, fh), interpolation=cv2.INTER_LANCZOS4),
        "rotate-90": lambda: cv2.rotate(array, cv2.ROTATE_90_COUNTERCLOCKWISE),
        "rotate-30": rotate30,
        "blur-sigma-4": lambda: cv2.GaussianBlur(array, (0, 0), 4),
        "round-corner-32": round_corner,
        "crop-center": lambda: array[cy:cy + h // 2, cx:cx + w // 2].copy(),
        "grayscale": lambda: cv2.cvtColor(array, cv2.COLOR_RGB2GRAY),
    }


def imagekit_times(bench, sources, runs):
    command = [bench, "--json", "--filter", "transform/"]
    for source in sources:
        command += ["--transform-source", source]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    times = {}
    for line in output.splitlines():
        row = json.loads(line)
        if row.get("case", "").startswith("transform/"):
            times[row["case"]] = row["ms_per_image"]
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("photo")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--bench", default=".build/release/bench")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--peers-only", action="store_true")
    args = parser.parse_args()

    full = ImageOps.exif_transpose(Image.open(args.photo)).convert("RGB")
    temp = tempfile.mkdtemp()
    small_w = round((1_000_000 * full.width / full.height) ** 0.5)
    small = full.resize((small_w, round(small_w * full.height / full.width)), Image.LANCZOS)
    full_path, small_path = os.path.join(temp, "full.png"), os.path.join(temp, "small.png")
    full.save(full_path, compress_level=1)
    small.save(small_path, compress_level=1)

    ours = {} if args.peers_only else imagekit_times(args.bench, [full_path, small_path], args.runs)
    rows = []
    for label, image in (("%dx%d" % full.size, full), ("%dx%d" % small.size, small)):
        array = np.asarray(image)
        peers = {"pillow": pillow_ops(image), "vips": vips_ops(array), "opencv": opencv_ops(array)}
        for op in OPS:
            row = {"case": f"transform/{op}/{label}", "imagekit_ms": ours.get(f"transform/{op}/{label}")}
            for name, ops in peers.items():
                for key in (op, op + "/lanczos4"):
                    if key in ops:
                        column = name if key == op else name + "-lanczos4"
                        row[column + "_ms"] = median_ms(ops[key], args.runs)
            rows.append(row)
    if args.json:
        for row in rows:
            print(json.dumps(row, sort_keys=True))
        return
    columns = ["imagekit", "pillow", "vips", "opencv", "opencv-lanczos4"]
    print("ms per image, single thread, median of %d (ratio = peer ms / ImageKit ms; >1: ImageKit faster)" % args.runs)
    print("%-34s" % "case" + "".join("%18s" % c for c in columns))
    for row in rows:
        cells = []
        base = row.get("imagekit_ms")
        for c in columns:
            value = row.get(c + "_ms")
            if value is None:
                cells.append("%18s" % "-")
            elif c == "imagekit" or not base:
                cells.append("%18.2f" % value)
            else:
                cells.append("%11.2f %5.2fx" % (value, value / base))
        print("%-34s" % row["case"] + "".join(cells))


if __name__ == "__main__":
    main()
