#!/usr/bin/env bash
# bench/tsdb.sh: soakd against TSBS on TimescaleDB (2.28.3, the Apache-2.0
# build of ../shared/servers), side by side in one run, same server, same
# data set (TSBS cpu-only: 100 hosts, one day at 10 s = 864,000 rows of 10
# metrics), same workers. Three parts:
#
#  load     tsbs_load_timescaledb against soakd's timescaledb dialect, in
#           both of soakd's layouts (workers 2, batch 10,000): rows/s and
#           the loader's CPU seconds per million rows (user+sys of its
#           process). Upstream TSBS cannot create hypertables on
#           TimescaleDB 2.28 (it passes replication_factor, which no longer
#           exists, and panics; the script records one such attempt), so it
#           loads plain tables on the same server (--use-hypertable=false),
#           while soakd loads hypertables. Goals: soakd's rows/s >= TSBS's,
#           its CPU per row <= TSBS's.
#  queries  tsbs_run_queries_timescaledb against soakd's devops-queries on
#           the same data: soakd loads it once with layout=tsbs into
#           hypertables of 12-hour chunks (what tsbs_load_timescaledb would
#           make if it could), which both query runners read. For each query
#           type in QTYPES, TSBS runs tsbs_generate_queries' queries and
#           soakd its own, one worker each, at the same low rate (a quarter
#           of what one connection could do, from a short calibration run
#           of TSBS), the same number of queries; compared: soakd's service
#           latency (send to last row, as TSBS measures it) median and mean
#           against TSBS's, and CPU seconds per query. Goals: latencies
#           within 20 %, CPU per query not higher.
#  ingest   soakd's query latency with and without ingest: the query mix
#           alone over the loaded day, then the same queries while a second
#           workload appends rows to the same hypertable at INGEST_RATE, then
#           alone again.
#
# Output: one key=value line per figure on stdout; progress on stderr; tool
# logs under $RUN/logs/<time>/.
#
# Env: PARTS="load queries ingest"   which parts run
#      REPEAT=3                runs of each load (tools alternating first)
#      QTYPES="single-groupby-1-1-1 single-groupby-5-8-1 cpu-max-all-8 double-groupby-1 high-cpu-1 lastpoint"
#      QREPEAT=3               runs of each query comparison (alternating)
#      QUERIES=200             queries per type and run (fewer for slow types:
#                              about 30 s per run)
#      INGEST_RATE=60000       rows/s of the ingest beside the queries (about a fifth
#                              of what soakd loads into this server alone)
#      INGEST_SECS=30          length of each ingest part's runs
#      SOAKD_BIN               soakd binary (default: go build ./cmd/soakd into $RUN)
#      PEERS_BIN=/opt/peers/bin    tsbs_generate_data, tsbs_load_timescaledb,
#                              tsbs_generate_queries, tsbs_run_queries_timescaledb
#      PG_BIN                  PostgreSQL bin dir (default: newest /usr/lib/postgresql/*/bin)
#      TSDB_PORT=55634         a TimescaleDB already answering on 127.0.0.1:TSDB_PORT
#                              (user postgres, trust auth, timescaledb preloaded) is
#                              used as is; otherwise one is initdb'ed under $RUN/tsdb
#                              and stopped at the end
#      RUN=/tmp/soakd-bench-tsdb   state, data, logs
#      BENCH_TIMEOUT=600       seconds per tool run before it is killed
set -uo pipefail
# shellcheck source=bench/pg-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/pg-lib.sh"

PARTS=${PARTS:-load queries ingest}
REPEAT=${REPEAT:-3}
QTYPES=${QTYPES:-single-groupby-1-1-1 single-groupby-5-8-1 cpu-max-all-8 double-groupby-1 high-cpu-1 lastpoint}
QREPEAT=${QREPEAT:-3}
QUERIES=${QUERIES:-200}
INGEST_RATE=${INGEST_RATE:-60000}
INGEST_SECS=${INGEST_SECS:-30}
PEERS_BIN=${PEERS_BIN:-/opt/peers/bin}
TSDB_PORT=${TSDB_PORT:-55634}
RUN=${RUN:-/tmp/soakd-bench-tsdb}
T=${BENCH_TIMEOUT:-600}
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

