# Convenience targets; the README's two commands need nothing but Go.
GO ?= go

.PHONY: build run test test-short lint bench fuzz clean

build:
	$(GO) build -o soakd ./cmd/soakd

run:
	$(GO) run ./cmd/soakd --duration 1m

# The whole suite, exactly as CI runs it (installs servers when missing).
test:
	./scripts/test.sh

# The suite minus what -short skips: the two 10 s real-time rate checks, the
# two scrapes by a real Prometheus, sinks/influx's two influxd restart tests
# and the Dockerfile's build command.
# The other integration tests still start their real servers.
test-short:
	$(GO) test -short ./...

# go.mod must be what `go mod tidy` makes of it (direct dependencies not
# marked indirect, nothing missing or unused).
lint:
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }

bench:
	$(GO) test -run XXX -bench . -benchmem ./...

# Each fuzz target for FUZZTIME (Go runs one target per invocation).
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list 'Fuzz.*' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; $(GO) test -run XXX -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

clean:
	rm -f soakd
