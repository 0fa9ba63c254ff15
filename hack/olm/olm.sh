#!/usr/bin/env bash
# Installs Operator Lifecycle Manager into the cluster of $KUBECONFIG without
# the internet: the offline equivalent of `operator-sdk olm install
# --version 0.36.0`, which downloads the release's crds.yaml and olm.yaml
# from GitHub and runs quay.io's images. Here both come from the pinned Go
# module (hack/tools/olm) and the images are the ones `make olm-images-push`
# built from that module's source and pushed to the local registry.
#
#   hack/olm/olm.sh install     apply the CRDs and OLM, wait until the
#                               packageserver CSV has Succeeded
#   hack/olm/olm.sh uninstall   remove what install applied (OLM, then the
#                               CRDs: every CSV, Subscription, ... goes)
#   hack/olm/olm.sh manifests   print OLM's manifests as install applies them
#
# The module's deploy/upstream/quickstart/olm.yaml is stale (its catalog
# operator passes single-dash flags the v0.36.0 binary refuses); OLM's own
# release step renders deploy/chart with deploy/upstream/values.yaml and the
# release's image references, and so does this script, with:
#   - olm.image.ref, catalog.image.ref, package.image.ref = $OLM_IMG and
#     catalog.opmImageArgs = --opmImage=$OPM_IMG (bundle unpack Jobs run
#     opm from it), as the release script sets them;
#   - certManager.enabled=false: the published quickstart runs without
#     cert-manager, which is not installed here;
#   - the operatorhubio-catalog CatalogSource left out: its image is on
#     quay.io, which is not reachable, and a catalog that never starts would
#     only keep the catalog operator busy.
# The CRDs are the chart's crds/ directory, unchanged.
#
# Environment: KUBECONFIG, OLM_IMG, OPM_IMG, HELM (default helm), KUBECTL
# (default kubectl).
set -euo pipefail
cd "$(dirname "$0")/../.."

: "${OLM_IMG:?OLM_IMG is the OLM image in the local registry (make olm-images-push)}"
: "${OPM_IMG:?OPM_IMG is the opm image in the local registry (make olm-images-push)}"
KUBECTL=${KUBECTL:-kubectl}
HELM=${HELM:-helm}
OLM_MODULE=github.com/operator-framework/operator-lifecycle-manager
NAMESPACE=olm

log() { echo "olm: $*" >&2; }

module_dir() { # the pinned release's source
  local dir
  dir=$(cd hack/tools/olm && GONOSUMDB=$OLM_MODULE go list -m -f '{{.Dir}}' "$OLM_MODULE")
  if [ -z "$dir" ] || [ ! -d "$dir/deploy/chart" ]; then
    (cd hack/tools/olm && GONOSUMDB=$OLM_MODULE go mod download "$OLM_MODULE")
    dir=$(cd hack/tools/olm && GONOSUMDB=$OLM_MODULE go list -m -f '{{.Dir}}' "$OLM_MODULE")
  fi
  echo "$dir"
}

manifests() {
  local m
  m=$(module_dir)
  # Documents are separated by lines of ---; drop the CatalogSource.
  "$HELM" template olm "$m/deploy/chart" --namespace "$NAMESPACE" -f "$m/deploy/upstream/values.yaml" \
    --set certManager.enabled=false \
    --set olm.image.ref="$OLM_IMG" --set catalog.image.ref="$OLM_IMG" --set package.image.ref="$OLM_IMG" \
    --set catalog.opmImageArgs=--opmImage="$OPM_IMG" |
  awk '
    function flush() { if (doc !~ /\nkind: CatalogSource\n/) printf "%s", doc; doc = "" }
    /^---$/ { flush() }
    { doc = doc $0 "\n" }
    END { flush() }
  '
}

install() {
  local crds start phase
  crds="$(module_dir)/deploy/chart/crds"
  start=$(date +%s)
  if $KUBECTL get deployment olm-operator -n openshift-operator-lifecycle-manager >/dev/null 2>&1; then
    log "OLM is already installed here in another configuration (openshift-operator-lifecycle-manager)"; exit 1
  fi
  log "CRDs from $crds"
  # Server-side: the ClusterServiceVersion CRD is too large for the
  # last-applied annotation of a client-side apply.
  $KUBECTL apply --server-side --force-conflicts -f "$crds" >/dev/null
  $KUBECTL wait --for=condition=Established --timeout=60s -f "$crds" >/dev/null
  log "OLM with OLM_IMG=$OLM_IMG OPM_IMG=$OPM_IMG"
  manifests | $KUBECTL apply --server-side --force-conflicts -f - >/dev/null
  $KUBECTL rollout status -n "$NAMESPACE" deployment/olm-operator --timeout=180s
  $KUBECTL rollout status -n "$NAMESPACE" deployment/catalog-operator --timeout=180s
  # The olm operator installs packageserver, an aggregated API server, from
  # its CSV; OLM is ready when that CSV has Succeeded.
  for _ in $(seq 1 90); do
    phase=$($KUBECTL get csv -n "$NAMESPACE" packageserver -o jsonpath='{.status.phase}' 2>/dev/null || true)
    [ "$phase" = Succeeded ] && break
    sleep 2
  done
  if [ "$phase" != Succeeded ]; then
    log "the packageserver CSV did not reach Succeeded (phase: ${phase:-none})"
    $KUBECTL get csv,pods -n "$NAMESPACE" -o wide >&2 || true
    exit 1
  fi
  $KUBECTL rollout status -n "$NAMESPACE" deployment/packageserver --timeout=120s
  log "installed in $(( $(date +%s) - start ))s: packageserver CSV Succeeded"
}

uninstall() {
  # In the order operator-sdk olm uninstall keeps: what OLM manages first,
  # while OLM runs to remove its finalizers (operators.coreos.com/csv-cleanup
  # on every CSV, packageserver's included); then OLM; then the CRDs.
  # Operators' own CRDs stay.
  $KUBECTL delete subscriptions.operators.coreos.com --all -A --ignore-not-found --wait=true --timeout=180s >/dev/null
  $KUBECTL delete clusterserviceversions.operators.coreos.com --all -A --ignore-not-found --wait=true --timeout=180s >/dev/null
  $KUBECTL delete apiservice v1.packages.operators.coreos.com --ignore-not-found >/dev/null
  manifests | $KUBECTL delete --ignore-not-found --wait=true --timeout=180s -f - >/dev/null
  $KUBECTL delete --ignore-not-found --wait=true --timeout=180s -f "$(module_dir)/deploy/chart/crds" >/dev/null
  log "uninstalled"
}

case "${1:-}" in
  install) install ;;
  uninstall) uninstall ;;
  manifests) manifests ;;
  *) echo "usage: $0 install|uninstall|manifests" >&2; exit 2 ;;
esac
