#!/usr/bin/env bash
# Installs the Debian packages named, through apt-get (with sudo when not root): what the test
# suites (provision-tests.sh) and the benches (wrk) need and a fresh machine lacks.
set -euo pipefail
[ $# -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "apt-install: missing $* and no apt-get to install it; install it and run again" >&2
  exit 1
fi
sudo=''
if [ "$(id -u)" -ne 0 ]; then sudo='sudo'; fi
echo "apt-install: installing $* (Debian packages)" >&2
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
