#!/usr/bin/env bash
# What soakd costs the machine it runs on, against go-ycsb (v1.0.3) on the
# same redis-server, in three parts (PARTS, all by default), RUNS (3)
# rounds, each part of a round right after the other:
#
#   rates  whole-process CPU (user + system) per operation at a fixed rate,
#          YCSB workload A, 100000 hash records of 10 x 100-byte fields,
#          uniform keys, THREADS (16) threads = soakd workers = connections,
#          at each of RATES (1000 10000) ops/s for SECS (20) seconds, each
#          tool right after the other; soakd's dispatch delay (intended
#          start -> send) p50/p99 at each rate, so a cheaper soakd that
#          sends later shows. Without go-ycsb only soakd's figures print.
#          After each, this machine's floor at that rate (bench/wakefloor):
#          the CPU of one wake-up at a due time, waited for as soakd's
#          scheduler waits, with nothing else to do, and its lateness.
#   idle   an idle sidecar's share of a core: RATE=10 for IDLE_SECS (60),
#          its whole process, start-up and load probe included; and its
#          steady state, the soakd process's CPU from 5 s after its start
#          to 5 s before its end (/proc/PID/stat, 10 ms ticks).
#   demo   the zero-config demo's peak RSS (built-in targets, DEMO_SECS, 30).
#
# Each figure prints as a key=value line per run, then a table of medians
# and min/median/max over the runs.
#
#   bench/cpu.sh
#   RATES="1000" RUNS=5 SECS=30 bench/cpu.sh
#   SLACK=1ms PARTS=rates bench/cpu.sh   soakd with SOAKD_KV_SLACK=1ms
#   PARTS="idle demo" RUNS=5 bench/cpu.sh
#
# go-ycsb paces with -p target=RATE; soakd with SOAKD_KV_RATE=RATE (open
# loop, latency from the intended start). Both load nothing: the records
# are loaded before the first run when the server does not hold exactly
# RECORDS keys (by go-ycsb, or by soakd when go-ycsb is missing), and
# soakd's LOAD=auto probe finds them.
#
# Env: PARTS="rates idle demo", RUNS=3, THREADS=16, RATES="1000 10000",
#      SECS=20, IDLE_SECS=60, DEMO_SECS=30, SOAKD_BIN, SLACK (soakd's
#      SLACK in the rates part; default: soakd's default, 100us).
set -uo pipefail
# shellcheck source=bench/kv-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/kv-lib.sh"

PARTS=${PARTS:-rates idle demo}
THREADS=${THREADS:-16}
RATES=${RATES:-1000 10000}
SECS=${SECS:-20}
IDLE_SECS=${IDLE_SECS:-60}
SLACK=${SLACK:-}
slack=()
[ -n "$SLACK" ] && slack=(SOAKD_KV_SLACK="$SLACK")
DEMO_SECS=${DEMO_SECS:-30}
RECORDS=100000

part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
for p in $PARTS; do
	case $p in rates | idle | demo) ;; *) die "PARTS: unknown part '$p' (want rates, idle, demo)" ;; esac
done

YCSB=
if part rates; then
	YCSB=$(peer_bin go-ycsb) || {
		YCSB=
		log "no go-ycsb (run $PEERS_DIR/install.sh ycsb): soakd's figures only"
	}
fi
command -v jq >/dev/null || die "no jq"
SOAKD=$(build_soakd)
if part rates; then
	WAKEFLOOR=$OUT/wakefloor
	(cd "$root" && go build -o "$WAKEFLOOR" ./bench/wakefloor) || die "cannot build bench/wakefloor"
fi
if part rates || part idle; then
	ensure_redis
	trap stop_redis EXIT
fi
echo "# soakd vs go-ycsb, CPU per operation $(date -u +%Y-%m-%dT%H:%M:%SZ) nproc=$(nproc) load=$(cut -d' ' -f1 /proc/loadavg) port=$REDIS_PORT threads=$THREADS runs=$RUNS parts=\"$PARTS\" logs=$OUT"

