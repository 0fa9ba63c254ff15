# The local cluster: the control plane and real-node binaries built from
# source, started and stopped by cmd/localcluster. Included by the Makefile.

##@ Local cluster

# NODES=kwok (default): fake Nodes played by kwok, Pods never run. NODES=real:
# one real node on this machine (containerd, kubelet, CNI bridge, kube-proxy,
# CoreDNS, a registry on 127.0.0.1:5000); needs root (docs in
# internal/devtools/localcluster/node.go). A number N means N kwok Nodes.
NODES ?= kwok
CLUSTER_NODES_FLAG = $(if $(filter kwok,$(NODES)),1,$(NODES))

# The commands of the control plane program (below).
KUBE_COMMANDS := etcd kube-apiserver kube-controller-manager kube-scheduler kubectl

.PHONY: cluster-binaries
cluster-binaries: $(addprefix $(K8S_BIN)/,$(KUBE_COMMANDS)) $(K8S_BIN)/kwok $(K8S_BIN)/localcluster ## Build the control plane binaries from source (once; cached in bin/k8s).

.PHONY: node-binaries
node-binaries: cluster-binaries $(K8S_BIN)/kubelet $(K8S_BIN)/kube-proxy $(K8S_BIN)/coredns $(K8S_BIN)/kube-router $(K8S_BIN)/pause ## Build a real node's kubelet, kube-proxy, CoreDNS, NetworkPolicy enforcer and pause program.

.PHONY: node-deps
node-deps: ## Install a real node's Debian packages when missing; needs root.
	hack/install-node-deps.sh

.PHONY: cluster-up
cluster-up: cluster-binaries $(if $(filter real,$(NODES)),node-deps node-binaries) ## Start the local cluster in the background (NODES=real: a real node).
	$(K8S_BIN)/localcluster up --bin-dir $(K8S_BIN) --state-dir $(LOCAL_CLUSTER_DIR) --kwok-module hack/kwok --nodes $(CLUSTER_NODES_FLAG)

.PHONY: cluster-smoke-real
cluster-smoke-real: node-deps node-binaries ## Prove the real node: Pod, probe, DNS, Service, PVC, a NetworkPolicy deny, clean down.
	LOCALCLUSTER_REAL_NODE=1 LOCALCLUSTER_BIN_DIR=$(K8S_BIN) go test -count=1 -timeout 15m -run 'TestRealNode' -v ./internal/devtools/localcluster/

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

# The control plane is one program, kube (hack/kube/cmd/kube), that runs as
# the name it is called by: the packages of its five commands compile once
# and link once. Each command is a link to it.
$(K8S_BIN)/kube: hack/kube/go.mod hack/kube/cmd/kube/main.go
	@echo "==> Building the control plane from source ($(KUBE_COMMANDS) in one program, $(KUBE_VERSION)); the first time takes several minutes"
	@cd hack/kube && go mod download
	cd hack/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $@ ./cmd/kube

$(addprefix $(K8S_BIN)/,$(KUBE_COMMANDS)): $(K8S_BIN)/kube
	ln -sfn kube $@

$(K8S_BIN)/kwok: hack/kwok/go.mod
	@cd hack/kwok && go mod download
	cd hack/kwok && go build -ldflags "-s -w" -o $@ sigs.k8s.io/kwok/cmd/kwok

# The real node (NODES=real): kubelet and kube-proxy from the same module as
# the control plane, CoreDNS from a module of its own (hack/coredns).
$(K8S_BIN)/kubelet $(K8S_BIN)/kube-proxy: hack/kube/go.mod
	cd hack/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/$(notdir $@)

$(K8S_BIN)/coredns: hack/coredns/go.mod hack/coredns/main.go
	cd hack/coredns && go build -ldflags "-s -w" -o $@ .

# The node's NetworkPolicy enforcer: kube-router's policy controller
# (iptables and ipsets), from a module of its own (hack/kube-router).
$(K8S_BIN)/kube-router: hack/kube-router/go.mod
	cd hack/kube-router && go build -ldflags "-s -w" -o $@ github.com/cloudnativelabs/kube-router/v2/cmd/kube-router

# Small Go programs of this module: always rebuilt (go build's cache makes
# that a second) so they never lag behind the source.
.PHONY: FORCE
FORCE:

$(K8S_BIN)/localcluster: FORCE
	@go mod download
	go build -o $@ ./cmd/localcluster

# The pod sandbox ("pause") image's only file: static, imported into the
# node's containerd by localcluster.
$(K8S_BIN)/pause: FORCE
	CGO_ENABLED=0 go build -ldflags "-s -w" -o $@ ./hack/localnode/pause
