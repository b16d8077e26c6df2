# syscell's build. `make demo` and `make test` are the two commands a
# newcomer needs; both install missing system packages first (make deps).

GO ?= go
BIN := bin/syscell
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
# The whole suite takes a few minutes on two cores; the limit only stops a
# hung test.
TEST_TIMEOUT ?= 20m

.PHONY: build heapguard audit test vet fmt-check deps demo clean

# syscell and the shim of whole-process runs (a C program) are linked
# statically: they start without the dynamic loader, libc and cgo's
# threads, a millisecond sooner (docs/PERFORMANCE.md, Programs). The
# payload of syscell bench mech's supervised mechanisms needs the audit
# library and libc's syscall(): it is the one dynamic binary.
build: heapguard audit
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN).link ./cmd/syscell
	@# Copied, not kept as linked: the linker writes its output through a
	@# mapping, which leaves the file's cached pages small, and such a
	@# binary starts 0.4-0.6 ms slower until they are read again from disk
	@# (docs/PERFORMANCE.md, Programs, seventh pass).
	cp $(BIN).link $(BIN).new && mv $(BIN).new $(BIN) && rm $(BIN).link
	@# Next to the binary, where syscell run and syscell bench mech look
	@# for them (ARCHITECTURE.md, enforce and bench/mech).
	run/enforce/shim/build.sh bin/syscell-shim
	$(GO) build -trimpath -ldflags=-linkmode=external -o bin/syscell-payload ./cmd/syscell-payload
	@# The OCI runtime is the binary under this name (docs/CONTAINERS.md).
	ln -sf syscell bin/syscell-runtime

# The use-after-free guard (heapguard/README.md), next to the binary, where
# `syscell run --heap-guard` looks for it.
heapguard:
	@mkdir -p bin
	heapguard/build.sh bin/libsyscell-heapguard.so

# The LD_AUDIT library of per-library compartments (ARCHITECTURE.md,
# audit), next to the binary, where `syscell run` looks for it.
audit:
	@mkdir -p bin
	audit/build.sh bin/libsyscell-audit.so

# The whole test suite: vet, formatting, and every package's tests, the
# command line's testscript scripts (cmd/syscell/testdata) among them.
test: deps vet fmt-check
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

vet:
	$(GO) vet ./...

fmt-check:
	@files=$$(gofmt -l .); \
	if [ -n "$$files" ]; then echo "gofmt would change:" $$files; exit 1; fi

deps:
	@scripts/install-deps.sh

demo: deps build
	scripts/demo.sh $(BIN)

clean:
	rm -rf bin
