# The test tiers (DEVELOPMENT.md). Included by the Makefile.

##@ Test

.PHONY: test
test: test-unit test-integration test-e2e ## Every test: unit, integration (API server), end-to-end (local cluster).

.PHONY: test-unit
test-unit: vet lint verify-manifests verify-bundle test-alerts ## Unit tests: chart rendering, CRD generation and sync, pure logic.
	go test -count=1 $$(go list ./... | grep -v -e /test/e2e -e /test/quickstart)

.PHONY: test-alerts
test-alerts: ## Check and test the Prometheus alerts (config/prometheus) with promtool; installs Debian's prometheus package when missing (root).
	hack/test-alerts.sh

.PHONY: test-integration
test-integration: cluster-binaries ## Integration tests on a real etcd + kube-apiserver (envtest, bin/k8s).
	KUBEBUILDER_ASSETS=$(K8S_BIN) go test -count=1 -timeout 20m ./internal/operator/helmruntime/... ./extensions/internal/cronscaler/... ./extensions/internal/tenant/... ./extensions/internal/admission/... ./internal/gen/crdgen/... ./extensions/internal/uninstall/...

.PHONY: test-e2e
test-e2e: cluster-binaries build sdk-helm-operator helm ## End-to-end tests: both binaries on a full local cluster; the README's quick start beside them.
	KUBEBUILDER_ASSETS=$(K8S_BIN) go test -count=1 -timeout 30m ./test/e2e/... ./test/quickstart/... -v

.PHONY: test-reliability
test-reliability: cluster-binaries build ## Reliability scenarios at full length (docs/reliability.md).
	RELIABILITY_LONG=1 KUBEBUILDER_ASSETS=$(K8S_BIN) go test -count=1 -timeout 60m ./test/e2e/... -run '$(RELIABILITY_LONG_TESTS)' -v

# The reliability tests that RELIABILITY_LONG changes; the others run as
# they are in test-e2e, so test-reliability does not run them twice.
RELIABILITY_LONG_TESTS := ^TestReliability(ChartRejectsValues|Outage)$$

.PHONY: test-real
test-real: node-deps node-binaries build kustomize helm ## End to end on a real node (root): the image, installed with the operator's Helm chart (dist/chart).
	hack/test-real.sh

.PHONY: test-olm
test-olm: node-deps node-binaries build kustomize helm operator-sdk ## OLM end to end on a real node (root): bundle, upgrade, catalog.
	OLM_IMG=$(OLM_IMG) OPM_IMG=$(OPM_IMG) SCORECARD_IMG=$(SCORECARD_IMG) hack/test-olm.sh
