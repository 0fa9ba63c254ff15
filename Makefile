# platform-operator: a Helm-based Kubernetes operator with a Go sidecar.
#
# `make help` lists the targets. Everything the targets need is built from
# source into bin/ on first use and cached there: tools (hack/tools/*), the
# local control plane (hack/kube, hack/kwok).

# Image of the operator; `make docker-build docker-push IMG=...`.
VERSION ?= 0.1.0
IMAGE_TAG_BASE ?= registry.acme.com/platform/platform-operator
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)
CONTAINER_TOOL ?= docker

# Versions are pinned in one place each: the go.mod of the module that
# builds the tool (hack/tools/<tool>, hack/kube, hack/kwok). The Kubernetes
# version is read from there to stamp the binaries.
KUBE_VERSION := $(shell awk '$$1 == "k8s.io/kubernetes" {print $$2}' hack/kube/go.mod)
KUBE_MINOR := $(word 2,$(subst ., ,$(KUBE_VERSION)))

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

LOCALBIN ?= $(CURDIR)/bin
K8S_BIN ?= $(LOCALBIN)/k8s
LOCAL_CLUSTER_DIR ?= $(LOCALBIN)/local
export GOFLAGS ?= -buildvcs=false

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Regenerate the CRDs (controller-gen for extensions/api, crdgen for charts) and the CSV base's owned-CRD descriptors (csvgen).
	$(CONTROLLER_GEN) object paths=./extensions/api/... crd:crdVersions=v1 output:crd:artifacts:config=config/crd/bases
	go run ./cmd/crdgen --kinds config/crd/kinds.yaml --out config/crd/bases
	go run ./cmd/csvgen

