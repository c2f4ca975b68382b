#!/bin/bash
# The service's own cost per cold thumbnail, finer than bench-serve's process-tick figure:
#
#     Benchmarks/serve/cold_cpu.sh [IMAGEKIT] [REQUESTS]
#
# nginx serves the bench-serve photos (~/.cache/imagekit/bench-serve-photos, made by
# `make bench-serve`) on 127.0.0.1, `imagekit serve --workers 1` runs pinned to core 0 with no
# cache directory, and a client on core 1 asks `fit-in/WxW` of every photo at falling sizes, so
# every request is cold (its result was never made; its source is fetched again). Prints the
# server's CPU per request (every thread's time on the CPU, from /proc's schedstat), per thread
# name, and its context switches per request, after 100 warm-up requests. PERF=FILE records the
# measured requests with `perf record -g` into FILE. Compare with the in-process row of the same
# photos:
#     .build/release/bench --corpus ~/.cache/imagekit/bench-serve-photos --filter serve/corpus
set -euo pipefail
binary=${1:-.build/release/imagekit}
requests=${2:-3000}
photos=${PHOTOS:-$HOME/.cache/imagekit/bench-serve-photos}
[ -x "$binary" ] || { echo "cold_cpu: no imagekit at $binary (swift build -c release --product imagekit)" >&2; exit 2; }
ls "$photos"/*.jpg >/dev/null 2>&1 || { echo "cold_cpu: no photos in $photos (run make bench-serve once)" >&2; exit 2; }
work=$(mktemp -d)
origin_port=$((20000 + RANDOM % 5000)); serve_port=$((origin_port + 1))
cat > "$work/nginx.conf" <<EOF
$( [ "$(id -u)" = 0 ] && echo "user root;" )
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 256; }
http { access_log off; server { listen 127.0.0.1:$origin_port; root $photos; } }
EOF
cleanup() {
    [ -n "${server:-}" ] && kill "$server" 2>/dev/null || true
    nginx -c "$work/nginx.conf" -p "$work" -s stop 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
taskset -c 1 nginx -c "$work/nginx.conf" -p "$work"
taskset -c 0 "$binary" serve --port "$serve_port" --allow-unsafe --allow-address 127.0.0.0/8 --workers 1 \
    --memory-limit 64 --log-level warning ${SERVE_ARGS:-} \
    > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$serve_port/healthz" >/dev/null && break; sleep 0.1; done
load() { # load FIRST COUNT: requests FIRST..FIRST+COUNT-1 on one keep-alive connection
    taskset -c 1 python3 - "$serve_port" "$origin_port" "$photos" "$1" "$2" <<'PY'
import http.client, os, sys
port, origin, photos, first, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
names = sorted(p for p in os.listdir(photos) if p.endswith(".jpg"))
connection = http.client.HTTPConnection("127.0.0.1", port)
for i in range(first, first + count):
    size = 256 - (i // len(names)) % 200
    connection.request("GET", f"/unsafe/fit-in/{size}x{size}/127.0.0.1:{origin}/{names[i % len(names)]}")
    response = connection.getresponse()
    response.read()
    if response.status != 200:
        sys.exit(f"status {response.status}")
PY
}
# CPU time from each thread's schedstat (nanoseconds on the CPU), not /proc's 10 ms ticks.
threads() { # CPU ns per thread name (dispatch names a worker after the queue it serves)
    for task in /proc/$server/task/*; do
        echo "$(cut -d' ' -f1 "$task/schedstat") $(tr ' ' '_' < "$task/comm")"
    done | awk '{ns[$2] += $1} END {for (name in ns) printf "%s %.0f\n", name, ns[name]}' | sort
}
counters() { # CPU ns, context switches and minor page faults of the server, all threads
    echo "$(cat /proc/$server/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}') $(cat /proc/$server/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}') $(awk '{print $10}' "/proc/$server/stat")"
}
load 0 100
read -r ns0 switches0 faults0 < <(counters)
threads > "$work/threads0"
if [ -n "${PERF:-}" ]; then
    perf record -q -F 2000 -g -o "$PERF" -p "$server" 2>/dev/null &
    recorder=$!
    sleep 0.5
fi
load 100 "$requests"
read -r ns1 switches1 faults1 < <(counters)
if [ -n "${PERF:-}" ]; then kill -INT "$recorder"; wait "$recorder" || true; fi
threads > "$work/threads1"
join -a 2 -e 0 -o 0,1.2,2.2 "$work/threads0" "$work/threads1" | awk -v n="$requests" \
    '{printf "  %-20s %.3f ms per request\n", $1, ($3 - $2) / 1e6 / n}'
python3 -c "print(f'cold requests: $requests; CPU per request {($ns1 - $ns0) / 1e6 / $requests:.3f} ms; context switches per request {($switches1 - $switches0) / $requests:.1f}; minor page faults per request {($faults1 - $faults0) / $requests:.1f}')"
