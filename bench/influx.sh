#!/usr/bin/env bash
# soakd vs tsbs_load_influx, side by side on the same data set and the same
# InfluxDB 1.8.10: TSBS cpu-only, scale 100, 2016-01-01 for one day at 10 s
# (864,000 rows x 10 fields), 2 workers, batches of 10,000, closed loop.
#
# Each run starts a fresh influxd (../shared/peers/servers.sh), loads with one
# tool, checks SELECT count(usage_user) FROM cpu = 864000, and measures the
# tool process's wall time and CPU time (user+sys). Runs alternate between
# the tools, RUNS times each; the summary gives medians and soakd/tsbs ratios.
# Goals (issue 5): soakd rows/s >= tsbs_load_influx's, and soakd CPU seconds
# per million rows <= half of tsbs_load_influx's.
#
# rows/s is rows stored / wall time of the tool's process (the same yardstick
# for both; each tool's own figure is printed too). The load generator and
# the server share the machine: compare ratios from one run of this script.
#
# Env: RUNS=3                 runs per tool
#      GZIP=true|false        compress request bodies (both tools; tsbs's
#                             default is true, at gzip's default level;
#                             soakd's gzip=true is level 1)
#      SOAKD_BIN              soakd binary (default: built from ./cmd/soakd)
#      PEERS_DIR              ../shared/peers (lib.sh, servers.sh)
#      PEERS_RUN, INFLUX_PORT, INFLUX_RPC_PORT  as for servers.sh
#      BENCH_TIMEOUT=600      seconds per load before it is killed
#      ONLY="tsbs soakd"      tools to run
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${PEERS_DIR:-}" ]; then
	for d in "$root/../shared/peers" "$root/../../shared/peers"; do
		[ -f "$d/lib.sh" ] && PEERS_DIR=$(cd "$d" && pwd) && break
	done
fi
[ -f "${PEERS_DIR:-}/lib.sh" ] || { echo "PEERS_DIR: no lib.sh (set PEERS_DIR to the peers scripts)" >&2; exit 2; }
# shellcheck source=/dev/null
. "$PEERS_DIR/lib.sh"

RUNS=${RUNS:-3}
GZIP=${GZIP:-true}
T=${BENCH_TIMEOUT:-600}
ONLY=${ONLY:-tsbs soakd}
SCALE=100
START=2016-01-01T00:00:00Z
END=2016-01-02T00:00:00Z
ROWS=$((SCALE * 86400 / 10))
DB=benchmark
URL=http://127.0.0.1:$INFLUX_PORT
LOGS=$PEERS_RUN/logs/bench-influx-$(date +%Y%m%d-%H%M%S)
mkdir -p "$PEERS_RUN/data" "$LOGS"
case $GZIP in true | false) ;; *) die "GZIP=$GZIP: want true or false" ;; esac
wants() { case " $ONLY " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# ---- tools and data --------------------------------------------------------
gen=$(peer_bin tsbs_generate_data) || die "no tsbs_generate_data (run $PEERS_DIR/install.sh tsbs)"
load=$(peer_bin tsbs_load_influx) || die "no tsbs_load_influx (run $PEERS_DIR/install.sh tsbs)"
data=$PEERS_RUN/data/cpu-only-s$SCALE-1d.influx
if [ ! -s "$data" ]; then
	log "generating $data"
	"$gen" --use-case=cpu-only --seed=123 --scale=$SCALE --timestamp-start=$START \
		--timestamp-end=$END --log-interval=10s --format=influx --file="$data.tmp" >&2 ||
		die "tsbs_generate_data failed"
	mv -f "$data.tmp" "$data"
fi
if wants soakd; then
	if [ -z "${SOAKD_BIN:-}" ]; then
		[ -d "$root/cmd/soakd" ] || die "no cmd/soakd in $root yet and no SOAKD_BIN"
		SOAKD_BIN=$LOGS/soakd
		log "building soakd"
		(cd "$root" && go build -o "$SOAKD_BIN" ./cmd/soakd) || die "go build ./cmd/soakd failed"
	fi
	[ -x "$SOAKD_BIN" ] || die "SOAKD_BIN=$SOAKD_BIN is not executable"
fi

# ---- server ----------------------------------------------------------------
srv() { PEERS_RUN=$PEERS_RUN INFLUX_PORT=$INFLUX_PORT INFLUX_RPC_PORT=$INFLUX_RPC_PORT "$PEERS_DIR/servers.sh" "$@" influx; }
trap 'srv stop >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM
fresh_server() {
	srv stop >/dev/null 2>&1
	srv start >&2 || die "influxd did not start"
}
count_rows() {
	curl -s -G "$URL/query" --data-urlencode db=$DB --data-urlencode 'q=SELECT count(usage_user) FROM cpu' |
		sed -n 's/.*"1970-01-01T00:00:00Z",\([0-9]*\).*/\1/p'
}

# timed LOG CMD...: runs CMD with its output in LOG; prints "WALL USER SYS"
# (seconds) of the process, or nothing if it failed.
timed() {
	local logf=$1 tf
	shift
	tf=$(mktemp)
	if ! timeout "$T" /usr/bin/time -f '%e %U %S' -o "$tf" "$@" >"$logf" 2>&1; then
		rm -f "$tf"
		return 1
	fi
	tail -n1 "$tf"
	rm -f "$tf"
}

# ---- one load --------------------------------------------------------------
# run TOOL I: prints one result line.
run() {
	local tool=$1 i=$2 logf=$LOGS/$1-$2.log t wall user sys n own
	fresh_server
	case $tool in
	tsbs)
		t=$(timed "$logf" "$load" --urls="$URL" --db-name=$DB --workers=2 --batch-size=10000 \
			--gzip="$GZIP" --file="$data") || { echo "run=$i tool=tsbs_load_influx status=failed log=$logf"; return; }
		own=$(awk '$1 == "loaded" && $3 == "rows" { print $11 }' "$logf" | tail -n1)
		;;
	soakd)
		# env -i: only these settings (env execs soakd: the same process is timed).
		t=$(timed "$logf" env -i PATH="$PATH" HOME="$HOME" \
			SOAKD_LISTEN=off SOAKD_LOG_FORMAT=console SOAKD_WORKLOADS=w SOAKD_W_SOURCE=devops \
			SOAKD_W_TARGET="influx1://127.0.0.1:$INFLUX_PORT?db=$DB&gzip=$GZIP" \
			SOAKD_W_RATE=max SOAKD_W_WORKERS=2 SOAKD_W_BATCH_SIZE=10000 \
			SOAKD_W_SCALE=$SCALE SOAKD_W_INTERVAL=10s SOAKD_W_SEED=123 \
			SOAKD_W_START=$START SOAKD_W_END=$END \
			"$SOAKD_BIN" run --summary-json "$LOGS/soakd-$i.json") ||
			{ echo "run=$i tool=soakd status=failed log=$logf"; return; }
		own=$(tr ',' '\n' <"$LOGS/soakd-$i.json" 2>/dev/null | sed -n 's/.*"units_per_second": *\([0-9.]*\).*/\1/p' | head -n1)
		;;
	esac
	read -r wall user sys <<<"$t"
	n=$(count_rows)
	echo "run=$i tool=$tool loadavg=$(cut -d' ' -f1 /proc/loadavg) rows_in_db=${n:-?} wall_s=$wall user_s=$user sys_s=$sys" \
		"rows_per_s=$(awk -v n="${n:-0}" -v w="$wall" 'BEGIN { printf "%.0f", n / w }')" \
		"cpu_s_per_mrow=$(awk -v n="${n:-0}" -v u="$user" -v s="$sys" 'BEGIN { if (n > 0) printf "%.3f", (u + s) / n * 1e6; else print "nan" }')" \
		"own_rows_per_s=${own:-?} status=$([ "$n" = "$ROWS" ] && echo ok || echo "count-mismatch(want=$ROWS)") log=$logf"
}

