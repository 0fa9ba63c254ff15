# The operator image, and the images a machine without access to an image
# registry builds for itself (hack/images). Included by the Makefile.

##@ Operator image

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
docker-build: $(if $(LOCAL_BASE_IMAGES),operator-base-images) ## Build the operator image IMG (LOCAL_BASE_IMAGES=1: on local stand-ins).
	$(DOCKER_BUILD) $(DOCKER_BASE_ARGS) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image IMG.
	$(CONTAINER_TOOL) push $(IMG)

##@ Images (no registry on the internet: hack/images)

.PHONY: engine-up
engine-up: ## Start a container engine (Debian's docker.io, dockerd); needs root.
	hack/images/engine.sh up

.PHONY: engine-down
engine-down: ## Stop the engine engine-up started; images stay in bin/.engine.
	hack/images/engine.sh down

.PHONY: base-images
base-images: ## Build the stand-in base images (Go builder, runtime, Debian; REBUILD=1).
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
workload-images: base-images ## Build the workloads' stand-in images and the WebApp test app.
	$(DOCKER_BUILD) --build-arg DEBIAN_IMAGE=$(DEBIAN_STANDIN) -t $(NGINX_STANDIN) hack/images/nginx
	$(DOCKER_BUILD) --build-arg DEBIAN_IMAGE=$(DEBIAN_STANDIN) -t $(NGINX_EXPORTER_STANDIN) hack/images/nginx-exporter
	$(DOCKER_BUILD) --build-arg DEBIAN_IMAGE=$(DEBIAN_STANDIN) -t $(POSTGRES_STANDIN) hack/images/postgres
	$(DOCKER_BUILD) --build-arg BUILDER_IMAGE=$(BUILDER_STANDIN) --build-arg RUNTIME_IMAGE=$(RUNTIME_STANDIN) -t $(WEBAPP_TEST_APP) hack/images/webapp-test-app

.PHONY: workload-images-push
workload-images-push: workload-images ## Build the workload images and push them to LOCAL_REGISTRY.
	for img in $(WORKLOAD_IMAGES); do $(CONTAINER_TOOL) push $$img || exit 1; done

.PHONY: images-smoke
images-smoke: ## Run every workload image under its chart's contract; needs the images.
	NGINX_STANDIN=$(NGINX_STANDIN) NGINX_EXPORTER_STANDIN=$(NGINX_EXPORTER_STANDIN) POSTGRES_STANDIN=$(POSTGRES_STANDIN) WEBAPP_TEST_APP=$(WEBAPP_TEST_APP) IMG=$(IMG) hack/images/smoke.sh

.PHONY: images-prune
images-prune: ## Remove dangling images (each docker-build leaves a ~2 GB builder stage).
	$(CONTAINER_TOOL) image prune -f

.PHONY: registry-up
registry-up: ## Start Debian's docker-registry on 127.0.0.1:5000 unless one answers.
	hack/images/registry.sh up

.PHONY: registry-down
registry-down: ## Stop the registry registry-up started (storage stays in bin/registry).
	hack/images/registry.sh down
