#!/usr/bin/env bash
# Install the Debian packages the test suite uses (real components, DESIGN §3), if missing.
# Idempotent; needs root (or sudo). Later issues add packages to PACKAGES.
set -euo pipefail

# package -> a file it installs (to tell whether it is there already)
declare -A PACKAGES=(
  [chromium]=/usr/bin/chromium
  [postgresql-15]=/usr/lib/postgresql/15/bin/pgbench
  [postgresql-client-15]=/usr/lib/postgresql/15/bin/psql
  [fio]=/usr/bin/fio
  [prometheus]=/usr/bin/prometheus
  [prometheus-node-exporter]=/usr/bin/prometheus-node-exporter
  [prometheus-process-exporter]=/usr/bin/prometheus-process-exporter
  [sysstat]=/usr/bin/sadf
  [stress-ng]=/usr/bin/stress-ng
)

missing=()
for package in "${!PACKAGES[@]}"; do
  [ -e "${PACKAGES[$package]}" ] || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing Debian packages: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