pg_find_bin
for b in tsbs_generate_data tsbs_load_timescaledb tsbs_generate_queries tsbs_run_queries_timescaledb; do
	[ -x "$PEERS_BIN/$b" ] || die "no $b in $PEERS_BIN (run ../shared/peers/install.sh tsbs)"
done
command -v python3 >/dev/null || die "python3 is needed (CPU figures, summaries)"

LOGS=$RUN/logs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$RUN/data" "$LOGS"

build_soakd "$RUN"
URL="postgres://postgres@127.0.0.1:$TSDB_PORT"
if ! out=$(env SOAKD_WORKLOADS=q SOAKD_LISTEN=off SOAKD_Q_SOURCE=devops-queries SOAKD_Q_QUERIES=lastpoint \
	SOAKD_Q_TARGET="$URL/x?sslmode=disable&dialect=timescaledb&layout=tsbs" "$SOAKD_BIN" config --check 2>&1); then
	die "$SOAKD_BIN cannot run the benchmark's workloads (devops-queries, layout=tsbs): $out"
fi

# ---- TimescaleDB -------------------------------------------------------------
trap pg_stop EXIT
trap 'exit 130' INT TERM
pg_ensure TimescaleDB "$TSDB_PORT" "$RUN/tsdb" \
	"-c shared_preload_libraries=timescaledb,pg_stat_statements -c pg_stat_statements.track_planning=on -c timescaledb.telemetry_level=off"
PG_VERSION=$("${PSQL[@]}" -Atc 'show server_version' postgres)
TS_VERSION=$("${PSQL[@]}" -Atc "select default_version from pg_available_extensions where name = 'timescaledb'" postgres)

# ---- data set ------------------------------------------------------------------
cpu_only_data "$PEERS_BIN/tsbs_generate_data"

drop() { "${PSQL[@]}" -c "DROP DATABASE IF EXISTS $1" postgres 2>/dev/null; }

# soakd_load DB LAYOUT W B TAG: loads the data set with soakd; prints
# "rows_per_s cpu_s rows_in_db".
soakd_load() {
	local db=$1 layout=$2 w=$3 b=$4 tag=$5 out=$LOGS/soakd-$5.log tf=$LOGS/soakd-$5.time js=$LOGS/soakd-$5.json
	drop "$db"
	"${PSQL[@]}" -c "CREATE DATABASE $db" postgres || { echo "failed"; return; }
	soakd_loads "$tf" "$out" "$js" "$URL/$db?sslmode=disable&dialect=timescaledb&layout=$layout" "$w" "$b" ||
		{ echo "failed"; return; }
	echo "$(calc "$(json_num "$js" units_per_second)") $(cpu_secs "$tf" 4) $(count_rows "$db")"
}

