#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 3s):
# the parsers of settings, URLs and grammars, the line-protocol encoder
# and the sinks' handling of server replies. A failing input is written
# to the package's testdata/fuzz/ and then replays in every `go test`.
# scripts/test.sh runs it; run it alone with a longer FUZZTIME to dig.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-3s}
# A target's output is kept only when it fails: the fuzzer's own report
# (a crasher, or the fuzzing engine itself giving up) is what says why.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go list -f '{{if .TestGoFiles}}{{.ImportPath}}{{end}}' ./... | while read -r pkg; do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz: $pkg $target ($fuzztime)" >&2
		ok=1
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >"$out" 2>&1 || ok=0
		# Go 1.26's fuzzing coordinator can end a run at -fuzztime with a
		# bare "context deadline exceeded" and no failing input when a busy
		# machine starves its workers (go.dev/issue/75804, fixed in Go
		# 1.27). That one outcome, and only it, is run again once; a crasher
		# always says "Failing input written" and fails at once.
		if [ $ok = 0 ] && grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
			echo "fuzz: $pkg $target: the fuzzing engine's deadline race, no failing input; once more" >&2
			ok=1
			go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >"$out" 2>&1 || ok=0
		fi
		if [ $ok = 0 ]; then
			cat "$out" >&2
			echo "fuzz: $pkg $target failed" >&2
			exit 1
		fi
	done
done