.PHONY: verify-manifests
verify-manifests: controller-gen ## Fail when the committed controller-gen output (CRDs and deepcopy of extensions/api) or crdgen output (chart CRDs, kustomization) is stale.
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
lint-charts: helm ## Lint every chart with helm lint --strict (with <chart>/ci/lint-values.yaml when the chart has required values).
	@for c in helm-charts/*/; do \
		if [ -f $$c/ci/lint-values.yaml ]; then $(HELM) lint --strict $$c -f $$c/ci/lint-values.yaml; \
		else $(HELM) lint --strict $$c; fi; \
	done

.PHONY: test
test: test-unit test-integration test-e2e ## Run every test: unit, integration (API server) and end-to-end (full local cluster).

.PHONY: test-unit
test-unit: vet lint verify-manifests verify-bundle ## Unit tests: chart rendering, CRD generation and sync, pure logic.
	go test -count=1 $$(go list ./... | grep -v -e /test/e2e)

.PHONY: test-integration
test-integration: cluster-binaries ## Integration tests against a real etcd + kube-apiserver (envtest with our binaries).
	KUBEBUILDER_ASSETS=$(K8S_BIN) go test -count=1 -timeout 20m ./internal/helmruntime/... ./extensions/internal/cronscaler/... ./extensions/internal/tenant/... ./extensions/internal/admission/... ./internal/crdgen/...

.PHONY: test-e2e
test-e2e: cluster-binaries build ## End-to-end tests: the operator's binaries on a full local cluster the tests start and stop.
	KUBEBUILDER_ASSETS=$(K8S_BIN) go test -count=1 -timeout 30m ./test/e2e/... -v

.PHONY: test-reliability
test-reliability: cluster-binaries build ## Reliability scenarios at full length (docs/reliability.md): retries counted over 10 minutes, leader failover with a second replica pair.
	RELIABILITY_LONG=1 KUBEBUILDER_ASSETS=$(K8S_BIN) go test -count=1 -timeout 60m ./test/e2e/... -run 'TestReliability' -v

.PHONY: test-real
test-real: node-deps node-binaries build kustomize ## End-to-end on a real node (root): the operator image in a Pod from config/default, real containers, real traffic (test/real; REAL_RUN=regexp picks tests).
	hack/test-real.sh

.PHONY: bench-cronscaler
bench-cronscaler: cluster-binaries build ## Benchmark (not a test): 1000 CronScalers firing in the same minute on a local cluster; prints lag, CPU and RSS.
	go run ./hack/bench/cronscaler --bin-dir $(K8S_BIN) --extensions $(LOCALBIN)/extensions --crd-dir config/crd/bases

.PHONY: bench-admission
bench-admission: cluster-binaries build ## Benchmark (not a test): 1000 creates and 1000 spec edits of Nginx through the admission webhook against the API server alone; prints p50/p90/p99.
	go run ./hack/bench/admission --bin-dir $(K8S_BIN) --extensions $(LOCALBIN)/extensions $(BENCH_ARGS)

# A comma, for lists inside $(if ...).
, := ,

.PHONY: bench
bench: cluster-binaries build $(LOCALBIN)/helm-operator-plugins $(LOCALBIN)/helm-operator ## Benchmark (not a test): our Helm runtime against helm-operator-plugins `run`, operator-sdk's helm-operator and the floor (a bare client), N=100,500,1000 (QUICK=1: N=200, 2-minute idle; N10K=1: ours and the floor at N=10000, about 90 minutes; BENCH_ARGS=... passes flags).
	go run ./hack/bench/runtime --bin-dir $(K8S_BIN) --manager $(LOCALBIN)/manager \
	  --helm-operator-plugins $(LOCALBIN)/helm-operator-plugins --sdk-helm-operator $(LOCALBIN)/helm-operator \
	  --crd-dir config/crd/bases --chart helm-charts/nginx --out $(LOCALBIN)/bench $(if $(QUICK),--quick) \
	  $(if $(N10K),-n 10000 -runtimes floor$(,)ours -spec '{"replicaCount":0}' -phase-timeout 60m -settle 30m) $(BENCH_ARGS)

##@ Build

.PHONY: build
build: ## Build the manager (Helm runtime) and extensions (sidecar) binaries into bin/.
	go build -o $(LOCALBIN)/manager ./cmd/manager
	go build -o $(LOCALBIN)/extensions ./extensions

.PHONY: run
run: cluster-binaries build ## Run the operator against the current cluster, or a local one it starts (Ctrl-C stops).
	LOCALBIN=$(LOCALBIN) K8S_BIN=$(K8S_BIN) LOCAL_CLUSTER_DIR=$(LOCAL_CLUSTER_DIR) hack/run.sh

# The Dockerfile's base images are build arguments. Unset, the Dockerfile's
# defaults (golang, gcr.io/distroless/static:nonroot) are used; with
# LOCAL_BASE_IMAGES=1 the stand-ins `make base-images` builds from the host's
# Go toolchain and Debian's packages (for machines that reach no image
# registry). BUILDER_IMAGE/RUNTIME_IMAGE=... pick any other pair.
LOCAL_BASE_IMAGES ?=
BUILDER_STANDIN ?= localhost/standin-golang:$(shell go env GOVERSION | sed 's/^go//')
RUNTIME_STANDIN ?= localhost/standin-distroless-static:nonroot
DEBIAN_STANDIN ?= localhost/standin-debian:bookworm
BUILDER_IMAGE ?= $(if $(LOCAL_BASE_IMAGES),$(BUILDER_STANDIN))
RUNTIME_IMAGE ?= $(if $(LOCAL_BASE_IMAGES),$(RUNTIME_STANDIN))
# The classic builder (DOCKER_BUILDKIT=0) needs nothing but dockerd; builds
# use the host's network so `go mod download` reaches the Go module proxy.
DOCKER_BUILDKIT ?= 0
DOCKER_BUILD_NETWORK ?= host
DOCKER_BUILD = DOCKER_BUILDKIT=$(DOCKER_BUILDKIT) $(CONTAINER_TOOL) build --network $(DOCKER_BUILD_NETWORK)
DOCKER_BASE_ARGS = $(if $(BUILDER_IMAGE),--build-arg BUILDER_IMAGE=$(BUILDER_IMAGE)) $(if $(RUNTIME_IMAGE),--build-arg RUNTIME_IMAGE=$(RUNTIME_IMAGE))
BASE_IMAGES_ENV = DOCKER=$(CONTAINER_TOOL) BUILDER_STANDIN=$(BUILDER_STANDIN) RUNTIME_STANDIN=$(RUNTIME_STANDIN) DEBIAN_STANDIN=$(DEBIAN_STANDIN)

.PHONY: docker-build
docker-build: $(if $(LOCAL_BASE_IMAGES),operator-base-images) ## Build the operator image IMG (needs a container engine; LOCAL_BASE_IMAGES=1 builds on local stand-ins, see make base-images).
	$(DOCKER_BUILD) $(DOCKER_BASE_ARGS) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image IMG (e.g. IMG=localhost:5000/platform-operator:dev to the local registry).
	$(CONTAINER_TOOL) push $(IMG)

##@ Images (no registry on the internet: hack/images)

.PHONY: engine-up
engine-up: ## Start a container engine (Debian's docker.io, installed when missing; dockerd + its own containerd, no systemd); needs root.
	hack/images/engine.sh up

.PHONY: engine-down
engine-down: ## Stop the engine started by engine-up (containers, dockerd, containerd); images stay in bin/.engine.
	hack/images/engine.sh down

.PHONY: base-images
base-images: ## Build the stand-in base images (Go builder, distroless-like runtime, Debian bookworm) from the host's Go and Debian's packages; kept when present (REBUILD=1 rebuilds).
	$(BASE_IMAGES_ENV) hack/images/base-images.sh builder runtime debian

.PHONY: operator-base-images
operator-base-images:
	$(BASE_IMAGES_ENV) hack/images/base-images.sh builder runtime

.PHONY: docker-build-local
docker-build-local: ## make docker-build on the stand-in base images (LOCAL_BASE_IMAGES=1).
	$(MAKE) docker-build LOCAL_BASE_IMAGES=1

# Stand-ins for the images the charts' workloads run, built from Debian's
# packages with the contract each chart documents (hack/images/README.md),
# and the WebApp test app. Pushed to the local registry the real node pulls
# from.
LOCAL_REGISTRY ?= localhost:5000
NGINX_STANDIN ?= $(LOCAL_REGISTRY)/nginx-unprivileged:1.22-bookworm
NGINX_EXPORTER_STANDIN ?= $(LOCAL_REGISTRY)/nginx-prometheus-exporter:0.11-bookworm
POSTGRES_STANDIN ?= $(LOCAL_REGISTRY)/postgres:15-bookworm
WEBAPP_TEST_APP ?= $(LOCAL_REGISTRY)/webapp-test-app:v1
WORKLOAD_IMAGES = $(NGINX_STANDIN) $(NGINX_EXPORTER_STANDIN) $(POSTGRES_STANDIN) $(WEBAPP_TEST_APP)

.PHONY: workload-images
workload-images: base-images ## Build the workload stand-ins (nginx, nginx exporter, PostgreSQL) and the WebApp test app, tagged LOCAL_REGISTRY/... (localhost:5000).
	$(DOCKER_BUILD) --build-arg DEBIAN_IMAGE=$(DEBIAN_STANDIN) -t $(NGINX_STANDIN) hack/images/nginx
	$(DOCKER_BUILD) --build-arg DEBIAN_IMAGE=$(DEBIAN_STANDIN) -t $(NGINX_EXPORTER_STANDIN) hack/images/nginx-exporter
	$(DOCKER_BUILD) --build-arg DEBIAN_IMAGE=$(DEBIAN_STANDIN) -t $(POSTGRES_STANDIN) hack/images/postgres
	$(DOCKER_BUILD) --build-arg BUILDER_IMAGE=$(BUILDER_STANDIN) --build-arg RUNTIME_IMAGE=$(RUNTIME_STANDIN) -t $(WEBAPP_TEST_APP) hack/images/webapp-test-app

.PHONY: workload-images-push
workload-images-push: workload-images ## Build the workload images and push them to LOCAL_REGISTRY (a registry must listen there: the real node's, or make registry-up).
	for img in $(WORKLOAD_IMAGES); do $(CONTAINER_TOOL) push $$img || exit 1; done

.PHONY: images-smoke
images-smoke: ## Run every workload image with its chart's contract (uid, read-only root, ports, env) and check it answers; needs the images.
	NGINX_STANDIN=$(NGINX_STANDIN) NGINX_EXPORTER_STANDIN=$(NGINX_EXPORTER_STANDIN) POSTGRES_STANDIN=$(POSTGRES_STANDIN) WEBAPP_TEST_APP=$(WEBAPP_TEST_APP) IMG=$(IMG) hack/images/smoke.sh

.PHONY: images-prune
images-prune: ## Remove dangling images: each docker-build after a source change leaves a ~2 GB builder stage (its Go build cache); the next build downloads modules again.
	$(CONTAINER_TOOL) image prune -f

.PHONY: registry-up
registry-up: ## Start Debian's docker-registry on 127.0.0.1:5000 (storage in bin/registry) unless a registry already answers there.
	hack/images/registry.sh up

.PHONY: registry-down
registry-down: ## Stop the registry registry-up started (its storage stays in bin/registry).
	hack/images/registry.sh down

##@ Local cluster

# NODES=kwok (default): fake Nodes played by kwok, Pods never run. NODES=real:
# one real node on this machine (containerd, kubelet, CNI bridge, kube-proxy,
# CoreDNS, a registry on 127.0.0.1:5000); needs root (docs in
# internal/localcluster/node.go). A number N means N kwok Nodes.
NODES ?= kwok
CLUSTER_NODES_FLAG = $(if $(filter kwok,$(NODES)),1,$(NODES))

.PHONY: cluster-binaries
cluster-binaries: $(K8S_BIN)/etcd $(K8S_BIN)/kube-apiserver $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kube-scheduler $(K8S_BIN)/kubectl $(K8S_BIN)/kwok $(K8S_BIN)/localcluster ## Build the control plane binaries from source (once; cached in bin/k8s).

.PHONY: node-binaries
node-binaries: cluster-binaries $(K8S_BIN)/kubelet $(K8S_BIN)/kube-proxy $(K8S_BIN)/coredns $(K8S_BIN)/pause ## Build what a real node needs besides Debian's packages: kubelet, kube-proxy, CoreDNS, the pause program.

.PHONY: node-deps
node-deps: ## Install a real node's Debian packages (containerd, runc, CNI plugins, iptables, conntrack, docker-registry) when missing; needs root.
	hack/install-node-deps.sh

.PHONY: cluster-up
cluster-up: cluster-binaries $(if $(filter real,$(NODES)),node-deps node-binaries) ## Start the local cluster in the background (NODES=real: a real node); kubeconfig in bin/local/kubeconfig.
	$(K8S_BIN)/localcluster up --bin-dir $(K8S_BIN) --state-dir $(LOCAL_CLUSTER_DIR) --kwok-module hack/kwok --nodes $(CLUSTER_NODES_FLAG)

.PHONY: cluster-smoke-real
cluster-smoke-real: node-deps node-binaries ## Prove the real node: a Pod from a local image gets Ready with an HTTP probe, resolves cluster DNS, reaches a ClusterIP Service, a PVC binds; then nothing is left after down.
	LOCALCLUSTER_REAL_NODE=1 LOCALCLUSTER_BIN_DIR=$(K8S_BIN) go test -count=1 -timeout 15m -run 'TestRealNode' -v ./internal/localcluster/

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and remove its state.
	go run ./cmd/localcluster down --state-dir $(LOCAL_CLUSTER_DIR)

# Without these the binaries report v0.0.0-master+$$Format:%H$$, which kubectl
# and Helm's .Capabilities.KubeVersion cannot parse.
KUBE_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(KUBE_MINOR) \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/client-go/pkg/version.gitMajor=1 \
	-X k8s.io/client-go/pkg/version.gitMinor=$(KUBE_MINOR) \
	-X k8s.io/client-go/pkg/version.gitTreeState=clean

$(K8S_BIN)/kube-apiserver $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kube-scheduler $(K8S_BIN)/kubectl: hack/kube/go.mod
	cd hack/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/$(notdir $@)

$(K8S_BIN)/etcd: hack/kube/go.mod
	cd hack/kube && go build -ldflags "-s -w" -o $@ go.etcd.io/etcd/server/v3

$(K8S_BIN)/kwok: hack/kwok/go.mod
	cd hack/kwok && go build -ldflags "-s -w" -o $@ sigs.k8s.io/kwok/cmd/kwok

# The real node (NODES=real): kubelet and kube-proxy from the same module as
# the control plane, CoreDNS from a module of its own (hack/coredns).
$(K8S_BIN)/kubelet $(K8S_BIN)/kube-proxy: hack/kube/go.mod
	cd hack/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/$(notdir $@)

$(K8S_BIN)/coredns: hack/coredns/go.mod hack/coredns/main.go
	cd hack/coredns && go build -ldflags "-s -w" -o $@ .

# Small Go programs of this module: always rebuilt (go build's cache makes
# that a second) so they never lag behind the source.
.PHONY: FORCE
FORCE:

$(K8S_BIN)/localcluster: FORCE
	go build -o $@ ./cmd/localcluster

# The pod sandbox ("pause") image's only file: static, imported into the
# node's containerd by localcluster.
$(K8S_BIN)/pause: FORCE
	CGO_ENABLED=0 go build -ldflags "-s -w" -o $@ ./hack/localnode/pause

##@ Deployment

.PHONY: install
install: kustomize ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side -f -

.PHONY: uninstall
uninstall: kustomize ## Uninstall the CRDs (deletes every custom resource of these kinds).
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found -f -

.PHONY: deploy
deploy: kustomize ## Deploy the operator with image IMG to the cluster of the current kubeconfig.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | kubectl apply --server-side -f -

.PHONY: undeploy
undeploy: kustomize ## Remove the operator from the cluster.
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found -f -

##@ OLM (offline: hack/olm/olm.sh, hack/images/README.md)

# OLM and opm built from the pinned modules hack/tools/olm and hack/tools/opm
# (no image registry is reachable here), pushed to the local registry, and
# installed with the release's own chart and CRDs. With internet access,
# `operator-sdk olm install --version 0.36.0` does what olm-install does.
OLM_VERSION ?= v0.36.0
OPM_VERSION ?= v1.60.0
OLM_IMG ?= $(LOCAL_REGISTRY)/operator-framework/olm:$(OLM_VERSION)
OPM_IMG ?= $(LOCAL_REGISTRY)/operator-framework/opm:$(OPM_VERSION)
OLM_BINARIES ?= $(LOCALBIN)/olm-images
# kubectl of the cluster OLM goes to (bin/k8s/kubectl for the local one).
KUBECTL ?= kubectl
OLM_SCRIPT_ENV = OLM_IMG=$(OLM_IMG) OPM_IMG=$(OPM_IMG) HELM=$(HELM) KUBECTL=$(KUBECTL)

.PHONY: olm-binaries
olm-binaries: ## Build OLM's binaries (olm, catalog, package-server, copy-content, cpb) and opm, grpc_health_probe from source into bin/olm-images.
	mkdir -p $(OLM_BINARIES)/olm $(OLM_BINARIES)/opm
	cd hack/tools/olm && GONOSUMDB=github.com/operator-framework/operator-lifecycle-manager CGO_ENABLED=0 go build -ldflags "-s -w" -o $(OLM_BINARIES)/olm/ tool
	cd hack/tools/opm && CGO_ENABLED=0 go build -ldflags "-s -w" -tags containers_image_openpgp -o $(OLM_BINARIES)/opm/ tool

.PHONY: olm-images
olm-images: olm-binaries ## Build the OLM image OLM_IMG and the opm image OPM_IMG (needs a container engine: make engine-up).
	$(BASE_IMAGES_ENV) hack/images/base-images.sh debian
	$(DOCKER_BUILD) --build-arg DEBIAN_IMAGE=$(DEBIAN_STANDIN) -f hack/images/olm/Dockerfile -t $(OLM_IMG) $(OLM_BINARIES)/olm
	$(DOCKER_BUILD) --build-arg DEBIAN_IMAGE=$(DEBIAN_STANDIN) -f hack/images/opm/Dockerfile -t $(OPM_IMG) $(OLM_BINARIES)/opm

.PHONY: olm-images-push
olm-images-push: olm-images ## Build and push OLM_IMG and OPM_IMG to LOCAL_REGISTRY.
	$(CONTAINER_TOOL) push $(OLM_IMG)
	$(CONTAINER_TOOL) push $(OPM_IMG)

# scorecard-test for `operator-sdk scorecard` (bundle/tests/scorecard names
# quay.io/operator-framework/scorecard-test at operator-sdk's version).
SCORECARD_IMG ?= $(LOCAL_REGISTRY)/operator-framework/scorecard-test:v1.42.2

.PHONY: scorecard-image
scorecard-image: ## Build SCORECARD_IMG, operator-sdk's scorecard-test (also its untar and storage image), from source.
	mkdir -p $(OLM_BINARIES)/scorecard
	cd hack/tools/operator-sdk && CGO_ENABLED=0 go build -ldflags "-s -w" -o $(OLM_BINARIES)/scorecard/ github.com/operator-framework/operator-sdk/images/scorecard-test
	$(BASE_IMAGES_ENV) hack/images/base-images.sh debian
	$(DOCKER_BUILD) --build-arg DEBIAN_IMAGE=$(DEBIAN_STANDIN) -f hack/images/scorecard-test/Dockerfile -t $(SCORECARD_IMG) $(OLM_BINARIES)/scorecard

.PHONY: olm-install
olm-install: helm ## Install OLM into the cluster of the current kubeconfig from OLM_IMG and OPM_IMG (make olm-images-push first); waits for packageserver.
	$(OLM_SCRIPT_ENV) hack/olm/olm.sh install

.PHONY: olm-uninstall
olm-uninstall: helm ## Remove what olm-install installed (OLM's namespaces and CRDs).
	$(OLM_SCRIPT_ENV) hack/olm/olm.sh uninstall

.PHONY: test-olm
test-olm: node-deps node-binaries build kustomize helm operator-sdk ## OLM end to end on a real node (root): OLM from source, run bundle, bundle-upgrade, cleanup, a catalog (test/olm; OLM_RUN=regexp picks steps).
	OLM_IMG=$(OLM_IMG) OPM_IMG=$(OPM_IMG) SCORECARD_IMG=$(SCORECARD_IMG) hack/test-olm.sh

##@ Bundle (OLM)

# Channels of the bundle; `make bundle CHANNELS=candidate,fast DEFAULT_CHANNEL=fast`.
CHANNELS ?= alpha
DEFAULT_CHANNEL ?= alpha
BUNDLE_METADATA_OPTS ?= --channels=$(CHANNELS) --default-channel=$(DEFAULT_CHANNEL)
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
BUNDLE_GEN = $(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS)

.PHONY: bundle
bundle: manifests operator-sdk kustomize ## Generate bundle/ and bundle.Dockerfile from config/ (CRDs, RBAC, Deployment, CSV base, samples), then validate it.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(BUNDLE_GEN)
	$(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework

.PHONY: verify-bundle
verify-bundle: operator-sdk kustomize ## Fail when bundle/ is not what make bundle produces, or does not validate.
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cp -r config PROJECT "$$tmp"/ && mkdir "$$tmp/bundle"; \
	(cd "$$tmp" && $(BUNDLE_GEN) >/dev/null) || exit 1; \
	diff -ru -I 'createdAt:' bundle "$$tmp/bundle" && diff -u -I 'createdAt:' bundle.Dockerfile "$$tmp/bundle.Dockerfile" \
	  || { echo "bundle/ is stale: run make bundle"; exit 1; }
	$(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework

.PHONY: bundle-build
bundle-build: ## Build the bundle image (needs a container engine).
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image.
	$(CONTAINER_TOOL) push $(BUNDLE_IMG)

# opm on this machine, built from hack/tools/opm; plain HTTP for a bundle in
# a loopback registry (localhost:5000). opm render pulls with
# containers/image, which refuses to pull without a signature policy
# (policy.json); it gets the accept-anything policy upstream's opm image
# ships, in a HOME of its own under bin/ rather than the user's ~/.config.
OPM ?= $(LOCALBIN)/opm
OPM_HOME = $(LOCALBIN)/opm-home
OPM_PULL_FLAGS = $(if $(filter localhost:% 127.0.0.1:%,$(BUNDLE_IMG)),--use-http)

$(OPM_HOME)/.config/containers/policy.json:
	mkdir -p $(dir $@)
	printf '{"default": [{"type": "insecureAcceptAnything"}]}\n' > $@

.PHONY: catalog-build
catalog-build: $(OPM) $(OPM_HOME)/.config/containers/policy.json ## Build a file-based catalog image CATALOG_IMG on OPM_IMG holding the bundle BUNDLE_IMG (needs a container engine and the pushed bundle image).
	rm -rf catalog && mkdir -p catalog/platform-operator
	$(OPM) init platform-operator --default-channel=$(DEFAULT_CHANNEL) --output yaml > catalog/platform-operator/index.yaml
	HOME=$(OPM_HOME) $(OPM) render $(BUNDLE_IMG) $(OPM_PULL_FLAGS) --output yaml >> catalog/platform-operator/index.yaml
	printf -- '---\nschema: olm.channel\npackage: platform-operator\nname: %s\nentries:\n- name: platform-operator.v%s\n' $(DEFAULT_CHANNEL) $(VERSION) >> catalog/platform-operator/index.yaml
	$(OPM) validate catalog
	printf 'FROM %s\nENTRYPOINT ["/bin/opm"]\nCMD ["serve", "/configs", "--cache-dir=/tmp/cache"]\nADD . /configs\nRUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]\nLABEL operators.operatorframework.io.index.configs.v1=/configs\n' $(OPM_IMG) > catalog.Dockerfile
	$(DOCKER_BUILD) -f catalog.Dockerfile -t $(CATALOG_IMG) catalog

.PHONY: catalog-push
catalog-push: ## Push the catalog image.
	$(CONTAINER_TOOL) push $(CATALOG_IMG)

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

# Peers of the runtime benchmark (make bench), built from pinned modules.
$(LOCALBIN)/helm-operator-plugins: hack/tools/helm-operator-plugins/go.mod
	cd hack/tools/helm-operator-plugins && go build -o $@ github.com/operator-framework/helm-operator-plugins

$(LOCALBIN)/helm-operator: hack/tools/sdk-helm-operator/go.mod
	cd hack/tools/sdk-helm-operator && CGO_ENABLED=0 go build -tags containers_image_openpgp -o $@ github.com/operator-framework/operator-sdk/cmd/helm-operator

$(GOLANGCI_LINT): hack/tools/golangci-lint/go.mod
	cd hack/tools/golangci-lint && go build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(CONTROLLER_GEN): hack/tools/controller-gen/go.mod
	cd hack/tools/controller-gen && go build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen
