#!/usr/bin/env python3
"""The decode bench corpus: real photos re-encoded as the cases `make bench-peers` decodes.

    python3 Benchmarks/peers/decode_corpus.py OUT_DIR [--photos DIR]

The photos are Debian's lomiri-wallpapers (/usr/share/backgrounds, the ones `make bench-serve`
uses too), taken in name order so the corpus is the same on every machine with that package.
Each case is one file named after it (`jpeg-large.jpg`, `gif-anim-pan.gif`, ...); a file that
exists is kept, so the corpus is written once. Needs Pillow (the peers' venv has it); the files
are ordinary JPEG/PNG/GIF/WebP, written the way a user's tool writes them:

- stills at three sizes: large (1920 wide), medium (800 wide), small (a 256x256 centre crop);
- GIF stills quantised by Pillow (adaptive palette, no dither beyond Pillow's default);
- gif-anim-pan / webp-anim-pan: a 400x300 window panning across a photo, 24 frames, every
  frame changes everywhere (full-canvas frames, a palette per GIF frame);
- gif-anim-sprite / webp-anim-sprite: a 480x360 photo with an 80x80 round cut-out of another
  photo moving over it, 24 frames: the encoders store only the changed rectangles;
- webp lossy at quality 80, lossless at its default effort, one lossy file with alpha.
"""
import argparse, glob, os, sys

from PIL import Image, ImageDraw, ImageFilter


def photos(directory):
    paths = sorted(glob.glob(os.path.join(directory, "*.jpg")))
    if len(paths) < 6:
        sys.exit(f"decode_corpus: need at least 6 photos in {directory} (apt-get install lomiri-wallpapers)")
    return paths


def resized(image, width):
    height = round(image.height * width / image.width)
    return image.resize((width, height), Image.LANCZOS)


def centre_crop(image, side):
    scale = side / min(image.size)
    small = image.resize((max(side, round(image.width * scale)), max(side, round(image.height * scale))), Image.LANCZOS)
    left, top = (small.width - side) // 2, (small.height - side) // 2
    return small.crop((left, top, left + side, top + side))


def with_alpha(image):
    """A soft elliptical vignette as alpha: transparent corners, an opaque middle, a ramp between."""
    mask = Image.new("L", image.size, 0)
    inset = min(image.size) // 10
    ImageDraw.Draw(mask).ellipse((inset, inset, image.width - inset, image.height - inset), fill=255)
    mask = mask.filter(ImageFilter.GaussianBlur(inset / 2))
    rgba = image.convert("RGBA")
    rgba.putalpha(mask)
    return rgba


def pan_frames(photo, count=24, size=(400, 300)):
    source = resized(photo, 1200)
    travel_x, travel_y = source.width - size[0], source.height - size[1]
    return [source.crop((i * travel_x // (count - 1), i * travel_y // (count - 1) // 2,
                         i * travel_x // (count - 1) + size[0], i * travel_y // (count - 1) // 2 + size[1]))
            for i in range(count)]


def sprite_frames(background, sprite_photo, count=24, size=(480, 360), sprite=80):
    canvas = centre_crop(background, max(size)).crop((0, (max(size) - size[1]) // 2, size[0], (max(size) - size[1]) // 2 + size[1]))
    cutout = centre_crop(sprite_photo, sprite)
    mask = Image.new("L", (sprite, sprite), 0)
    ImageDraw.Draw(mask).ellipse((0, 0, sprite - 1, sprite - 1), fill=255)
    frames = []
    for i in range(count):
        frame = canvas.copy()
        x = 10 + i * (size[0] - sprite - 20) // (count - 1)
        y = 20 + (i * 37) % (size[1] - sprite - 40)
        frame.paste(cutout, (x, y), mask)
        frames.append(frame)
    return frames


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--photos", default="/usr/share/backgrounds")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    paths = photos(args.photos)
    # The sixth (a painting's colours) for the small files: the third's centre is nearly flat.
    first, second, third = (Image.open(paths[i]).convert("RGB") for i in (0, 1, 5))
    large, medium, small = resized(first, 1920), resized(second, 800), centre_crop(third, 256)

    def gif_still(image, path):
        image.quantize(256, method=Image.Quantize.MEDIANCUT).save(path)

    def gif_animation(frames, path, shared_palette=False):
        if shared_palette:
            # One palette for every frame, as a sprite animation is drawn: unchanged pixels keep
            # their indices, so Pillow stores each frame as the rectangle that changed.
            palette = frames[0].quantize(256, method=Image.Quantize.MEDIANCUT)
            frames = [frame.quantize(palette=palette, dither=Image.Dither.NONE) for frame in frames]
        frames[0].save(path, save_all=True, append_images=frames[1:], duration=40, loop=0)

    def webp_animation(frames, path):
        frames[0].save(path, save_all=True, append_images=frames[1:], duration=40, loop=0, quality=80)

    cases = {
        "jpeg-large.jpg": lambda p: large.save(p, quality=85),
        "jpeg-medium.jpg": lambda p: medium.save(p, quality=85),
        "jpeg-small.jpg": lambda p: small.save(p, quality=85),
        "jpeg-progressive-medium.jpg": lambda p: medium.save(p, quality=85, progressive=True),
        "png-large.png": lambda p: large.save(p),
        "png-medium.png": lambda p: medium.save(p),
        "png-small.png": lambda p: small.save(p),
        "png-rgba-medium.png": lambda p: with_alpha(medium).save(p),
        "gif-medium.gif": lambda p: gif_still(medium, p),
        "gif-small.gif": lambda p: gif_still(small, p),
        "gif-anim-pan.gif": lambda p: gif_animation(pan_frames(first), p),
        "gif-anim-sprite.gif": lambda p: gif_animation(sprite_frames(second, third), p, shared_palette=True),
        "webp-lossy-large.webp": lambda p: large.save(p, quality=80),
        "webp-lossy-medium.webp": lambda p: medium.save(p, quality=80),
        "webp-lossy-small.webp": lambda p: small.save(p, quality=80),
        "webp-rgba-medium.webp": lambda p: with_alpha(medium).save(p, quality=80),
        "webp-lossless-medium.webp": lambda p: medium.save(p, lossless=True),
        "webp-lossless-small.webp": lambda p: small.save(p, lossless=True),
        "webp-anim-pan.webp": lambda p: webp_animation(pan_frames(first), p),
        "webp-anim-sprite.webp": lambda p: webp_animation(sprite_frames(second, third), p),
    }
    for name, write in cases.items():
        path = os.path.join(args.out, name)
        if not os.path.exists(path):
            partial = os.path.join(args.out, "partial-" + name)  # same extension: Pillow picks the format by it
            write(partial)
            os.replace(partial, path)
    print(f"decode_corpus: {len(cases)} files in {args.out}")


if __name__ == "__main__":
    main()
