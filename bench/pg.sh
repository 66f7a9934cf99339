#!/usr/bin/env bash
# bench/pg.sh: soakd against tsbs_load_timescaledb, side by side in one run,
# into the same plain PostgreSQL (no TimescaleDB, hypertables off), with the
# same data set (TSBS cpu-only: 100 hosts, one day at 10 s = 864,000 rows of
# 10 metrics, seed 123, bounded by the workload's START and END), the same
# workers and batch size.
#
# For each tool it reports rows/s (the tool's own figure: TSBS's "mean rate",
# soakd's summary units_per_second; and rows / process wall time for both)
# and the tool's own CPU seconds per million rows (user+sys of the loader
# process), checks the row count in the database after
# every load, and prints the ratios soakd/TSBS with the goals:
#   rows/s ratio >= 1   and   CPU-per-row ratio <= 0.5
# Output: one key=value line per figure on stdout (as bench-peers.sh);
# progress on stderr; tool logs under $RUN/logs/<time>/.
#
# The main comparison (workers 2, batch 10,000) runs REPEAT times with the
# tools alternating which goes first, and reports medians. Then the GRID of
# workers x batch-size cells runs once per tool each.
#
# Env: REPEAT=3              runs of the main comparison
#      GRID="1x10000 2x1000 2x5000 2x20000 4x10000"   extra cells (W x B); GRID= to skip
#      SOAKD_BIN             soakd binary (default: go build ./cmd/soakd into $RUN)
#      PEERS_BIN=/opt/peers/bin   tsbs_generate_data, tsbs_load_timescaledb
#      PG_BIN                PostgreSQL bin dir (default: newest /usr/lib/postgresql/*/bin)
#      PG_PORT=55632         a PostgreSQL already answering on 127.0.0.1:PG_PORT
#                            (user postgres, trust auth) is used as is; otherwise
#                            one is initdb'ed under $RUN/pg and stopped at the end
#      RUN=/tmp/soakd-bench-pg   state, data, logs
#      BENCH_TIMEOUT=300     seconds per load before it is killed
set -uo pipefail
# shellcheck source=bench/pg-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/pg-lib.sh"

REPEAT=${REPEAT:-3}
GRID=${GRID-1x10000 2x1000 2x5000 2x20000 4x10000}
PEERS_BIN=${PEERS_BIN:-/opt/peers/bin}
PG_PORT=${PG_PORT:-55632}
RUN=${RUN:-/tmp/soakd-bench-pg}
T=${BENCH_TIMEOUT:-300}

pg_find_bin
GEN=$PEERS_BIN/tsbs_generate_data
LOAD=$PEERS_BIN/tsbs_load_timescaledb
[ -x "$GEN" ] && [ -x "$LOAD" ] || die "no TSBS in $PEERS_BIN (run the peers' install.sh tsbs)"
command -v python3 >/dev/null || die "python3 is needed for CPU figures"

LOGS=$RUN/logs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$RUN/data" "$LOGS"

# ---- soakd -----------------------------------------------------------------
build_soakd "$RUN"

# The same settings as the loads below, checked before anything runs: the
# binary must know the devops source and the postgres sink.
if ! out=$(env SOAKD_WORKLOADS=w SOAKD_LISTEN=off SOAKD_W_SOURCE=devops SOAKD_W_RATE=max \
	SOAKD_W_TARGET="postgres://postgres@127.0.0.1:$PG_PORT/soakd?sslmode=disable" \
	SOAKD_W_START=2016-01-01T00:00:00Z SOAKD_W_END=2016-01-02T00:00:00Z "$SOAKD_BIN" config --check 2>&1); then
	die "$SOAKD_BIN cannot run the benchmark's workload (does it register the devops source and the postgres sink?): $out"
fi

# ---- PostgreSQL ------------------------------------------------------------
# Default settings, as bench-peers.sh.
trap pg_stop EXIT
trap 'exit 130' INT TERM
pg_ensure PostgreSQL "$PG_PORT" "$RUN/pg"
PG_VERSION=$("${PSQL[@]}" -Atc 'show server_version' postgres)

# ---- data set --------------------------------------------------------------
cpu_only_data "$GEN"

# reset: both tools' databases dropped, a checkpoint, so every load starts
# from the same server state.
reset() {
	"${PSQL[@]}" -c 'DROP DATABASE IF EXISTS benchmark' -c 'DROP DATABASE IF EXISTS soakd' \
		-c 'CHECKPOINT' postgres 2>/dev/null
}

# run_tsbs W B TAG: prints "rows_per_s wall_rows_per_s cpu_s rows_in_db".
run_tsbs() {
	local w=$1 b=$2 tag=$3 out=$LOGS/tsbs-$3.log tf=$LOGS/tsbs-$3.time rps n
	reset
	timed "$tf" timeout "$T" "$LOAD" --host=127.0.0.1 --port="$PG_PORT" --user=postgres --pass= \
		--admin-db-name=postgres --db-name=benchmark --use-hypertable=false \
		--workers="$w" --batch-size="$b" --file="$DATA" >"$out" 2>&1 || { echo "failed"; return; }
	rps=$(awk '$1 == "loaded" && $3 == "rows" { v = $11; sub(/^\(/, "", v); print v }' "$out" | tail -n1)
	n=$(count_rows benchmark)
	echo "$(calc "${rps:-0}") $(calc "$ROWS / $(wall_secs "$tf")") $(cpu_secs "$tf") $n"
}

