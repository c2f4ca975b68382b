#!/usr/bin/env bash
# make fuzz: builds ImageKit's libFuzzer targets with AddressSanitizer (Swift's
# -sanitize=fuzzer,address; the C shims with clang's fuzzer-no-link,address) and runs each for
# FUZZ_SECONDS (default 60) with an RSS limit of FUZZ_RSS_MB (2048), so that a decode that
# allocates without bound is a finding. Seed corpora are built at run time from the shared
# corpus. Any crash, leak, timeout or out-of-memory fails the run; the input that caused it is
# kept in Fuzz/findings/ (commit it under Tests/ImageKitTests/Coding/FuzzRegressions/ with the fix).
# FUZZ_JOBS runs that many targets at once (default 1). FUZZ_SEED fixes libFuzzer's random seed
# (`make fuzz-smoke` sets it, so that CI runs the same inputs every time; `make fuzz` explores).
#   Fuzz/run.sh [TARGET...]     (default: every target)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${FUZZ_SECONDS:-60}
rss=${FUZZ_RSS_MB:-2048}
# The seeds come from the full corpora when they are beside the checkout, else from the subset
# kept in the repository (Tests/Corpus).
corpus=${IMAGEKIT_CORPUS:-$root/../shared/corpus}
[ -f "$corpus/MANIFEST.tsv" ] || corpus=$root/Tests/Corpus/conformance
formats=${IMAGEKIT_FORMATS_CORPUS:-$root/../shared/formats-corpus}
[ -f "$formats/MANIFEST.tsv" ] || formats=$root/Tests/Corpus/formats
echo "fuzz: seeds from $corpus and $formats"
regressions=$root/Tests/ImageKitTests/Coding/FuzzRegressions
[ -d "$corpus" ] || { echo "fuzz: no corpus at $corpus (set IMAGEKIT_CORPUS)" >&2; exit 2; }
all=(FuzzDecode FuzzProgressive FuzzJPEGDC FuzzExif FuzzAPNG FuzzPNGFast FuzzGIFBlocks FuzzDiskMetadata FuzzCacheKey FuzzDataURL FuzzHTTPHeaders FuzzManager
     FuzzBMPICO FuzzTIFF FuzzModernFormats FuzzServiceURL FuzzSVG FuzzPDF FuzzVideo)
