#!/usr/bin/env bash
# Runs a command on a machine made noisy on purpose: two busy loops, one
# pinned to CPU 0 and one to CPU 1 (taskset), compete with it for the
# whole run, as other jobs do on a shared 2-core CI machine. A test that
# asserts a wall-clock figure fails here; one that compares with a floor
# measured in the same test, or runs on the fake clock of testing/synctest,
# does not. The loops are killed when the command ends, however it ends,
# and the command's exit status is the script's.
#
#   scripts/noisy.sh ./scripts/test.sh
#   scripts/noisy.sh go test -count=1 ./daemon/ ./pace/
#
# NOISY_CPUS (default "0 1") lists the CPUs to load, one loop each.
set -euo pipefail
if [ $# -eq 0 ]; then
	echo "usage: $0 COMMAND [ARG...]" >&2
	exit 2
fi
command -v taskset >/dev/null || { echo "noisy.sh: taskset not found (util-linux)" >&2; exit 2; }

pids=()
stop() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for cpu in ${NOISY_CPUS:-0 1}; do
	taskset -c "$cpu" sh -c 'while :; do :; done' &
	pids+=("$!")
done
echo "noisy.sh: busy loops on CPU ${NOISY_CPUS:-0 1} (pids ${pids[*]})" >&2

status=0
"$@" || status=$?
exit "$status"
