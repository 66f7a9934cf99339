#!/usr/bin/env bash
# bench/verify.sh: what continuous verification (SOAKD_<W>_VERIFY) costs
# over a long run, against PostgreSQL.
#
# 1. Memory: one long open-loop run (devops, SCALE hosts, RATE rows/s,
#    VERIFY of the acknowledged rows read back) while /metrics is scraped
#    every SAMPLE seconds. The Go heap in use swings with each GC cycle
#    (between the live heap and about twice it), so single samples or
#    one-minute averages move by 10-15 % with no growth at all: the
#    reference is the HEAP_WINDOW minutes after WARMUP, compared with the
#    last HEAP_WINDOW minutes of the run, by their mean and by their peak
#    (the per-minute figures are in heap-minutes.tsv). The goal is growth
#    <= 10 % of both (memory bounded whatever the run length). It also
#    checks that the run kept its rate (dropped, skipped) and that nothing
#    failed, then runs soakd verify on the whole run (VERIFY_AFTER=0 skips
#    it: it reads every row back, about 8 minutes for 60 M rows here).
# 2. Write rate: closed-loop runs (RATE=max) of COST_SECONDS with VERIFY=0
#    and with VERIFY, alternating, REPEAT times each; the median rows/s of
#    each and their ratio is the write rate verification costs (the reads
#    share the target and the 2 cores with the writes).
#
# Output: one key=value line per figure on stdout; progress on stderr;
# logs under $RUN/logs/<time>/.
#
# Env: DURATION=20m      the long run (e.g. DURATION=5m for a quick look)
#      RATE=50000        rows/s of the long run
#      VERIFY=0.01       fraction of acknowledged rows read back
#      SCALE=100         devops hosts
#      WARMUP=2m         start of the reference window
#      HEAP_WINDOW=5     minutes in the reference and in the last window
#      SAMPLE=5          seconds between scrapes
#      VERIFY_AFTER=1    run soakd verify on the long run (0 = skip)
#      HEAP_TSV=FILE     only analyse the heap samples of an earlier run
#                        (its heap.tsv) and exit
#      COST_SECONDS=60 REPEAT=3   the closed-loop comparison (REPEAT=0 skips it)
#      WORKERS=4 BATCH_SIZE=5000
#      SOAKD_BIN         soakd binary (default: go build ./cmd/soakd into $RUN)
#      PG_BIN            PostgreSQL bin dir (default: newest /usr/lib/postgresql/*/bin)
#      PG_PORT=55633     a PostgreSQL already answering on 127.0.0.1:PG_PORT (user
#                        postgres, trust auth) is used as is; otherwise one is
#                        initdb'ed under $RUN/pg and stopped at the end
#      RUN=/tmp/soakd-bench-verify   state, logs
set -uo pipefail
# shellcheck source=bench/pg-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/pg-lib.sh"

DURATION=${DURATION:-20m}
RATE=${RATE:-50000}
VERIFY=${VERIFY:-0.01}
SCALE=${SCALE:-100}
WARMUP=${WARMUP:-2m}
HEAP_WINDOW=${HEAP_WINDOW:-5}
VERIFY_AFTER=${VERIFY_AFTER:-1}
SAMPLE=${SAMPLE:-5}
COST_SECONDS=${COST_SECONDS:-60}
REPEAT=${REPEAT:-3}
WORKERS=${WORKERS:-4}
BATCH_SIZE=${BATCH_SIZE:-5000}
PG_PORT=${PG_PORT:-55633}
RUN=${RUN:-/tmp/soakd-bench-verify}
HTTP_PORT=${HTTP_PORT:-59480}

secs() { # a Go duration (2m, 90s, 1h) in seconds
	awk -v d="$1" 'BEGIN { n = d + 0; u = d; sub(/^[0-9.]+/, "", u);
		print (u == "h" ? n * 3600 : u == "m" ? n * 60 : n) }'
}

