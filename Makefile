# platform-operator: a Helm-based Kubernetes operator with a Go sidecar.
#
# `make help` lists the targets. Everything the targets need is built from
# source into bin/ on first use and cached there: tools (hack/tools/*), the
# local control plane (hack/kube, hack/kwok). DEVELOPMENT.md describes the
# targets at length.
#
# The targets are split by audience into make/*.mk, included below from the
# repository root (make always runs there):
#   make/develop.mk  code generation, formatting, lint
#   make/test.mk     the test tiers
#   make/bench.mk    benchmarks and the peers they run against
#   make/image.mk    the operator image, and images for machines without a registry
#   make/cluster.mk  the local cluster and the Kubernetes binaries it runs
#   make/deploy.mk   install on a cluster with kustomize
#   make/olm.mk      OLM: install it offline, the bundle, a catalog
#   make/tools.mk    pinned tools built into bin/

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

##@ Build

# The build target stays in this file: test/shipping reads it here to check
# that the Dockerfile builds the same binaries.

.PHONY: build
build: ## Build bin/manager (Helm runtime) and bin/extensions (sidecar).
	@go mod download
	go build -o $(LOCALBIN)/manager ./cmd/manager
	go build -o $(LOCALBIN)/extensions ./extensions

# Three steps, each announced: on a fresh machine the first takes most of the
# time (modules downloaded quietly, then compiled), later runs skip it.
.PHONY: run
run: ## Run the operator on the current cluster, or on a local one it starts.
	@echo "==> make run, step 1 of 3: the control plane and kwok, built from source once (bin/k8s)"
	@$(MAKE) --no-print-directory cluster-binaries
	@echo "==> make run, step 2 of 3: the operator (bin/manager, bin/extensions)"
	@$(MAKE) --no-print-directory build
	@echo "==> make run, step 3 of 3: the cluster (a local one unless the kubeconfig's answers), then the operator"
	@LOCALBIN=$(LOCALBIN) K8S_BIN=$(K8S_BIN) LOCAL_CLUSTER_DIR=$(LOCAL_CLUSTER_DIR) hack/run.sh

include make/develop.mk
include make/test.mk
include make/bench.mk
include make/image.mk
include make/cluster.mk
include make/deploy.mk
include make/olm.mk
include make/tools.mk
