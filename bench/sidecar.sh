#!/usr/bin/env bash
# What soakd costs as a sidecar, every figure against its target from one
# sitting: runs bench/cpu.sh (fixed rates against go-ycsb, the machine's
# wake-up floor, the idle sidecar, the zero-config demo), bench/ycsb.sh
# (closed loop against go-ycsb) and bench/redis.sh (against
# redis-benchmark), each RUNS times, then prints one table: each target,
# the median (of the ratios of each run's pair, where it is a ratio) with
# min–max, and whether it is met. Each script's own log and table are in
# OUT/<script>.txt.
#
#   RUNS=3 bench/sidecar.sh
#
# Env: RUNS=3, OUT (default /tmp/soakd-bench-sidecar), SOAKD_BIN, and what
# each script takes (SECS, IDLE_SECS, ...); TABLE_ONLY=1 prints the table
# of the logs already in OUT without running anything.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUNS=${RUNS:-3}
OUT=${OUT:-/tmp/soakd-bench-sidecar}
mkdir -p "$OUT"
export RUNS

if [ "${TABLE_ONLY:-0}" != 1 ]; then
	echo "# soakd as a sidecar $(date -u +%Y-%m-%dT%H:%M:%SZ) nproc=$(nproc) load=$(cut -d' ' -f1 /proc/loadavg) runs=$RUNS logs=$OUT"
	for s in cpu ycsb redis; do
		echo "$(date +%T) bench/$s.sh" >&2
		OUT=$OUT/$s "$here/$s.sh" >"$OUT/$s.txt" 2>&1 || echo "bench/$s.sh failed (exit $?), see $OUT/$s.txt" >&2
	done
fi
cat "$OUT/cpu.txt" "$OUT/ycsb.txt" "$OUT/redis.txt" 2>/dev/null | grep '^figure=' >"$OUT/figures.txt"
[ -s "$OUT/figures.txt" ] || { echo "no figures in $OUT/{cpu,ycsb,redis}.txt" >&2; exit 1; }

echo
echo "| what | target | median (min–max) | |"
echo "|---|---:|---:|---|"
awk '
# kv: the figure line as key=value pairs in f.
function kv(   i, a) {
	delete f
	for (i = 1; i <= NF; i++) { split($i, a, "="); f[a[1]] = a[2] }
}
# add(KEY, V): one more value of KEY.
function add(k, v) { n[k]++; val[k, n[k]] = v }
# stat(KEY, UNIT): "median UNIT (min–max)" of KEY, and sets med.
function stat(k, unit,   i, j, m, t, x) {
	m = n[k]
	if (!m) { med = ""; return "not measured" }
	for (i = 1; i <= m; i++) x[i] = val[k, i]
	for (i = 2; i <= m; i++) for (j = i; j > 1 && x[j - 1] > x[j]; j--) { t = x[j]; x[j] = x[j - 1]; x[j - 1] = t }
	med = x[int((m + 1) / 2)]
	return sprintf("%s%s (%s–%s)", fmt(med), unit, fmt(x[1]), fmt(x[m]))
}
function fmt(v) { return v < 10 ? sprintf("%.2f", v) : sprintf("%.1f", v) }
# row(WHAT, KEY, OP, GOAL, UNIT): a table row; OP "<=" or ">=", GOAL as
# it is to be printed.
function row(what, k, op, goal, unit,   s, ok) {
	s = stat(k, unit)
	ok = med == "" ? "" : ((op == "<=" ? med + 0 <= goal + 0 : med + 0 >= goal + 0) ? "met" : "not met")
	printf "| %s | %s %s%s | %s | %s |\n", what, (op == "<=" ? "at most" : "at least"), goal, unit, s, ok
}
{ kv() }
f["figure"] == "cpu_per_op" && f["tool"] == "go-ycsb" { y[f["rate"], f["run"]] = f["us_per_op"] }
f["figure"] == "cpu_per_op" && f["tool"] == "soakd" {
	s[f["rate"], f["run"]] = f["us_per_op"]
	add("p50," f["rate"], f["dispatch_p50_us"]); add("p99," f["rate"], f["dispatch_p99_us"])
}
f["figure"] == "wake_floor" { add("floor," f["rate"], f["cpu_us_per_wakeup"]) }
f["figure"] == "idle_sidecar" { add("idle", f["core_percent"]); add("steady", f["steady_core_percent"]) }
f["figure"] == "demo_rss" { add("demo", f["peak_rss_mb"]) }
f["figure"] ~ /^ycsb_/ && f["tool"] == "go-ycsb" { yc[f["figure"], f["run"]] = f["ops_per_s"] }
f["figure"] ~ /^ycsb_/ && f["tool"] == "soakd" { sc[f["figure"], f["pipeline"], f["run"]] = f["ops_per_s"] }
f["figure"] ~ /^redis_/ && f["tool"] == "redis-benchmark" { rb[f["figure"], f["run"]] = f["ops_per_s"] }
f["figure"] ~ /^redis_/ && f["tool"] == "soakd" { rs[f["figure"], f["run"]] = f["ops_per_s"] }
END {
	for (k in s) if (y[k] > 0) { split(k, p, SUBSEP); add("cpu," p[1], s[k] / y[k]) }
	for (k in sc) { split(k, p, SUBSEP); if (yc[p[1], p[3]] > 0) add(p[1] "," p[2], sc[k] / yc[p[1], p[3]]) }
	for (k in rs) if (rb[k] > 0) { split(k, p, SUBSEP); add(p[1], rs[k] / rb[k]) }
	row("fixed 1,000 ops/s, YCSB A, 16 workers: CPU per operation, soakd / go-ycsb", "cpu,1000", "<=", 0.5, "×")
	row("the same, dispatch delay p50", "p50,1000", "<=", 100, " µs")
	row("the same, dispatch delay p99", "p99,1000", "<=", 300, " µs")
	printf "| the same, this machine: CPU of one wake-up at a due time (bench/wakefloor) | | %s | |\n", stat("floor,1000", " µs")
	row("fixed 10,000 ops/s: CPU per operation, soakd / go-ycsb", "cpu,10000", "<=", 0.5, "×")
	printf "| the same, this machine: CPU of one wake-up at a due time | | %s | |\n", stat("floor,10000", " µs")
	row("closed loop, YCSB A, 16 workers: ops/s, soakd / go-ycsb", "ycsb_a,1", ">=", 1.5, "×")
	row("the same, YCSB C", "ycsb_c,1", ">=", 1.5, "×")
	row("SET, 50 connections, pipeline 1: ops/s, soakd / redis-benchmark", "redis_set_P1", ">=", "1.0", "×")
	row("GET, pipeline 1", "redis_get_P1", ">=", "1.0", "×")
	row("SET, pipeline 16", "redis_set_P16", ">=", 0.95, "×")
	row("GET, pipeline 16", "redis_get_P16", ">=", 0.95, "×")
	row("idle sidecar (10 ops/s), whole process: % of a core", "idle", "<=", 0.3, " %")
	printf "| the same, steady state | | %s | |\n", stat("steady", " %")
	row("zero-config demo, peak RSS", "demo", "<=", 50, " MB")
}' "$OUT/figures.txt"
