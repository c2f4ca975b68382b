# ImageKit — build, test and benchmark. `make bench` and `make test` work on a fresh Debian 12
# machine that has only Swift: `deps` installs the C libraries when pkg-config cannot find them.

SWIFT ?= swift
# SwiftPM plans the build anew (and recompiles every module, minutes) when any environment
# variable changes — even `_`, the path of the command that started it — and make exports
# MAKEFLAGS/MAKELEVEL, which differ between `make test` and a sub-make or `make -s`: every swift
# command runs without them, so a second build with the same flags is a no-op.
SWIFTPM = env -u _ -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u MAKE_TERMOUT -u MAKE_TERMERR $(SWIFT)
# What a build with the default traits links (`make build`, `bench`, `docs`, `dist`): the C libraries.
BUILD_PACKAGES := pkg-config libcurl4-openssl-dev libturbojpeg0-dev libpng-dev libgif-dev libwebp-dev libdeflate-dev libtiff-dev liblcms2-dev libheif-dev libavif-dev libjxl-dev librsvg2-dev
BUILD_MODULES := libcurl libturbojpeg libpng libgif libwebp libwebpdemux libwebpmux libdeflate libtiff-4 lcms2 libheif libavif libjxl librsvg-2.0
# What the tests add: the PDF, HEVCAVCodec and Video traits' libraries, nginx (each test starts its
# own, with its own prefix and config on a loopback port), openssl, python3, the webp/avif tools and
# ffmpeg (the video tests make their sources with it and compare frames with its own).
TEST_PACKAGES := $(BUILD_PACKAGES) libpoppler-glib-dev libavcodec-dev libavformat-dev libswscale-dev nginx libnginx-mod-http-cache-purge openssl python3 webp libavif-bin ffmpeg chromium
TEST_MODULES := $(BUILD_MODULES) poppler-glib libavcodec libavformat libswscale
# apt-get needs root; use sudo when not root and sudo exists.
SUDO := $(shell [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && echo sudo)
BENCH_ARGS ?=

.PHONY: all docs lint format deps test-deps build release test test-asan test-tsan test-no-traits test-fleet bench bench-net bench-serve bench-fleet bench-peers fuzz fuzz-smoke check-resolved dist deb test-deb clean \
	thumbor-venv thumbor-sizes peers-venv deploy-venv reference-venv \
	fleet fleet-restart fleet-stop fleet-clean fleet-status

all: build

# Installs only what is missing, and never starts, stops or reconfigures a service of the host.
deps:
	@if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists $(BUILD_MODULES); then \
		echo "deps: $(BUILD_MODULES) found"; \
	else \
		echo "deps: installing $(BUILD_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(BUILD_PACKAGES); \
	fi

test-deps:
	@if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists $(TEST_MODULES) \
		&& [ -x /usr/sbin/nginx ] && [ -f /usr/lib/nginx/modules/ngx_http_cache_purge_module.so ] && command -v openssl >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 \
		&& command -v webpmux >/dev/null 2>&1 && command -v avifdec >/dev/null 2>&1 && command -v ffmpeg >/dev/null 2>&1 \
		&& command -v chromium >/dev/null 2>&1; then \
		echo "test-deps: $(TEST_MODULES), nginx (with cache purge), openssl, python3, webpmux, avifdec, ffmpeg and chromium found"; \
	else \
		echo "test-deps: installing $(TEST_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(TEST_PACKAGES); \
	fi

build: deps
	$(SWIFTPM) build

release: deps
	$(SWIFTPM) build -c release

# Tests run optimised (-c release, with @testable imports enabled): the codec and resampler
# loops are 50-100x slower unoptimised, which would make the corpus sweeps take many minutes.
# Every trait on, PDF, HEVCAVCodec and Video too (off by default: poppler is GPL, FFmpeg's libraries
# bring many more), so that every coder's tests run; `test-no-traits` checks the build and the tests with none.
TEST_TRAITS := HEIF,AVIF,JXL,SVG,PDF,HEVCAVCodec,Video
TEST_FLAGS := -c release -Xswiftc -enable-testing --scratch-path .build-test --traits $(TEST_TRAITS),Serve,OTel

# The image service's output sizes are compared with a real thumbor 7.8 asked for the same URLs
# in the same run (Tests/thumbor/sizes.py, loopback only). thumbor lives in a venv outside the
# repository, installed once per machine from PyPI.
THUMBOR_VENV ?= $(HOME)/.cache/imagekit/thumbor-7.8.0-venv
MOTO_VERSION := 5.2.5
THUMBOR_SIZES := $(CURDIR)/.build-test/thumbor-sizes.jsonl
THUMBOR_IMAGES := $(CURDIR)/.build-test/thumbor-images

# Every package of the venv is pinned (THUMBOR_CONSTRAINTS, dependencies included), so the parity
# checks change only with a commit; the venv is made again when that file changes.
THUMBOR_CONSTRAINTS := Tests/thumbor/constraints.txt
THUMBOR_VIDEO_ENGINE_VERSION := 1.3.1
THUMBOR_VIDEO := $(CURDIR)/.build-test/thumbor-video
thumbor-venv:
	@if cmp -s $(THUMBOR_CONSTRAINTS) $(THUMBOR_VENV)/constraints.txt && $(THUMBOR_VENV)/bin/python -c "import thumbor, moto, thumbor_video_engine" 2>/dev/null; then \
		echo "thumbor-venv: thumbor 7.8.0, thumbor-video-engine and moto $(MOTO_VERSION), as $(THUMBOR_CONSTRAINTS) pins them, in $(THUMBOR_VENV)"; \
	else \
		echo "thumbor-venv: installing thumbor 7.8.0, thumbor-video-engine $(THUMBOR_VIDEO_ENGINE_VERSION) and moto[server] $(MOTO_VERSION) (moto's S3 server for the s3:// tests) into $(THUMBOR_VENV)"; \
		{ python3 -c "import venv, ensurepip" 2>/dev/null || { $(SUDO) apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends python3 python3-venv python3-dev gcc; }; } && \
		rm -rf $(THUMBOR_VENV) && python3 -m venv $(THUMBOR_VENV) && \
		$(THUMBOR_VENV)/bin/pip install -q --disable-pip-version-check -c $(THUMBOR_CONSTRAINTS) thumbor==7.8.0 thumbor-video-engine==$(THUMBOR_VIDEO_ENGINE_VERSION) "moto[server]==$(MOTO_VERSION)" && \
		cp $(THUMBOR_CONSTRAINTS) $(THUMBOR_VENV)/constraints.txt; \
	fi

# The placeholder tests' reference implementations (PyPI's blurhash and thumbhash-python), the
# SSIMULACRA2 tests' (ssimulacra2) and the OTLP receiver's decoder (opentelemetry-proto), pinned
# likewise; run by Tests/placeholders/*.py and Tests/otel/otlp_receiver.py.
REFERENCE_VENV ?= $(HOME)/.cache/imagekit/reference-venv
REFERENCE_CONSTRAINTS := Tests/placeholders/constraints.txt
reference-venv:
	@if cmp -s $(REFERENCE_CONSTRAINTS) $(REFERENCE_VENV)/constraints.txt && $(REFERENCE_VENV)/bin/python -c "import blurhash, thumbhash, ssimulacra2, opentelemetry.proto" 2>/dev/null; then \
		echo "reference-venv: blurhash, thumbhash-python, ssimulacra2 and opentelemetry-proto found in $(REFERENCE_VENV)"; \
	else \
		echo "reference-venv: installing blurhash, thumbhash-python, ssimulacra2 and opentelemetry-proto into $(REFERENCE_VENV)"; \
		{ python3 -c "import venv, ensurepip" 2>/dev/null || { $(SUDO) apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends python3 python3-venv; }; } && \
		rm -rf $(REFERENCE_VENV) && python3 -m venv $(REFERENCE_VENV) && \
		$(REFERENCE_VENV)/bin/pip install -q --disable-pip-version-check -c $(REFERENCE_CONSTRAINTS) blurhash==1.1.5 thumbhash-python==1.0.1 ssimulacra2==0.3.0 opentelemetry-proto==1.45.2 && \
		cp $(REFERENCE_CONSTRAINTS) $(REFERENCE_VENV)/constraints.txt; \
	fi

# The deploy checks (Tests/deploy/check_deploy.py): kubernetes-validate, pinned likewise.
DEPLOY_VENV ?= $(HOME)/.cache/imagekit/deploy-venv
DEPLOY_CONSTRAINTS := Tests/deploy/constraints.txt
deploy-venv:
	@if cmp -s $(DEPLOY_CONSTRAINTS) $(DEPLOY_VENV)/constraints.txt && $(DEPLOY_VENV)/bin/python -c "import kubernetes_validate" 2>/dev/null; then \
		echo "deploy-venv: kubernetes-validate found in $(DEPLOY_VENV)"; \
	else \
		echo "deploy-venv: installing kubernetes-validate into $(DEPLOY_VENV)"; \
		{ python3 -c "import venv, ensurepip" 2>/dev/null || { $(SUDO) apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends python3 python3-venv; }; } && \
		rm -rf $(DEPLOY_VENV) && python3 -m venv $(DEPLOY_VENV) && \
		$(DEPLOY_VENV)/bin/pip install -q --disable-pip-version-check -c $(DEPLOY_CONSTRAINTS) kubernetes-validate && \
		cp $(DEPLOY_CONSTRAINTS) $(DEPLOY_VENV)/constraints.txt; \
	fi

thumbor-sizes: thumbor-venv
	@mkdir -p $(dir $(THUMBOR_SIZES))
	$(THUMBOR_VENV)/bin/python Tests/thumbor/sizes.py $(THUMBOR_SIZES) $(THUMBOR_IMAGES)
	$(THUMBOR_VENV)/bin/python Tests/thumbor/video_engine.py $(THUMBOR_VIDEO)

# After the Swift tests, the fleet tests (nginx in front of nodes of the imagekit just
# built, `test-fleet`), and
# last a package that depends on the ImageKit product alone is built in .build-consumer and
# must have compiled neither ImageKitServer nor Hummingbird (Tests/consumer-check.sh).
test: test-deps thumbor-sizes deploy-venv reference-venv
	IMAGEKIT_THUMBOR_SIZES=$(THUMBOR_SIZES) IMAGEKIT_THUMBOR_IMAGES=$(THUMBOR_IMAGES) IMAGEKIT_THUMBOR_VIDEO=$(THUMBOR_VIDEO) IMAGEKIT_REFERENCE_PYTHON=$(REFERENCE_VENV)/bin/python IMAGEKIT_MOTO_PYTHON=$(THUMBOR_VENV)/bin/python bash Tests/with-tmpdir.sh $(CURDIR)/.build-tmp/test $(SWIFTPM) test $(TEST_FLAGS)
	python3 Tests/fleet/test_fleet.py --binary .build-test/release/imagekit
	$(DEPLOY_VENV)/bin/python Tests/deploy/check_deploy.py --binary .build-test/release/imagekit
	bash Tests/consumer-check.sh

# Codec tests under AddressSanitizer (the C boundary), concurrency tests under ThreadSanitizer.
# The ASan build leaves out the Serve trait (the HTTP layer: Hummingbird, pure Swift, tested by
# `make test` through the real binary), so a CI run compiles Hummingbird once.
# A build without the Serve trait resolves without Hummingbird and its dependencies (without OTel,
# without swift-otel's), and SwiftPM writes that pruned pin set back to Package.resolved: the
# targets that build so (test-asan, test-no-traits, test-tsan) put the committed file back when
# they end (pass or fail), so that committing after them never drops pins.
RESOLVED_KEEP := .build-resolved-keep/Package.resolved

test-asan: test-deps thumbor-sizes reference-venv
	@mkdir -p $(dir $(RESOLVED_KEEP)) && cp Package.resolved $(RESOLVED_KEEP)
	status=0; IMAGEKIT_THUMBOR_SIZES=$(THUMBOR_SIZES) IMAGEKIT_THUMBOR_IMAGES=$(THUMBOR_IMAGES) IMAGEKIT_THUMBOR_VIDEO=$(THUMBOR_VIDEO) IMAGEKIT_REFERENCE_PYTHON=$(REFERENCE_VENV)/bin/python IMAGEKIT_MOTO_PYTHON=$(THUMBOR_VENV)/bin/python LSAN_OPTIONS=suppressions=$(CURDIR)/.lsan-suppressions bash Tests/with-tmpdir.sh $(CURDIR)/.build-tmp/asan $(SWIFTPM) test -c release -Xswiftc -enable-testing --sanitize=address --scratch-path .build-asan --traits $(TEST_TRAITS) || status=$$?; \
		cp $(RESOLVED_KEEP) Package.resolved; exit $$status

# Every package trait off (no libheif, libavif, libjxl, librsvg, poppler or HTTP layer): the
# library, the tool and every test build, and the tests pass with those formats answering
# `unsupportedFormat`.
test-no-traits: test-deps thumbor-sizes reference-venv
	@mkdir -p $(dir $(RESOLVED_KEEP)) && cp Package.resolved $(RESOLVED_KEEP)
	status=0; IMAGEKIT_THUMBOR_SIZES=$(THUMBOR_SIZES) IMAGEKIT_THUMBOR_IMAGES=$(THUMBOR_IMAGES) IMAGEKIT_THUMBOR_VIDEO=$(THUMBOR_VIDEO) IMAGEKIT_REFERENCE_PYTHON=$(REFERENCE_VENV)/bin/python IMAGEKIT_MOTO_PYTHON=$(THUMBOR_VENV)/bin/python bash Tests/with-tmpdir.sh $(CURDIR)/.build-tmp/no-traits $(SWIFTPM) test -c release -Xswiftc -enable-testing --scratch-path .build-no-traits --disable-default-traits || status=$$?; \
		cp $(RESOLVED_KEEP) Package.resolved; exit $$status

# Debug build: with -O, Swift 6.3 crashes ("Invalid bitcast") compiling ImageKit under
# --sanitize=thread; the OTel trait is off (swift-otel 1.6 does not compile under the sanitizer:
# "sending 'logger' risks causing data races"). The suites that exercise threads and locks:
TSAN_SUITES := ImageLoadTaskTests|CoderCapabilitiesTests|MemoryCacheTests|DiskCacheTests|ImageCacheTests|ImageCachesManagerTests|DecodingBehaviourTests|DownloaderTests|BodyBufferPoolTests|ImageManagerTests|ImageManagerIntegrationTests|ImagePrefetcherTests|ImageTargetTests|AnimatedImagePlayerTests|AnimatedImageTests|LazyAnimationLoadTests|PixelMemoryTests|ServerGradeTests|MemoryPressureTests|TelemetryTests|LocalResourceCachingTests|ImageServiceTests|WorkerPoolTests|ServeCommandTests|StoreSourceTests|CairoConversionTests|HealthChannelHandlerTests|PerceptualMetricTests/testConcurrentComparisonsAgree|ImageManagerTracingTests
test-tsan: test-deps thumbor-venv
	@mkdir -p $(dir $(RESOLVED_KEEP)) && cp Package.resolved $(RESOLVED_KEEP)
	status=0; IMAGEKIT_MOTO_PYTHON=$(THUMBOR_VENV)/bin/python bash Tests/with-tmpdir.sh $(CURDIR)/.build-tmp/tsan $(SWIFTPM) test --sanitize=thread --scratch-path .build-tsan --traits HEIF,AVIF,JXL,SVG,Serve --filter "$(TSAN_SUITES)" || status=$$?; \
		cp $(RESOLVED_KEEP) Package.resolved; exit $$status

bench: deps
	$(SWIFTPM) build -c release --product bench
	$(SWIFTPM) run -c release --skip-build bench $(BENCH_ARGS)

# Decoding against Pillow, pyvips and OpenCV (Benchmarks/peers/decode_peers.py): real photos (Debian's
# lomiri-wallpapers) re-encoded once into DECODE_CORPUS as 20 cases (JPEG, PNG, GIF and WebP at three
# sizes, animated GIF and WebP), decoded case by case on one core by ImageKit, its raw-C column
# and each peer in the same run; medians of ROUNDS rounds and ImageKit / best peer per case.
# The peers live in a venv outside the repository (PEERS_VENV, pinned versions). JSON=1: JSON lines.
PEERS_VENV ?= $(HOME)/.cache/imagekit/peers-venv
PEERS_PACKAGES := pillow==13.0.0 pyvips==3.2.0 pyvips-binary==8.18.7 opencv-python-headless==5.0.0.93 numpy==2.4.6 av==18.1.0
DECODE_CORPUS ?= $(HOME)/.cache/imagekit/decode-corpus
ROUNDS ?= 3
peers-venv:
	@if $(PEERS_VENV)/bin/python -c "import PIL, pyvips, cv2, numpy, av, sys; sys.exit(PIL.__version__ != '13.0.0')" 2>/dev/null; then \
		echo "peers-venv: Pillow, pyvips, OpenCV and PyAV found in $(PEERS_VENV)"; \
	else \
		echo "peers-venv: installing $(PEERS_PACKAGES) into $(PEERS_VENV)"; \
		{ python3 -c "import venv, ensurepip" 2>/dev/null || { $(SUDO) apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends python3 python3-venv; }; } && \
		rm -rf $(PEERS_VENV) && python3 -m venv $(PEERS_VENV) && \
		$(PEERS_VENV)/bin/pip install -q --disable-pip-version-check $(PEERS_PACKAGES); \
	fi

bench-peers: deps peers-venv
	@ls /usr/share/backgrounds/*.jpg >/dev/null 2>&1 || { \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends lomiri-wallpapers; }
	$(SWIFTPM) build -c release --product bench
	$(PEERS_VENV)/bin/python Benchmarks/peers/decode_corpus.py $(DECODE_CORPUS)
	$(PEERS_VENV)/bin/python Benchmarks/peers/decode_peers.py --bench .build/release/bench --corpus $(DECODE_CORPUS) \
		--rounds $(ROUNDS) $(if $(JSON),--json,)

# nginx on loopback serving 1000 files of 10–200 KB over HTTP/1.1 and HTTPS + HTTP/2, downloaded
# by ImageKit, the curl command line, URLSession and AsyncHTTPClient (Benchmarks/NetBench, a
# separate package). JSON=1 prints JSON lines.
bench-net: test-deps
	bash Benchmarks/NetBench/run.sh $(if $(JSON),--json,)

# `imagekit serve` beside a real thumbor 7.8 on ~1000 photos made from Debian's lomiri-wallpapers
# (cached in ~/.cache/imagekit), served by nginx on loopback: in-process, cold, warm, mixed and
# overload phases (Benchmarks/serve/bench_serve.py). JSON=1 prints JSON lines; SOAK=600 adds a
# ten-minute soak; SOURCES=animated soaks with animated GIF, WebP and APNG sources instead of the
# photos; COUNT=N photos.
# FORMATS=1: instead, every source format (JPEG, PNG, WebP, GIF, AVIF, HEIC with and without a
# thumbnail item, JPEG XL, TIFF) through `imagekit serve` beside libvips (Debian's 8.14 and
# pyvips-binary's 8.18) and Pillow in process on the same files (Benchmarks/serve/bench_formats.py;
# FORMAT_COUNT sources a format, ROUNDS rounds). Its imagekit is built with the HEVCAVCodec trait
# (HEVC through libavcodec) and Video, in .build-formats.
# QUALITY=1: instead, autoquality (aq:ssimulacra2:70) against fixed qualities and `best` against
# each single format, on FORMAT_COUNT photos and a third as many graphics, scored with SSIMULACRA2
# (Benchmarks/serve/bench_quality.py).
# VIDEO=1: instead, video posters (720p H.264, the frame at 2 s fitted in 320x180) through
# `imagekit serve` beside PyAV doing the same in process, and animated GIFs written as MP4 against
# their bytes (Benchmarks/serve/bench_video.py; FORMAT_COUNT videos, ROUNDS rounds).
SOAK ?= 0
SOURCES ?= photos
COUNT ?= 1000
FORMAT_COUNT ?= 30
VIPS_VENV ?= $(HOME)/.cache/imagekit/vips-debian-venv
FORMATS_TRAITS := HEIF,AVIF,JXL,SVG,Serve,HEVCAVCodec,Video
ifdef FORMATS
bench-serve: test-deps peers-venv
	@missing=""; for tool in heif-enc:libheif-examples cjxl:libjxl-tools; do \
		command -v $${tool%%:*} >/dev/null 2>&1 || missing="$$missing $${tool#*:}"; done; \
		ls /usr/lib/*/libvips.so.42 >/dev/null 2>&1 || missing="$$missing libvips42"; \
		ls /usr/share/backgrounds/*.jpg >/dev/null 2>&1 || missing="$$missing lomiri-wallpapers"; \
		if [ -n "$$missing" ]; then $(SUDO) apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; fi
	@$(VIPS_VENV)/bin/python -c "import pyvips" 2>/dev/null || { rm -rf $(VIPS_VENV) && python3 -m venv $(VIPS_VENV) && \
		$(VIPS_VENV)/bin/pip install -q --disable-pip-version-check pyvips==3.2.0; }
	$(SWIFTPM) build -c release --product imagekit --scratch-path .build-formats --traits $(FORMATS_TRAITS)
	$(PEERS_VENV)/bin/python Benchmarks/serve/bench_formats.py --imagekit .build-formats/release/imagekit --vips-python $(VIPS_VENV)/bin/python \
		--count $(FORMAT_COUNT) --rounds $(ROUNDS) $(if $(JSON),--json,)
else ifdef TRACING
bench-serve: test-deps thumbor-venv reference-venv
	@command -v nginx >/dev/null 2>&1 && ls /usr/share/backgrounds/*.jpg >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends nginx lomiri-wallpapers; }
	$(SWIFTPM) build -c release --product imagekit
	$(THUMBOR_VENV)/bin/python Benchmarks/serve/bench_tracing.py --imagekit .build/release/imagekit \
		--receiver-python $(REFERENCE_VENV)/bin/python --count $(or $(TRACING_COUNT),300) --rounds $(or $(ROUNDS),5) \
		$(if $(BASE_IMAGEKIT),--base-imagekit $(BASE_IMAGEKIT) $(if $(BASE_TRACED),--base-traced,),)
else ifdef QUALITY
bench-serve: test-deps peers-venv reference-venv
	@ls /usr/share/backgrounds/*.jpg >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends lomiri-wallpapers; }
	$(SWIFTPM) build -c release --product imagekit --scratch-path .build-formats --traits $(FORMATS_TRAITS)
	$(PEERS_VENV)/bin/python Benchmarks/serve/bench_quality.py --imagekit .build-formats/release/imagekit \
		--count $(FORMAT_COUNT) --peer-python $(REFERENCE_VENV)/bin/python $(if $(JSON),--json,)
else ifdef VIDEO
bench-serve: test-deps peers-venv
	@ls /usr/share/backgrounds/*.jpg >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends lomiri-wallpapers; }
	$(SWIFTPM) build -c release --product imagekit --scratch-path .build-formats --traits $(FORMATS_TRAITS)
	$(PEERS_VENV)/bin/python Benchmarks/serve/bench_video.py --imagekit .build-formats/release/imagekit \
		--count $(FORMAT_COUNT) --rounds $(ROUNDS) $(if $(JSON),--json,)
else
bench-serve: test-deps thumbor-venv
	@command -v wrk >/dev/null 2>&1 && [ -d /usr/share/backgrounds ] && ls /usr/share/backgrounds/*.jpg >/dev/null 2>&1 || { \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends wrk lomiri-wallpapers; }
	$(SWIFTPM) build -c release --product imagekit
	$(SWIFTPM) build -c release --product bench
	$(THUMBOR_VENV)/bin/python Benchmarks/serve/bench_serve.py --imagekit .build/release/imagekit --bench .build/release/bench \
		--count $(COUNT) --soak $(SOAK) --sources $(SOURCES) $(if $(JSON),--json,)
endif

# A fleet of N `imagekit serve` nodes on 127.0.0.1:FLEET_PORT+1…N behind nginx on FLEET_PORT
# (deploy/fleet.py, deploy/nginx/): `make fleet N=3` starts or scales it (running nodes keep
# running), `fleet-restart` restarts the nodes one at a time, `fleet-stop` stops everything and
# keeps the caches, `fleet-clean` removes FLEET_DIR. FLEET_ARGS are more `imagekit serve` options
# for the nodes (IMAGEKIT_SERVE_* variables reach them too); the default accepts unsigned URLs,
# for trying it out: give keys instead in production. FLEET_BIN: a built imagekit to run
# instead of building .build/release/imagekit.
FLEET_DIR ?= .fleet
FLEET_ARGS ?= --allow-unsafe
FLEET_CACHE_SIZE ?= 1g
FLEET := python3 deploy/fleet.py --dir $(FLEET_DIR) --cache-size $(FLEET_CACHE_SIZE)
fleet: test-deps
	$(if $(FLEET_BIN),,$(SWIFTPM) build -c release --product imagekit)
	@$(FLEET) up --nodes "$(N)" --port "$(FLEET_PORT)" --args='$(FLEET_ARGS)' --binary $(or $(FLEET_BIN),.build/release/imagekit)
fleet-restart:
	@$(FLEET) restart
fleet-stop:
	@$(FLEET) stop
fleet-clean:
	@$(FLEET) clean
fleet-status:
	@$(FLEET) status

# The fleet's tests (Tests/fleet/test_fleet.py): nginx and 3-4 nodes of the imagekit that
# `make test` built, a counting origin, loopback only, under a minute.
# Alone, it builds through `swift test` with a filter that matches no test and the environment
# `make test` gives it: `swift build --build-tests` or `--product`, or another environment, plan
# another build, and every module was compiled again (1-3 minutes) after `make test` had built them.
test-fleet: test-deps
	IMAGEKIT_THUMBOR_SIZES=$(THUMBOR_SIZES) IMAGEKIT_THUMBOR_IMAGES=$(THUMBOR_IMAGES) IMAGEKIT_THUMBOR_VIDEO=$(THUMBOR_VIDEO) IMAGEKIT_REFERENCE_PYTHON=$(REFERENCE_VENV)/bin/python IMAGEKIT_MOTO_PYTHON=$(THUMBOR_VENV)/bin/python bash Tests/with-tmpdir.sh $(CURDIR)/.build-tmp/test $(SWIFTPM) test $(TEST_FLAGS) --filter BuildOnlyNoTestHasThisName
	python3 Tests/fleet/test_fleet.py --binary .build-test/release/imagekit

# The bench-serve photos and its mixed workload (3 sizes + a crop + a WebP per photo, cold, then
# again) through nginx in front of N nodes for each N in NODES (Benchmarks/fleet/bench_fleet.py):
# thumbnails/s, p50/p99, CPU per thumbnail with nginx, origin requests per source, result-cache
# hits. JSON=1 prints JSON lines; COUNT=N photos.
NODES ?= 1,2,4
bench-fleet: test-deps thumbor-venv
	@[ -d /usr/share/backgrounds ] && ls /usr/share/backgrounds/*.jpg >/dev/null 2>&1 || { \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends lomiri-wallpapers; }
	$(SWIFTPM) build -c release --product imagekit
	$(THUMBOR_VENV)/bin/python Benchmarks/fleet/bench_fleet.py --imagekit .build/release/imagekit --nodes $(NODES) \
		--count $(COUNT) $(if $(JSON),--json,)

# libFuzzer targets under AddressSanitizer (Fuzz/, a separate package), FUZZ_SECONDS each
# (default 60); fails on any crash, leak, timeout or out-of-memory. FUZZ_TARGETS narrows it.
FUZZ_SECONDS ?= 60
fuzz: test-deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(or $(FUZZ_JOBS),1) bash Fuzz/run.sh $(FUZZ_TARGETS)

# Every target briefly (FUZZ_SMOKE_SECONDS each, two at a time): its seeds, the committed
# findings among them, then a few seconds of mutation. `.ci/run` runs it, so that a seed a change
# breaks (a renderer that no longer round-trips, a leak on an animated input) fails CI the day it
# breaks rather than at the next `make fuzz`. A fixed -seed: the same mutations every run, so a
# smoke failure comes from a commit, not from chance (`make fuzz` stays random).
FUZZ_SMOKE_SECONDS ?= 10
fuzz-smoke: test-deps
	FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS) FUZZ_JOBS=2 FUZZ_SEED=1 bash Fuzz/run.sh

# Releases. `make dist`: dist/imagekit with the Swift runtime linked in (--static-swift-stdlib),
# so the machine that runs it needs only the C libraries; the default traits plus Video and
# HEVCAVCodec (FFmpeg's libraries: video sources, and HEIC's HEVC at ~0.6x libde265's CPU; not PDF:
# poppler is GPL); `imagekit --version` and /metrics' imagekit_build_info carry `git describe`.
# `make deb`: dist/imagekit_VERSION-1_ARCH.deb (deploy/debian/build-deb.sh: dpkg-deb, dependencies
# from dpkg-shlibdeps, the systemd unit, /etc/default/imagekit, a man page). `make test-deb`
# follows its life cycle on a bare Debian 12 root (deploy/debian/test-deb.sh).
VERSION := $(shell sed -n 's/.*static let version = "\(.*\)"/\1/p' Sources/ImageKit/ImageKit.swift)
BUILD_COMMIT := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
DIST_TRAITS := HEIF,AVIF,JXL,SVG,Serve,OTel,HEVCAVCodec,Video
DIST_FLAGS := -c release --scratch-path .build-dist --static-swift-stdlib --traits $(DIST_TRAITS) -Xcc '-DIK_BUILD_COMMIT="$(BUILD_COMMIT)"'
DIST_PACKAGES := libavcodec-dev libavformat-dev libswscale-dev
dist: deps
	@pkg-config --exists libavcodec libavformat libswscale || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(DIST_PACKAGES); }
	$(SWIFTPM) build $(DIST_FLAGS) --product imagekit
	@mkdir -p dist && cp .build-dist/release/imagekit dist/imagekit
	dist/imagekit --version

deb: dist
	@command -v dpkg-shlibdeps >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends dpkg-dev; }
	bash deploy/debian/build-deb.sh dist/imagekit $(VERSION) dist

# The life cycle (install, upgrade, remove, purge) needs a second package with a higher version:
# the same binary as revision 2.
test-deb: deb
	bash deploy/debian/build-deb.sh dist/imagekit $(VERSION) dist/upgrade 2 >/dev/null
	$(SUDO) bash deploy/debian/test-deb.sh dist/imagekit_$(VERSION)-1_$$(dpkg --print-architecture).deb \
		dist/upgrade/imagekit_$(VERSION)-2_$$(dpkg --print-architecture).deb "$(VERSION) ($(BUILD_COMMIT))"

# Reproducible builds: Package.resolved is committed, and this fails when resolving the package
# would change it (a dependency added or its requirement moved without the pins being updated).
# The pins are the revisions of the package copies this project builds from.
check-resolved:
	$(SWIFTPM) package resolve
	@git diff --quiet -- Package.resolved || { git --no-pager diff -- Package.resolved; \
		echo "check-resolved: Package.resolved is out of date: commit what 'swift package resolve' wrote" >&2; exit 1; }

# Style and structure, in seconds: `swift format lint` with the repository's .swift-format (line
# length 120; `make format` rewrites the files to it) and the layer rules (Tests/check-layers.py:
# each folder of Sources/ImageKit and of Sources/ImageKitServer names only the types of its own
# layer and the layers below it).
FORMAT_PATHS := Sources Tests Benchmarks/bench Benchmarks/NetBench Fuzz/Sources
lint:
	$(SWIFTPM) format lint --strict --recursive $(FORMAT_PATHS)
	python3 Tests/check-layers.py

format:
	$(SWIFTPM) format format --in-place --recursive $(FORMAT_PATHS)

# The DocC catalogs of both library modules (swift-docc-plugin), with no warnings, and every
# public declaration documented (Tests/check-docs.py over the symbol graphs DocC extracted).
# The archives land in .build-docs/plugins/Swift-DocC/outputs/.
docs: deps
	$(SWIFTPM) package --scratch-path .build-docs generate-documentation --target ImageKit --target ImageKitServer --warnings-as-errors
	python3 Tests/check-docs.py .build-docs ImageKit ImageKitServer

clean:
	rm -rf .build-docs .build .build-test .build-asan .build-tsan .build-no-traits .build-dist .build-formats dist Fuzz/.build-fuzz
