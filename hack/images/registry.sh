#!/usr/bin/env bash
# A local image registry for pushing images without the internet: Debian's
# docker-registry (distribution 2.8) on 127.0.0.1:5000 over plain http,
# storage in <repo>/bin/registry. docker treats a registry on loopback as
# insecure by default, so `docker push localhost:5000/...` needs no setup.
#
#   hack/images/registry.sh up     start it, unless a registry already
#                                  answers on the address (e.g. the one the
#                                  local cluster's real node runs)
#   hack/images/registry.sh down   stop the registry this script started
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
addr=${REGISTRY_ADDR:-127.0.0.1:5000}
dir=${REGISTRY_DIR:-$repo/bin/registry}
pidfile=$dir/registry.pid

log() { echo "registry: $*" >&2; }
answers() { curl -fsS -o /dev/null --max-time 2 "http://$addr/v2/" 2>/dev/null; }

up() {
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    log "already running (pid $(cat "$pidfile")) on $addr"; return
  fi
  if answers; then
    log "a registry already answers on $addr; using it"; return
  fi
  if ! command -v docker-registry >/dev/null; then
    [ "$(id -u)" -eq 0 ] || { log "need root to install docker-registry"; exit 1; }
    log "installing docker-registry from Debian's packages"
    policy=/usr/sbin/policy-rc.d created=
    [ -e "$policy" ] || { printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created=1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry >/dev/null || true
    [ -n "$created" ] && rm -f "$policy"
    command -v docker-registry >/dev/null || { log "docker-registry did not install"; exit 1; }
  fi
  mkdir -p "$dir/storage"
  cat > "$dir/config.yml" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: $addr
YAML
  setsid docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 </dev/null &
  echo $! > "$pidfile"
  for _ in $(seq 100); do answers 2>/dev/null && { log "up on $addr (pid $(cat "$pidfile")), storage in $dir/storage"; return; }; sleep 0.1; done
  log "did not come up:"; tail -20 "$dir/registry.log" >&2; down; exit 1
}

down() {
  [ -f "$pidfile" ] || { log "not started by this script"; return; }
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -f "$pidfile"
  log "down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
