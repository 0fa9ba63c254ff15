#!/usr/bin/env bash
# Runs the operator in the foreground against the cluster of the current
# kubeconfig, or, when that cluster cannot be reached, against a local
# cluster started from bin/k8s for the duration of the run.
#
# Called by `make run`; LOCALBIN, K8S_BIN and LOCAL_CLUSTER_DIR come from the
# Makefile. Ctrl-C stops the operator; a local cluster this script started is
# stopped with it (one started with `make cluster-up` is left running).
set -euo pipefail

: "${LOCALBIN:?}" "${K8S_BIN:?}" "${LOCAL_CLUSTER_DIR:?}"
kubectl="${K8S_BIN}/kubectl"
started_cluster=false

extensions_pid=""
cleanup() {
  if [[ -n "${extensions_pid}" ]] && kill -0 "${extensions_pid}" 2>/dev/null; then
    kill -TERM "${extensions_pid}" 2>/dev/null || true
    wait "${extensions_pid}" 2>/dev/null || true
  fi
  if [[ "${started_cluster}" == true ]]; then
    echo "stopping the local cluster started by make run" >&2
    go run ./cmd/localcluster down --state-dir "${LOCAL_CLUSTER_DIR}"
  fi
}
trap cleanup EXIT

reachable() {
  "${kubectl}" version --request-timeout=5s >/dev/null 2>&1
}

if [[ -n "${KUBECONFIG:-}" || -f "${HOME}/.kube/config" ]] && reachable; then
  echo "using the cluster of the current kubeconfig: $("${kubectl}" config current-context 2>/dev/null || echo '?')" >&2
else
  export KUBECONFIG="${LOCAL_CLUSTER_DIR}/kubeconfig"
  if ! reachable; then
    started_cluster=true
  fi
  go run ./cmd/localcluster up --bin-dir "${K8S_BIN}" --state-dir "${LOCAL_CLUSTER_DIR}" --kwok-module hack/kwok
fi

echo "installing the CRDs" >&2
"${kubectl}" apply --server-side --force-conflicts -k config/crd >/dev/null
"${kubectl}" wait --for condition=Established --timeout=60s -f config/crd/bases >/dev/null

cat >&2 <<MSG

The operator is starting. In another terminal:

  export KUBECONFIG=${KUBECONFIG:-${HOME}/.kube/config}
  export PATH=${K8S_BIN}:\$PATH      # kubectl ${K8S_BIN}/kubectl matches the cluster
  kubectl apply -k config/samples
  kubectl get nginx,deployments,pods

Metrics: http://127.0.0.1:8080/metrics (manager), http://127.0.0.1:8082/metrics (extensions)
Press Ctrl-C to stop.

MSG

# The extensions sidecar runs beside the manager, as in the operator's Pod.
"${LOCALBIN}/extensions" \
  --leader-elect=false \
  --metrics-bind-address 127.0.0.1:8082 \
  --metrics-secure=false \
  --health-probe-bind-address 127.0.0.1:8083 \
  --zap-devel &
extensions_pid=$!

rc=0
"${LOCALBIN}/manager" \
  --watches-file watches.yaml \
  --leader-elect=false \
  --metrics-bind-address 127.0.0.1:8080 \
  --metrics-secure=false \
  --health-probe-bind-address 127.0.0.1:8081 \
  --zap-devel || rc=$?
# 130 is the shell's code for a process ended by Ctrl-C.
if [[ ${rc} -ne 0 && ${rc} -ne 130 ]]; then
  exit "${rc}"
fi
