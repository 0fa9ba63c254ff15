# Tools pinned in hack/tools/<tool>/go.mod, built into bin/ on demand.
# Included by the Makefile, last: its rules name variables the other files
# set (OPM).

##@ Tools

OPERATOR_SDK ?= $(LOCALBIN)/operator-sdk
HELM ?= $(LOCALBIN)/helm
KUSTOMIZE ?= $(LOCALBIN)/kustomize
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint

.PHONY: operator-sdk helm kustomize controller-gen golangci-lint
operator-sdk: $(OPERATOR_SDK) ## Build operator-sdk into bin/.
helm: $(HELM) ## Build helm into bin/.
kustomize: $(KUSTOMIZE) ## Build kustomize into bin/.
controller-gen: $(CONTROLLER_GEN) ## Build controller-gen into bin/.
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint into bin/.

$(OPM): hack/tools/opm/go.mod
	cd hack/tools/opm && CGO_ENABLED=0 go build -tags containers_image_openpgp -o $@ github.com/operator-framework/operator-registry/cmd/opm

$(OPERATOR_SDK): hack/tools/operator-sdk/go.mod
	cd hack/tools/operator-sdk && v=$$(go list -m -f '{{.Version}}' github.com/operator-framework/operator-sdk) && \
	CGO_ENABLED=0 go build -tags containers_image_openpgp \
	  -ldflags "-X github.com/operator-framework/operator-sdk/internal/version.Version=$$v -X github.com/operator-framework/operator-sdk/internal/version.GitVersion=$$v" \
	  -o $@ github.com/operator-framework/operator-sdk/cmd/operator-sdk

$(HELM): hack/tools/helm/go.mod
	cd hack/tools/helm && go build -o $@ helm.sh/helm/v3/cmd/helm

$(KUSTOMIZE): hack/tools/kustomize/go.mod
	cd hack/tools/kustomize && go build -o $@ sigs.k8s.io/kustomize/kustomize/v5

$(GOLANGCI_LINT): hack/tools/golangci-lint/go.mod
	cd hack/tools/golangci-lint && go build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(CONTROLLER_GEN): hack/tools/controller-gen/go.mod
	cd hack/tools/controller-gen && go build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen
