#!/usr/bin/env bash
# Data generation side by side: `soakd generate --format influx` vs
# `tsbs_generate_data --use-case=cpu-only --format=influx`, scale 100 and
# 4000, 1 day at 10 s, both to /dev/null (or, OUT=file, each to a file on
# disk), runs interleaved (tsbs, soakd, tsbs, soakd, ...) so both see the
# same machine load; median of RUNS, and the ratio of each run's pair
# (min/median/max). Then the peak RSS of `soakd generate --source massive`
# at 1,000,000 devices x 100 columns.
#
# One key=value line per figure on stdout (the format of
# shared/peers/RESULTS.md); progress on stderr.
#
# Env: RUNS=3  SCALES="100 4000"  TSBS=/opt/peers/bin/tsbs_generate_data
#      SOAKD=path to a soakd binary (default: built from ./cmd/soakd)
#      MASSIVE_SPAN=+1m  ONLY="tsbs massive"
#      OUT=null|file  where each tool's standard output goes: /dev/null, or
#                     a file in OUT_DIR (default: a temporary directory),
#                     the same way for both, deleted after each run (scale
#                     100 is 298 MB of line protocol, 4000 about 12 GB)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${RUNS:-3}
SCALES=${SCALES:-100 4000}
TSBS=${TSBS:-/opt/peers/bin/tsbs_generate_data}
MASSIVE_SPAN=${MASSIVE_SPAN:-+1m}
ONLY=${ONLY:-tsbs massive}
OUT=${OUT:-null}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" ${outdir:+"$outdir"}' EXIT
outdir=
case $OUT in
null) ;;
file)
	outdir=$(mktemp -d "${OUT_DIR:-${TMPDIR:-/tmp}}/gen-out.XXXXXX") || { echo "gen.sh: OUT_DIR=${OUT_DIR:-}: cannot make a directory there" >&2; exit 2; }
	;;
*) echo "gen.sh: OUT=$OUT: want null or file" >&2; exit 2 ;;
esac
log() { echo "gen.sh: $*" >&2; }
wants() { case " $ONLY " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

soakd_from=${SOAKD:-}
if [ -z "${SOAKD:-}" ]; then
	(cd "$root" && go build -o "$tmp/soakd" ./cmd/soakd) || { log "cannot build soakd"; exit 1; }
	SOAKD=$tmp/soakd
	soakd_from=$(cd "$root" && git rev-parse --short HEAD 2>/dev/null)
fi

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.0f\", $1 }"; }
calc2() { awk "BEGIN { printf \"%.2f\", $1 }"; }
calc3() { awk "BEGIN { printf \"%.3f\", $1 }"; }
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
lo() { printf '%s\n' "$@" | sort -g | head -n1; }
hi() { printf '%s\n' "$@" | sort -g | tail -n1; }
# timed CMD...: seconds on stdout; the command's output goes to /dev/null or,
# OUT=file, to $outdir/out, whose size is left in $tmp/bytes and which is
# deleted once timed, so the next run starts with the same free page cache.
timed() {
	local t0 t1 dest=/dev/null
	[ -n "$outdir" ] && dest=$outdir/out
	t0=$(now)
	"$@" >"$dest" 2>>"$tmp/err.log" || { log "failed: $* (see below)"; cat "$tmp/err.log" >&2; exit 1; }
	t1=$(now)
	if [ -n "$outdir" ]; then
		stat -c %s "$dest" >"$tmp/bytes"
		rm -f "$dest"
	fi
	calc3 "$t1 - $t0"
}
outname() { [ -n "$outdir" ] && echo file || echo /dev/null; }
bytes() { if [ -n "$outdir" ]; then echo " bytes=$(cat "$tmp/bytes")"; fi; }

echo "# soakd gen bench $(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(hostname) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ,)"
echo "# versions: tsbs=$(go version -m "$TSBS" 2>/dev/null | awk '$1 == "mod" { print $3; exit }') go=$(go env GOVERSION) soakd=$soakd_from out=$OUT"