# ---- 1. load -------------------------------------------------------------------
if has load; then
	echo "# load: soakd (timescaledb dialect, hypertables) vs tsbs_load_timescaledb (plain tables) $(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		"nproc=$(nproc) postgres=$PG_VERSION timescaledb=$TS_VERSION data=cpu-only scale=$SCALE 1d@10s rows=$ROWS" \
		"tsbs=$(go version -m "$PEERS_BIN/tsbs_load_timescaledb" 2>/dev/null | awk '$1 == "mod" { print $3; exit }') logs=$LOGS"
	# One attempt with hypertables, to record why TSBS loads plain tables.
	drop benchmark
	timeout 60 "$PEERS_BIN/tsbs_load_timescaledb" --host=127.0.0.1 --port="$TSDB_PORT" --user=postgres --pass= \
		--admin-db-name=postgres --db-name=benchmark --use-hypertable=true --workers=1 --batch-size=10000 \
		--file="$DATA" >"$LOGS/tsbs-hypertable.log" 2>&1
	rc=$?
	why=$(grep -m1 -o 'replication_factor[^"]*' "$LOGS/tsbs-hypertable.log" | head -c 120 | tr ' ' '_')
	echo "figure=tsbs_hypertable exit=$rc error=${why:-see_$LOGS/tsbs-hypertable.log}"

	tsbs_load() {
		local tag=$1 out=$LOGS/tsbs-$1.log tf=$LOGS/tsbs-$1.time rps
		drop benchmark
		timed "$tf" timeout "$T" "$PEERS_BIN/tsbs_load_timescaledb" --host=127.0.0.1 \
			--port="$TSDB_PORT" --user=postgres --pass= --admin-db-name=postgres --db-name=benchmark \
			--use-hypertable=false --workers=2 --batch-size=10000 --file="$DATA" >"$out" 2>&1 || { echo "failed"; return; }
		rps=$(awk '$1 == "loaded" && $3 == "rows" { v = $11; sub(/^\(/, "", v); print v }' "$out" | tail -n1)
		echo "$(calc "${rps:-0}") $(cpu_secs "$tf" 4) $(count_rows benchmark)"
	}
	declare -A lrps lcpu
	for ((i = 1; i <= REPEAT; i++)); do
		order="tsbs soakd soakd-tsbs"
		((i % 2)) && order="soakd-tsbs soakd tsbs"
		for tool in $order; do
			log "load run $i/$REPEAT: $tool"
			case $tool in
			tsbs) res=$(tsbs_load "load-$i") ;;
			soakd) res=$(soakd_load soakd soakd 2 10000 "load-$i") ;;
			soakd-tsbs) res=$(soakd_load soakd tsbs 2 10000 "load-tsbs-$i") ;;
			esac
			r=($res)
			if [ "${r[0]}" = failed ]; then
				echo "figure=load tool=$tool run=$i status=failed logs=$LOGS"
				continue
			fi
			echo "figure=load tool=$tool run=$i rows_per_s=${r[0]} cpu_s=${r[1]} cpu_s_per_mrows=$(calc3 "${r[1]} * 1000000 / $ROWS")" \
				"rows_in_db=${r[2]} $([ "${r[2]}" = "$ROWS" ] && echo check=ok || echo check=MISMATCH)"
			[ "${r[2]}" = "$ROWS" ] || continue
			lrps[$tool]+="${r[0]} "
			lcpu[$tool]+="${r[1]} "
		done
	done
	tr=$(printf '%s\n' ${lrps[tsbs]:-} | median)
	tc=$(printf '%s\n' ${lcpu[tsbs]:-} | median)
	for tool in soakd soakd-tsbs; do
		sr=$(printf '%s\n' ${lrps[$tool]:-} | median)
		sc=$(printf '%s\n' ${lcpu[$tool]:-} | median)
		if [ -z "$sr" ] || [ -z "$tr" ]; then
			echo "figure=load_compare tool=$tool status=failed"
			continue
		fi
		echo "figure=load_compare tool=$tool layout=${tool#soakd-} $(load_ratios "$sr" "$tr" "$sc" "$tc" 1)"
	done
	drop benchmark
fi

# ---- the query data: TSBS's layout in hypertables, loaded by soakd ------------------
QDB=qbench
if has queries || has ingest; then
	log "loading the query data set (soakd, layout=tsbs, hypertables)"
	r=($(soakd_load $QDB tsbs 2 10000 qdata))
	[ "${r[2]:-}" = "$ROWS" ] || die "query data set: ${r[*]} (logs in $LOGS)"
	"${PSQL[@]}" -c 'VACUUM ANALYZE' $QDB
fi
QURL="$URL/$QDB?sslmode=disable&dialect=timescaledb&layout=tsbs"

# tsbs_stats FILE: prints "med_ms mean_ms count" from tsbs_run_queries'
# output (its last summary: all queries).
tsbs_stats() {
	awk '/^min:/ { for (i = 1; i <= NF; i++) { if ($i == "med:") med = $(i+1); if ($i == "mean:") mean = $(i+1); if ($i == "count:") n = $(i+1) } }
		END { gsub(/ms|,/, "", med); gsub(/ms|,/, "", mean); gsub(/,/, "", n); print med, mean, n }' "$1"
}

