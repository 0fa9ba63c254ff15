# Install on a cluster with kustomize (docs/operations.md). Included by the
# Makefile.

##@ Deployment

.PHONY: install
install: kustomize ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side -f -

.PHONY: uninstall
uninstall: kustomize ## Uninstall the CRDs (deletes every custom resource of these kinds).
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found -f -

.PHONY: deploy
deploy: kustomize ## Deploy the operator with image IMG to the current kubeconfig's cluster.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | kubectl apply --server-side -f -

.PHONY: undeploy
undeploy: kustomize ## Remove the operator from the cluster.
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found -f -