targets=("${@:-${all[@]}}")
[ $# -gt 0 ] || targets=("${all[@]}")

cd "$here"
mkdir -p .deps && ln -sfn ../.. .deps/ImageKit
# lld: gold crashes (an internal error while reporting) linking libFuzzer with Swift objects.
flags=(-c release --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing
       -Xcc -fsanitize=fuzzer-no-link,address -Xswiftc -use-ld=lld)
swift build "${flags[@]}" >&2 || { echo "fuzz: build failed" >&2; exit 2; }
bin=$(swift build "${flags[@]}" --show-bin-path)

# FUZZ_CORPUS_DIR keeps the evolved corpora (to sweep them through the CLI afterwards).
if [ -n "${FUZZ_CORPUS_DIR:-}" ]; then
    work=$FUZZ_CORPUS_DIR; mkdir -p "$work"
else
    work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fi
mkdir -p findings
seed() { # seed TARGET: the starting corpus, copied from the shared corpus or written here
    local dir="$work/$1"; mkdir -p "$dir"
    case $1 in
        FuzzDecode|FuzzProgressive|FuzzManager)
            find "$corpus" -type f \( -name '*.jpg' -o -name '*.jpeg' -o -name '*.png' -o -name '*.gif' -o -name '*.webp' \) \
                -size -200k | while read -r f; do printf '\x00\x40' | cat - "$f" > "$dir/$(basename "$f")"; done
            [ "$1" != FuzzProgressive ] || find "$formats" -type f -name '*.jxl' -size -200k \
                | while read -r f; do printf '\x00\x40' | cat - "$f" > "$dir/$(basename "$f")"; done
            # The manager's findings (animated inputs: the lazy path) as they were found, and each
            # regression's bytes under every flag combination that changes the path it takes.
            [ "$1" != FuzzManager ] || for f in "$regressions"/FuzzManager-*; do
                [ -f "$f" ] || continue; cp "$f" "$dir/$(basename "$f")"
                for flags in 01 02 04 08 10 1f; do printf "\x$flags" | cat - <(tail -c +2 "$f") > "$dir/$(basename "$f")-$flags"; done
            done ;;
        FuzzJPEGDC|FuzzExif) find "$corpus" -type f \( -name '*.jpg' -o -name '*.jpeg' \) -size -200k -exec cp {} "$dir/" \; ;;
        FuzzAPNG|FuzzPNGFast) find "$corpus" -type f -name '*.png' -size -200k -exec cp {} "$dir/" \; ;;
        FuzzBMPICO)
            find "$corpus" "$formats" -type f -name '*.bmp' -size -200k | while read -r f; do printf '\x00' | cat - "$f" > "$dir/b-$(basename "$f")"; done
            find "$corpus" "$formats" -type f \( -name '*.ico' -o -name '*.cur' \) -size -200k | while read -r f; do printf '\x01' | cat - "$f" > "$dir/i-$(basename "$f")"; done ;;
        FuzzTIFF)
            find "$corpus" "$formats" -type f \( -name '*.tif' -o -name '*.tiff' \) -size -200k | while read -r f; do printf '\x00' | cat - "$f" > "$dir/$(basename "$f")"; done ;;
        FuzzModernFormats)
            find "$corpus" "$formats" "$root/Tests/ImageKitTests/Fixtures/hdr" -type f \( -name '*.heic' -o -name '*.heif' -o -name '*.avif' -o -name '*.avifs' -o -name '*.jxl' \) -size -200k \
                | while read -r f; do printf '\x00' | cat - "$f" > "$dir/$(basename "$f")"; printf '\x08' | cat - "$f" > "$dir/lazy-$(basename "$f")"; done ;;
        FuzzSVG)
            find "$root/Tests/ImageKitTests/Fixtures/svg" -type f -name '*.svg' | while read -r f; do printf '\x00' | cat - "$f" > "$dir/$(basename "$f")"; printf '\x21' | cat - "$f" > "$dir/t-$(basename "$f")"; done
            printf '\x00<!DOCTYPE svg [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><svg xmlns="http://www.w3.org/2000/svg"><text>&b;&b;</text></svg>' > "$dir/entities" ;;
        FuzzPDF)
            find "$root/Tests/ImageKitTests/Fixtures/pdf" -type f -name '*.pdf' | while read -r f; do printf '\x00' | cat - "$f" > "$dir/$(basename "$f")"; printf '\x03' | cat - "$f" > "$dir/p-$(basename "$f")"; done ;;
        FuzzGIFBlocks) find "$corpus" -type f -name '*.gif' -size -200k | while read -r f; do printf '\x3f\x3f\x00\x40\x40\x00' | cat - "$f" > "$dir/$(basename "$f")"; done ;;
        FuzzDiskMetadata)
            printf 'v\t1\nkey\thttps://e.example/a.jpg\nstored\t1800000000\nbytes\t1234\nexpiry\t1800000600\nhttp\t1\netag\t"x"\ncache-control\tmax-age=60\nexpires\tThu, 01 Dec 2033 16:00:00 GMT\n' > "$dir/1"
            printf 'v\t1\nkey\ta\\tb\\nc\\\\d\nstored\t0\nbytes\t0\n' > "$dir/2" ;;
        FuzzCacheKey)
            for u in 'https://cdn.example/a.png?sig=1&x=2#f' 'http://x/a' 'file:///tmp/b.jpg' 'a.b.c' 'https://h/p.q/r#imagekit-variant:t1:x;'; do
                printf '\x0f%s' "$u" > "$dir/$(echo "$u" | md5sum | cut -c1-8)"; done ;;
        FuzzDataURL)
            printf 'image/png;base64,iVBORw0KGgo=' > "$dir/1"; printf ',%%41%%42' > "$dir/2"; printf 'text/plain;charset=utf-8;base64,QUJD' > "$dir/3" ;;
        FuzzServiceURL)
            for u in '/unsafe/meta/trim:top-left:10/10x20:110x220/adaptive-full-fit-in/-300x-orig/left/top/smart/filters:quality(70):focal(1x2:3x4):watermark(example.com/w.png,-10,center,50,20,none):round_corner(2|3,1,2,3,true)/example.com/a.jpg' \
                     '/insecure/rs:fill:300:400:1:1/g:fp:0.5:0.5/c:0.5:0.5:soea/pd:1:2/bg:ff00ff/fq:webp:60/fn:YQ:1/pr:nest/plain/https://example.com/a%20b.jpg?x=1@webp' \
                     '/_/w:10/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png' '/info/_/plain/http://example.com/a.jpg' \
                     '/gliOovhxLB8RGXinV2YT_W607lw%3D/200x200/my-image.jpg'; do
                printf '\x00%s' "$u" > "$dir/$(echo "$u" | md5sum | cut -c1-8)"; done ;;
        FuzzVideo) # small videos made by ffmpeg (make test-deps installs it): H.264 in MP4, VP9 in WebM, HEVC in MOV
            for spec in "h264.mp4:-c:v libx264 -g 4" "vp9.webm:-c:v libvpx-vp9 -deadline realtime -cpu-used 8" \
                        "hevc.mov:-c:v libx265 -preset ultrafast -x265-params log-level=error"; do
                ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=48x32:rate=10:duration=1 ${spec#*:} \
                    "$work/video-${spec%%:*}" </dev/null || continue
                for flags in 00 01 02 03; do printf "\x$flags\x05" | cat - "$work/video-${spec%%:*}" > "$dir/$flags-${spec%%:*}"; done
            done ;;
        FuzzHTTPHeaders)
            printf 'HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 100\r\nETag: "v1"\r\nCache-Control: max-age=60, no-cache\r\nExpires: Thu, 01 Dec 2033 16:00:00 GMT\r\nLast-Modified: Sunday, 06-Nov-94 08:49:37 GMT\r\n\r\n' > "$dir/1" ;;
    esac
}

