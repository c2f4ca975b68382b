# ImageKit — build, test and benchmark. `make bench` and `make test` work on a fresh Debian 12
# machine that has only Swift: `deps` installs the C libraries when pkg-config cannot find them.

SWIFT ?= swift
DEB_PACKAGES := pkg-config libcurl4-openssl-dev libturbojpeg0-dev libpng-dev libgif-dev libwebp-dev
PKG_MODULES := libcurl libturbojpeg libpng libgif libwebp libwebpdemux libwebpmux
# apt-get needs root; use sudo when not root and sudo exists.
SUDO := $(shell [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && echo sudo)
BENCH_ARGS ?=

.PHONY: all deps build release test test-asan test-tsan bench clean

all: build

deps:
	@if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists $(PKG_MODULES); then \
		echo "deps: $(PKG_MODULES) found"; \
	else \
		echo "deps: installing $(DEB_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(DEB_PACKAGES); \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Tests run optimised (-c release, with @testable imports enabled): the codec and resampler
# loops are 50-100x slower unoptimised, which would make the corpus sweeps take many minutes.
TEST_FLAGS := -c release -Xswiftc -enable-testing --scratch-path .build-test

test: deps
	$(SWIFT) test $(TEST_FLAGS)

# Codec tests under AddressSanitizer (the C boundary), concurrency tests under ThreadSanitizer.
test-asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/.lsan-suppressions $(SWIFT) test -c release -Xswiftc -enable-testing --sanitize=address --scratch-path .build-asan

test-tsan: deps
	$(SWIFT) test -c release -Xswiftc -enable-testing --sanitize=thread --scratch-path .build-tsan

bench: deps
	$(SWIFT) build -c release --product bench
	$(SWIFT) run -c release --skip-build bench $(BENCH_ARGS)

clean:
	rm -rf .build .build-test .build-asan .build-tsan
