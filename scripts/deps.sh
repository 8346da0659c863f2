#!/usr/bin/env bash
# Installs the Debian packages the project needs, and only those that are missing.
# Usage: scripts/deps.sh [build|test|bench]   (build: compile, PostgreSQL, tests; test: + promtool, glewlwyd, Patroni and etcd; bench: + wrk, nginx, Patroni and etcd)
# Python (venv) runs schemathesis from PyPI in make test and the benchmark driver; never the service.
set -euo pipefail
want=(pkg-config libpq-dev libssl-dev libmicrohttpd-dev libgnutls28-dev libsimdjson-dev libcurl4-openssl-dev postgresql postgresql-contrib pgbouncer curl ca-certificates python3 python3-venv python3-yaml)
case "${1:-build}" in
  bench) want+=(wrk nginx-light patroni etcd-server) ;;   # the failover benchmark runs on Patroni
  test) want+=(prometheus graphviz glewlwyd patroni etcd-server) ;;   # promtool: the metrics and alert rules checks; dot: the docs check; glewlwyd: a real IdP; Patroni: the failover suite
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