# soakd_queries TYPE RATE N TAG [extra env...]: runs N queries of TYPE at
# RATE with one worker (RATE max: give the DURATION in the extra env);
# prints "service_p50_ms service_mean_ms count cpu_s errors response_p50_ms",
# the first four as tsbs_q prints them.
soakd_queries() {
	local typ=$1 rate=$2 n=$3 tag=$4 out=$LOGS/soakdq-$4.log tf=$LOGS/soakdq-$4.time js=$LOGS/soakdq-$4.json secs=1
	shift 4
	[ "$rate" = max ] || secs=$(awk "BEGIN { printf \"%.3f\", $n / $rate }")
	timed "$tf" env SOAKD_WORKLOADS=q SOAKD_LISTEN=off SOAKD_PROGRESS_INTERVAL=0 SOAKD_SUMMARY_JSON="$js" \
		SOAKD_Q_SOURCE=devops-queries SOAKD_Q_TARGET="$QURL" SOAKD_Q_QUERIES="$typ" SOAKD_Q_SCALE=$SCALE \
		SOAKD_Q_RATE="$rate" SOAKD_Q_WORKERS=1 SOAKD_Q_DURATION="${secs}s" SOAKD_Q_SEED=123 "$@" \
		timeout "$T" "$SOAKD_BIN" run >"$out" 2>&1 || { echo "failed"; return; }
	python3 - "$js" "$(cpu_secs "$tf" 4)" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
w = [x for x in s["workloads"] if x["name"] == "q"][0]
o = w["ops"][0]
errs = sum(w["errors"].values())
print("%.3f %.3f %d %s %d %.3f" % (o["service_seconds"]["p50"] * 1e3, o["service_seconds"]["mean"] * 1e3,
      o["count"], sys.argv[2], errs, o["response_seconds"]["p50"] * 1e3))
EOF
}

# ---- 2. queries ------------------------------------------------------------------
# server_stats: "calls mean_ms" of the benchmark's queries that the server
# ran since the last reset (pg_stat_statements, plan + execution time),
# or "? ?" without pg_stat_statements.
server_stats() {
	"${PSQL[@]}" -At -F ' ' -c "SELECT coalesce(sum(calls), 0), coalesce(round((sum(total_exec_time + total_plan_time) / nullif(sum(calls), 0))::numeric, 3), 0)
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$QDB')
		AND (query ILIKE 'select%' OR query ILIKE 'with%') AND query ILIKE '%cpu%'
		AND query NOT LIKE '%min(time)%' AND query NOT LIKE '%pg\_%' AND query NOT LIKE '%create_hypertable%'" postgres 2>/dev/null || echo "? ?"
}
stats_reset() { "${PSQL[@]}" -Atc "SELECT pg_stat_statements_reset()" postgres >/dev/null 2>&1; }

