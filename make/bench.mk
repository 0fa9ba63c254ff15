# Benchmarks: they print figures, they are not tests (docs/benchmarks.md).
# Included by the Makefile.

##@ Benchmarks

.PHONY: bench-cronscaler
bench-cronscaler: cluster-binaries build ## Benchmark: 1000 CronScalers firing in the same minute (lag, CPU, RSS).
	go run ./hack/bench/cronscaler --bin-dir $(K8S_BIN) --extensions $(LOCALBIN)/extensions --crd-dir config/crd/bases

.PHONY: bench-admission
bench-admission: cluster-binaries build ## Benchmark: 1000 Nginx creates and edits through the admission webhook.
	go run ./hack/bench/admission --bin-dir $(K8S_BIN) --extensions $(LOCALBIN)/extensions $(BENCH_ARGS)

.PHONY: bench-rollout
bench-rollout: cluster-binaries build ## Benchmark: a chart rollout in waves against all at once, 1000 Nginx (N=...).
	go run ./hack/bench/rollout --bin-dir $(K8S_BIN) --manager $(LOCALBIN)/manager --crd-dir config/crd/bases \
	  --chart helm-charts/nginx --out $(LOCALBIN)/bench-rollout $(if $(N),-n $(N)) $(BENCH_ARGS)

# A comma, for lists inside $(if ...).
, := ,

.PHONY: bench
bench: cluster-binaries build $(LOCALBIN)/helm-operator-plugins $(LOCALBIN)/helm-operator ## Benchmark: our Helm runtime against its peers (QUICK=1, N10K=1).
	go run ./hack/bench/runtime --bin-dir $(K8S_BIN) --manager $(LOCALBIN)/manager \
	  --helm-operator-plugins $(LOCALBIN)/helm-operator-plugins --sdk-helm-operator $(LOCALBIN)/helm-operator \
	  --crd-dir config/crd/bases --chart helm-charts/nginx --out $(LOCALBIN)/bench $(if $(QUICK),--quick) \
	  $(if $(N10K),-n 10000 -runtimes floor$(,)ours -spec '{"replicaCount":0}' -phase-timeout 60m -settle 30m) $(BENCH_ARGS)

# Peers of the runtime benchmark (make bench), built from pinned modules;
# operator-sdk's helm-operator is also the operator the migration test
# (test/e2e) replaces.
$(LOCALBIN)/helm-operator-plugins: hack/tools/helm-operator-plugins/go.mod
	cd hack/tools/helm-operator-plugins && go build -o $@ github.com/operator-framework/helm-operator-plugins

.PHONY: sdk-helm-operator
sdk-helm-operator: $(LOCALBIN)/helm-operator ## Build operator-sdk v1.42.2's helm-operator into bin/ (bench and migration test peer).
$(LOCALBIN)/helm-operator: hack/tools/sdk-helm-operator/go.mod
	cd hack/tools/sdk-helm-operator && CGO_ENABLED=0 go build -tags containers_image_openpgp -o $@ github.com/operator-framework/operator-sdk/cmd/helm-operator
