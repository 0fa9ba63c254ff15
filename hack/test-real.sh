#!/usr/bin/env bash
# Runs the real-node suite (test/real), called by `make test-real`: starts
# the container engine, builds the operator image from the Dockerfile on the
# stand-in base images and the workloads' stand-ins, runs the suite (which
# starts a local cluster with a real node, pushes the images to its registry
# and installs the operator with its Helm chart, dist/chart), and stops the engine.
# Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."

make engine-up
trap 'make engine-down' EXIT

start=$(date +%s)
make docker-build-local IMG=localhost:5000/platform-operator:dev
make workload-images
echo "test-real: images built in $(( $(date +%s) - start ))s"

REAL_NODE_E2E=1 go test -count=1 -timeout 45m ./test/real/ -v ${REAL_RUN:+-run "$REAL_RUN"}
