#!/usr/bin/env bash
# soakd against go-ycsb (v1.0.3, /opt/peers/bin) on the same redis-server:
# YCSB workloads A and C, 100000 records of 10 x 100-byte fields stored as
# hashes, uniform keys, THREADS (16) threads = soakd workers = connections,
# RUNS (3) rounds, each tool right after the other.
#
#   PEERS_RUN=/tmp/soakd-peers-kv REDIS_PORT=56779 bench/ycsb.sh
#
# Both tools use the same keys: go-ycsb's redis binding names a record
# "usertable/user<hash>", which is soakd's KEY_PREFIX=usertable/ scheme, so
# go-ycsb loads once and soakd's LOAD=auto probe finds the records.
# soakd runs closed loop (RATE=max) with PIPELINE=1 (like go-ycsb, one
# operation per round trip) and with PIPELINE=16 (soakd's batching over
# the same connections).
#
# Env: RUNS=3, THREADS=16, OPS=1000000 (go-ycsb operations per run),
#      SECS=20 (soakd run length), SOAKD_BIN.
set -uo pipefail
# shellcheck source=bench/kv-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/kv-lib.sh"

THREADS=${THREADS:-16}
OPS=${OPS:-1000000}
SECS=${SECS:-20}
RECORDS=100000

YCSB=$(peer_bin go-ycsb) || die "no go-ycsb (run $PEERS_DIR/install.sh ycsb)"
command -v jq >/dev/null || die "no jq"
SOAKD=$(build_soakd)
ensure_redis
trap stop_redis EXIT
echo "# soakd vs go-ycsb $(date -u +%Y-%m-%dT%H:%M:%SZ) nproc=$(nproc) go-ycsb=$(go version -m "$YCSB" | awk '$1 == "mod" { print $3; exit }') port=$REDIS_PORT threads=$THREADS runs=$RUNS logs=$OUT"

# go-ycsb v1.0.3's workloads/workload{a,c} (bench-peers.sh uses the same).
props=$OUT/props
mkdir -p "$props"
printf '%s\n' workload=core readallfields=true readproportion=0.5 updateproportion=0.5 \
	scanproportion=0 insertproportion=0 requestdistribution=uniform >"$props/workloada"
printf '%s\n' workload=core readallfields=true readproportion=1 updateproportion=0 \
	scanproportion=0 insertproportion=0 requestdistribution=uniform >"$props/workloadc"
common=(-p recordcount=$RECORDS -p "redis.addr=127.0.0.1:$REDIS_PORT" -p redis.datatype=hash)

rcli flushall >/dev/null
"$YCSB" load redis -P "$props/workloada" "${common[@]}" -p threadcount=16 >"$OUT/ycsb-load.log" 2>&1 ||
	die "go-ycsb load failed, see $OUT/ycsb-load.log"
n=$(rcli dbsize)
[ "$n" = $RECORDS ] || die "go-ycsb loaded $n records, want $RECORDS"

# ycsb_figure LOG OP: "TOTAL-ops_per_s OP-p99_ms" from the final summary.
ycsb_figure() {
	awk -v op="$2" '
	/^Run finished, takes/ { done = 1; next }
	done && $1 == "TOTAL" { for (i = 1; i <= NF; i++) if ($i == "OPS:") { t = $(i + 1); sub(/,$/, "", t) } }
	done && $1 == op { for (i = 1; i <= NF; i++) if ($i == "99th(us):") { p = $(i + 1); sub(/,$/, "", p) } }
	END { printf "%d %.3f\n", t, p / 1000 }' "$1"
}

# The server's share of a core during each run: a client that needs
# less CPU leaves the server more of the 2 cores they share, and once the
# server takes a whole core (redis-server runs commands on one thread) no
# client can drive it faster.
RPID=$(redis_pid)
[ -n "$RPID" ] || die "no redis-server process_id in INFO"

