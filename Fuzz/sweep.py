#!/usr/bin/env python3
"""Runs every file under the given directories through `imagekit info` and
`imagekit thumbnail --size 256`, the way a server that inspects and thumbnails uploads would,
and reports crashes (signals), hangs (over --timeout seconds), sanitizer reports, and runs whose
peak memory exceeds 4 x their output's decoded size + 200 MB.

    Fuzz/sweep.py [--tool PATH] [--timeout S] DIR...

--tool defaults to the release build (.build/release/imagekit); pass an ASan build's tool to
sweep under AddressSanitizer (its shadow memory is excluded from nothing: compare release runs
for the memory bound)."""
import argparse, json, os, subprocess, sys, tempfile

parser = argparse.ArgumentParser()
parser.add_argument("--tool", default=os.path.join(os.path.dirname(__file__), "..", ".build", "release", "imagekit"))
parser.add_argument("--timeout", type=float, default=20)
parser.add_argument("--no-memory-check", action="store_true", help="skip the peak-memory bound (for sanitizer builds)")
parser.add_argument("dirs", nargs="+")
args = parser.parse_args()

def measured(argv):
    """Runs argv under /usr/bin/time to get its own peak RSS."""
    try:
        done = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, capture_output=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, 0, b""
    lines = done.stderr.strip().splitlines()
    peak = int(lines[-1]) * 1024 if lines and lines[-1].isdigit() else 0
    return done.returncode, peak, done.stdout + b"\n".join(lines[:-1])

files = [os.path.join(root, name) for d in args.dirs for root, _, names in os.walk(d) for name in names]
problems = []
out = tempfile.mktemp(suffix=".png")
peaks = []
for path in files:
    status, peak, output = measured([args.tool, "info", "--json", path])
    decoded = 0
    try:
        info = json.loads(output.decode(errors="replace").strip().splitlines()[0])
        decoded = int(info.get("cost") or 0)
    except Exception:
        pass
    checks = [("info", status, peak, output, decoded)]
    status, peak, output = measured([args.tool, "thumbnail", path, out, "--size", "256"])
    checks.append(("thumbnail", status, peak, output, 256 * 256 * 4 if status == 0 else 0))
    for what, status, peak, output, size in checks:
        text = output.decode(errors="replace")
        if status is None:
            problems.append(f"HANG {what} {path}")
        elif status < 0 or status > 1:
            problems.append(f"CRASH {what} {path}: status {status}")
        elif "Sanitizer" in text:
            problems.append(f"SANITIZER {what} {path}: {text.strip().splitlines()[0][:200]}")
        elif not args.no_memory_check and peak > 4 * size + 200 * 1024 * 1024:
            problems.append(f"MEMORY {what} {path}: peak {peak >> 20} MB for {size >> 20} MB of output")
        peaks.append((peak, what, path))
peaks.sort(reverse=True)
print(f"{len(files)} files, {2 * len(files)} runs; highest peaks:")
for peak, what, path in peaks[:5]:
    print(f"  {peak >> 20:5d} MB  {what:9s} {path}")
print(f"{len(problems)} problems")
for problem in problems:
    print("  " + problem)
sys.exit(1 if problems else 0)
