# shellcheck shell=bash
# Helpers shared by bench/pg.sh, bench/tsdb.sh and bench/verify.sh (sourced,
# not run): progress and arithmetic, soakd built from this checkout, the
# PostgreSQL (or TimescaleDB) under test (the one already answering on the
# script's port, or one of the script's own, initdb'ed and stopped at the
# end), TSBS's cpu-only data set, a tool process's CPU and wall time, and
# figures from soakd's summary JSON.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) PATH=/usr/local/go/bin:$PATH ;; esac

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
calc() { awk "BEGIN { printf \"%.0f\", $1 }"; }
calc3() { awk "BEGIN { printf \"%.3f\", $1 }"; }
# median of the numbers on stdin
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }

# pg_find_bin: PG_BIN, by default the newest /usr/lib/postgresql/*/bin.
pg_find_bin() {
	if [ -z "${PG_BIN:-}" ]; then
		PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
	fi
	[ -x "$PG_BIN/postgres" ] || die "no PostgreSQL in PG_BIN=$PG_BIN"
}

# build_soakd DIR: SOAKD_BIN, by default soakd built from this checkout
# into DIR.
build_soakd() {
	[ -n "${SOAKD_BIN:-}" ] && return
	SOAKD_BIN=$1/soakd
	log "building soakd"
	(cd "$repo" && go build -o "$SOAKD_BIN" ./cmd/soakd) || die "cannot build soakd"
}

# as_pg CMD...: PostgreSQL refuses to run as root; run it as the postgres user.
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
	else
		"$@"
	fi
}