declare -A res
for ((r = 1; r <= RUNS; r++)); do
	for wl in a c; do
		log=$OUT/ycsb-$wl-$r.log
		t0=$(pid_ticks "$RPID") n0=$(date +%s%N)
		timeout "${BENCH_TIMEOUT:-300}" "$YCSB" run redis -P "$props/workload$wl" "${common[@]}" \
			-p operationcount="$OPS" -p threadcount="$THREADS" >"$log" 2>&1 || log "go-ycsb $wl run $r failed, see $log"
		srv=$(core_share "$t0" "$(pid_ticks "$RPID")" "$n0" "$(date +%s%N)")
		read -r ops p99 < <(ycsb_figure "$log" READ)
		echo "figure=ycsb_$wl tool=go-ycsb run=$r threads=$THREADS ops_per_s=$ops read_p99_ms=$p99 server_core=$srv"
		res[ycsb,$wl,$r]="$ops $p99 $srv"
		for p in 1 16; do
			log=$OUT/soakd-$wl-P$p-$r.log
			sum=$OUT/soakd-$wl-P$p-$r.json
			t0=$(pid_ticks "$RPID") n0=$(date +%s%N)
			soakd_run "$log" "$sum" SOAKD_KV_TARGET="redis://127.0.0.1:$REDIS_PORT?index=false" \
				SOAKD_KV_RATE=max SOAKD_KV_WORKERS="$THREADS" SOAKD_KV_PIPELINE=$p SOAKD_KV_DURATION=${SECS}s \
				SOAKD_KV_WORKLOAD=$wl SOAKD_KV_DISTRIBUTION=uniform SOAKD_KV_RECORDS=$RECORDS \
				SOAKD_KV_DATA_TYPE=hash SOAKD_KV_FIELDS=10 SOAKD_KV_FIELD_LENGTH=100 \
				SOAKD_KV_KEY_PREFIX=usertable/ SOAKD_KV_LOAD=auto ||
				log "soakd $wl P$p run $r failed (exit $?), see $log"
			# Over the process's wall time, as go-ycsb's: start-up and the
			# load probe included, so a little under the run's own.
			srv=$(core_share "$t0" "$(pid_ticks "$RPID")" "$n0" "$(date +%s%N)")
			total=$(jq -r '.workloads[] | select(.phase == "run") | (.units / .seconds | floor)' "$sum" 2>/dev/null || echo 0)
			read -r _ _ rp99 < <(soakd_figure "$sum" read 2>/dev/null || echo "0 0 0")
			echo "figure=ycsb_$wl tool=soakd run=$r workers=$THREADS pipeline=$p ops_per_s=$total read_p99_ms=$rp99 server_core=$srv"
			res[soakd$p,$wl,$r]="$total $rp99 $srv"
		done
	done
done
n=$(rcli dbsize)
[ "$n" = $RECORDS ] || log "warning: $n keys after the runs, want $RECORDS (a run inserted or lost records)"

echo
echo "| workload | go-ycsb ops/s | soakd P1 ops/s | ratio (each run's: min / median / max) | soakd P16 ops/s | ratio | go-ycsb read p99 ms | soakd P1 read p99 ms | soakd P16 read p99 ms | redis-server's share of a core: go-ycsb, soakd P1, P16 |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for wl in a c; do
	# field N of res[KEY,wl,run] for each run, a line each
	runs() { for ((r = 1; r <= RUNS; r++)); do echo "${res[$1,$wl,$r]}" | awk -v f="$2" '{ print $f }'; done; }
	pairs() { for ((r = 1; r <= RUNS; r++)); do ratio "$(echo "${res[$1,$wl,$r]}" | awk '{ print $1 }')" "$(echo "${res[ycsb,$wl,$r]}" | awk '{ print $1 }')"; echo; done; }
	y=$(runs ycsb 1 | median) s1=$(runs soakd1 1 | median) s16=$(runs soakd16 1 | median)
	echo "| ${wl^^} ($THREADS threads) | $y | $s1 | $(ratio "$s1" "$y") ($(pairs soakd1 | spread)) | $s16 | $(ratio "$s16" "$y") ($(pairs soakd16 | spread)) |" \
		"$(runs ycsb 2 | median) | $(runs soakd1 2 | median) | $(runs soakd16 2 | median) | $(runs ycsb 3 | median), $(runs soakd1 3 | median), $(runs soakd16 3 | median) |"
done
