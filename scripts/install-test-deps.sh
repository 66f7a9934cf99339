#!/usr/bin/env bash
# Installs what soakd's integration tests need, if it is missing, on a
# Debian machine with Go: PostgreSQL server binaries, redis-server,
# Prometheus and Chromium (headless, for the web console's browser tests)
# from Debian's packages, the TimescaleDB extension built into that
# PostgreSQL from the source in ../shared/servers, InfluxDB 1.8.10,
# VictoriaMetrics v1.151.0 and Prometheus v3.16 built with `go install`, and TSBS's
# tsbs_load_influx built from its pinned commit. Idempotent; each step is
# skipped when its result is there.
# Packages' own services are kept from starting (tests start their own
# servers on free loopback ports).
set -euo pipefail

log() { printf 'install-test-deps: %s\n' "$*" >&2; }

sudo=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then
	sudo=sudo
fi

need_apt=()
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need_apt+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)

if [ ${#need_apt[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ] && [ -z "$sudo" ]; then
		log "need root (or sudo) to apt-get install ${need_apt[*]}"
		exit 1
	fi
	made_policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		# Stop apt from starting redis on :6379, prometheus on :9090 and a
		# PostgreSQL cluster on :5432.
		printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
		$sudo chmod 755 /usr/sbin/policy-rc.d
		made_policy=1
	fi
	log "apt-get install ${need_apt[*]}"
	rc=0
	$sudo apt-get update -qq || rc=$?
	[ $rc -ne 0 ] || $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" || rc=$?
	[ $made_policy = 0 ] || $sudo rm -f /usr/sbin/policy-rc.d
	[ $rc -eq 0 ] || { log "apt-get failed ($rc)"; exit $rc; }
fi

# TimescaleDB 2.28.3 (its Apache-2.0 part; the newest release that still
# supports PostgreSQL 15), built into the PostgreSQL above by the script that
# sits beside its source tarball in ../shared/servers (SOAKD_SHARED_SERVERS
# to look elsewhere); about a minute cold, with cmake, gcc and
# postgresql-server-dev from apt. The repository calls that script rather
# than carrying a copy of its steps: the tarball is not in the repository
# either, so the build recipe stays in one place, beside what it builds.
shared=${SOAKD_SHARED_SERVERS:-$(cd "$(dirname "$0")/.." && pwd)/../shared/servers}
pglib=$(ls -d /usr/lib/postgresql/*/lib 2>/dev/null | tail -1)
if [ -z "$pglib" ] || [ ! -e "$pglib/timescaledb.so" ]; then
	if [ ! -x "$shared/install-timescaledb.sh" ]; then
		log "no $shared/install-timescaledb.sh to build TimescaleDB with (set SOAKD_SHARED_SERVERS to the folder holding it)"
		exit 1
	fi
	if [ "$(id -u)" != 0 ] && [ -z "$sudo" ]; then
		log "need root (or sudo) to build TimescaleDB into PostgreSQL"
		exit 1
	fi
	log "building TimescaleDB into PostgreSQL ($shared/install-timescaledb.sh)"
	t0=$(date +%s)
	$sudo "$shared/install-timescaledb.sh"
	log "built TimescaleDB in $(($(date +%s) - t0))s"
fi

# InfluxDB 1.8.10 (about 1.5 min cold). go version -m tells which version
# a binary was built from.
gobin=$(go env GOBIN)
[ -n "$gobin" ] || gobin=$(go env GOPATH)/bin
influxd=$gobin/influxd
if ! go version -m "$influxd" 2>/dev/null | grep -q 'github.com/influxdata/influxdb[[:space:]]*v1.8.10'; then
	if [ -x /opt/peers/bin/influxd ] && go version -m /opt/peers/bin/influxd 2>/dev/null | grep -q 'github.com/influxdata/influxdb[[:space:]]*v1.8.10'; then
		log "copying influxd v1.8.10 from /opt/peers/bin"
		mkdir -p "$gobin" && cp -p /opt/peers/bin/influxd "$influxd"
	else
		log "go install github.com/influxdata/influxdb/cmd/influxd@v1.8.10"
		GOFLAGS=-mod=mod GOBIN=$gobin go install github.com/influxdata/influxdb/cmd/influxd@v1.8.10
	fi
fi
# VictoriaMetrics v1.151.0 (the newest that builds with Go 1.26; about 1 min
# cold) for sinks/influx's test of the v1 line-protocol path on a second
# product, and as the second remote-write target of sinks/remotewrite (the
# first is Debian's prometheus 2.42, with its receiver on).
vm=$gobin/victoria-metrics
vmmod='github.com/VictoriaMetrics/VictoriaMetrics[[:space:]]*v1.151.0'
if ! go version -m "$vm" 2>/dev/null | grep -q "$vmmod"; then
	if [ -x /opt/peers/bin/victoria-metrics ] && go version -m /opt/peers/bin/victoria-metrics 2>/dev/null | grep -q "$vmmod"; then
		log "copying victoria-metrics v1.151.0 from /opt/peers/bin"
		mkdir -p "$gobin" && cp -p /opt/peers/bin/victoria-metrics "$vm"
	else
		log "go install github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@v1.151.0"
		GOFLAGS=-mod=mod GOBIN=$gobin go install github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@v1.151.0
	fi
fi
# Prometheus v3.16 (its module is github.com/prometheus/prometheus v0.316.0)
# as prometheus3, beside Debian's prometheus 2.42 (so neither shadows the
# other on PATH): its receiver takes Remote-Write 2.0, which 2.42 predates,
# for sinks/remotewrite's 2.0 tests. Built without the web UI's assets and,
# with -tags remove_all_sd, without the service discoveries (the cloud SDKs
# that make most of a full build; the tests scrape nothing and use its API
# only). Cold (empty build and module caches) it takes 9 CPU-minutes: 15 min
# on a 2-core machine under a load of 12-15, some 5 min idle.
prom3=$gobin/prometheus3
prom3mod='github.com/prometheus/prometheus[[:space:]]*v0.316.0'
if ! go version -m "$prom3" 2>/dev/null | grep -q "$prom3mod"; then
	log "go install github.com/prometheus/prometheus/cmd/prometheus@v0.316.0 (as prometheus3)"
	t0=$(date +%s)
	dir=$(mktemp -d "${TMPDIR:-/tmp}/soakd-prom3.XXXXXX")
	rc=0
	GOFLAGS=-mod=mod GOBIN=$dir go install -tags remove_all_sd github.com/prometheus/prometheus/cmd/prometheus@v0.316.0 || rc=$?
	if [ $rc -eq 0 ]; then
		mkdir -p "$gobin" && mv -f "$dir/prometheus" "$prom3"
	fi
	rm -rf "$dir"
	[ $rc -eq 0 ] || { log "building prometheus3 failed ($rc)"; exit $rc; }
	log "built prometheus3 in $(($(date +%s) - t0))s"
fi
# tsbs_load_influx from TSBS at the commit the peer comparisons pin, for
# internal/gencmd's TestTSBSLoaderAcceptsOutput. `go install pkg@version`
# cannot work here (the proxy refuses the module's version list, which go
# install reads for deprecations; the pseudo-version itself is served), so it
# is built, as ../shared/peers/install.sh builds it, from a throwaway main
# module that requires it (about 1 min cold). go version -m lists TSBS as the
# binary's mod or, from older Go releases, as a dep of the wrapper.
tsbsmod=github.com/timescale/tsbs
tsbsver=v0.0.0-20230921131859-37fced794d56
tsbs=$gobin/tsbs_load_influx
has_tsbs() {
	go version -m "$1" 2>/dev/null |
		awk -v m=$tsbsmod -v v=$tsbsver '($1 == "mod" || $1 == "dep") && $2 == m && $3 == v { f = 1 } END { exit !f }'
}
if ! has_tsbs "$tsbs"; then
	if [ -x /opt/peers/bin/tsbs_load_influx ] && has_tsbs /opt/peers/bin/tsbs_load_influx; then
		log "copying tsbs_load_influx $tsbsver from /opt/peers/bin"
		mkdir -p "$gobin" && cp -p /opt/peers/bin/tsbs_load_influx "$tsbs"
	else
		log "go build $tsbsmod/cmd/tsbs_load_influx ($tsbsver) in a wrapper module"
		t0=$(date +%s)
		dir=$(mktemp -d "${TMPDIR:-/tmp}/soakd-tsbs.XXXXXX")
		printf 'module soakdtestdeps/tsbs\n\ngo 1.22\n\nrequire %s %s\n' $tsbsmod $tsbsver >"$dir/go.mod"
		rc=0
		(cd "$dir" && GOFLAGS=-mod=mod go build -o "$dir/tsbs_load_influx" $tsbsmod/cmd/tsbs_load_influx) || rc=$?
		if [ $rc -eq 0 ]; then
			mkdir -p "$gobin" && mv -f "$dir/tsbs_load_influx" "$tsbs"
		fi
		rm -rf "$dir"
		[ $rc -eq 0 ] || { log "building tsbs_load_influx failed ($rc)"; exit $rc; }
		log "built tsbs_load_influx in $(($(date +%s) - t0))s"
	fi
fi
log "ok: postgres $(ls -d /usr/lib/postgresql/*/bin | tail -1) with $(ls "$pglib"/timescaledb-*.so | tail -1), $(command -v redis-server), $(command -v prometheus), $(command -v chromium), $influxd, $vm, $prom3, $tsbs"
