#!/usr/bin/env bash
# Mutation audit: plants known bugs in the product code one at a time, in
# a scratch copy of the tree, and runs the tests that should catch each.
# A mutation the tests do not notice SURVIVED: a figure users read could
# be wrong without any test failing. It is not part of scripts/test.sh
# or CI; run it after changing the code or tests these entries cover.
#
#   scripts/mutate.sh            every mutation
#   scripts/mutate.sh drift      the mutations whose name contains "drift"
#   scripts/mutate.sh -l         list them
#
# Each entry is a sed script applied to one file. If the file is
# unchanged afterwards (the code moved or was rewritten), the entry
# reports "did not apply" instead of silently testing unmutated code:
# update the sed script. Before the mutations, each test selection runs
# once on the unmutated copy; one that fails there makes its entries
# "baseline fails" (a kill would mean nothing). MUTATE_BASELINE=0 skips
# that. The exit code is 1 when any mutation survived or did not apply.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

names=() files=() seds=() pkgs=() runs=()
# mutation NAME FILE SED PACKAGE RUN: when SED is applied to FILE, go test
# -run RUN PACKAGE must fail.
mutation() { names+=("$1") files+=("$2") seds+=("$3") pkgs+=("$4") runs+=("$5"); }

# --- the engine: accounting, open loop, drops -----------------------
# A failed batch counts its stored rows as failed too: the books no
# longer balance (scheduled = acknowledged + failed + dropped + in flight).
mutation accounting-failed-counts-stored daemon/retry.go \
	's/c.failed += int64(b.Len() - stored)/c.failed += int64(b.Len())/' \
	./daemon/ 'TestPartialWritesCountStoredRows|TestAccountingInvariant'
# Response latency measured from the actual send instead of the intended
# start: coordinated omission, the stall disappears from the figures.
mutation latency-from-send daemon/retry.go \
	's/r.succeeded(w, n, done-due, done-sendStart)/r.succeeded(w, n, done-sendStart, done-sendStart)/' \
	./daemon/ 'TestCoordinatedOmission'
# The scheduler's catch-up after MAX_LAG drops one batch too many.
mutation bulk-drop-one-batch-too-many daemon/scheduler.go \
	's/n := math.Max(units, math.Floor((cutoff-sent)\/B)\*B)/n := math.Max(units, math.Floor((cutoff-sent)\/B)*B+B)/' \
	./daemon/ 'TestScheduler'
# A ticket no worker takes is dropped only after twice MAX_LAG: while the
# target stalls, the counts scheduled and dropped fall behind the clock.
mutation stalled-ticket-waits-twice-max-lag daemon/scheduler.go \
	's/timer.Reset(max(due+maxLag-now, 0))/timer.Reset(max(due+2*maxLag-now, 0))/' \
	./daemon/ 'TestSchedule|TestDropsAccounting'
# /metrics' soakd_service_seconds fed from the response histograms.
mutation metrics-service-reads-response daemon/metrics.go \
	's/lat\[op\].service.add(&oh.service.prom)/lat[op].service.add(\&oh.response.prom)/' \
	./daemon/ 'Metric|TestCoordinatedOmission'

# --- the summary --------------------------------------------------------
# units_per_second from the units scheduled instead of acknowledged.
mutation summary-rate-from-scheduled daemon/summary.go \
	's/ws.UnitRate = float64(ws.Units) \/ secs/ws.UnitRate = float64(ws.Scheduled) \/ secs/' \
	./daemon/ 'TestSummaryRates'
# /status's achieved_rate (and the progress line's) from the units
# scheduled over the last 10 s instead of acknowledged.
mutation status-achieved-from-scheduled daemon/reporter.go \
	's/acked: ps.snapshot().acked,/acked: ps.snapshot().scheduled,/' \
	./daemon/ 'TestStatusAchievedRate|TestHTTP|TestHistory'

# --- thresholds -----------------------------------------------------------
# A whole-run service.pXX check judged on response latency.
mutation whole-run-service-reads-response daemon/observe.go \
	'/^func (t \*Totals) Latency(/,/^}/ s/return oh.service.total/return oh.response.total/' \
	./thresholds/judge/ 'Threshold|Judge'
# A windowed check never counts a failing window.
mutation window-failure-not-counted thresholds/judge/judge.go \
	'/^func (j \*judge) judgeWindow(/,/^}/ s/st.failed++/st.failed += 0/' \
	./thresholds/judge/ 'TestJudgeWindows|TestJudgeCountsPerWindow'
# Drift relative to the late window instead of the early one.
mutation drift-relative-to-late thresholds/judge/judge.go \
	's/change = (late - st.early.Value) \/ st.early.Value/change = (late - st.early.Value) \/ late/' \
	./thresholds/judge/ 'TestJudgeDrift|TestDriftThreshold'
# A check marked ! never stops the run.
mutation abort-ignored thresholds/judge/judge.go \
	'/^func (j \*judge) abortLocked(/,/^}/ s/if !t.Abort {/if t.Abort {/' \
	./thresholds/judge/ 'TestAbortOnFail'
