#!/usr/bin/env bash
# Builds the stand-in base images the operator's Dockerfile and the
# workload images build on, from this machine's Go toolchain and Debian's
# packages; nothing is pulled from an image registry (none is reachable
# here). Each image is a rootfs assembled in a temporary directory and
# loaded with `docker import`. They carry local names (localhost/standin-*)
# so the public names (golang, gcr.io/distroless/static) are never shadowed;
# `make docker-build LOCAL_BASE_IMAGES=1` passes them as BUILDER_IMAGE and
# RUNTIME_IMAGE.
#
#   hack/images/base-images.sh [builder] [runtime] [debian]   (default: all)
#
# An image that already exists is kept (REBUILD=1 rebuilds it): a fresh
# import gets a new id, which would throw away the layer cache of every
# image built on it. The builder's tag carries the Go version, so a new
# toolchain gets a new image.
#
#   builder  $BUILDER_STANDIN: the Go toolchain at $GOROOT (the host's
#            /usr/local/go), busybox-static for /bin/sh, CA certificates;
#            GOPROXY, GOSUMDB, GOFLAGS, ... copied from the host's `go env`
#            so `go mod download` goes through the same module proxy.
#   runtime  $RUNTIME_STANDIN: the distroless/static:nonroot contract: no
#            shell, /etc/passwd and /etc/group with nonroot (65532), CA
#            certificates, /usr/share/zoneinfo, USER 65532.
#   debian   $DEBIAN_STANDIN: Debian bookworm (minbase, from mmdebstrap) with
#            apt pointing at the host's mirror; the workload images
#            (hack/images/{nginx,postgres}) install their packages on it.
set -euo pipefail

DOCKER=${DOCKER:-docker}
BUILDER_STANDIN=${BUILDER_STANDIN:-localhost/standin-golang:$(go env GOVERSION | sed 's/^go//')}
RUNTIME_STANDIN=${RUNTIME_STANDIN:-localhost/standin-distroless-static:nonroot}
DEBIAN_STANDIN=${DEBIAN_STANDIN:-localhost/standin-debian:bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

log() { echo "base-images: $*" >&2; }

need_pkg() { # installs Debian packages the host needs to assemble a rootfs
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# /etc/passwd, /etc/group with root, nobody and nonroot (65532) like
# distroless.
write_users() { # rootfs
  mkdir -p "$1/etc"
  cat > "$1/etc/passwd" <<'P'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
P
  cat > "$1/etc/group" <<'G'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
G
}

ca_and_zoneinfo() { # rootfs
  mkdir -p "$1/etc/ssl/certs" "$1/usr/share"
  cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/"
  cp -a /usr/share/zoneinfo "$1/usr/share/"
  mkdir -m 1777 "$1/tmp"
}

import() { # rootfs, image, docker import -c changes...
  local root=$1 image=$2; shift 2
  local changes=() c
  for c in "$@"; do changes+=(-c "$c"); done
  tar --numeric-owner -C "$root" -c . | $DOCKER import "${changes[@]}" - "$image" >/dev/null
  log "built $image ($($DOCKER image inspect -f '{{.Size}}' "$image" | numfmt --to=iec))"
}

builder() {
  need_pkg busybox-static ca-certificates tzdata
  local root=$tmp/builder goroot
  goroot=$(go env GOROOT)
  mkdir -p "$root/usr/local" "$root/bin" "$root/root" "$root/go/bin"
  # The toolchain without its test suite and API lists (not needed to build).
  tar -C "$(dirname "$goroot")" --exclude="$(basename "$goroot")/test" --exclude="$(basename "$goroot")/api" \
    -c "$(basename "$goroot")" | tar -C "$root/usr/local" -x
  [ "$(basename "$goroot")" = go ] || mv "$root/usr/local/$(basename "$goroot")" "$root/usr/local/go"
  cp /bin/busybox "$root/bin/busybox"
  local applet
  for applet in $(/bin/busybox --list); do
    [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
  done
  write_users "$root"
  ca_and_zoneinfo "$root"
  # Module download settings of the host, so builds inside the image reach
  # the same Go module proxy (and only that).
  local env=(
    "ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    "ENV GOPATH=/go"
    "ENV GOCACHE=/root/.cache/go-build"
    "ENV GOTOOLCHAIN=local"
    "ENV CGO_ENABLED=0"
  )
  local v val
  for v in GOPROXY GOSUMDB GOFLAGS GONOSUMDB GONOPROXY GOPRIVATE GOINSECURE; do
    val=$(go env "$v")
    [ -n "$val" ] && env+=("ENV $v=$val")
  done
  import "$root" "$BUILDER_STANDIN" "${env[@]}" "WORKDIR /go"
}

runtime() {
  need_pkg ca-certificates tzdata
  local root=$tmp/runtime
  write_users "$root"
  ca_and_zoneinfo "$root"
  mkdir -p "$root/home/nonroot" "$root/root"
  chown 65532:65532 "$root/home/nonroot"
  chmod 700 "$root/root"
  import "$root" "$RUNTIME_STANDIN" \
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
    "USER 65532:65532" "WORKDIR /home/nonroot"
}

debian() {
  need_pkg mmdebstrap
  local tarball=$tmp/debian.tar
  # minbase: dpkg, apt and the essential set; no recommends, no docs.
  mmdebstrap --quiet --variant=minbase \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --aptopt='APT::Install-Recommends "false"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm "$tarball" \
    "deb $DEBIAN_MIRROR bookworm main" \
    "deb $DEBIAN_MIRROR bookworm-updates main" \
    "deb $DEBIAN_SECURITY_MIRROR bookworm-security main"
  $DOCKER import -c "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    -c 'CMD ["bash"]' "$tarball" "$DEBIAN_STANDIN" >/dev/null
  log "built $DEBIAN_STANDIN ($($DOCKER image inspect -f '{{.Size}}' "$DEBIAN_STANDIN" | numfmt --to=iec))"
}

[ $# -gt 0 ] || set -- builder runtime debian
for what in "$@"; do
  case $what in
    builder) image=$BUILDER_STANDIN ;;
    runtime) image=$RUNTIME_STANDIN ;;
    debian) image=$DEBIAN_STANDIN ;;
    *) image= ;;
  esac
  if [ -n "$image" ] && [ -z "${REBUILD:-}" ] && $DOCKER image inspect "$image" >/dev/null 2>&1; then
    log "$image exists (REBUILD=1 rebuilds it)"
    continue
  fi
  case $what in
    builder|runtime|debian) "$what" ;;
    *) echo "usage: $0 [builder] [runtime] [debian]" >&2; exit 2 ;;
  esac
done
