#!/usr/bin/env bash
# soakd against redis-benchmark, side by side on the same redis-server:
# SET and GET of 100-byte values, 50 connections, pipeline 1 and 16,
# RUNS (3) rounds, each tool right after the other; prints one key=value
# line per measurement and a table of medians with ratios.
#
#   PEERS_RUN=/tmp/soakd-peers-kv REDIS_PORT=56779 bench/redis.sh
#
# Env: RUNS=3, N=1000000 (redis-benchmark requests per test),
#      SECS=10 (soakd run length), KEYS=100000 (key space of both),
#      SOAKD_BIN (default: built from this checkout).
# soakd runs closed loop (RATE=max), WORKERS=50, PIPELINE=P; keys
# KEY_PREFIX + user + hash, one 100-byte field stored as a string
# (DATA_TYPE=string FIELDS=1 FIELD_LENGTH=100 WRITE_ALL_FIELDS=true), so a
# SET is "SET key <100 bytes>" and a GET "GET key" like redis-benchmark's.
set -uo pipefail
# shellcheck source=bench/kv-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/kv-lib.sh"

N=${N:-1000000}
SECS=${SECS:-10}
KEYS=${KEYS:-100000}

RB=$(peer_bin redis-benchmark) || die "no redis-benchmark (apt-get install redis-tools)"
command -v jq >/dev/null || die "no jq"
SOAKD=$(build_soakd)
ensure_redis
trap stop_redis EXIT
echo "# soakd vs redis-benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ) nproc=$(nproc) redis=$("$(peer_bin redis-server)" --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') port=$REDIS_PORT runs=$RUNS logs=$OUT"

declare -A res
for ((r = 1; r <= RUNS; r++)); do
	for p in 1 16; do
		for op in set get; do
			# redis-benchmark (its GET reads the keys its SET wrote: same key space, 100 B values)
			log=$OUT/rb-$op-P$p-$r.csv
			timeout "${BENCH_TIMEOUT:-300}" "$RB" -h 127.0.0.1 -p "$REDIS_PORT" -c 50 -P $p -d 100 \
				-r "$KEYS" -n "$N" -t $op --csv >"$log" 2>&1
			read -r rps p50 p99 < <(tr -d '"' <"$log" | awk -F, -v t="${op^^}" '$1 == t { print int($2), $5, $7 }')
			echo "figure=redis_${op}_P$p tool=redis-benchmark run=$r clients=50 pipeline=$p value_bytes=100 ops_per_s=${rps:-0} p50_ms=${p50:-} p99_ms=${p99:-}"
			res[rb,$op,$p,$r]="${rps:-0} ${p99:-0}"

			# soakd, the same shape
			if [ $op = set ]; then wl=update=1; else wl=read=1; fi
			log=$OUT/soakd-$op-P$p-$r.log
			sum=$OUT/soakd-$op-P$p-$r.json
			soakd_run "$log" "$sum" SOAKD_KV_TARGET="redis://127.0.0.1:$REDIS_PORT?index=false" \
				SOAKD_KV_RATE=max SOAKD_KV_WORKERS=50 SOAKD_KV_PIPELINE=$p SOAKD_KV_DURATION=${SECS}s \
				SOAKD_KV_WORKLOAD=$wl SOAKD_KV_DISTRIBUTION=uniform SOAKD_KV_RECORDS="$KEYS" \
				SOAKD_KV_DATA_TYPE=string SOAKD_KV_FIELDS=1 SOAKD_KV_FIELD_LENGTH=100 SOAKD_KV_WRITE_ALL_FIELDS=true \
				SOAKD_KV_KEY_PREFIX=rb: SOAKD_KV_LOAD=auto ||
				log "soakd $op P$p run $r failed (exit $?), see $log"
			if [ $op = set ]; then kop=update; else kop=read; fi
			read -r ops sp50 sp99 < <(soakd_figure "$sum" $kop 2>/dev/null || echo "0 0 0")
			echo "figure=redis_${op}_P$p tool=soakd run=$r workers=50 pipeline=$p value_bytes=100 ops_per_s=$ops p50_ms=$sp50 p99_ms=$sp99"
			res[soakd,$op,$p,$r]="$ops $sp99"
		done
	done
done

echo
echo "| test | redis-benchmark ops/s | soakd ops/s | soakd / redis-benchmark (each run's: min / median / max) | target | redis-benchmark p99 ms | soakd p99 ms |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for p in 1 16; do
	for op in set get; do
		rb=$(for ((r = 1; r <= RUNS; r++)); do echo "${res[rb,$op,$p,$r]% *}"; done | median)
		sk=$(for ((r = 1; r <= RUNS; r++)); do echo "${res[soakd,$op,$p,$r]% *}"; done | median)
		rb99=$(for ((r = 1; r <= RUNS; r++)); do echo "${res[rb,$op,$p,$r]#* }"; done | median)
		sk99=$(for ((r = 1; r <= RUNS; r++)); do echo "${res[soakd,$op,$p,$r]#* }"; done | median)
		# at pipeline 1 at least as fast; pipelined, where both spend
		# most of the shared CPU in the server, within 5 %
		target=1.0
		[ "$p" = 16 ] && target=0.95
		each=$(for ((r = 1; r <= RUNS; r++)); do ratio "${res[soakd,$op,$p,$r]% *}" "${res[rb,$op,$p,$r]% *}"; echo; done | spread)
		echo "| ${op^^} -c 50 -P $p -d 100 | $rb | $sk | $(ratio "$sk" "$rb") ($each) | >= $target | $rb99 | $sk99 |"
	done
done