echo "# bench/influx.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(hostname) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ,)"
echo "# data: TSBS cpu-only scale=$SCALE $START..$END interval=10s rows=$ROWS workers=2 batch=10000 gzip=$GZIP runs=$RUNS logs=$LOGS"
results=$LOGS/results.txt
for ((i = 1; i <= RUNS; i++)); do
	for tool in tsbs soakd; do
		wants $tool || continue
		log "run $i: $tool"
		run $tool $i | tee -a "$results"
	done
done

# ---- summary ---------------------------------------------------------------
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
field() { # field TOOL KEY: values of KEY over the tool's ok runs
	awk -v t="$1" -v k="$2" '$0 ~ "tool="t" " && / status=ok / {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' "$results"
}
for tool in tsbs soakd; do
	wants $tool || continue
	echo "summary tool=$tool ok_runs=$(field $tool rows_per_s | wc -l) rows_per_s_median=$(field $tool rows_per_s | median)" \
		"cpu_s_per_mrow_median=$(field $tool cpu_s_per_mrow | median)"
done
if wants tsbs && wants soakd; then
	tr=$(field tsbs rows_per_s | median) sr=$(field soakd rows_per_s | median)
	tc=$(field tsbs cpu_s_per_mrow | median) sc=$(field soakd cpu_s_per_mrow | median)
	if [ -n "$tr" ] && [ -n "$sr" ] && [ -n "$tc" ] && [ -n "$sc" ]; then
		awk -v tr="$tr" -v sr="$sr" -v tc="$tc" -v sc="$sc" 'BEGIN {
			r = sr / tr; c = sc / tc
			printf "ratio rows_per_s_soakd_over_tsbs=%.2f (goal >= 1: %s) cpu_per_row_soakd_over_tsbs=%.2f (goal <= 0.5: %s)\n",
				r, (r >= 1 ? "met" : "NOT met"), c, (c <= 0.5 ? "met" : "NOT met") }'
	fi
	# The ratios of each run's pair (run i of both tools, back to back):
	# min/median/max. Issue 22's goal is a rows/s ratio of at least 1.3.
	for ((i = 1; i <= RUNS; i++)); do
		t=$(awk -v i="$i" '$1 == "run="i && / tool=tsbs / && / status=ok /' "$results")
		s=$(awk -v i="$i" '$1 == "run="i && / tool=soakd / && / status=ok /' "$results")
		[ -n "$t" ] && [ -n "$s" ] || continue
		printf '%s\n%s\n' "$t" "$s"
	done | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
		/ tool=tsbs / { tr = v["rows_per_s"]; tc = v["cpu_s_per_mrow"] }
		/ tool=soakd / { n++; r[n] = v["rows_per_s"] / tr; c[n] = v["cpu_s_per_mrow"] / tc }
		function mmm(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return sprintf("%.2f/%.2f/%.2f", a[1], a[int((n + 1) / 2)], a[n])
		}
		END { if (n) printf "ratio_runs pairs=%d rows_per_s_min_median_max=%s cpu_per_row_min_median_max=%s\n", n, mmm(r, n), mmm(c, n) }'
fi