# children_cpu VAR: sets VAR to the user + system seconds of every child
# this shell has waited for, so far (the second line of `times`). `times`
# must run in this shell, not in a $(...) subshell: a fork starts with no
# children's time.
children_cpu() {
	times >"$OUT/times"
	printf -v "$1" '%s' "$(awk 'NR == 2 {
		s = 0
		for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] }
		printf "%.3f\n", s
	}' "$OUT/times")"
}

props=$OUT/workloada
printf '%s\n' workload=core readallfields=true readproportion=0.5 updateproportion=0.5 \
	scanproportion=0 insertproportion=0 requestdistribution=uniform >"$props"
common=(-p recordcount=$RECORDS -p "redis.addr=127.0.0.1:$REDIS_PORT" -p redis.datatype=hash)
# kv: the soakd settings of the records both tools use.
kv=(SOAKD_KV_TARGET="redis://127.0.0.1:$REDIS_PORT?index=false" SOAKD_KV_WORKLOAD=a
	SOAKD_KV_RECORDS=$RECORDS SOAKD_KV_DATA_TYPE=hash SOAKD_KV_FIELDS=10 SOAKD_KV_FIELD_LENGTH=100
	SOAKD_KV_KEY_PREFIX=usertable/)

if { part rates || part idle; } && [ "$(rcli dbsize)" != $RECORDS ]; then
	rcli flushall >/dev/null
	if [ -n "$YCSB" ]; then
		"$YCSB" load redis -P "$props" "${common[@]}" -p threadcount=16 >"$OUT/ycsb-load.log" 2>&1 ||
			die "go-ycsb load failed, see $OUT/ycsb-load.log"
	else
		soakd_run "$OUT/soakd-load.log" "$OUT/soakd-load.json" "${kv[@]}" SOAKD_KV_RATE=max \
			SOAKD_KV_WORKERS=16 SOAKD_KV_DURATION=1s SOAKD_KV_LOAD=on ||
			die "soakd load failed, see $OUT/soakd-load.log"
	fi
fi
if part rates || part idle; then
	n=$(rcli dbsize)
	[ "$n" = $RECORDS ] || die "loaded $n records, want $RECORDS"
fi

# ycsb_ops LOG: the operations go-ycsb's final summary counts.
ycsb_ops() {
	awk '/^Run finished, takes/ { done = 1; next }
	done && $1 == "TOTAL" { for (i = 1; i <= NF; i++) if ($i == "Count:") { c = $(i + 1); sub(/,$/, "", c) } }
	END { print c + 0 }' "$1"
}
us_per_op() { awk -v c="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.1f", c / n * 1e6; else print "-" }'; }