jobs=${FUZZ_JOBS:-1}
run_target() { # run_target TARGET: fuzz it; writes its summary line to $work/TARGET.summary
    local target=$1 log="$work/$1.log" status execs rate cov features
    LSAN_OPTIONS="suppressions=$root/.lsan-suppressions" \
    "$bin/$target" "$work/$target" -max_total_time="$seconds" -rss_limit_mb="$rss" -malloc_limit_mb="$rss" -timeout=20 \
        -max_len=262144 -print_final_stats=1 ${FUZZ_SEED:+-seed="$FUZZ_SEED"} -artifact_prefix="$here/findings/$target-" > "$log" 2>&1
    status=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
    features=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
    if [ $status -ne 0 ]; then
        printf '%-18s FINDING (exit %d) — see Fuzz/findings/%s-*\n' "$target" "$status" "$target" > "$work/$target.summary"
        grep -E 'ERROR: |SUMMARY: ' "$log" | head -5 >&2
    else
        printf '%-18s %10s execs %7s exec/s  cov %6s  ft %6s\n' "$target" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${features:-?}" > "$work/$target.summary"
    fi
}

for target in "${targets[@]}"; do
    seed "$target"
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    echo "fuzz: $target for $seconds s" >&2
    run_target "$target" &
done
wait
failed=0
for target in "${targets[@]}"; do
    cat "$work/$target.summary"
    grep -q FINDING "$work/$target.summary" && failed=1
done
exit $failed
