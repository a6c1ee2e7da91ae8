#!/usr/bin/env bash
# What the test suites need beyond npm packages, installed when missing: a real redis-server for
# the shared-state suites, promtool for the alert rules, gcc for the bench's C client and Chromium
# for the report and dashboard pages (they fail, never skip, without them).
# Runs as the first step of `npm test`, so a fresh machine needs nothing done by hand. Debian's
# packages, through apt-get (with sudo when not root); a machine that has them already does
# nothing here.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# promtool checks deploy/prometheus's rules and runs their unit tests. Debian ships it in the
# prometheus package (19 MB), whose server a machine running systemd also starts; no test uses it.
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# The live overload bench's streaming client is C, built on first use; its suite builds it too.
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
# The page suites drive Debian's Chromium through playwright-core (which downloads no browser).
[ -x /usr/bin/chromium ] || missing+=(chromium)
exec bash "$(dirname "$0")/apt-install.sh" "${missing[@]}"
