#!/usr/bin/env python3
"""Asks a real thumbor 7.8 with thumbor-video-engine (Debian's ffmpeg behind it) for the URLs
where its grammar and ImageKit's overlap — stills of a video, GIFs and videos written as MP4 or
WebM — and records what it answered, for ThumborVideoEngineTests.

    video_engine.py OUTPUT-DIR      (run with the thumbor venv's python)

OUTPUT-DIR gets the sources (sources/clip.mp4, sources/anim.gif: made here by ffmpeg and Pillow),
thumbor's answers (N.BIN) and rows.jsonl: one object per URL with the path after /unsafe/, the
status, the Content-Type, the file, and for a video ffprobe's codec, size, frame count and length.
Everything listens on 127.0.0.1 at ports the kernel picks; both servers stop at the end.
"""
import json, os, shutil, subprocess, sys, tempfile, threading, urllib.request
from http.server import ThreadingHTTPServer
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sizes import Quiet, free_port, start_thumbor  # noqa: E402

PATHS = [
    "160x120/filters:still():format(png)/clip.mp4",
    "160x120/filters:still(2):format(png)/clip.mp4",
    "160x120/filters:still(00:03):format(png)/clip.mp4",
    "fit-in/100x100/filters:still(1)/clip.mp4",
    "160x120/filters:format(mp4)/clip.mp4",
    "160x120/filters:format(webm)/clip.mp4",
    "filters:format(mp4)/anim.gif",
    "filters:format(webm)/anim.gif",
    "fit-in/60x60/filters:format(mp4)/anim.gif",
]


def make_sources(directory):
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=320x240:rate=25:duration=4", "-c:v", "libx264", "-g", "25", "-pix_fmt", "yuv420p",
                    "-movflags", "+faststart", os.path.join(directory, "clip.mp4")], check=True)
    colours = [(230, 40, 40), (40, 200, 60), (40, 70, 220), (240, 220, 30), (30, 30, 30), (240, 240, 240)]
    frames = [Image.new("RGB", (120, 90), colour) for colour in colours]
    frames[0].save(os.path.join(directory, "anim.gif"), save_all=True, append_images=frames[1:],
                   duration=[80, 80, 240, 80, 80, 80], loop=0)


def probe(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                          "stream=codec_name,width,height,nb_read_packets:format=duration", "-of", "json", path],
                         capture_output=True, text=True, check=True).stdout
    facts = json.loads(out)
    stream = facts["streams"][0]
    return {"codec": stream["codec_name"], "width": stream["width"], "height": stream["height"],
            "frames": int(stream["nb_read_packets"]), "duration": float(facts["format"]["duration"])}


def main():
    output = sys.argv[1]
    shutil.rmtree(output, ignore_errors=True)
    sources = os.path.join(output, "sources")
    os.makedirs(sources)
    make_sources(sources)
    with tempfile.TemporaryDirectory() as work:
        origin = ThreadingHTTPServer(("127.0.0.1", 0), lambda *a, **k: Quiet(*a, directory=sources, **k))
        threading.Thread(target=origin.serve_forever, daemon=True).start()
        host = f"127.0.0.1:{origin.server_address[1]}"
        port = free_port()
        config = os.path.join(work, "thumbor.conf")
        with open(config, "w") as f:
            f.write("ALLOW_UNSAFE_URL = True\nRESULT_STORAGE = None\nQUALITY = 80\nMAX_AGE = 0\n"
                    "ENGINE = 'thumbor_video_engine.engines.video'\nIMAGE_ENGINE = 'thumbor.engines.pil'\n"
                    "FFMPEG_PATH = '/usr/bin/ffmpeg'\nFFPROBE_PATH = '/usr/bin/ffprobe'\n"
                    "FFMPEG_HANDLE_ANIMATED_GIF = True\nENGINE_THREADPOOL_SIZE = 0\n"
                    "from thumbor.filters import BUILTIN_FILTERS\n"
                    "FILTERS = BUILTIN_FILTERS + ['thumbor_video_engine.filters.format',"
                    " 'thumbor_video_engine.filters.still']\n")
        thumbor = start_thumbor(config, port)
        try:
            with open(os.path.join(output, "rows.jsonl"), "w") as rows:
                for index, path in enumerate(PATHS):
                    head, name = path.rsplit("/", 1)
                    row = {"path": path}
                    try:
                        response = urllib.request.urlopen(f"http://127.0.0.1:{port}/unsafe/{head}/{host}/{name}",
                                                          timeout=120)
                        body = response.read()
                        row.update(status=200, contentType=response.headers.get("Content-Type", ""),
                                   file=f"{index}.bin")
                        with open(os.path.join(output, row["file"]), "wb") as f:
                            f.write(body)
                        if row["contentType"].startswith("video/"):
                            row.update(video=probe(os.path.join(output, row["file"])))
                    except urllib.error.HTTPError as error:
                        row.update(status=error.code)
                    rows.write(json.dumps(row) + "\n")
            print(f"thumbor-video-engine: {len(PATHS)} rows in {output}", file=sys.stderr)
        finally:
            thumbor.terminate()
            thumbor.wait()
            origin.shutdown()


if __name__ == "__main__":
    main()