# heap_figures SAMPLES: the heap figures of a heap.tsv (see 1. above).
heap_figures() {
	awk -F'\t' -v warm="$(secs "$WARMUP")" -v win="$HEAP_WINDOW" -v per="$(dirname "$1")/heap-minutes.tsv" '
	NR > 1 && $1 >= warm && $2 != "" {
		m = int(($1 - warm) / 60); s[m] += $2; n[m]++; if (m > last) last = m
		if (!(m in lo) || $2 < lo[m]) lo[m] = $2; if ($2 > hi[m]) hi[m] = $2
	}
	function window(from, to,   m, k, sum, peak) {
		for (m = from; m <= to; m++) if (n[m]) { sum += s[m]; k += n[m]; if (hi[m] > peak) peak = hi[m] }
		wmean = k ? sum / k : 0; wpeak = peak
	}
	END {
		print "minute\tmean_mib\tmin_mib\tmax_mib" > per
		for (m = 0; m <= last; m++) if (n[m]) printf "%d\t%.1f\t%.1f\t%.1f\n", m, s[m] / n[m] / 1048576, lo[m] / 1048576, hi[m] / 1048576 > per
		# The last minute may be cut short by the end of the run: leave it out.
		if (n[last] < n[0] / 2) last--
		if (last + 1 < 2 * win) { print "figure=heap status=too_short minutes=" last + 1 " need=" 2 * win; exit }
		window(0, win - 1); rmean = wmean; rpeak = wpeak
		window(last - win + 1, last); lmean = wmean; lpeak = wpeak
		gm = (lmean / rmean - 1) * 100; gp = (lpeak / rpeak - 1) * 100
		printf "figure=heap window_minutes=%d first_mean_mib=%.1f last_mean_mib=%.1f mean_growth_pct=%.1f first_peak_mib=%.1f last_peak_mib=%.1f peak_growth_pct=%.1f minutes=%d goal=10 %s\n",
			win, rmean / 1048576, lmean / 1048576, gm, rpeak / 1048576, lpeak / 1048576, gp, last + 1,
			(gm <= 10 && gp <= 10 ? "check=ok" : "check=OVER")
	}' "$1"
}
if [ -n "${HEAP_TSV:-}" ]; then
	heap_figures "$HEAP_TSV"
	exit
fi

pg_find_bin
command -v curl >/dev/null || die "curl is needed to scrape /metrics"
LOGS=$RUN/logs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$LOGS"

build_soakd "$RUN"

