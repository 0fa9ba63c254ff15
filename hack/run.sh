#!/usr/bin/env bash
# Runs the operator in the foreground against the cluster of the current
# kubeconfig, or, when that cluster cannot be reached, against a local
# cluster started from bin/k8s for the duration of the run.
#
# Called by `make run`; LOCALBIN, K8S_BIN and LOCAL_CLUSTER_DIR come from the
# Makefile. Ctrl-C stops the operator; a local cluster this script started is
# stopped with it (one started with `make cluster-up` is left running).
#
# On the local cluster (the one in LOCAL_CLUSTER_DIR, whether this script
# starts it or KUBECONFIG is its kubeconfig) the sidecar's admission webhook
# is registered too: its API server runs on this machine and can call the
# sidecar on loopback. The ValidatingWebhookConfiguration
# platform-operator-make-run calls https://127.0.0.1:$WEBHOOK_PORT (default
# 9443) with a CA kept in LOCAL_CLUSTER_DIR/webhook; it is applied once the
# sidecar is ready and deleted before the sidecar stops. Any other cluster
# cannot reach this machine's loopback, and runs without the webhook.
set -euo pipefail

: "${LOCALBIN:?}" "${K8S_BIN:?}" "${LOCAL_CLUSTER_DIR:?}"
kubectl="${K8S_BIN}/kubectl"
webhook_port="${WEBHOOK_PORT:-9443}"
webhook_address="127.0.0.1:${webhook_port}"
webhook_name=platform-operator-make-run # localcluster.WebhookConfigurationName
# The sidecar's health probe address (--health-probe-bind-address below).
readyz_host=127.0.0.1
readyz_port=8083

started_cluster=false
local_cluster=false
webhook_registered=false
extensions_pid=""
manager_pid=""
watchdog_pid=""

# localcluster runs cmd/localcluster. go run writes build errors and
# downloads to stderr: stdout is the command's own.
localcluster() {
  go run ./cmd/localcluster "$@"
}

