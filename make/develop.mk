# Code generation, formatting and lint. Included by the Makefile.

##@ Development

.PHONY: manifests
manifests: controller-gen ## Regenerate the CRDs (controller-gen, crdgen), the runtime's derived RBAC rules (rbacgen), the CSV descriptors and the operator's Helm chart (chartgen).
	$(CONTROLLER_GEN) object paths=./extensions/api/... crd:crdVersions=v1 output:crd:artifacts:config=config/crd/bases
	go run ./cmd/crdgen --kinds config/crd/kinds.yaml --out config/crd/bases
	go run ./cmd/rbacgen
	go run ./cmd/csvgen
	go run ./cmd/chartgen --version $(VERSION)

# The kind's API version: VERSION when given on the command line, else
# v1alpha1. The Makefile's own VERSION is the bundle's (0.1.0), not an API
# version, so it is not taken from there.
KIND_API_VERSION = $(if $(filter command line,$(origin VERSION)),$(VERSION),v1alpha1)

.PHONY: kind
kind: ## Make a chart in helm-charts/ an API: CHART=helm-charts/x GROUP=x.acme.com KIND=X [VERSION=v1alpha1] [SCOPE=Cluster] [ALLOW_OUTSIDE=1] (docs/adding-a-kind.md).
	@test -n "$(CHART)" -a -n "$(GROUP)" -a -n "$(KIND)" || { echo "usage: make kind CHART=helm-charts/<chart> GROUP=<group> KIND=<Kind> [VERSION=v1alpha1] [SCOPE=Cluster] [ALLOW_OUTSIDE=1]"; exit 2; }
	go run ./cmd/kindgen --chart "$(CHART)" --group "$(GROUP)" --kind "$(KIND)" --version "$(KIND_API_VERSION)" $(if $(filter Cluster,$(SCOPE)),--cluster-scoped) $(if $(ALLOW_OUTSIDE),--allow-outside)

.PHONY: verify-manifests
verify-manifests: controller-gen ## Fail when controller-gen's, crdgen's, rbacgen's, csvgen's or chartgen's committed output is stale.
	go run ./cmd/crdgen --check
	go run ./cmd/rbacgen --check
	go run ./cmd/csvgen --check
	go run ./cmd/chartgen --version $(VERSION) --check
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./extensions/api/... output:crd:dir=$$tmp; \
	for f in $$tmp/*.yaml; do \
	  diff -u config/crd/bases/$$(basename $$f) $$f || { echo "config/crd/bases/$$(basename $$f) is stale: run make manifests"; exit 1; }; \
	done; \
	for d in $$(find extensions/api -name '*_types.go' -exec dirname {} \; | sort -u); do \
	  $(CONTROLLER_GEN) object paths=./$$d output:object:stdout > $$tmp/deepcopy.go; \
	  diff -u $$d/zz_generated.deepcopy.go $$tmp/deepcopy.go || { echo "$$d/zz_generated.deepcopy.go is stale: run make manifests"; exit 1; }; \
	done

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: golangci-lint ## Lint the Go code with golangci-lint (.golangci.yml).
	$(GOLANGCI_LINT) run ./...

.PHONY: lint-charts
lint-charts: helm ## helm lint --strict every chart (and the operator's, dist/chart): once with ci/lint-values.yaml (or none), then with each other ci/ values file over it.
	@set -e; for c in helm-charts/*/ dist/chart/; do \
		base=""; if [ -f $$c/ci/lint-values.yaml ]; then base="-f $$c/ci/lint-values.yaml"; fi; \
		$(HELM) lint --strict $$c $$base; \
		for f in $$c/ci/*.yaml; do \
			[ -e "$$f" ] && [ "$$(basename $$f)" != lint-values.yaml ] || continue; \
			echo "==> $$c with $$f"; $(HELM) lint --strict $$c $$base -f $$f; \
		done; \
	done