# ---- PostgreSQL ------------------------------------------------------------
soakd_pid=
cleanup() {
	[ -n "$soakd_pid" ] && kill "$soakd_pid" 2>/dev/null
	pg_stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM
pg_ensure PostgreSQL "$PG_PORT" "$RUN/pg"
TARGET="postgres://postgres@127.0.0.1:$PG_PORT/verify?sslmode=disable"
reset() {
	"${PSQL[@]}" -c 'DROP DATABASE IF EXISTS verify' -c 'CHECKPOINT' -c 'CREATE DATABASE verify' postgres >/dev/null 2>&1 ||
		die "cannot reset database verify"
}

# The workload, as env for soakd; its data set starts at a fixed time so
# soakd verify can rebuild it from the summary.
workload() {
	echo SOAKD_WORKLOADS=cpu SOAKD_PROGRESS_INTERVAL=0 SOAKD_LOG_FORMAT=json \
		SOAKD_CPU_SOURCE=devops SOAKD_CPU_TARGET="$TARGET" SOAKD_CPU_SCALE="$SCALE" \
		SOAKD_CPU_START=2026-01-01T00:00:00Z SOAKD_CPU_WORKERS="$WORKERS" SOAKD_CPU_BATCH_SIZE="$BATCH_SIZE"
}

# metric TEXT NAME: the value of an unlabelled (or the first) series.
metric() { awk -v n="$2" '$1 == n || index($1, n "{") == 1 { print $2; exit }' <<<"$1"; }

echo "# soakd VERIFY $(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(hostname) nproc=$(nproc)" \
	"postgres=$("${PSQL[@]}" -Atc 'show server_version' postgres) source=devops scale=$SCALE" \
	"soakd=$("$SOAKD_BIN" version | awk '{print $2}') logs=$LOGS"

# ---- 1. memory over a long run --------------------------------------------
reset
dur=$(secs "$DURATION")
warm=$(secs "$WARMUP")
log "long run: $RATE rows/s for $DURATION with VERIFY=$VERIFY (heap sampled every ${SAMPLE}s)"
samples=$LOGS/heap.tsv
sum=$LOGS/long.json
# shellcheck disable=SC2046
env $(workload) SOAKD_LISTEN=127.0.0.1:$HTTP_PORT SOAKD_SUMMARY_JSON="$sum" SOAKD_CPU_RATE="$RATE" \
	SOAKD_CPU_DURATION="$DURATION" SOAKD_CPU_VERIFY="$VERIFY" "$SOAKD_BIN" run >"$LOGS/long.log" 2>&1 &
soakd_pid=$!
t0=$(date +%s)
printf 'seconds\theap_inuse_bytes\trss_bytes\trows\tchecked\tskipped\n' >"$samples"
while kill -0 "$soakd_pid" 2>/dev/null; do
	sleep "$SAMPLE"
	m=$(curl -fs "http://127.0.0.1:$HTTP_PORT/metrics") || continue
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' $(($(date +%s) - t0)) "$(metric "$m" go_memstats_heap_inuse_bytes)" \
		"$(metric "$m" process_resident_memory_bytes)" "$(metric "$m" soakd_rows_total)" \
		"$(metric "$m" soakd_verify_checked_total)" "$(metric "$m" soakd_verify_skipped_total)" >>"$samples"
done
wait "$soakd_pid"
code=$?
soakd_pid=
[ -s "$sum" ] || die "the long run wrote no summary (exit $code, $LOGS/long.log)"
field() { json_num "$sum" "$1"; }
echo "figure=long_run seconds=$(field seconds) rows=$(field units) rows_per_s=$(field units_per_second)" \
	"dropped=$(field dropped_units) failed=$(field failed_units) verify_checked=$(field checked)" \
	"verify_missing=$(field missing) verify_mismatch=$(field mismatch) verify_duplicate=$(field duplicate)" \
	"verify_skipped=$(field skipped) exit=$code"
heap_figures "$samples"
awk -F'\t' 'NR > 1 && $3 != "" { if ($3 > m) m = $3 } END { printf "figure=rss max_mib=%.1f\n", m / 1048576 }' "$samples"
if [ "$VERIFY_AFTER" = 1 ]; then
	log "soakd verify on the whole run"
	v0=$(date +%s)
	# shellcheck disable=SC2046
	env $(workload) SOAKD_LISTEN=off "$SOAKD_BIN" verify --summary-json "$sum" --verify-json "$LOGS/verify.json" >"$LOGS/verify.log" 2>&1
	vcode=$?
	verify_secs=$(($(date +%s) - v0))
	jv() { json_num "$LOGS/verify.json" "$1"; }
	echo "figure=verify_after exit=$vcode seconds=$verify_secs acknowledged=$(jv acknowledged) stored=$(jv stored) lost=$(jv lost)" \
		"duplicated=$(jv duplicated) mismatched=$(jv mismatched) in_doubt=$(jv in_doubt)"
fi

# ---- 2. write rate with and without VERIFY ---------------------------------
closed() { # VERIFY -> rows/s of a closed-loop run
	local v=$1 js=$LOGS/closed-$1-$2.json
	reset
	# shellcheck disable=SC2046
	env $(workload) SOAKD_LISTEN=off SOAKD_SUMMARY_JSON="$js" SOAKD_CPU_RATE=max SOAKD_CPU_DURATION="${COST_SECONDS}s" \
		SOAKD_CPU_VERIFY="$v" "$SOAKD_BIN" run >"$LOGS/closed-$v-$2.log" 2>&1
	json_num "$js" units_per_second
}
off=() on=()
for ((i = 1; i <= REPEAT; i++)); do
	for v in $( ((i % 2)) && echo "0 $VERIFY" || echo "$VERIFY 0"); do
		log "closed loop $i/$REPEAT: VERIFY=$v"
		r=$(closed "$v" "$i")
		echo "figure=closed_loop verify=$v run=$i rows_per_s=${r:-failed}"
		[ -n "$r" ] || continue
		if [ "$v" = 0 ]; then off+=("$r"); else on+=("$r"); fi
	done
done
if [ ${#off[@]} -gt 0 ] && [ ${#on[@]} -gt 0 ]; then
	a=$(printf '%s\n' "${off[@]}" | median)
	b=$(printf '%s\n' "${on[@]}" | median)
	awk -v a="$a" -v b="$b" -v v="$VERIFY" 'BEGIN {
		printf "figure=write_rate_cost verify=%s rows_per_s_off=%.0f rows_per_s_on=%.0f ratio=%.3f cost_pct=%.1f\n", v, a, b, b / a, (1 - b / a) * 100 }'
fi