if has queries; then
	"${PSQL[@]}" -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' postgres 2>/dev/null ||
		log "no pg_stat_statements on this server: no server-side times"
	echo "# queries: soakd devops-queries vs tsbs_run_queries_timescaledb, one worker each, same rate and count;" \
		"server_ms = the server's own plan+execution time per query (pg_stat_statements), overhead_ms = mean_ms - server_ms" \
		"$(date -u +%Y-%m-%dT%H:%M:%SZ) data=cpu-only scale=$SCALE 1d layout=tsbs hypertables"
	for typ in $QTYPES; do
		qf=$RUN/data/q-$typ.timescaledb
		"$PEERS_BIN/tsbs_generate_queries" --use-case=cpu-only --seed=123 --scale=$SCALE --timestamp-start=$START \
			--timestamp-end=$END --queries=$((QUERIES * 2)) --query-type="$typ" --format=timescaledb \
			--timescale-use-tags=true --timescale-use-time-bucket=true --db-name=$QDB --file="$qf" >"$LOGS/gen-$typ.log" 2>&1 ||
			{ echo "figure=queries type=$typ status=failed step=generate"; continue; }
		tsbs_q() { # RATE N TAG: prints "med_ms mean_ms count cpu_s"
			local tf=$LOGS/tsbsq-$3.time out=$LOGS/tsbsq-$3.log
			timed "$tf" timeout "$T" "$PEERS_BIN/tsbs_run_queries_timescaledb" --file="$qf" \
				--workers=1 --max-rps="$1" --max-queries="$2" --db-name=$QDB --hosts=127.0.0.1 --port="$TSDB_PORT" \
				--user=postgres --pass= --postgres="sslmode=disable" --print-interval=0 >"$out" 2>&1 || { echo "failed"; return; }
			echo "$(tsbs_stats "$out") $(cpu_secs "$tf" 4)"
		}
		# Calibration: what one connection does back to back.
		cal=($(tsbs_q 0 50 "cal-$typ"))
		[ "${cal[0]}" = failed ] && { echo "figure=queries type=$typ status=failed step=calibrate"; continue; }
		# A quarter of that: low load. At most about 30 s per run, at least 30 queries.
		rate=$(awk "BEGIN { r = int(250 / ${cal[1]}); if (r < 1) r = 1; if (r > 100) r = 100; print r }")
		n=$(awk "BEGIN { n = $rate * 30; if (n > $QUERIES) n = $QUERIES; if (n < 30) n = 30; print n }")
		res=$LOGS/queries-$typ.txt
		: >"$res"
		for ((i = 1; i <= QREPEAT; i++)); do
			for tool in $( ((i % 2)) && echo "soakd tsbs" || echo "tsbs soakd"); do
				log "queries $typ at $rate/s, run $i/$QREPEAT: $tool"
				stats_reset
				if [ "$tool" = tsbs ]; then
					r=($(tsbs_q "$rate" "$n" "$typ-$i"))
				else
					r=($(soakd_queries "$typ" "$rate" "$n" "$typ-$i"))
				fi
				[ "${r[0]}" = failed ] && { echo "figure=queries type=$typ tool=$tool run=$i status=failed logs=$LOGS"; continue; }
				sv=($(server_stats))
				echo "figure=queries type=$typ tool=$tool run=$i rate=$rate count=${r[2]} med_ms=${r[0]} mean_ms=${r[1]}" \
					"server_calls=${sv[0]} server_ms=${sv[1]} overhead_ms=$(calc3 "${r[1]} - ${sv[1]:-0}")" \
					"cpu_s=${r[3]} cpu_ms_per_query=$(calc3 "${r[3]} * 1000 / ${r[2]}")" \
					"$([ "$tool" = soakd ] && echo "errors=${r[4]} response_med_ms=${r[5]}")"
				echo "$tool ${r[0]} ${r[1]} $(calc3 "${r[1]} - ${sv[1]:-0}") $(calc3 "${r[3]} * 1000 / ${r[2]}")" >>"$res"
			done
		done
		# Closed loop, one worker: client CPU per query without idle time.
		cln=$(awk "BEGIN { n = int(20000 / ${cal[1]}); if (n > 4 * $QUERIES) n = 4 * $QUERIES; if (n < 30) n = 30; print n }")
		log "queries $typ closed loop: tsbs, soakd"
		r=($(tsbs_q 0 "$cln" "$typ-closed"))
		[ "${r[0]}" = failed ] || echo "tsbs-closed ${r[2]} $(calc3 "${r[3]} * 1000 / ${r[2]}") $(calc "${r[2]} * 1000 / (${r[1]} * ${r[2]})")" >>"$res"
		secs=$(awk "BEGIN { printf \"%.0f\", $cln * ${cal[1]} / 1000 + 1 }")
		r=($(soakd_queries "$typ" max "$cln" "$typ-closed" SOAKD_Q_DURATION="${secs}s"))
		[ "${r[0]}" = failed ] || echo "soakd-closed ${r[2]} $(calc3 "${r[3]} * 1000 / ${r[2]}")" >>"$res"
		python3 - "$res" "$typ" "$rate" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
typ, rate = sys.argv[2], sys.argv[3]
def med(tool, col):
    v = [float(r[col]) for r in rows if r[0] == tool]
    return statistics.median(v) if v else float("nan")
s50, t50 = med("soakd", 1), med("tsbs", 1)
smean, tmean = med("soakd", 2), med("tsbs", 2)
sov, tov = med("soakd", 3), med("tsbs", 3)
scpu, tcpu = med("soakd", 4), med("tsbs", 4)
scl, tcl = med("soakd-closed", 2), med("tsbs-closed", 2)
ok = lambda x: "met" if 0.8 <= x <= 1.2 else "MISSED"
print("figure=queries_compare type=%s rate=%s soakd_med_ms=%.3f tsbs_med_ms=%.3f med_ratio=%.3f soakd_mean_ms=%.3f tsbs_mean_ms=%.3f mean_ratio=%.3f goal_latency=%s"
      " soakd_overhead_ms=%.3f tsbs_overhead_ms=%.3f"
      " soakd_cpu_ms_per_query=%.3f tsbs_cpu_ms_per_query=%.3f cpu_ratio=%.3f closed_loop_soakd_cpu_ms_per_query=%.3f closed_loop_tsbs_cpu_ms_per_query=%.3f closed_loop_cpu_ratio=%.3f goal_cpu=%s" % (
      typ, rate, s50, t50, s50 / t50, smean, tmean, smean / tmean, "met" if ok(s50 / t50) == "met" and ok(smean / tmean) == "met" else "MISSED",
      sov, tov, scpu, tcpu, scpu / tcpu, scl, tcl, scl / tcl, "met" if scl <= tcl and scpu <= tcpu else ("met closed loop only" if scl <= tcl else "MISSED")))
