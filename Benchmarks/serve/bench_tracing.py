#!/usr/bin/env python3
"""`make bench-serve TRACING=1`: what OpenTelemetry tracing costs `imagekit serve`, on bench-serve's
photos and cold request (`fit-in/256x256` JPEG q80, and 248 and 240 so that each photo is asked
three times without a cached answer; no result or source cache, concurrency 1).

Variants, alternated round by round (a fresh process each, pinned to core 0; nginx, the client
and the OTLP receiver on core 1):
  base  --base-imagekit, when given: another build, untraced (one from before tracing, say)
  base-on  with --base-traced too: that build traced as `on` is, to judge a change to tracing
        against the commit before it in one sitting (a single run moves by a point between sittings)
  off   --imagekit without --otel-endpoint: no tracer is bootstrapped
  on    --imagekit --otel-endpoint to Tests/otel/otlp_receiver.py (OTLP/HTTP protobuf, every span
        sampled and exported; the receiver decodes each batch)
  on10  the same with one request in ten sampled (OTEL_TRACES_SAMPLER=parentbased_traceidratio,
        OTEL_TRACES_SAMPLER_ARG=0.1), as a busy service would run it
The service's CPU per thumbnail (user + system, its exporter included) is the figure; each
variant's median over --rounds and each ratio against `off` are printed. Spans received are
counted to show the exporter was working.

    python3 Benchmarks/serve/bench_tracing.py --imagekit .build/release/imagekit \\
        [--base-imagekit OLD/imagekit [--base-traced]] [--count 300] [--rounds 5] --receiver-python VENV/bin/python
"""
import argparse, os, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_serve import Service, fit, free_port, log, make_photos, run_load, start_origin  # noqa: E402
from PIL import Image  # noqa: E402


def start_receiver(python, output):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "otel", "otlp_receiver.py")
    process = subprocess.Popen(["taskset", "-c", "1", python, script, output], stdout=subprocess.PIPE, text=True)
    port = int(process.stdout.readline().split()[1])
    return process, port


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--imagekit", required=True)
    parser.add_argument("--base-imagekit")
    parser.add_argument("--base-traced", action="store_true", help="also run --base-imagekit traced (base-on)")
    parser.add_argument("--receiver-python", required=True)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--photos", default=os.path.expanduser("~/.cache/imagekit/bench-serve-photos"))
    args = parser.parse_args()
    make_photos(args.photos, args.count)
    names = sorted(name for name in os.listdir(args.photos) if name.endswith(".jpg"))[: args.count]
    dimensions = {name: Image.open(os.path.join(args.photos, name)).size for name in names}
    work = tempfile.mkdtemp(prefix="bench-tracing-")
    origin_port = free_port()
    nginx, _ = start_origin(work, args.photos, origin_port, core=1)
    spans_file = os.path.join(work, "spans.jsonl")
    receiver, receiver_port = start_receiver(args.receiver_python, spans_file)
    # Each photo at three sizes: three times the requests per process, so that the CPU figure
    # (read in 10 ms ticks) resolves 0.3 % rather than 1 %.
    jobs = [(f"/unsafe/fit-in/{size}x{size}/filters:quality(80)/127.0.0.1:{origin_port}/{name}",
             fit(*dimensions[name], size, size) + ("JPEG",)) for size in (256, 248, 240) for name in names]
    endpoint = ("--otel-endpoint", f"http://127.0.0.1:{receiver_port}")
    variants = [("off", args.imagekit, ()), ("on", args.imagekit, endpoint), ("on10", args.imagekit, endpoint)]
    if args.base_imagekit:
        variants.insert(0, ("base", args.base_imagekit, ()))
        if args.base_traced:
            variants.insert(1, ("base-on", args.base_imagekit, endpoint))
    cpu = {name: [] for name, _, _ in variants}
    try:
        for round_index in range(args.rounds):
            # Each round starts with another variant, so none is always first after a pause.
            shift = round_index % len(variants)
            for name, binary, extra in variants[shift:] + variants[:shift]:
                sampling = {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}
                os.environ.update(sampling if name == "on10" else {})
                service = Service("imagekit", work, binary, origin_port, extra=extra)
                for variable in sampling:
                    os.environ.pop(variable, None)
                try:
                    row = run_load(service, jobs, 1)
                finally:
                    service.stop()
                if row["errors"] or row["wrong_size"]:
                    raise SystemExit(f"{name}: {row['errors']} errors, {row['wrong_size']} wrong sizes")
                cpu[name].append(row["cpu_ms_per_thumbnail"])
                log(f"round {round_index + 1}/{args.rounds} {name}: {row['cpu_ms_per_thumbnail']:.3f} ms CPU per thumbnail")
    finally:
        receiver.terminate()
        nginx.terminate()
    # Spans of the `on` and `on10` rounds together (both export to the one receiver).
    spans = sum(1 for _ in open(spans_file)) if os.path.exists(spans_file) else 0
    print(f"{len(names)} photos × 3 sizes, {args.rounds} rounds, concurrency 1; CPU ms per thumbnail (median; runs)")
    for name, _, _ in variants:
        # base-on is judged against its own build untraced; the rest against `off`.
        reference = "base" if name == "base-on" else "off"
        median = statistics.median(cpu[name])
        runs = ", ".join(f"{value:.3f}" for value in cpu[name])
        # Each round's ratio to the same round's reference: rounds drift together (the host's state).
        paired = statistics.median(value / base for value, base in zip(cpu[name], cpu[reference]))
        ratio = median / statistics.median(cpu[reference])
        print(f"  {name:7} {median:7.3f}  ×{ratio:.3f} of {reference} (paired by round ×{paired:.3f})   [{runs}]")
    sampled = 1.1 + (1 if "base-on" in cpu else 0)
    print(f"  spans received: {spans} ({spans / (args.rounds * len(jobs) * sampled):.1f} per sampled request)")


if __name__ == "__main__":
    main()