if wants tsbs; then
	[ -x "$TSBS" ] || { echo "figure=gen_influx tool=tsbs_generate_data status=failed reason=not-installed"; exit 1; }
	for scale in $SCALES; do
		rows=$((scale * 8640))
		tsbs_s=() soakd_s=() ratios=() tsbs_b= soakd_b=
		for ((i = 1; i <= RUNS; i++)); do
			log "scale $scale run $i/$RUNS: tsbs_generate_data"
			tsbs_s+=("$(timed "$TSBS" --use-case=cpu-only --seed=123 --scale="$scale" \
				--timestamp-start=2016-01-01T00:00:00Z --timestamp-end=2016-01-02T00:00:00Z \
				--log-interval=10s --format=influx)")
			tsbs_b=$(bytes)
			log "scale $scale run $i/$RUNS: soakd generate"
			soakd_s+=("$(timed "$SOAKD" generate --source devops --seed 123 --scale "$scale" \
				--start 2016-01-01T00:00:00Z --end 2016-01-02T00:00:00Z --interval 10s --format influx --quiet)")
			soakd_b=$(bytes)
			ratios+=("$(calc2 "${tsbs_s[-1]} / ${soakd_s[-1]}")")
		done
		tm=$(median "${tsbs_s[@]}")
		sm=$(median "${soakd_s[@]}")
		echo "figure=gen_influx tool=tsbs_generate_data use_case=cpu-only scale=$scale span=1d interval=10s out=$(outname)$tsbs_b" \
			"rows=$rows runs=$RUNS secs_median=$tm rows_per_s=$(calc "$rows / $tm") metrics_per_s=$(calc "$rows * 10 / $tm")" \
			"rows_per_s_range=$(calc "$rows / $(hi "${tsbs_s[@]}")")-$(calc "$rows / $(lo "${tsbs_s[@]}")")"
		echo "figure=gen_influx tool=soakd source=devops scale=$scale span=1d interval=10s out=$(outname)$soakd_b" \
			"rows=$rows runs=$RUNS secs_median=$sm rows_per_s=$(calc "$rows / $sm") metrics_per_s=$(calc "$rows * 10 / $sm")" \
			"rows_per_s_range=$(calc "$rows / $(hi "${soakd_s[@]}")")-$(calc "$rows / $(lo "${soakd_s[@]}")") workers=$(nproc)"
		# The goal is issue 22's: generate at least 4x tsbs_generate_data.
		echo "figure=gen_influx_ratio scale=$scale out=$(outname) soakd_over_tsbs=$(calc2 "$tm / $sm")" \
			"run_ratios_min_median_max=$(lo "${ratios[@]}")/$(median "${ratios[@]}")/$(hi "${ratios[@]}") goal=4"
	done
fi

if wants massive; then
	log "massive: 1000000 devices x 100 columns, END=$MASSIVE_SPAN"
	t0=$(now)
	/usr/bin/time -f '%M' -o "$tmp/rss" "$SOAKD" generate --source massive --scale 1000000 --columns 100 \
		--start 2016-01-01T00:00:00Z --end "$MASSIVE_SPAN" --interval 10s --format influx >/dev/null 2>"$tmp/massive.log" ||
		{ cat "$tmp/massive.log" >&2; exit 1; }
	t1=$(now)
	secs=$(calc3 "$t1 - $t0")
	rows=$(sed -n 's/^generated \([0-9]*\) rows.*/\1/p' "$tmp/massive.log")
	echo "figure=gen_massive_rss tool=soakd source=massive scale=1000000 columns=100 span=$MASSIVE_SPAN interval=10s out=/dev/null" \
		"rows=$rows secs=$secs rows_per_s=$(calc "$rows / $secs") values_per_s=$(calc "$rows * 100 / $secs")" \
		"max_rss_mb=$(calc "$(cat "$tmp/rss") / 1024") goal_mb=200"
fi
