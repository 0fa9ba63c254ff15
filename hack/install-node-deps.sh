#!/usr/bin/env bash
# Installs, from Debian's packages, what the local cluster's real node
# (make cluster-up NODES=real) runs besides the binaries built from source:
# containerd (and its ctr client), runc, the CNI plugins, iptables and
# conntrack for kube-proxy, ipset for kube-router's policy controller,
# and a local image registry. Only missing
# packages are installed; nothing is started or configured here
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

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-node-deps: need root to install: ${missing[*]}" >&2
  exit 1
fi
echo "install-node-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends keeps docker-registry and containerd from pulling
# in services we do not use; policy-rc.d stops the packages' init scripts
# from starting system daemons (the cluster starts its own).
policy=/usr/sbin/policy-rc.d
created_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod +x "$policy"
  created_policy=1
fi
trap '[ -n "$created_policy" ] && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}"
