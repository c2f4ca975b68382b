#!/usr/bin/env python3
"""Asks a real thumbor (7.8, in a venv outside the repository) for every URL of a matrix and
records what it answered: one JSON object per line with the URL path (after /unsafe/), the
source's name and displayed size, the HTTP status, and the output's width, height and format.
ThumborCompatibilityTests compares ImageKit's plan for the same paths with these rows.

    sizes.py OUTPUT.jsonl [IMAGES-DIR]     (run with the thumbor venv's python)

With IMAGES-DIR, the sources go to IMAGES-DIR/sources and thumbor's answers to IMAGES-DIR/thumbor
(a row's "file"), except for GIFs and the filters whose pixels are another library's own
(grayscale, fill(blur)): the pixel comparison's inputs.

Everything listens on 127.0.0.1 at ports the kernel picks; both servers stop at the end.
"""
import io, itertools, json, os, shutil, socket, subprocess, sys, tempfile, threading, time, urllib.request
from http.server import ThreadingHTTPServer, SimpleHTTPRequestHandler
from PIL import Image

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def make_sources(directory):
    """Landscape, portrait, square, tiny, EXIF-rotated (orientation 6), alpha PNG, animated GIF."""
    def gradient(w, h, mode="RGB"):
        image = Image.new(mode, (w, h))
        image.putdata([((x * 255) // w, (y * 255) // h, 128) + ((200,) if mode == "RGBA" else ()) for y in range(h) for x in range(w)])
        return image
    sources = {}
    for name, (w, h) in {"landscape.jpg": (640, 480), "portrait.jpg": (480, 640), "square.jpg": (500, 500), "tiny.jpg": (40, 30),
                         "odd.jpg": (333, 127)}.items():
        gradient(w, h).save(os.path.join(directory, name), quality=90)
        sources[name] = (w, h)
    rotated = gradient(640, 480)
    exif = rotated.getexif()
    exif[0x0112] = 6  # displayed as 480x640
    rotated.save(os.path.join(directory, "rotated.jpg"), quality=90, exif=exif.tobytes())
    sources["rotated.jpg"] = (480, 640)
    gradient(300, 200, "RGBA").save(os.path.join(directory, "alpha.png"))
    sources["alpha.png"] = (300, 200)
    bordered = Image.new("RGB", (300, 200), (255, 255, 255))  # a white border around a gradient
    bordered.paste(gradient(200, 120), (40, 30))
    bordered.save(os.path.join(directory, "bordered.png"))
    sources["bordered.png"] = (300, 200)
    frames = [Image.new("P", (120, 80), color) for color in (1, 2, 3)]
    frames[0].save(os.path.join(directory, "anim.gif"), save_all=True, append_images=frames[1:], duration=100, loop=0)
    sources["anim.gif"] = (120, 80)
    return sources

def matrix():
    sizes = ["300x200", "200x300", "300x0", "0x200", "0x0", "1000x800", "50x50", "-300x200", "300x-200", "-300x-200",
             "origx200", "300xorig", "origxorig", "orig x0".replace(" ", ""), "0xorig", "x", "640x480", "100x1000"]
    modes = ["", "fit-in/", "adaptive-fit-in/", "full-fit-in/", "adaptive-full-fit-in/"]
    paths = []
    for mode, size in itertools.product(modes, sizes):
        paths.append(f"{mode}{size}/")
    for crop in ["10x20:210x220/", "0x0:100x50/", "600x400:700x500/"]:
        for size in ["100x100/", "fit-in/100x100/", "0x0/", "origxorig/", "-origx-orig/", "-0x-0/", "origx100/",
                     "fit-in/origxorig/"]:
            paths.append(crop + size)
    for trim in ["trim/", "trim:bottom-right/", "trim:top-left:10/", "trim:400/"]:
        for rest in ["", "100x100/", "fit-in/100x100/", "10x10:100x80/50x0/"]:
            paths.append(trim + rest)
    for align in ["left/top/", "right/bottom/", "center/middle/", "smart/"]:
        paths.append("300x100/" + align)
    for filters in ["filters:no_upscale()/", "filters:upscale()/", "filters:stretch()/", "filters:proportion(0.5)/",
                    "filters:fill(ff0000)/", "filters:fill(blur)/", "filters:rotate(90)/", "filters:rotate(180)/",
                    "filters:format(png)/", "filters:format(webp)/", "filters:quality(50):grayscale()/",
                    "filters:upscale():fill(00ff00)/", "filters:fill(transparent):rotate(270)/",
                    "filters:brightness(20)/", "filters:contrast(-30)/", "filters:contrast(40)/", "filters:rgb(10,-20,30)/",
                    "filters:saturation(0.5)/", "filters:saturation(1.6)/"]:
        for size in ["300x200/", "1000x800/", "fit-in/300x200/", "fit-in/1000x800/", "full-fit-in/300x200/", "0x0/", "origx0/"]:
            paths.append(size + filters)
    return paths

def thumbor_matrix():
    """thumbor's integration_tests/urls_helpers.py single_dataset: its options × its images."""
    trims = ["trim", "trim:top-left", "trim:bottom-right", "trim:top-left:10", "trim:bottom-right:20"]
    fit_ins = ["fit-in", "adaptive-fit-in", "full-fit-in", "adaptive-full-fit-in"]
    sizes = ["200x200", "-300x100", "100x-300", "-100x-300", "origx300", "200xorig", "origxorig"]
    curve = ("curve([(0,0),(255,255)],[(0,50),(16,51),(32,69),(58,85),(92,120),(128,170),(140,186),(167,225),"
             "(192,245),(225,255),(244,255),(255,254)],[(0,0),(16,2),(32,18),(64,59),(92,116),(128,182),(167,211),"
             "(192,227),(224,240),(244,247),(255,252)],[(0,48),(16,50),(62,77),(92,110),(128,144),(140,153),(167,180),"
             "(192,192),(224,217),(244,225),(255,225)])")
    filters = ["brightness(10)", "contrast(10)", "equalize()", "grayscale()", "rotate(90)", "noise(10)", "quality(5)",
               "redeye()", "rgb(10,-10,20)", "round_corner(20,255,255,100)", "sharpen(6,2.5,false)", "sharpen(6,2.5,true)",
               "strip_exif()", "strip_icc()", "watermark(rgba-interlaced.png,10,10,50)",
               "watermark(rgba-interlaced.png,center,center,50)", "watermark(rgba-interlaced.png,repeat,repeat,50)",
               "frame(rgba.png)", "fill(ff0000)", "fill(auto)", "fill(ff0000,true)", "fill(transparent)",
               "fill(transparent,true)", "blur(2)", "extract_focal()", "focal()", "focal(0x0:1x1)", "no_upscale()",
               "gifv()", "gifv(webm)", "gifv(mp4)", "max_age(600)", "upscale()", "format(avif)", "format(heic)",
               "format(heif)", curve]
    options = (["meta"] + trims + ["10x10:100x100"] + fit_ins + sizes + ["left", "right", "center"]
               + ["top", "bottom", "middle", "smart"] + ["filters:" + f for f in filters])
    images = ["gradient.jpg", "cmyk.jpg", "rgba.png", "grayscale.jpg", "16bit.png", "thumbor-exif.png", "gradient.webp",
              "gradient.gif", "animated.gif"]
    return itertools.product(options, images)


def start_thumbor(config, port):
    """This venv's thumbor on 127.0.0.1:PORT with CONFIG, once it answers its health check."""
    thumbor = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "thumbor"), "-p", str(port), "-i",
                                "127.0.0.1", "-c", config, "-l", "error"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthcheck", timeout=1)
            return thumbor
        except Exception:
            if thumbor.poll() is not None:
                sys.exit(f"thumbor exited with status {thumbor.returncode} before answering")
            time.sleep(0.1)
    thumbor.terminate()
    sys.exit("thumbor did not answer on 127.0.0.1 within 30 s")

class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

def main():
    output = sys.argv[1]
    saved = sys.argv[2] if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory() as work:
        images = os.path.join(work, "images")
        os.makedirs(images)
        sources = make_sources(images)
        if saved:
            shutil.rmtree(saved, ignore_errors=True)
            shutil.copytree(images, os.path.join(saved, "sources"))
            os.makedirs(os.path.join(saved, "thumbor"))
        origin_port, thumbor_port = free_port(), free_port()
        handler = lambda *a, **k: Quiet(*a, directory=images, **k)
        origin = ThreadingHTTPServer(("127.0.0.1", origin_port), handler)
        threading.Thread(target=origin.serve_forever, daemon=True).start()
        config = os.path.join(work, "thumbor.conf")
        with open(config, "w") as f:
            f.write("RESPECT_ORIENTATION = True\nALLOW_UNSAFE_URL = True\nRESULT_STORAGE = None\nQUALITY = 80\n"
                    "MAX_AGE = 0\nALLOWED_SOURCES = []\nAUTO_WEBP = False\nENGINE_THREADPOOL_SIZE = 0\n")
        thumbor = start_thumbor(config, thumbor_port)
        try:
            rows = 0
            with open(output, "w") as out:
                for path, (name, size) in itertools.product(matrix(), sources.items()):
                    url = f"http://127.0.0.1:{thumbor_port}/unsafe/{path}127.0.0.1:{origin_port}/{name}"
                    row = {"path": path, "source": name, "sourceWidth": size[0], "sourceHeight": size[1]}
                    try:
                        body = urllib.request.urlopen(url, timeout=30).read()
                        image = Image.open(io.BytesIO(body))
                        row.update(status=200, width=image.size[0], height=image.size[1], format=image.format.lower())
                        if saved and not name.endswith(".gif") and "grayscale" not in path and "fill(blur)" not in path:
                            row["file"] = f"{rows}.{row['format']}"
                            with open(os.path.join(saved, "thumbor", row["file"]), "wb") as f:
                                f.write(body)
                    except urllib.error.HTTPError as error:
                        row.update(status=error.code)
                    out.write(json.dumps(row) + "\n")
                    rows += 1
            print(f"thumbor sizes: {rows} rows in {output}", file=sys.stderr)
            # thumbor's own integration matrix (its single_dataset) on its own test images, for
            # ThumborMatrixTests: what thumbor answers to each URL, beside the sizes file.
            matrix_output = output[:-len(".jsonl")] + "-matrix.jsonl" if output.endswith(".jsonl") else output + "-matrix"
            matrix_images = os.path.join(os.path.dirname(os.path.abspath(__file__)), "integration-images")
            with tempfile.TemporaryDirectory() as served:
                for name in os.listdir(matrix_images):
                    shutil.copy(os.path.join(matrix_images, name), served)
                matrix_handler = lambda *a, **k: Quiet(*a, directory=served, **k)
                matrix_origin = ThreadingHTTPServer(("127.0.0.1", 0), matrix_handler)
                threading.Thread(target=matrix_origin.serve_forever, daemon=True).start()
                host = f"127.0.0.1:{matrix_origin.server_address[1]}"
                count = 0
                with open(matrix_output, "w") as out:
                    for option, image in thumbor_matrix():
                        spelled = option.replace("(rgba", f"({host}/rgba")
                        url = f"http://127.0.0.1:{thumbor_port}/unsafe/{spelled}/{host}/{image}"
                        row = {"option": option, "image": image}
                        try:
                            response = urllib.request.urlopen(url, timeout=60)
                            body = response.read()
                            row.update(status=200, contentType=response.headers.get("Content-Type", ""))
                            if option != "meta":
                                try:
                                    picture = Image.open(io.BytesIO(body))
                                    row.update(width=picture.size[0], height=picture.size[1], format=picture.format.lower())
                                except Exception:
                                    pass  # a video (gifv) or a format Pillow does not read
                        except urllib.error.HTTPError as error:
                            row.update(status=error.code)
                        except Exception as error:
                            row.update(status=0, error=str(error)[:200])
                        out.write(json.dumps(row) + "\n")
                        count += 1
                matrix_origin.shutdown()
            print(f"thumbor matrix: {count} rows in {matrix_output}", file=sys.stderr)
        finally:
            thumbor.terminate()
            thumbor.wait(timeout=10)
            origin.shutdown()

if __name__ == "__main__":
    main()
