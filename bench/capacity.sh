#!/usr/bin/env bash
# soakd capacity against the bench redis-server, RUNS (2) times in a row:
# prints each knee and how far apart they are (the search should repeat
# within ±15 % on one machine). Workload C (reads), 8 workers, no
# pipelining, SLO p99 20 ms (CAPACITY_RUNS sets the runs).
#
#   PEERS_RUN=/tmp/soakd-peers-kv REDIS_PORT=56779 bench/capacity.sh
set -uo pipefail
# shellcheck source=bench/kv-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/kv-lib.sh"
RUNS=${CAPACITY_RUNS:-2}
SOAKD=$(build_soakd)
ensure_redis
trap stop_redis EXIT
knees=()
for ((r = 1; r <= RUNS; r++)); do
	out=$OUT/capacity-$r
	env -i PATH="$PATH" HOME="${HOME:-/root}" SOAKD_LISTEN=off SOAKD_PROGRESS_INTERVAL=0 SOAKD_WORKLOADS=kv \
		SOAKD_KV_TARGET="redis://127.0.0.1:$REDIS_PORT" SOAKD_KV_WORKLOAD=c SOAKD_KV_RECORDS=100000 SOAKD_KV_WORKERS=8 \
		SOAKD_KV_KEY_PREFIX=cap: SOAKD_CAPACITY_START=5000 SOAKD_CAPACITY_STEP=x1.5 SOAKD_CAPACITY_WARMUP=5s \
		SOAKD_CAPACITY_SETTLE=3s SOAKD_CAPACITY_HOLD=10s SOAKD_CAPACITY_SLO_P99=20ms SOAKD_CAPACITY_REFINE=3 \
		SOAKD_CAPACITY_OUT="$out" "$SOAKD" capacity >"$out.log" 2>&1 || log "run $r exited $?, see $out.log"
	k=$(jq -r '.knee_rate' "$out.json" 2>/dev/null || echo 0)
	echo "figure=capacity_knee run=$r knee_ops_per_s=$k report=$out.md"
	knees+=("$k")
done
awk -v a="${knees[0]}" -v b="${knees[${#knees[@]}-1]}" 'BEGIN { if (a > 0) printf "knees %s and %s: %+.1f %%\n", a, b, 100 * (b - a) / a }'
