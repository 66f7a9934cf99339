#!/usr/bin/env bash
# soakd's whole test suite, the README's test command: installs what the
# integration tests need when missing (scripts/install-test-deps.sh), then
# go vet, staticcheck and every test (unit, integration against real
# servers, fuzz seed corpora), every fuzz target for a few seconds
# (scripts/fuzz.sh; skipped when arguments narrow the run), then the suite again with -short under the
# race detector. A test whose server or tool is not found skips, unless
# SOAKD_REQUIRE_SERVERS=1 (which CI's .ci/run exports) makes it fail.
# Extra arguments go to `go test` (e.g. -run TestX, -v).
set -euo pipefail
cd "$(dirname "$0")/.."
case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) PATH=/usr/local/go/bin:$PATH ;; esac
PATH=$(go env GOPATH)/bin:$PATH
export PATH

scripts/install-test-deps.sh
echo "== go vet" >&2
go vet ./...
echo "== staticcheck" >&2
go tool staticcheck ./...
echo "== go test" >&2
go test -count=1 -timeout 60m "$@" ./...
if [ $# -eq 0 ]; then
	echo "== fuzz" >&2
	scripts/fuzz.sh
fi
# Again under the race detector, with -short, which skips seven tests: the
# two real-time rate checks (the detector's overhead would distort their
# timing), the two scrapes by a real Prometheus, sinks/influx's two tests
# that restart influxd and the Dockerfile's build command. Every other test
# runs again, integration tests included.
echo "== go test -race -short" >&2
go test -race -short -count=1 -timeout 60m "$@" ./...
