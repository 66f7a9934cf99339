#!/usr/bin/env bash
# Installs what soakd's integration tests need, if it is missing, on a
# Debian machine with Go: PostgreSQL server binaries, redis-server and
# Prometheus from Debian's packages, and InfluxDB 1.8.10 and
# VictoriaMetrics v1.151.0 built with `go install`. Idempotent; each step is skipped when its result is there.
# Packages' own services are kept from starting (tests start their own
# servers on free loopback ports).
set -euo pipefail

log() { printf 'install-test-deps: %s\n' "$*" >&2; }

need_apt=()
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need_apt+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)

if [ ${#need_apt[@]} -gt 0 ]; then
	sudo=""
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null 2>&1 || { log "need root (or sudo) to apt-get install ${need_apt[*]}"; exit 1; }
		sudo=sudo
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
# product.
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
log "ok: postgres $(ls -d /usr/lib/postgresql/*/bin | tail -1), $(command -v redis-server), $(command -v prometheus), $influxd, $vm"