# achieved as a rate from the units scheduled instead of acknowledged.
mutation threshold-achieved-from-scheduled thresholds/judge/judge.go \
	's/return float64(c.Acked) \/ secs, secs > 0/return float64(c.Scheduled) \/ secs, secs > 0/' \
	./thresholds/judge/ 'Threshold|Judge|TestAchievedCountsAcknowledged'

# --- capacity -------------------------------------------------------------
# The capacity SLO judged on service latency instead of response latency
# (a capacity test where the two differ kills it).
mutation capacity-slo-on-service capacity/driver.go \
	's/p99 := time.Duration(st.Response.P99 \* 1e9); p99 > s.cc.SLOP99/p99 := time.Duration(st.Service.P99 * 1e9); p99 > s.cc.SLOP99/' \
	./cmd/soakd/ 'TestCapacityKneeOfDeterministicServer'
# A step starts while the previous one's backlog still drains: the knee
# comes out low.
mutation capacity-no-drain capacity/driver.go \
	's/took, drained, ok := s.drain(ctx, p)/took, drained, ok := time.Duration(0), true, true/' \
	./cmd/soakd/ 'TestCapacityKneeOfDeterministicServer'
# A failing step's bottleneck never blames the target's service time.
mutation capacity-bottleneck-ignores-service capacity/search.go \
	's/case st.Service.Count > 0 \&\& baseService > 0 \&\& st.Service.P50 > serviceRise\*baseService:/case false:/' \
	./capacity/ 'TestCapacityDiagnose'
# The busy sampler never sees every worker busy: soakd's workers are
# never named as the bottleneck.
mutation capacity-never-all-busy capacity/driver.go \
	's/if p.AllWriting() {/if false \&\& p.AllWriting() {/' \
	./cmd/soakd/ 'TestCapacityBlamesSoakdsWorkers'
# SLO_OP naming an op the workload never issues is not refused.
mutation capacity-slo-op-unchecked capacity/driver.go \
	's/if w.Name() != s.name || s.cc.SLOOp == "" {/if true {/' \
	./cmd/soakd/ 'TestCapacitySLOOpNeverIssued'
# A run that drops work never names its workers as the cause.
mutation drop-cause-never-workers daemon/dropcause.go \
	's/if share >= busyLimitRun {/if false {/' \
	./cmd/soakd/ 'TestRunDropsWorkNamesBottleneck'
# A step's achieved rate from the units scheduled instead of acknowledged.
mutation capacity-achieved-from-scheduled capacity/driver.go \
	's/st.Achieved = float64(c.Acked) \/ st.Seconds/st.Achieved = float64(c.Scheduled) \/ st.Seconds/' \
	./capacity/ 'Capacity'

# --- verification ---------------------------------------------------------
# A unit read back twice is not reported as duplicated.
mutation verify-duplicates-missed readback/verifier.go \
	's/case got.Len() > 1:/case got.Len() > 2:/' \
	./readback/ 'TestVerifyDuringRun'

if [[ ${1:-} == -l ]]; then
	for i in "${!names[@]}"; do printf '%-40s %s  go test -run '\''%s'\'' %s\n' "${names[i]}" "${files[i]}" "${runs[i]}" "${pkgs[i]}"; done
	exit 0
fi
filter=${1:-}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/soakd-mutate.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
# A copy of the working tree as it is (uncommitted changes included),
# without .git: the mutations never touch the real tree.
tar -C "$root" --exclude=.git -cf - . | tar -C "$scratch" -xf -
cd "$scratch"

declare -A baseline=()
results=() survived=0
for i in "${!names[@]}"; do
	name=${names[i]} file=${files[i]} pkg=${pkgs[i]} run=${runs[i]}
	[[ -z $filter || $name == *"$filter"* ]] || continue
	key="$pkg $run"
	if [[ ${MUTATE_BASELINE:-1} != 0 && -z ${baseline[$key]:-} ]]; then
		echo "baseline: go test -run '$run' $pkg" >&2
		if go test -count=1 -timeout 600s -run "$run" "$pkg" >"$scratch/baseline.log" 2>&1; then
			baseline[$key]=ok
		else
			baseline[$key]=fails
			sed 's/^/    /' "$scratch/baseline.log" | tail -20 >&2
		fi
	fi
	verdict=""
	cp "$file" "$scratch/orig"
	sed -i -e "${seds[i]}" "$file"
	if cmp -s "$file" "$scratch/orig"; then
		verdict="did not apply"
	elif [[ ${baseline[$key]:-ok} == fails ]]; then
		verdict="baseline fails"
	else
		echo "mutation $name: go test -run '$run' $pkg" >&2
		if go test -count=1 -timeout 600s -run "$run" "$pkg" >"$scratch/test.log" 2>&1; then
			verdict="SURVIVED"
		elif grep -q -e '\[build failed\]' -e '\[setup failed\]' "$scratch/test.log"; then
			verdict="does not build"
		else
			verdict="killed"
		fi
	fi
	cp "$scratch/orig" "$file"
	[[ $verdict == killed ]] || survived=1
	results+=("$(printf '%-40s %-50s %s' "$name" "$pkg -run '$run'" "$verdict")")
done

printf '%-40s %-50s %s\n' mutation "package/test" result
for r in "${results[@]}"; do echo "$r"; done
exit $survived
