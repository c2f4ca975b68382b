#!/usr/bin/env python3
"""`make bench-serve VIDEO=1`: video posters through `imagekit serve` beside PyAV doing the same
work in process, and animated GIFs written as MP4, in one run.

Sources (made once by Debian's ffmpeg, cached outside the repository): COUNT 4-second 720p H.264
MP4s (libx264 defaults: High profile, B-frames, one key frame at the start, so the frame at 2 s
is 60 decodes away), each a different photo from Debian's lomiri-wallpapers panned across the
frame at 30 fps; and bench_formats' animated GIFs (6 frames of a photo, 0.5-0.67 MP).

Poster: the frame shown at 2 s, fitted in 320x180, JPEG q80, on one core.
  imagekit  `imagekit serve --workers 1` pinned to core 0, nginx serving the videos on core 1, one
            request at a time (`/_/rs:fit:320:180/vts:2/q:80/plain/http://…@jpg`): the CPU the
            service process spends per poster, HTTP, fetch and hashing included.
  pyav      PyAV (PyPI's FFmpeg bindings, its own FFmpeg) in process from memory: open, seek to
            the key frame before 2 s, decode to the frame shown at 2 s (one decoder thread),
            swscale to 320x180 RGB, Pillow's JPEG q80. It pays no HTTP.
CPU per poster is a median of ROUNDS rounds.

GIF -> MP4: `/_/plain/http://…/animated.gif@mp4` against the GIF's bytes (median and largest ratio).

    ~/.cache/imagekit/peers-venv/bin/python Benchmarks/serve/bench_video.py --imagekit .build-formats/release/imagekit \\
        [--count 12] [--rounds 3] [--json]
"""
import argparse, glob, io, json, os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CORPUS_VERSION = "v1"
SECOND, BOX = 2.0, (320, 180)


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def make_videos(directory, count):
    folder = os.path.join(directory, f"videos-{CORPUS_VERSION}")
    os.makedirs(folder, exist_ok=True)
    photos = sorted(glob.glob("/usr/share/backgrounds/*.jpg"))
    if not photos:
        sys.exit("no photos in /usr/share/backgrounds (Debian's lomiri-wallpapers)")
    videos = []
    for index in range(count):
        path = os.path.join(folder, f"pan-{index:03}.mp4")
        if not os.path.exists(path):
            photo = photos[index % len(photos)]
            subprocess.run(
                ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-loop", "1", "-framerate", "30", "-t", "4",
                 "-i", photo, "-vf", "scale=1920:-2,crop=1280:720:x='min(t*150,iw-1280)':y='(ih-720)/2',format=yuv420p",
                 "-c:v", "libx264", "-crf", "23", "-movflags", "+faststart", path + ".tmp.mp4"], check=True)
            os.rename(path + ".tmp.mp4", path)
        videos.append(path)
    return videos


