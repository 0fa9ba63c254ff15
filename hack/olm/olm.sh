#!/usr/bin/env bash
# Installs Operator Lifecycle Manager into the cluster of $KUBECONFIG without
# the internet: the offline equivalent of `operator-sdk olm install
# --version $OLM_VERSION`, which downloads the release's crds.yaml and
# olm.yaml from GitHub and runs quay.io's images. Here the same two files
# come from the pinned Go module (hack/tools/olm) and the images are the ones
# `make olm-images-push` built from that module's source and pushed to the
# local registry.
#
#   hack/olm/olm.sh install     apply crds.yaml and olm.yaml, wait until the
#                               packageserver CSV has Succeeded
#   hack/olm/olm.sh uninstall   remove what install applied (olm.yaml, then
#                               the CRDs: every CSV, Subscription, ... goes)
#   hack/olm/olm.sh manifests   print olm.yaml as install applies it
#
# olm.yaml is applied with three changes, nothing else:
#   - every quay.io/operator-framework/olm@sha256:... reference is $OLM_IMG;
#   - catalog-operator gets -opmImage=$OPM_IMG (bundle unpack Jobs run opm
#     from it) and -configmapServerImage=$OPM_IMG (ConfigMap catalogs are
#     not used here; the flag must still name an image that exists);
#   - the operatorhubio-catalog CatalogSource is left out: its image is on
#     quay.io, which is not reachable, and a catalog that never starts would
#     only keep the catalog operator busy.
#
# Environment: KUBECONFIG, OLM_IMG, OPM_IMG, KUBECTL (default kubectl).
set -euo pipefail
cd "$(dirname "$0")/../.."

: "${OLM_IMG:?OLM_IMG is the OLM image in the local registry (make olm-images-push)}"
: "${OPM_IMG:?OPM_IMG is the opm image in the local registry (make olm-images-push)}"
KUBECTL=${KUBECTL:-kubectl}
OLM_MODULE=github.com/operator-framework/operator-lifecycle-manager
NAMESPACE=olm

log() { echo "olm: $*" >&2; }

quickstart() { # the pinned release's deploy/upstream/quickstart directory
  local dir
  dir=$(cd hack/tools/olm && GONOSUMDB=$OLM_MODULE GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$OLM_MODULE")
  if [ -z "$dir" ] || [ ! -f "$dir/deploy/upstream/quickstart/olm.yaml" ]; then
    (cd hack/tools/olm && GONOSUMDB=$OLM_MODULE go mod download "$OLM_MODULE")
    dir=$(cd hack/tools/olm && GONOSUMDB=$OLM_MODULE go list -m -f '{{.Dir}}' "$OLM_MODULE")
  fi
  echo "$dir/deploy/upstream/quickstart"
}

manifests() {
  local q
  q=$(quickstart)
  # Documents are separated by lines of ---; drop the one that declares the
  # operatorhubio-catalog CatalogSource, rewrite image references.
  awk -v olm="$OLM_IMG" -v opm="$OPM_IMG" '
    function flush() {
      if (doc != "" && doc !~ /\nkind: CatalogSource\n/) printf "%s", doc
      doc = ""
    }
    /^---$/ { flush(); doc = "---\n"; next }
    {
      line = $0
      gsub(/quay\.io\/operator-framework\/olm@sha256:[0-9a-f]+/, olm, line)
      if (line ~ /-configmapServerImage=/) {
        sub(/-configmapServerImage=.*/, "-configmapServerImage=" opm, line)
        indent = line; sub(/-.*/, "", indent)
        line = line "\n" indent "- -opmImage=" opm
      }
      doc = doc line "\n"
    }
    END { flush() }
  ' "$q/olm.yaml"
}

install() {
  local q start phase
  q=$(quickstart)
  start=$(date +%s)
  if $KUBECTL get deployment olm-operator -n openshift-operator-lifecycle-manager >/dev/null 2>&1; then
    log "OLM is already installed here in another configuration (openshift-operator-lifecycle-manager)"; exit 1
  fi
  log "CRDs from $q/crds.yaml"
  # Server-side: the ClusterServiceVersion CRD is too large for the
  # last-applied annotation of a client-side apply.
  $KUBECTL apply --server-side --force-conflicts -f "$q/crds.yaml" >/dev/null
  $KUBECTL wait --for=condition=Established --timeout=60s -f "$q/crds.yaml" >/dev/null
  log "olm.yaml with OLM_IMG=$OLM_IMG OPM_IMG=$OPM_IMG"
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
  local q
  q=$(quickstart)
  # The CSVs OLM installed (packageserver, and any operator still there)
  # go with their namespaces and CRDs; operators' CRDs stay, as with
  # `operator-sdk olm uninstall`.
  manifests | $KUBECTL delete --ignore-not-found --wait=true --timeout=180s -f - >/dev/null || true
  $KUBECTL delete --ignore-not-found --wait=true --timeout=180s -f "$q/crds.yaml" >/dev/null
  $KUBECTL delete apiservice v1.packages.operators.coreos.com --ignore-not-found >/dev/null
  log "uninstalled"
}

case "${1:-}" in
  install) install ;;
  uninstall) uninstall ;;
  manifests) manifests ;;
  *) echo "usage: $0 install|uninstall|manifests" >&2; exit 2 ;;
esac
