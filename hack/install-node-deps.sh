#!/usr/bin/env bash
# Installs, from Debian's packages, what the local cluster's real node
# (make cluster-up NODES=real) runs besides the binaries built from source:
# containerd (and its ctr client), runc, the CNI plugins, iptables and
# conntrack for kube-proxy, ipset for kube-router's policy controller,
# and a local image registry; and Prometheus, which the real-node suite's
# alert test runs. Only missing packages are installed
# (hack/apt-install.sh); nothing is started or configured here
# (internal/devtools/localcluster does that with its own config files).
set -euo pipefail

packages=(
  containerd                   # container runtime with the CRI plugin; ctr
  runc                         # OCI runtime used by containerd
  containernetworking-plugins  # bridge, host-local, portmap, firewall, loopback
  iptables                     # kube-proxy (iptables mode), CNI portmap/firewall
  conntrack                    # kube-proxy flushes UDP conntrack entries
  ipset                        # kube-router's NetworkPolicy sets
  docker-registry              # local registry on 127.0.0.1:5000
  iproute2                     # ip: the node's bridge and the service route
  util-linux                   # mount/umount for kubelet's volumes
  prometheus                   # make test-real's alert test scrapes the operator with it
)

exec "$(dirname "$0")/apt-install.sh" "${packages[@]}"