rates_run() {
	local r=$1 rate log sum c0 c1 cpu ops y s d50 d99
	for rate in $RATES; do
		y=-
		if [ -n "$YCSB" ]; then
			log=$OUT/ycsb-$rate-$r.log
			children_cpu c0
			timeout "${BENCH_TIMEOUT:-300}" "$YCSB" run redis -P "$props" "${common[@]}" -p target="$rate" \
				-p operationcount=$((rate * SECS)) -p threadcount="$THREADS" >"$log" 2>&1 || log "go-ycsb $rate/s run $r failed, see $log"
			children_cpu c1
			ops=$(ycsb_ops "$log")
			cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }')
			y=$(us_per_op "$cpu" "$ops")
			echo "figure=cpu_per_op tool=go-ycsb run=$r rate=$rate ops=$ops cpu_s=$cpu us_per_op=$y"
		fi

		log=$OUT/soakd-$rate-$r.log
		sum=$OUT/soakd-$rate-$r.json
		children_cpu c0
		soakd_run "$log" "$sum" "${kv[@]}" "${slack[@]}" SOAKD_KV_RATE="$rate" SOAKD_KV_WORKERS="$THREADS" \
			SOAKD_KV_DURATION="${SECS}s" SOAKD_KV_DISTRIBUTION=uniform SOAKD_KV_LOAD=auto SOAKD_KV_WATCH_INTERVAL=0 ||
			log "soakd $rate/s run $r failed (exit $?), see $log"
		children_cpu c1
		cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }')
		read -r ops d50 d99 < <(jq -r '.workloads[] | select(.phase == "run") |
			"\(.units) \(.dispatch_seconds.p50 * 1e9 | round / 1000) \(.dispatch_seconds.p99 * 1e9 | round / 1000)"' "$sum" 2>/dev/null || echo "0 0 0")
		s=$(us_per_op "$cpu" "$ops")
		echo "figure=cpu_per_op tool=soakd run=$r rate=$rate slack=${SLACK:-default} ops=$ops cpu_s=$cpu us_per_op=$s dispatch_p50_us=$d50 dispatch_p99_us=$d99"
		res[ycsb,$rate,$r]=$y
		res[soakd,$rate,$r]="$s $d50 $d99"

		# The machine's floor at this rate: a wake-up per due time as the
		# scheduler waits, with nothing else to do (bench/wakefloor).
		# (a command substitution, which the shell waits for: its CPU
		# must not land in the next run's children_cpu)
		read -r w l50 l99 <<<"$("$WAKEFLOOR" -rate "$rate" -duration "${SECS}s" |
			tr ' ' '\n' | awk -F= '{ v[$1] = $2 } END { print v["cpu_us_per_wakeup"], v["late_p50_us"], v["late_p99_us"] }')"
		echo "figure=wake_floor run=$r rate=$rate cpu_us_per_wakeup=$w late_p50_us=$l50 late_p99_us=$l99"
		res[floor,$rate,$r]="$w $l50 $l99"
	done
}

# soakd_pid PID: the soakd process among PID's descendants (soakd_run runs
# it under env and timeout).
soakd_pid() {
	local c
	for c in $(pgrep -P "$1"); do
		if [ "$(readlink -f "/proc/$c/exe" 2>/dev/null)" = "$(readlink -f "$SOAKD")" ]; then
			echo "$c"
			return
		fi
		soakd_pid "$c"
	done
}

