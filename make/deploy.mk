# Install on a cluster with kustomize (docs/operations.md). Included by the
# Makefile.

##@ Deployment

# undeploy and uninstall first run `bin/extensions uninstall`
# (extensions/internal/uninstall): it refuses while custom resources of the
# operator's kinds exist, naming each, because their finalizers need the
# operator. DELETE_RESOURCES=1 deletes them instead, while the operator
# runs, and waits until they are gone. UNINSTALL_TIMEOUT bounds that wait
# and each kubectl delete below.
DELETE_RESOURCES ?=
UNINSTALL_TIMEOUT ?= 5m

# uninstall-check runs the check for target $@; on failure nothing was
# deleted and make stops.
define uninstall-check
@echo "$(LOCALBIN)/extensions uninstall --timeout=$(UNINSTALL_TIMEOUT)$(if $(filter 1,$(DELETE_RESOURCES)), --delete-resources)"
@$(LOCALBIN)/extensions uninstall --timeout=$(UNINSTALL_TIMEOUT) $(if $(filter 1,$(DELETE_RESOURCES)),--delete-resources) || { \
	echo "make $@: stopped, nothing of the operator was removed.$(if $(filter 1,$(DELETE_RESOURCES)),, To delete the resources first: make $@ DELETE_RESOURCES=1)" >&2; \
	exit 1; }
endef

# --force-conflicts: the manifests win over fields another manager changed
# since, such as the conversion strategy `bin/extensions uninstall` sets to
# None (docs/operations.md, Uninstall).
.PHONY: install
install: kustomize ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side --force-conflicts -f -

.PHONY: uninstall
uninstall: kustomize build ## Uninstall the CRDs; refuses while resources of these kinds exist (DELETE_RESOURCES=1 deletes them first).
	$(uninstall-check)
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found --wait --timeout=$(UNINSTALL_TIMEOUT) -f -

.PHONY: deploy
deploy: kustomize ## Deploy the operator with image IMG to the current kubeconfig's cluster.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | kubectl apply --server-side --force-conflicts -f -

# The CRDs go first, while the operator still runs: a resource created
# since the check is deleted with its CRD, and its finalizers still run.
# Then the rest of config/default (its CRDs are gone by then).
.PHONY: undeploy
undeploy: kustomize build ## Remove the operator; refuses while resources of its kinds exist (DELETE_RESOURCES=1 deletes them first).
	$(uninstall-check)
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found --wait --timeout=$(UNINSTALL_TIMEOUT) -f -
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found --wait --timeout=$(UNINSTALL_TIMEOUT) -f -
