# Code generation, formatting and lint. Included by the Makefile.

##@ Development

.PHONY: manifests
manifests: controller-gen ## Regenerate the CRDs (controller-gen, crdgen) and the CSV descriptors.
	$(CONTROLLER_GEN) object paths=./extensions/api/... crd:crdVersions=v1 output:crd:artifacts:config=config/crd/bases
	go run ./cmd/crdgen --kinds config/crd/kinds.yaml --out config/crd/bases
	go run ./cmd/csvgen

.PHONY: verify-manifests
verify-manifests: controller-gen ## Fail when controller-gen's or crdgen's committed output is stale.
	go run ./cmd/crdgen --check
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./extensions/api/... output:crd:dir=$$tmp; \
	for f in $$tmp/*.yaml; do \
	  diff -u config/crd/bases/$$(basename $$f) $$f || { echo "config/crd/bases/$$(basename $$f) is stale: run make manifests"; exit 1; }; \
	done; \
	for d in extensions/api/*/; do \
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
lint-charts: helm ## helm lint --strict every chart (with its ci/lint-values.yaml if any).
	@for c in helm-charts/*/; do \
		if [ -f $$c/ci/lint-values.yaml ]; then $(HELM) lint --strict $$c -f $$c/ci/lint-values.yaml; \
		else $(HELM) lint --strict $$c; fi; \
	done
