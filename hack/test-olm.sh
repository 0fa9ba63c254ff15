#!/usr/bin/env bash
# Runs the OLM suite (test/olm), called by `make test-olm`: starts the
# container engine, builds the operator image, the workloads' stand-ins and
# OLM's and opm's images from source, runs the suite (which starts a local
# cluster with a real node, pushes the images to its registry, installs OLM
# with hack/olm/olm.sh and takes the bundle through run bundle, upgrade,
# cleanup and a catalog), and stops the engine. Needs root.
set -euo pipefail
: "${OLM_IMG:?}" "${OPM_IMG:?}" "${SCORECARD_IMG:?}"
cd "$(dirname "$0")/.."

make engine-up
trap 'make engine-down' EXIT

start=$(date +%s)
make docker-build-local IMG=localhost:5000/platform-operator:dev
make workload-images olm-images scorecard-image OLM_IMG="$OLM_IMG" OPM_IMG="$OPM_IMG" SCORECARD_IMG="$SCORECARD_IMG"
echo "test-olm: images built in $(( $(date +%s) - start ))s"

# OLM_IMG, OPM_IMG and SCORECARD_IMG come from the Makefile (make test-olm passes them).
OLM_E2E=1 go test -count=1 -timeout 45m ./test/olm/ -v ${OLM_RUN:+-run "$OLM_RUN"}
