#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are missing (root
# only when one is). Nothing is started: policy-rc.d stops the packages'
# init scripts from starting their daemons (the tests start what they need
# themselves), and --no-install-recommends keeps out services we do not
# use. Used by install-node-deps.sh (make node-deps) and test-alerts.sh.
set -euo pipefail

missing=()
for p in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "apt-install: need root to install: ${missing[*]}" >&2
  exit 1
fi
echo "apt-install: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
policy=/usr/sbin/policy-rc.d
created_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod +x "$policy"
  created_policy=1
fi
trap '[ -n "$created_policy" ] && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}"
