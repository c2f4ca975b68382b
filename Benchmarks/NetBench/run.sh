#!/usr/bin/env bash
# make bench-net: nginx on loopback serving 1000 files of 10–200 KB over HTTP/1.1 and
# HTTPS + HTTP/2 (self-signed certificate), then netbench against it (netbench also writes the
# pipeline case's photos into the served directory). Stops nginx on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill $(cat "$work/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/www"
python3 - "$work/www" <<'PY'
import os, random, sys
random.seed(1)
for i in range(1000):
    with open(os.path.join(sys.argv[1], f"{i}.bin"), "wb") as f:
        f.write(os.urandom(random.randint(10_000, 200_000)))
PY
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
port_http=${NETBENCH_HTTP_PORT:-18480}
port_https=${NETBENCH_HTTPS_PORT:-18443}
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
user root;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    keepalive_requests 100000;
    client_body_temp_path $work/t1; proxy_temp_path $work/t2; fastcgi_temp_path $work/t3; uwsgi_temp_path $work/t4; scgi_temp_path $work/t5;
    server { listen 127.0.0.1:$port_http; root $work/www; }
    server {
        listen 127.0.0.1:$port_https ssl http2;
        ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;
        http2_max_concurrent_streams 128;
        root $work/www;
    }
}
CONF
/usr/sbin/nginx -p "$work" -c "$work/nginx.conf"
sleep 0.5
cd "$here"
mkdir -p .deps && ln -sfn ../../.. .deps/ImageKit
swift build -c release --product netbench >&2
# The pipeline case's disk caches: tmpfs when there is one. On a file system without a journal
# (this project's machines: ext4 without one), ext4 checks every candidate inode for a recent
# deletion on each file creation, which made 80 % of a disk store there; NETBENCH_CACHE_ROOT=/tmp
# measures on the disk itself.
cache_root=${NETBENCH_CACHE_ROOT:-$( [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")}
swift run -c release --skip-build netbench --http "http://127.0.0.1:$port_http" --https "https://127.0.0.1:$port_https" \
    --count ${NETBENCH_COUNT:-1000} --www "$work/www" --cache-root "$cache_root" "$@"