# run_soakd W B TAG: same output as run_tsbs.
run_soakd() {
	local w=$1 b=$2 tag=$3 out=$LOGS/soakd-$3.log tf=$LOGS/soakd-$3.time js=$LOGS/soakd-$3.json rps n units
	reset
	"${PSQL[@]}" -c 'CREATE DATABASE soakd' postgres || { echo "failed"; return; }
	soakd_loads "$tf" "$out" "$js" "postgres://postgres@127.0.0.1:$PG_PORT/soakd?sslmode=disable" "$w" "$b" ||
		{ echo "failed"; return; }
	units=$(json_num "$js" units)
	rps=$(json_num "$js" units_per_second)
	n=$(count_rows soakd)
	[ "$units" = "$n" ] || log "soakd $tag: summary says $units rows acknowledged, the table holds $n"
	echo "$(calc "${rps:-0}") $(calc "$ROWS / $(wall_secs "$tf")") $(cpu_secs "$tf") $n"
}

# figure TOOL W B RUN RESULT
figure() {
	local r=($5)
	if [ "${r[0]}" = failed ]; then
		echo "figure=load tool=$1 workers=$2 batch=$3 run=$4 status=failed logs=$LOGS"
		return
	fi
	echo "figure=load tool=$1 workers=$2 batch=$3 run=$4 rows=$ROWS rows_per_s=${r[0]} wall_rows_per_s=${r[1]}" \
		"cpu_s=${r[2]} cpu_s_per_mrows=$(calc3 "${r[2]} * 1000000 / $ROWS") rows_in_db=${r[3]}" \
		"$([ "${r[3]}" = "$ROWS" ] && echo check=ok || echo check=MISMATCH)"
}

echo "# soakd vs tsbs_load_timescaledb $(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(hostname) nproc=$(nproc)" \
	"postgres=$PG_VERSION data=cpu-only scale=$SCALE 1d@10s rows=$ROWS soakd=$("$SOAKD_BIN" version | awk '{print $2}')" \
	"tsbs=$(go version -m "$LOAD" 2>/dev/null | awk '$1 == "mod" { print $3; exit }') logs=$LOGS"

# ---- main comparison: 2 workers, 10,000 rows per batch -----------------------
declare -a s_rps s_cpu t_rps t_cpu
declare -A run_rps run_cpu # "tool i": that run's rows/s and CPU seconds
for ((i = 1; i <= REPEAT; i++)); do
	for tool in $( ((i % 2)) && echo "soakd tsbs" || echo "tsbs soakd"); do
		log "main run $i/$REPEAT: $tool"
		res=$("run_$tool" 2 10000 "main-$i")
		figure "$tool" 2 10000 "$i" "$res"
		r=($res)
		[ "${r[0]}" = failed ] || [ "${r[3]}" != "$ROWS" ] && continue
		run_rps[$tool $i]=${r[0]} run_cpu[$tool $i]=${r[2]}
		if [ "$tool" = soakd ]; then
			s_rps+=("${r[0]}")
			s_cpu+=("${r[2]}")
		else
			t_rps+=("${r[0]}")
			t_cpu+=("${r[2]}")
		fi
	done
done
if [ ${#s_rps[@]} -gt 0 ] && [ ${#t_rps[@]} -gt 0 ]; then
	sr=$(printf '%s\n' "${s_rps[@]}" | median)
	tr=$(printf '%s\n' "${t_rps[@]}" | median)
	sc=$(printf '%s\n' "${s_cpu[@]}" | median)
	tc=$(printf '%s\n' "${t_cpu[@]}" | median)
	echo "figure=compare workers=2 batch=10000 runs=${#s_rps[@]}/${#t_rps[@]} $(load_ratios "$sr" "$tr" "$sc" "$tc" 0.5)"
else
	echo "figure=compare status=failed logs=$LOGS"
fi
# The ratios of each run's pair (both tools ran back to back, so on about
# the same machine load): min/median/max. Issue 22's goal is a rows/s ratio
# of at least 1.3.
rr=() cr=()
for ((i = 1; i <= REPEAT; i++)); do
	[ -n "${run_rps[soakd $i]:-}" ] && [ -n "${run_rps[tsbs $i]:-}" ] || continue
	rr+=("$(calc3 "${run_rps[soakd $i]} / ${run_rps[tsbs $i]}")")
	cr+=("$(calc3 "${run_cpu[soakd $i]} / ${run_cpu[tsbs $i]}")")
done
if [ ${#rr[@]} -gt 0 ]; then
	mmm() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { printf "%s/%s/%s", a[1], a[int((NR + 1) / 2)], a[NR] }'; }
	echo "figure=compare_runs workers=2 batch=10000 pairs=${#rr[@]} rows_per_s_ratio_min_median_max=$(mmm "${rr[@]}")" \
		"cpu_ratio_min_median_max=$(mmm "${cr[@]}")"
fi

# ---- grid --------------------------------------------------------------------
for cell in $GRID; do
	w=${cell%x*}
	b=${cell#*x}
	for tool in soakd tsbs; do
		log "grid $w workers x $b rows: $tool"
		figure "$tool" "$w" "$b" grid "$("run_$tool" "$w" "$b" "grid-${w}x$b")"
	done
done
log "done (logs in $LOGS)"