PY
	done
fi

# ---- 3. query latency with and without ingest -------------------------------------
if has ingest; then
	MIX="single-groupby-1-1-1,single-groupby-5-8-1,cpu-max-all-8,high-cpu-1,lastpoint,double-groupby-1"
	QRATE=${QRATE:-10}
	echo "# ingest: soakd query latency with and without $INGEST_RATE rows/s of ingest into the same hypertable" \
		"$(date -u +%Y-%m-%dT%H:%M:%SZ) queries=$MIX at $QRATE/s, ${INGEST_SECS}s per run"
	mixed() { # TAG INGEST(0|1)
		local tag=$1 js=$LOGS/mixed-$1.json out=$LOGS/mixed-$1.log wl=q
		local env=(SOAKD_LISTEN=off SOAKD_PROGRESS_INTERVAL=0 SOAKD_SUMMARY_JSON="$js"
			SOAKD_Q_SOURCE=devops-queries SOAKD_Q_TARGET="$QURL" SOAKD_Q_QUERIES="$MIX" SOAKD_Q_SCALE=$SCALE
			SOAKD_Q_RATE="$QRATE" SOAKD_Q_WORKERS=4 SOAKD_Q_DURATION="${INGEST_SECS}s" SOAKD_Q_SEED=7)
		if [ "$2" = 1 ]; then
			# Rows after the loaded day, into the same tables, at a constant rate.
			wl=q,ingest
			env+=(SOAKD_INGEST_SOURCE=devops SOAKD_INGEST_TARGET="$QURL" SOAKD_INGEST_SCALE=$SCALE SOAKD_INGEST_SEED=123
				SOAKD_INGEST_START=$END SOAKD_INGEST_RATE="$INGEST_RATE" SOAKD_INGEST_BATCH_SIZE=1000
				SOAKD_INGEST_WORKERS=2 SOAKD_INGEST_DURATION="${INGEST_SECS}s")
		fi
		env SOAKD_WORKLOADS=$wl "${env[@]}" timeout "$T" "$SOAKD_BIN" run >"$out" 2>&1 || { echo "figure=ingest run=$tag status=failed logs=$LOGS"; return; }
		python3 - "$js" "$tag" "$2" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for w in s["workloads"]:
    if w["name"] == "ingest":
        print("figure=ingest run=%s workload=ingest rows_per_s=%.0f rows=%d errors=%d dropped=%d" % (
            sys.argv[2], w["units_per_second"], w["units"], sum(w["errors"].values()), w["dropped_units"]))
for w in s["workloads"]:
    if w["name"] != "q":
        continue
    for o in w["ops"]:
        r, sv = o["response_seconds"], o["service_seconds"]
        print("figure=ingest run=%s ingest=%s type=%s count=%d resp_p50_ms=%.2f resp_p99_ms=%.2f service_p50_ms=%.2f service_p99_ms=%.2f service_mean_ms=%.2f" % (
            sys.argv[2], sys.argv[3], o["op"], o["count"], r["p50"] * 1e3, r["p99"] * 1e3, sv["p50"] * 1e3, sv["p99"] * 1e3, sv["mean"] * 1e3))
    print("figure=ingest run=%s ingest=%s queries=%d errors=%d dropped=%d" % (sys.argv[2], sys.argv[3], w["units"], sum(w["errors"].values()), w["dropped_units"]))
EOF
	}
	mixed alone-1 0
	mixed with-ingest 1
	"${PSQL[@]}" -c 'VACUUM ANALYZE' $QDB
	mixed alone-2 0
fi
drop $QDB
log "done (logs in $LOGS)"
