# shellcheck shell=bash
# Helpers shared by bench/redis.sh and bench/ycsb.sh (sourced, not run):
# the peer tools' settings from ../shared/peers/lib.sh (PEERS_DIR), soakd
# built from this checkout, redis-server start/stop, one soakd run, and
# reading figures from soakd's summary JSON.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${PEERS_DIR:-$root/../shared/peers}
[ -d "$PEERS_DIR" ] || PEERS_DIR=/work/shared/peers
# shellcheck source=/dev/null
. "$PEERS_DIR/lib.sh"
RUNS=${RUNS:-3}
OUT=${OUT:-$PEERS_RUN/logs/soakd-bench-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

# build_soakd: soakd from this checkout into $OUT (SOAKD_BIN wins),
# static (CGO_ENABLED=0) as the image ships it: a cgo build is linked
# dynamically, and each start then spends about 10 ms in the dynamic
# loader and the C library's locale set-up, which the idle sidecar's
# whole-process figure counts.
build_soakd() {
	if [ -n "${SOAKD_BIN:-}" ]; then
		echo "$SOAKD_BIN"
		return
	fi
	(cd "$root" && CGO_ENABLED=0 go build -o "$OUT/soakd" ./cmd/soakd) >&2 || die "cannot build soakd"
	echo "$OUT/soakd"
}

started_redis=0
ensure_redis() {
	if "$PEERS_DIR/servers.sh" status redis | grep -q running; then
		return
	fi
	"$PEERS_DIR/servers.sh" start redis >&2 || die "cannot start redis-server"
	started_redis=1
}
stop_redis() {
	if [ "$started_redis" = 1 ]; then
		"$PEERS_DIR/servers.sh" stop redis >&2 || true
	fi
}

# rcli ARGS...: redis-cli against the bench server (the pinned peer first).
rcli() {
	local bin
	bin=$(peer_bin redis-cli) || die "no redis-cli (apt-get install redis-tools)"
	"$bin" -h 127.0.0.1 -p "$REDIS_PORT" "$@"
}

# soakd_run LOG SUMMARY_JSON VAR=VALUE...: one soakd run with the given
# SOAKD_* settings (nothing else from the environment leaks in).
soakd_run() {
	local log=$1 sum=$2
	shift 2
	env -i PATH="$PATH" HOME="${HOME:-/root}" SOAKD_LISTEN=127.0.0.1:0 SOAKD_PROGRESS_INTERVAL=0 SOAKD_SUMMARY_JSON="$sum" \
		SOAKD_WORKLOADS=kv "$@" timeout "${BENCH_TIMEOUT:-300}" "$SOAKD" >"$log" 2>&1
}

# soakd_figure SUMMARY_JSON OP: "ops_per_s p50_ms p99_ms" of OP from a
# summary (the response latency, from the intended start; in closed loop
# that is from the start of the batch).
soakd_figure() {
	jq -r --arg op "$2" '.workloads[] | select(.phase == "run") | .ops[] | select(.op == $op) |
		"\(.per_second | floor) \(.response_seconds.p50 * 1e6 | round / 1000) \(.response_seconds.p99 * 1e6 | round / 1000)"' "$1"
}

# median of the numbers on stdin
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
# spread: "min / median / max" of the numbers on stdin.
spread() { sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "%s / %s / %s", a[1], a[int((NR + 1) / 2)], a[NR] }'; }

# redis_pid: the pid of the redis-server at REDIS_PORT.
redis_pid() { rcli info server | awk -F: '$1 == "process_id" { sub(/\r/, "", $2); print $2 }'; }
# pid_ticks PID: the user + system clock ticks PID has used so far (its
# threads', exited ones included); nothing once PID has gone.
pid_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null; }
# core_share TICKS0 TICKS1 NS0 NS1: the share of a core (0..1) the ticks
# between TICKS0 and TICKS1 are of the wall time between NS0 and NS1.
core_share() {
	awk -v a="$1" -v b="$2" -v s="$3" -v e="$4" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { if (a != "" && b != "" && e > s) printf "%.2f", (b - a) / hz / ((e - s) / 1e9); else print "-" }'
}