# pg_ensure NAME PORT DIR [SETTINGS]: the server under test on
# 127.0.0.1:PORT, and PSQL, psql against it as postgres. A server already
# answering there (user postgres, trust auth) is used as is; otherwise a
# fresh cluster is initdb'ed under DIR (its initdb log in $LOGS) and
# started with the default settings plus SETTINGS (-c options), and
# pg_stop stops it and deletes DIR. NAME (PostgreSQL, TimescaleDB) is what
# progress calls it; TimescaleDB must be installed for the TimescaleDB one.
pg_started=
pg_name=
pg_dir=
pg_ensure() {
	local name=$1 port=$2 dir=$3 settings=${4:-}
	PSQL=("$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres)
	if "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port"; then
		log "using the $name already on 127.0.0.1:$port"
		return
	fi
	if [ "$name" = TimescaleDB ]; then
		ls "$("$PG_BIN/pg_config" --pkglibdir)"/timescaledb.so >/dev/null 2>&1 ||
			die "TimescaleDB is not installed in $PG_BIN's PostgreSQL (../shared/servers/install-timescaledb.sh)"
	fi
	log "starting $name on 127.0.0.1:$port (default settings)"
	rm -rf "$dir"
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown postgres: "$dir"
	as_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$LOGS/initdb.log" 2>&1 ||
		die "initdb failed ($LOGS/initdb.log)"
	as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir${settings:+ $settings}" start >/dev/null ||
		die "$name did not start ($dir/postgres.log)"
	pg_started=1 pg_name=$name pg_dir=$dir
}

# pg_stop: stops the server pg_ensure started, if it started one.
pg_stop() {
	[ -n "$pg_started" ] || return 0
	log "stopping the $pg_name this script started"
	as_pg "$PG_BIN/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$pg_dir"
	pg_started=
}

# count_rows DB: rows in DB's cpu table, "?" when it cannot tell.
count_rows() { "${PSQL[@]}" -Atc "select count(*) from cpu" "$1" 2>/dev/null || echo "?"; }

# cpu_only_data GEN: TSBS's cpu-only data set (100 hosts, one day at 10 s
# from 2016-01-01, seed 123) in TimescaleDB's format, generated once into
# $RUN/data with GEN (tsbs_generate_data); sets SCALE, START, END, ROWS
# and DATA.
cpu_only_data() {
	SCALE=100
	START=2016-01-01T00:00:00Z
	END=2016-01-02T00:00:00Z
	ROWS=$((SCALE * 86400 / 10))
	DATA=$RUN/data/cpu-only-s$SCALE-1d.timescaledb
	[ -s "$DATA" ] && return
	log "generating $DATA"
	"$1" --use-case=cpu-only --seed=123 --scale=$SCALE --timestamp-start=$START \
		--timestamp-end=$END --log-interval=10s --format=timescaledb --file="$DATA.tmp" >&2 ||
		die "tsbs_generate_data failed"
	mv -f "$DATA.tmp" "$DATA"
}

# timed FILE CMD...: runs CMD and writes "user sys wall" seconds (with
# microseconds: a query run's CPU is tens of milliseconds) to FILE; exits
# with CMD's status. The times are CMD's process and its children's.
timed() {
	local f=$1
	shift
	python3 -c '
import resource, subprocess, sys, time
t0 = time.monotonic()
rc = subprocess.call(sys.argv[2:])
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%.6f %.6f %.6f\n" % (ru.ru_utime, ru.ru_stime, time.monotonic() - t0))
sys.exit(rc)' "$f" "$@"
}

# cpu_secs FILE [DECIMALS]: user+sys from timed's FILE (3 decimals unless
# told); wall_secs FILE: its wall time.
cpu_secs() { awk -v d="${2:-3}" 'END { printf "%." d "f", $1 + $2 }' "$1"; }
wall_secs() { awk 'END { print $3 }' "$1"; }

# json_num FILE KEY: the first number named KEY in a JSON file (soakd's
# summary, soakd verify's report), empty when there is none.
json_num() { grep -o "\"$2\": *[0-9.e+-]*" "$1" 2>/dev/null | head -n1 | sed 's/.*: *//'; }

# load_ratios SR TR SC TC CPU_GOAL: the figures comparing a soakd load with
# a TSBS one of the same ROWS, from their median rows/s (SR, TR) and CPU
# seconds (SC, TC); the goals are a rows/s ratio >= 1 and a CPU ratio
# <= CPU_GOAL.
load_ratios() {
	local rr cr
	rr=$(calc3 "$1 / $2")
	cr=$(calc3 "$3 / $4")
	echo "soakd_rows_per_s=$1 tsbs_rows_per_s=$2 rows_per_s_ratio=$rr" \
		"goal_rows_per_s=$(awk "BEGIN { print ($rr >= 1) ? \"met\" : \"MISSED\" }")" \
		"soakd_cpu_s_per_mrows=$(calc3 "$3 * 1000000 / $ROWS") tsbs_cpu_s_per_mrows=$(calc3 "$4 * 1000000 / $ROWS")" \
		"cpu_ratio=$cr goal_cpu=$(awk "BEGIN { print ($cr <= $5) ? \"met\" : \"MISSED\" }")"
}

# soakd_loads TIMEFILE LOG SUMMARY TARGET W B: soakd loads cpu_only_data's
# data set into TARGET with W workers and batches of B rows, closed loop,
# timed into TIMEFILE, its output in LOG and its summary in SUMMARY;
# killed after T seconds. Exits with soakd's status.
soakd_loads() {
	timed "$1" env SOAKD_WORKLOADS=w SOAKD_LISTEN=off SOAKD_PROGRESS_INTERVAL=0 SOAKD_SUMMARY_JSON="$3" \
		SOAKD_W_SOURCE=devops SOAKD_W_TARGET="$4" \
		SOAKD_W_RATE=max SOAKD_W_WORKERS="$5" SOAKD_W_BATCH_SIZE="$6" SOAKD_W_SCALE=$SCALE SOAKD_W_INTERVAL=10s \
		SOAKD_W_START=$START SOAKD_W_END=$END SOAKD_W_SEED=123 \
		timeout "$T" "$SOAKD_BIN" run >"$2" 2>&1
}
