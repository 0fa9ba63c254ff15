#!/usr/bin/env bash
# Starts and stops the container engine the image targets use: Debian's
# docker.io (dockerd 20.10) run by hand as a background process, because
# this machine has no systemd and no image registry on the internet.
#
#   hack/images/engine.sh up      install docker.io when missing, start
#                                 containerd + dockerd, wait for the API
#   hack/images/engine.sh down    stop both (and any container left), leave
#                                 nothing running or mounted
#   hack/images/engine.sh status
#
# Why dockerd and not buildah/podman: the Makefile and Dockerfile speak
# `docker build/push` (CONTAINER_TOOL ?= docker), the classic builder
# (DOCKER_BUILDKIT=0) needs nothing but dockerd, and `docker import` turns a
# rootfs tarball into a base image in one step.
#
# The engine gets its own containerd (own config, socket and state under
# $ENGINE_RUN) so that it never attaches to, or is stopped with, the
# containerd of the local cluster's real node. dockerd listens on the usual
# /var/run/docker.sock so a plain `docker` client finds it. Builds use
# `--network host`, so dockerd runs without a bridge and without touching
# iptables (--iptables=false --bridge=none): the real node's FORWARD rules
# are left alone.
#
# Environment: ENGINE_DATA (images, layers; default <repo>/bin/.engine),
# ENGINE_RUN (sockets, pid files; default /run/platform-operator-engine).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
# Under bin/ but in a dot directory: the go tool skips it, and the layers
# hold Go sources (the builder stages) that `go vet ./...` would otherwise
# try to build.
data=${ENGINE_DATA:-$repo/bin/.engine}
run=${ENGINE_RUN:-/run/platform-operator-engine}
docker_sock=/var/run/docker.sock
ctr_sock=$run/containerd/containerd.sock

log() { echo "engine: $*" >&2; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_engine() {
  if command -v dockerd >/dev/null && command -v containerd >/dev/null && command -v runc >/dev/null; then
    return
  fi
  if [ "$(id -u)" -ne 0 ]; then
    log "need root to install docker.io"; exit 1
  fi
  log "installing docker.io from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps the package's init script from starting a daemon of
  # its own; this script starts the engine.
  local policy=/usr/sbin/policy-rc.d created=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created=1
  fi
  apt-get install -y -qq --no-install-recommends docker.io containerd runc >/dev/null || { [ -n "$created" ] && rm -f "$policy"; exit 1; }
  [ -n "$created" ] && rm -f "$policy"
  true
}

wait_for() { # seconds, description, command...
  local secs=$1 what=$2; shift 2
  local i
  for ((i = 0; i < secs * 10; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  log "$what did not come up within ${secs}s"; return 1
}

up() {
  if alive "$run/dockerd.pid"; then
    log "already running (dockerd pid $(cat "$run/dockerd.pid"))"; return
  fi
  if [ -S "$docker_sock" ] && docker -H "unix://$docker_sock" version >/dev/null 2>&1; then
    log "another dockerd answers on $docker_sock; using it, not starting one"; return
  fi
  [ "$(id -u)" -eq 0 ] || { log "need root to start dockerd"; exit 1; }
  install_engine
  mkdir -p "$data/containerd" "$data/docker" "$run/containerd" "$run/docker"
  cat > "$run/containerd.toml" <<TOML
version = 2
root = "$data/containerd"
state = "$run/containerd/state"
# dockerd is the only client: no CRI, no kubelet.
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$ctr_sock"
[ttrpc]
  address = "$run/containerd/containerd.sock.ttrpc"
[debug]
  address = ""
TOML
  setsid containerd --config "$run/containerd.toml" >"$run/containerd.log" 2>&1 </dev/null &
  echo $! > "$run/containerd.pid"
  wait_for 30 containerd test -S "$ctr_sock" || { tail -20 "$run/containerd.log" >&2; down; exit 1; }

  # --oom-score-adjust=0: this VM lacks CAP_SYS_RESOURCE, so dockerd must
  # not try to lower its own OOM score.
  setsid dockerd \
    --host "unix://$docker_sock" \
    --containerd "$ctr_sock" \
    --data-root "$data/docker" \
    --exec-root "$run/docker" \
    --pidfile "$run/docker/dockerd.pid" \
    --iptables=false --ip-masq=false --bridge=none \
    --oom-score-adjust=0 \
    >"$run/dockerd.log" 2>&1 </dev/null &
  echo $! > "$run/dockerd.pid"
  wait_for 60 dockerd docker -H "unix://$docker_sock" version || { tail -20 "$run/dockerd.log" >&2; down; exit 1; }
  log "up: dockerd pid $(cat "$run/dockerd.pid"), containerd pid $(cat "$run/containerd.pid"), data in $data, logs in $run"
}

stop_pid() { # pidfile, name
  local f=$1 name=$2 pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name (pid $pid) ignored TERM for 30s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
    fi
  fi
  rm -f "$f"
}

down() {
  local ours=
  [ -f "$run/dockerd.pid" ] && ours=1
  if alive "$run/dockerd.pid"; then
    local ids
    ids=$(docker -H "unix://$docker_sock" ps -q 2>/dev/null || true)
    if [ -n "$ids" ]; then
      log "stopping containers: $ids"
      # shellcheck disable=SC2086
      docker -H "unix://$docker_sock" kill $ids >/dev/null 2>&1 || true
    fi
  fi
  stop_pid "$run/dockerd.pid" dockerd
  stop_pid "$run/containerd.pid" containerd
  # Shims of this containerd (found by its socket in their arguments) exit
  # with their containers; end any that did not.
  local pid
  for pid in $(pgrep -f -- "containerd-shim.*-address $ctr_sock" || true); do
    log "ending leftover shim $pid"; kill -TERM "$pid" 2>/dev/null || true
  done
  # Mounts dockerd or containerd left under their directories.
  local m
  for m in $(awk -v d="$data" -v r="$run" '$2 ~ "^"d || $2 ~ "^"r {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  # The socket is ours only when we started the daemon behind it.
  [ -n "$ours" ] && rm -f "$docker_sock"
  log "down"
}

status() {
  if alive "$run/dockerd.pid"; then
    echo "dockerd running (pid $(cat "$run/dockerd.pid")), containerd pid $(cat "$run/containerd.pid" 2>/dev/null)"
  else
    echo "not running"; return 1
  fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
