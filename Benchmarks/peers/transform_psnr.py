#!/usr/bin/env python3
"""`imagekit transform` against Pillow doing the same thing, as PSNR, on photos.

Not part of the build or the tests (needs `pip install pillow numpy`):

    python3 Benchmarks/peers/transform_psnr.py [--tool .build/release/imagekit] PHOTO...

Each photo is decoded upright by Pillow and written as PNG, so both sides start from the same
pixels; ImageKit's output (PNG) is compared with Pillow's over RGB, translucent results over
black (Pillow's fill for rotate(expand=True)).
"""
import argparse, os, subprocess, sys, tempfile
import numpy as np
from PIL import Image, ImageFilter, ImageOps

CASES = [
    # name, imagekit steps, pillow function
    ("resize-fit-1024", ["--resize", "1024x1024:fit"], lambda im: im.resize(fit(im, 1024), Image.LANCZOS)),
    ("resize-fill-256", ["--resize", "256x256:fill"], lambda im: ImageOps.fit(im, (256, 256), Image.LANCZOS)),
    ("resize-exact-300x200", ["--resize", "300x200:exact"], lambda im: im.resize((300, 200), Image.LANCZOS)),
    ("blur-sigma-4", ["--blur", "4"], lambda im: im.filter(ImageFilter.GaussianBlur(4))),
    ("blur-sigma-1.5", ["--blur", "1.5"], lambda im: im.filter(ImageFilter.GaussianBlur(1.5))),
    ("rotate-30-fit", ["--rotate", "30:fit"], lambda im: im.rotate(30, Image.BILINEAR, expand=True)),
    ("rotate-90", ["--rotate", "90:fit"], lambda im: im.transpose(Image.ROTATE_90)),
    ("flip-h", ["--flip", "h"], lambda im: im.transpose(Image.FLIP_LEFT_RIGHT)),
    ("crop", ["--crop", "10,20,300,200"], lambda im: im.crop((10, 20, 310, 220))),
    ("grayscale", ["--grayscale"], lambda im: im.convert("L").convert("RGB")),
]


def fit(im, box):
    scale = min(box / im.width, box / im.height)
    return max(1, round(im.width * scale)), max(1, round(im.height * scale))


def psnr(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return None
    mse = ((a - b) ** 2).mean()
    return float("inf") if mse == 0 else 10 * np.log10(255 ** 2 / mse)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("photos", nargs="+")
    parser.add_argument("--tool", default=".build/release/imagekit")
    args = parser.parse_args()
    temp = tempfile.mkdtemp()
    worst = {}
    print("%-28s %-22s %10s" % ("photo", "case", "PSNR dB"))
    for path in args.photos:
        upright = ImageOps.exif_transpose(Image.open(path)).convert("RGB")
        source = os.path.join(temp, "source.png")
        upright.save(source, compress_level=1)
        for name, steps, pillow in CASES:
            out = os.path.join(temp, "out.png")
            subprocess.run([args.tool, "transform", source, out] + steps, check=True, capture_output=True)
            ours = Image.open(out).convert("RGBA")
            black = Image.new("RGBA", ours.size, (0, 0, 0, 255))
            ours = Image.alpha_composite(black, ours).convert("RGB")
            value = psnr(ours, pillow(upright).convert("RGB"))
            shown = "size differs" if value is None else "%.2f" % value
            print("%-28s %-22s %10s" % (os.path.basename(path)[:28], name, shown))
            worst[name] = min(worst.get(name, float("inf")), -1 if value is None else value)
    print("\nworst per case:")
    for name, value in worst.items():
        print("  %-22s %s" % (name, "%.2f dB" % value if value >= 0 else "size differs"))


if __name__ == "__main__":
    main()
