#!/usr/bin/env bash
# A long soak of soakd itself: TestSoakStability (cmd/soakd) for DURATION
# (default 4h) against a real PostgreSQL and redis-server, with the rate
# changed through /control every 5 s, every connection killed by the
# servers every 15 s, redis-server restarted once and PostgreSQL's tables
# truncated every 10 minutes (which bounds its disk). It fails when the
# Go heap, goroutines, open files or target connections grow after the
# first quarter, and leaves the samples (soak.csv) and charts
# (soak-memory.svg/.png, soak-counts.svg/.png, soak-cpu.svg/.png: CPU per
# unit scheduled each minute) in OUT (default soak-out). soak.csv is
# written as the samples are taken, so a soak stopped before its end
# leaves what it measured: CSV=soak-out/soak.csv scripts/soak.sh draws
# its charts (into OUT, default the file's directory) and logs its figures,
# the second hour against the last for a run of 2.5 hours or more.
set -euo pipefail
# CSV and OUT name paths from where the script is started.
csv=
[ -n "${CSV:-}" ] && csv=$(realpath "$CSV")
out=$(realpath -m "${OUT:-soak-out}")
[ -n "$csv" ] && [ -z "${OUT:-}" ] && out=$(dirname "$csv")
cd "$(dirname "$0")/.."
case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) PATH=/usr/local/go/bin:$PATH ;; esac
if [ -n "$csv" ]; then
	SOAKD_SOAK_CSV=$csv SOAKD_SOAK_OUT=$out exec go test -count=1 -run '^TestSoakCharts$' -v ./cmd/soakd
fi
duration=${DURATION:-4h}
scripts/install-test-deps.sh
SOAKD_REQUIRE_SERVERS=1 SOAKD_SOAK_DURATION=$duration SOAKD_SOAK_OUT=$out \
	go test -count=1 -run '^TestSoakStability$' -timeout 0 -v ./cmd/soakd