# stop ends a process this script started and waits for it.
stop() {
  local pid=$1
  if [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null; then
    kill -TERM "${pid}" 2>/dev/null || true
  fi
  if [[ -n "${pid}" ]]; then
    wait "${pid}" 2>/dev/null || true
  fi
}

cleanup() {
  local rc=$?
  # Finish the clean-up even if Ctrl-C is pressed again.
  trap '' INT TERM
  if [[ -n "${watchdog_pid}" ]]; then
    kill -TERM "${watchdog_pid}" 2>/dev/null || true
    wait "${watchdog_pid}" 2>/dev/null || true
  fi
  # The webhook goes first: with failurePolicy Fail, creates of our kinds
  # would be refused while it points at a stopped sidecar.
  if [[ "${webhook_registered}" == true ]]; then
    echo "deleting the ValidatingWebhookConfiguration ${webhook_name}" >&2
    if ! localcluster webhook-down --kubeconfig "${KUBECONFIG}"; then
      echo "could not delete it; creates of the operator's kinds are refused until you run:" >&2
      echo "  ${kubectl} delete validatingwebhookconfiguration ${webhook_name}" >&2
    fi
  fi
  stop "${extensions_pid}"
  stop "${manager_pid}"
  if [[ "${started_cluster}" == true ]]; then
    echo "stopping the local cluster started by make run" >&2
    localcluster down --state-dir "${LOCAL_CLUSTER_DIR}"
  fi
  exit "${rc}"
}
trap cleanup EXIT
# 130 and 143 are the shell's codes for Ctrl-C and SIGTERM.
trap 'exit 130' INT
trap 'exit 143' TERM

reachable() {
  "${kubectl}" version --request-timeout=5s >/dev/null 2>&1
}

real_path() {
  realpath -m -- "$1" 2>/dev/null || realpath -- "$1" 2>/dev/null || echo "$1"
}

# ready is true when the sidecar's readiness endpoint answers 200; it
# includes the check that the webhook server has started.
ready() {
  local url="http://${readyz_host}:${readyz_port}/readyz"
  if command -v curl >/dev/null 2>&1; then
    curl -fsS -o /dev/null --max-time 2 "${url}" 2>/dev/null
    return
  fi
  (
    exec 3<>"/dev/tcp/${readyz_host}/${readyz_port}" || exit 1
    printf 'GET /readyz HTTP/1.0\r\nHost: %s:%s\r\n\r\n' "${readyz_host}" "${readyz_port}" >&3
    read -r -t 2 _ status _ <&3 || exit 1
    [[ "${status}" == 200 ]]
  ) 2>/dev/null
}

if [[ -n "${KUBECONFIG:-}" || -f "${HOME}/.kube/config" ]] && reachable; then
  echo "using the cluster of the current kubeconfig: $("${kubectl}" config current-context 2>/dev/null || echo '?')" >&2
  # The local cluster, started with make cluster-up (or by a test) and
  # exported: KUBECONFIG is its kubeconfig.
  if [[ -n "${KUBECONFIG:-}" && "${KUBECONFIG}" != *:* ]] &&
    [[ "$(real_path "${KUBECONFIG}")" == "$(real_path "${LOCAL_CLUSTER_DIR}/kubeconfig")" ]]; then
    local_cluster=true
  fi
else
  export KUBECONFIG="${LOCAL_CLUSTER_DIR}/kubeconfig"
  if ! reachable; then
    started_cluster=true
  fi
  localcluster up --bin-dir "${K8S_BIN}" --state-dir "${LOCAL_CLUSTER_DIR}" --kwok-module hack/kwok
  local_cluster=true
fi

echo "installing the CRDs" >&2
"${kubectl}" apply --server-side --force-conflicts -k config/crd >/dev/null
"${kubectl}" wait --for condition=Established --timeout=60s -f config/crd/bases >/dev/null

extensions_args=(
  --leader-elect=false
  --metrics-bind-address 127.0.0.1:8082
  --metrics-secure=false
  --health-probe-bind-address "${readyz_host}:${readyz_port}"
  --zap-devel
)
if [[ "${local_cluster}" == true ]]; then
  # The certificate must exist before the sidecar starts; the configuration
  # is applied only once the sidecar serves.
  webhook_cert_dir="$(localcluster webhook-certs --state-dir "${LOCAL_CLUSTER_DIR}" --address "${webhook_address}")"
  extensions_args+=(
    --admission-port "${webhook_port}"
    --admission-host 127.0.0.1
    --admission-certs provided
    --admission-cert-dir "${webhook_cert_dir}"
  )
fi

# The extensions sidecar runs beside the manager, as in the operator's Pod.
# Both get a process group of their own (set -m), so that Ctrl-C reaches
# this script only: cleanup unregisters the webhook before the sidecar
# stops, and sends the manager one signal, for a clean stop (a second one
# makes a controller-runtime manager exit at once).
set -m
"${LOCALBIN}/extensions" "${extensions_args[@]}" </dev/null &
extensions_pid=$!
set +m

if [[ "${local_cluster}" == true ]]; then
  echo "waiting for the sidecar to serve the admission webhook on ${webhook_address}" >&2
  deadline=$((SECONDS + 120))
  until ready; do
    if ! kill -0 "${extensions_pid}" 2>/dev/null; then
      echo "the sidecar (bin/extensions) exited before it was ready; is port ${webhook_port} free? (WEBHOOK_PORT=N picks another)" >&2
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      echo "the sidecar was not ready after 120s (http://${readyz_host}:${readyz_port}/readyz)" >&2
      exit 1
    fi
    sleep 0.5
  done
  webhook_registered=true
  localcluster webhook-up --state-dir "${LOCAL_CLUSTER_DIR}" --kubeconfig "${KUBECONFIG}" \
    --webhooks config/webhook/manifests.yaml --address "${webhook_address}" >/dev/null
  webhook_msg="Admission webhook: registered as the ValidatingWebhookConfiguration ${webhook_name}
(kubectl get validatingwebhookconfigurations shows it), calling the sidecar at
https://${webhook_address}/validate: kubectl apply refuses what the webhook refuses,
as with make deploy. It is deleted when make run stops. The conversion webhook
(WebApp v1beta1) calls https://${webhook_address}/convert likewise; after make run
stops, reads of webapps.v1beta1 fail until the sidecar runs again."
else
  webhook_msg="Admission webhook: NOT installed. This cluster's API server cannot call a
process on this machine's loopback, so the sidecar runs without its webhook and
kubectl apply does not refuse what only the webhook sees (a release another
resource owns, a spec the chart will not render). The CRD schemas and the
runtime's own checks still apply: such a resource fails in its status instead.
Nor is the conversion webhook: read WebApps as webapps.v1alpha1.web.acme.com
(kubectl get webapps asks for v1beta1, which needs it).
make deploy or OLM (docs/operations.md) install the webhook with the operator's Pod."
fi

cat >&2 <<MSG

The operator is starting. In another terminal:

  export KUBECONFIG=${KUBECONFIG:-${HOME}/.kube/config}
  export PATH=${K8S_BIN}:\$PATH      # kubectl ${K8S_BIN}/kubectl matches the cluster
  kubectl apply -k config/samples
  kubectl get nginx,deployments,pods

${webhook_msg}

Metrics: http://127.0.0.1:8080/metrics (manager), http://127.0.0.1:8082/metrics (extensions)
Press Ctrl-C to stop.

MSG

set -m
"${LOCALBIN}/manager" \
  --watches-file watches.yaml \
  --leader-elect=false \
  --metrics-bind-address 127.0.0.1:8080 \
  --metrics-secure=false \
  --health-probe-bind-address 127.0.0.1:8081 \
  --zap-devel </dev/null &
manager_pid=$!

# Should this script be killed outright (SIGKILL runs no trap), a watchdog
# in a process group of its own still unregisters the webhook and then
# stops the sidecar and the manager. cleanup stops the watchdog first.
(
  script_pid=$$
  while kill -0 "${script_pid}" 2>/dev/null; do sleep 2; done
  if [[ "${webhook_registered}" == true ]]; then
    localcluster webhook-down --kubeconfig "${KUBECONFIG}" || true
  fi
  kill -TERM "${extensions_pid}" "${manager_pid}" 2>/dev/null || true
) </dev/null >/dev/null 2>&1 &
watchdog_pid=$!
set +m

# Wait for the manager; a signal runs the traps at once. The run ends too
# when the sidecar exits, which would otherwise leave the webhook refusing
# every create of the operator's kinds.
while kill -0 "${manager_pid}" 2>/dev/null; do
  if ! kill -0 "${extensions_pid}" 2>/dev/null; then
    echo "the sidecar (bin/extensions) exited; stopping" >&2
    exit 1
  fi
  sleep 1 &
  wait $! || true
done
rc=0
wait "${manager_pid}" || rc=$?
manager_pid=""
# 130 is the shell's code for a process ended by Ctrl-C.
if [[ ${rc} -ne 0 && ${rc} -ne 130 ]]; then
  exit "${rc}"
fi
