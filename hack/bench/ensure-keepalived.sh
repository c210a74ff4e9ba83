#!/usr/bin/env bash
# Makes sure keepalived (Debian package) is installed for the failover benchmark, without
# letting the package start its system daemon: a policy-rc.d that denies every start is
# in place during the install and removed afterwards. The benchmark runs its own
# keepalived instances inside network namespaces with their own configuration files.
set -euo pipefail
if command -v keepalived >/dev/null; then
  exit 0
fi
policy=/usr/sbin/policy-rc.d
created=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod 755 "$policy"
  created=1
fi
cleanup() { if [ -n "$created" ]; then rm -f "$policy"; fi; }
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends keepalived >&2
# The package may have enabled its unit; the benchmark never wants the system daemon.
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  systemctl disable --now keepalived >/dev/null 2>&1 || true
fi
command -v keepalived >/dev/null