# The idle sidecar: its whole process, load probe and start-up included;
# and its steady state, from 5 s after the start to 5 s before the end
# (IDLE_SECS above 10), read from /proc.
idle_run() {
	local r=$1 log=$OUT/soakd-idle-$r.log c0 c1 h0 h1 h2 h3 idle bg pid t0='' t1='' steady=-
	children_cpu c0
	soakd_run "$log" "$OUT/soakd-idle-$r.json" "${kv[@]}" SOAKD_KV_RATE=10 SOAKD_KV_WORKERS="$THREADS" \
		SOAKD_KV_DURATION="${IDLE_SECS}s" SOAKD_KV_LOAD=auto &
	bg=$!
	# The processes reading /proc (pgrep, readlink, awk) are this shell's
	# children too: their CPU (h1 - h0 + h3 - h2) is not soakd's.
	h0=0 h1=0 h2=0 h3=0
	if [ "$IDLE_SECS" -gt 10 ]; then
		sleep 5
		children_cpu h0
		pid=$(soakd_pid "$bg")
		[ -n "$pid" ] && t0=$(pid_ticks "$pid")
		children_cpu h1
		if [ -n "$pid" ]; then
			sleep $((IDLE_SECS - 10))
			children_cpu h2
			t1=$(pid_ticks "$pid")
			children_cpu h3
		fi
	fi
	wait "$bg" || log "soakd idle run $r failed (exit $?), see $log"
	children_cpu c1
	idle=$(awk -v a="$c0" -v b="$c1" -v h="$h0 $h1 $h2 $h3" -v s="$IDLE_SECS" 'BEGIN {
		split(h, x, " ")
		printf "%.2f", (b - a - (x[2] - x[1]) - (x[4] - x[3])) / s * 100
	}')
	if [ -n "$t0" ] && [ -n "$t1" ]; then
		steady=$(awk -v a="$t0" -v b="$t1" -v s=$((IDLE_SECS - 10)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz / s * 100 }')
	fi
	echo "figure=idle_sidecar tool=soakd run=$r rate=10 secs=$IDLE_SECS core_percent=$idle steady_core_percent=$steady"
	res[idle,$r]=$idle
	res[steady,$r]=$steady
}

# The zero-config demo (built-in targets): peak RSS, read from the
# kernel's high-water mark just before it exits.
demo_run() {
	local r=$1 log=$OUT/soakd-demo-$r.log pid hwm=0 v mb
	env -i PATH="$PATH" HOME="${HOME:-/root}" SOAKD_LISTEN=127.0.0.1:0 "$SOAKD" --duration "${DEMO_SECS}s" >"$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
		[ -n "$v" ] && hwm=$v
		sleep 0.5
	done
	wait "$pid" || log "the demo run $r failed, see $log"
	mb=$(awk -v k="$hwm" 'BEGIN { printf "%.1f", k / 1024 }')
	echo "figure=demo_rss tool=soakd run=$r secs=$DEMO_SECS peak_rss_mb=$mb"
	res[demo,$r]=$mb
}

declare -A res
for ((r = 1; r <= RUNS; r++)); do
	part rates && rates_run "$r"
	part idle && idle_run "$r"
	part demo && demo_run "$r"
done

# runs KEY: res[KEY,run] of each run, a line each.
runs() { local r; for ((r = 1; r <= RUNS; r++)); do echo "${res[$1,$r]}"; done; }

echo
echo "| $RUNS runs | median | min / median / max |"
echo "|---|---:|---:|"
if part rates; then
	for rate in $RATES; do
		col() { for ((r = 1; r <= RUNS; r++)); do echo "${res[$1,$rate,$r]}" | awk -v f="$2" '{ print $f }'; done; }
		s=$(col soakd 1 | median) y=$(col ycsb 1 | median)
		each=$(for ((r = 1; r <= RUNS; r++)); do ratio "$(echo "${res[soakd,$rate,$r]}" | awk '{ print $1 }')" "${res[ycsb,$rate,$r]}"; echo; done | spread)
		echo "| fixed $rate ops/s, ${SECS}s, YCSB A, $THREADS workers: CPU µs/op (go-ycsb $y, soakd / go-ycsb $(ratio "$s" "$y"), each run's $each) | $s | $(col soakd 1 | spread) |"
		echo "| the same, dispatch delay p50 µs | $(col soakd 2 | median) | $(col soakd 2 | spread) |"
		echo "| the same, dispatch delay p99 µs | $(col soakd 3 | median) | $(col soakd 3 | spread) |"
		echo "| this machine's floor at $rate wake-ups/s (bench/wakefloor): CPU µs per wake-up | $(col floor 1 | median) | $(col floor 1 | spread) |"
		echo "| the same, wake-up lateness p50 µs | $(col floor 2 | median) | $(col floor 2 | spread) |"
		echo "| the same, wake-up lateness p99 µs | $(col floor 3 | median) | $(col floor 3 | spread) |"
	done
fi
if part idle; then
	echo "| idle sidecar (10 ops/s, ${IDLE_SECS}s), % of a core | $(runs idle | median) | $(runs idle | spread) |"
	echo "| the same, steady state (from 5 s after the start to 5 s before the end) | $(runs steady | median) | $(runs steady | spread) |"
fi
if part demo; then
	echo "| zero-config demo (${DEMO_SECS}s), peak RSS MB | $(runs demo | median) | $(runs demo | spread) |"
fi
