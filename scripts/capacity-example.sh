#!/usr/bin/env bash
# Draws README's capacity chart: soakd capacity against null://, a
# modelled server that handles 50,000 units/s (beyond that requests queue),
# judged against a 50 ms response p99. Writes docs/capacity.{md,csv,json}
# and docs/capacity-rate.{svg,png}, docs/capacity-latency.{svg,png}.
# About 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) PATH=/usr/local/go/bin:$PATH ;; esac
go build -o /tmp/soakd-capacity-example ./cmd/soakd
env -i PATH="$PATH" HOME="${HOME:-/root}" SOAKD_LISTEN=off SOAKD_PROGRESS_INTERVAL=0 \
	SOAKD_WORKLOADS=seq SOAKD_SEQ_TARGET='null://?capacity=50000' SOAKD_SEQ_BATCH_SIZE=50 SOAKD_SEQ_WORKERS=8 \
	SOAKD_CAPACITY_START=10000 SOAKD_CAPACITY_STEP=x1.5 SOAKD_CAPACITY_WARMUP=3s SOAKD_CAPACITY_SETTLE=2s \
	SOAKD_CAPACITY_HOLD=8s SOAKD_CAPACITY_SLO_P99=50ms SOAKD_CAPACITY_REFINE=3 SOAKD_CAPACITY_OUT=docs/capacity \
	/tmp/soakd-capacity-example capacity