def pyav_main(args):
    """Runs in its own process, pinned to core 0; prints one JSON line."""
    os.sched_setaffinity(0, {0})
    import av

    files = [open(path, "rb").read() for path in json.load(open(args.peer_corpus))]

    def poster(data):
        with av.open(io.BytesIO(data)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "SLICE"
            stream.codec_context.thread_count = 1
            target = int(SECOND / stream.time_base)
            container.seek(target, stream=stream, backward=True, any_frame=False)
            shown = None
            for frame in container.decode(stream):
                if shown is not None and frame.pts > target:
                    break
                shown = frame
                if frame.pts == target:
                    break
            scale = min(BOX[0] / shown.width, BOX[1] / shown.height)
            picture = shown.to_image(width=round(shown.width * scale), height=round(shown.height * scale))
            buffer = io.BytesIO()
            picture.save(buffer, "JPEG", quality=80)
            return buffer.getvalue()

    poster(files[-1])
    runs = []
    for _ in range(args.rounds):
        start = time.process_time()
        for data in files[:-1]:
            poster(data)
        runs.append((time.process_time() - start) * 1000 / (len(files) - 1))
    print(json.dumps({"tool": f"pyav-{av.__version__} (FFmpeg {av.library_versions['libavcodec']})",
                      "cpu_ms_per_poster": statistics.median(runs), "runs": runs}), flush=True)


def service_rows(args, videos, gifs, root):
    from PIL import Image
    from bench_formats import start_service
    from bench_serve import free_port, request, start_origin
    import http.client

    work = tempfile.mkdtemp(prefix="bench-video-")
    origin_port = free_port()
    nginx, _ = start_origin(work, root, origin_port, core=1)
    os.sched_setaffinity(0, {1})
    runs, errors, ratios = [], 0, []
    try:
        for round in range(args.rounds):
            port = free_port()
            process, meter = start_service(args.imagekit, port)
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

                def url(source):
                    return f"http://127.0.0.1:{origin_port}/{os.path.relpath(source, root)}"

                def poster(source):
                    return f"/_/rs:fit:{BOX[0]}:{BOX[1]}/vts:{SECOND:g}/q:80/plain/{url(source)}@jpg"

                request(port, poster(videos[-1]), connection)
                before = meter.seconds()
                for video in videos[:-1]:
                    status, _, body = request(port, poster(video), connection)
                    if status != 200 or Image.open(io.BytesIO(body)).size != BOX:
                        errors += 1
                runs.append((meter.seconds() - before) * 1000 / (len(videos) - 1))
                if round == 0:
                    for gif in gifs:
                        status, _, body = request(port, f"/_/plain/{url(gif)}@mp4", connection)
                        if status != 200 or body[4:8] != b"ftyp":
                            errors += 1
                            continue
                        ratios.append(len(body) / os.path.getsize(gif))
                log(f"  imagekit round {round + 1} (CPU from {meter.precision}): {runs[-1]:.2f} ms a poster")
            finally:
                process.terminate()
                process.wait(timeout=30)
                meter.close()
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(work, ignore_errors=True)
    return {"tool": "imagekit", "cpu_ms_per_poster": statistics.median(runs), "runs": runs, "errors": errors}, ratios


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--imagekit")
    parser.add_argument("--corpus", default=os.path.expanduser("~/.cache/imagekit/bench-formats"))
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--peer-corpus", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer_corpus:
        return pyav_main(args)
    if not args.imagekit:
        sys.exit("--imagekit: the imagekit binary (built with the Video trait) to serve with")
    from bench_formats import make_corpus

    videos = make_videos(args.corpus, args.count + 1)
    gifs = [path for path, _ in make_corpus(args.corpus, args.count, ["gif-animated"])["gif-animated"]]
    gifs.append(os.path.join(os.path.dirname(__file__), "..", "..", "Tests", "thumbor", "integration-images",
                             "animated.gif"))
    gifs = [os.path.abspath(gif) for gif in gifs]
    listing = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(videos, listing)
    listing.close()
    try:
        log("pyav …")
        peer = json.loads(subprocess.run([sys.executable, os.path.abspath(__file__), "--peer-corpus", listing.name,
                                          "--rounds", str(args.rounds)], capture_output=True, text=True,
                                         check=True).stdout.splitlines()[-1])
    finally:
        os.unlink(listing.name)
    log("imagekit serve …")
    # The GIFs live in the corpus folder; the thumbor one is copied there so one origin serves all.
    thumbor_copy = os.path.join(args.corpus, "thumbor-animated.gif")
    shutil.copyfile(gifs[-1], thumbor_copy)
    gifs[-1] = thumbor_copy
    ours, ratios = service_rows(args, videos, gifs, args.corpus)
    ratio = ours["cpu_ms_per_poster"] / peer["cpu_ms_per_poster"]
    gif_row = {"gif_to_mp4_bytes_median": statistics.median(ratios), "gif_to_mp4_bytes_max": max(ratios),
               "gifs": len(ratios)}
    if args.json:
        for row in (peer, ours, {"imagekit_over_pyav": ratio}, gif_row):
            print(json.dumps(row), flush=True)
        return
    print(f"CPU ms per poster (720p H.264, frame at {SECOND:g} s, fit {BOX[0]}x{BOX[1]}, JPEG q80), one core, "
          f"median of {args.rounds} rounds")
    print(f"  imagekit (service)  {ours['cpu_ms_per_poster']:.2f}   errors {ours['errors']}")
    print(f"  {peer['tool']}  {peer['cpu_ms_per_poster']:.2f}")
    print(f"  imagekit / pyav     {ratio:.2f}")
    print(f"GIF -> MP4 bytes over GIF bytes, {len(ratios)} GIFs: median {gif_row['gif_to_mp4_bytes_median']:.3f}, "
          f"largest {gif_row['gif_to_mp4_bytes_max']:.3f}")


if __name__ == "__main__":
    main()
