#!/usr/bin/env bash
# Checks and tests the alerts of config/prometheus/alerts.yaml with promtool
# (make test-alerts): promtool check rules, then promtool test rules on
# config/prometheus/alerts_test.yaml. promtool reads plain rule files, so
# the PrometheusRule's spec (every line after its top-level "spec:", which
# must be the last top-level key) is written, two spaces less indented, to
# a temporary file first. promtool comes from Debian's prometheus package,
# installed when missing (root, hack/apt-install.sh); the package's daemons
# are not started.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/config/prometheus"

if ! command -v promtool >/dev/null; then
  "$root/hack/apt-install.sh" prometheus
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '
  /^spec:[[:space:]]*$/ { inspec = 1; next }
  !inspec { next }
  /^[^[:space:]#]/ { print "test-alerts: alerts.yaml: a top-level key after spec: " $0 > "/dev/stderr"; bad = 1; exit }
  /^[[:space:]]*$/ || /^#/ { print; next }
  /^  / { print substr($0, 3); next }
  { print "test-alerts: alerts.yaml: a line of spec not indented by two spaces: " $0 > "/dev/stderr"; bad = 1; exit }
  END { if (!inspec) { print "test-alerts: alerts.yaml has no top-level spec:" > "/dev/stderr"; bad = 1 }; exit bad }
' "$dir/alerts.yaml" > "$tmp/alerts.yaml"
# The test file names its rule file as alerts.yaml beside it.
cp "$dir/alerts_test.yaml" "$tmp/alerts_test.yaml"

promtool check rules "$tmp/alerts.yaml"
promtool test rules "$tmp/alerts_test.yaml"
