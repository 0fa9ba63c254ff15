# OLM: OLM itself built and installed offline, the bundle, a catalog
# (docs/operations.md). Included by the Makefile.

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
olm-binaries: ## Build OLM's binaries, opm and grpc_health_probe into bin/olm-images.
	mkdir -p $(OLM_BINARIES)/olm $(OLM_BINARIES)/opm
	cd hack/tools/olm && GONOSUMDB=github.com/operator-framework/operator-lifecycle-manager CGO_ENABLED=0 go build -ldflags "-s -w" -o $(OLM_BINARIES)/olm/ tool
	cd hack/tools/opm && CGO_ENABLED=0 go build -ldflags "-s -w" -tags containers_image_openpgp -o $(OLM_BINARIES)/opm/ tool

.PHONY: olm-images
olm-images: olm-binaries ## Build the OLM image OLM_IMG and the opm image OPM_IMG (needs an engine).
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
scorecard-image: ## Build SCORECARD_IMG, operator-sdk's scorecard-test, from source.
	mkdir -p $(OLM_BINARIES)/scorecard
	cd hack/tools/operator-sdk && CGO_ENABLED=0 go build -ldflags "-s -w" -o $(OLM_BINARIES)/scorecard/ github.com/operator-framework/operator-sdk/images/scorecard-test
	$(BASE_IMAGES_ENV) hack/images/base-images.sh debian
	$(DOCKER_BUILD) --build-arg DEBIAN_IMAGE=$(DEBIAN_STANDIN) -f hack/images/scorecard-test/Dockerfile -t $(SCORECARD_IMG) $(OLM_BINARIES)/scorecard

.PHONY: olm-install
olm-install: helm ## Install OLM from OLM_IMG and OPM_IMG (olm-images-push first).
	$(OLM_SCRIPT_ENV) hack/olm/olm.sh install

.PHONY: olm-uninstall
olm-uninstall: helm ## Remove what olm-install installed (OLM's namespaces and CRDs).
	$(OLM_SCRIPT_ENV) hack/olm/olm.sh uninstall
##@ Bundle (OLM)

# Channels of the bundle; `make bundle CHANNELS=candidate,fast DEFAULT_CHANNEL=fast`.
CHANNELS ?= alpha
DEFAULT_CHANNEL ?= alpha
BUNDLE_METADATA_OPTS ?= --channels=$(CHANNELS) --default-channel=$(DEFAULT_CHANNEL)
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
# USE_IMAGE_DIGESTS=true: every image of the CSV (the operator's, the
# RELATED_IMAGE_* defaults, relatedImages) is resolved to its digest in its
# registry and referenced by it.
USE_IMAGE_DIGESTS ?= false
BUNDLE_GEN_FLAGS = $(if $(filter true,$(USE_IMAGE_DIGESTS)),--use-image-digests)
BUNDLE_GEN = $(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS) $(BUNDLE_GEN_FLAGS)

# The operand images, the operator's RELATED_IMAGE_* variables
# (config/manager/manager.yaml): `make bundle RELATED_IMAGE_NGINX=mirror/nginx:1.27`
# writes the one given into config/manager, as IMG is. The charts' defaults
# are what an operator without them runs (test/shipping keeps both equal).
RELATED_IMAGES = RELATED_IMAGE_NGINX RELATED_IMAGE_NGINX_EXPORTER RELATED_IMAGE_POSTGRES

# The namespace `operator-sdk run bundle` installed the operator into
# (docs/operations.md, Install with OLM).
BUNDLE_NAMESPACE ?= platform-operator-system

.PHONY: bundle-cleanup
bundle-cleanup: build operator-sdk ## Remove the operator run bundle installed (operator-sdk cleanup); refuses while resources of its kinds exist (DELETE_RESOURCES=1 deletes them first).
	$(uninstall-check)
	$(OPERATOR_SDK) cleanup platform-operator --namespace $(BUNDLE_NAMESPACE) --timeout $(UNINSTALL_TIMEOUT)

.PHONY: set-related-images
set-related-images:
	@$(foreach v,$(RELATED_IMAGES),$(if $($(v)),sed -i '/- name: $(v)$$/{n;s|value: .*|value: $($(v))|}' config/manager/manager.yaml &&) ) true

.PHONY: bundle
bundle: manifests operator-sdk kustomize set-related-images ## Generate bundle/ and bundle.Dockerfile from config/, then validate it (USE_IMAGE_DIGESTS=true: by digest).
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(BUNDLE_GEN)
	$(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework

.PHONY: verify-bundle
verify-bundle: operator-sdk kustomize ## Fail when bundle/ is not what make bundle produces, or is invalid.
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
catalog-build: $(OPM) $(OPM_HOME)/.config/containers/policy.json ## Build a file-based catalog image CATALOG_IMG holding BUNDLE_IMG.
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
