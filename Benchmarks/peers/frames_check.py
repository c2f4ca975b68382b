#!/usr/bin/env python3
"""Compares `imagekit frames --json` frame by frame with a reference.

For gif-test-suite files the reference is the suite's own composited frames (frames/NAME-N.png);
for every other animated GIF, APNG and WebP in the corpus it is Pillow (ImageSequence, RGBA,
composited by Pillow). Digests follow the corpus rule: SHA-256 of RGBA8 with fully transparent
pixels as 0,0,0,0. Prints one line per file: agree, or the frames that differ.

usage: frames_check.py IMAGEKIT [CORPUS]     (outside the package; needs Pillow and numpy)
"""
import hashlib, json, os, subprocess, sys
import numpy as np
from PIL import Image, ImageSequence

def digest(rgba):
    a = np.array(rgba.convert("RGBA"), dtype=np.uint8)
    a[a[..., 3] == 0] = 0
    return hashlib.sha256(a.tobytes()).hexdigest()

def main():
    tool = sys.argv[1]
    corpus = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "../../../shared/corpus")
    if not os.path.exists(os.path.join(corpus, "MANIFEST.tsv")):
        corpus = os.path.join(os.path.dirname(__file__), "../../Tests/Corpus/conformance")
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(corpus, "MANIFEST.tsv"))][1:]
    agree = differ = 0
    for row in rows:
        path, fmt, frames, valid = row[0], row[1], row[4], row[5]
        if valid != "yes" or fmt not in ("GIF", "PNG", "WEBP") or not frames.isdigit() or int(frames) < 2:
            continue
        full = os.path.join(corpus, path)
        out = subprocess.run([tool, "frames", "--json", full], capture_output=True, text=True)
        ours = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
        ours = [o["sha256"] for o in ours if "sha256" in o]
        suite = os.path.join(os.path.dirname(full), "frames")
        name = os.path.splitext(os.path.basename(full))[0]
        if "gif-test-suite" in path and os.path.exists(os.path.join(suite, f"{name}-0.png")):
            ref, source = [], "suite"
            while os.path.exists(os.path.join(suite, f"{name}-{len(ref)}.png")):
                ref.append(digest(Image.open(os.path.join(suite, f"{name}-{len(ref)}.png"))))
        else:
            source = "pillow"
            image = Image.open(full)
            ref = [digest(frame.copy()) for frame in ImageSequence.Iterator(image)]
            # DESIGN: an APNG default image that is not part of the animation is not a frame
            # (Pillow lists it first).
            if image.format == "PNG" and image.info.get("default_image"):
                ref = ref[1:]
        bad = [i for i in range(max(len(ours), len(ref))) if i >= len(ours) or i >= len(ref) or ours[i] != ref[i]]
        if bad:
            differ += 1
            print(f"DIFFER {path} vs {source}: {len(ours)} vs {len(ref)} frames, differing {bad[:10]}")
        else:
            agree += 1
            print(f"agree  {path} vs {source}: {len(ours)} frames")
    print(f"{agree} agree, {differ} differ")

if __name__ == "__main__":
    main()
