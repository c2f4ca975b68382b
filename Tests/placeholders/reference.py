#!/usr/bin/env python3
"""BlurHash and ThumbHash of raw RGBA images by the reference implementations on PyPI (blurhash,
thumbhash-python), for Bitmap+Placeholders' tests.

    reference.py LIST.json      (run with the reference venv's python)

LIST.json: [{"file": PATH, "width": W, "height": H, "blurhash": [[X, Y], ...]}, ...], each file W*H*4
bytes of RGBA rows. Prints one JSON object per image: {"blurhash": {"XxY": HASH}, "thumbhash": BASE64}.
"""
import base64, json, sys

import blurhash
from thumbhash.encode import rgba_to_thumbhash

for item in json.load(open(sys.argv[1])):
    width, height = item["width"], item["height"]
    data = open(item["file"], "rb").read()
    rows = [[[data[(y * width + x) * 4 + c] for c in range(3)] for x in range(width)] for y in range(height)]
    hashes = {f"{x}x{y}": blurhash.encode(rows, x, y) for x, y in item["blurhash"]}
    thumb = base64.b64encode(rgba_to_thumbhash(width, height, list(data))).decode()
    print(json.dumps({"blurhash": hashes, "thumbhash": thumb}), flush=True)
