# Builds the platform-operator image: the Helm runtime (/manager) with the
# charts and watches.yaml it serves, and the extensions sidecar
# (/extensions) with the kinds file its conversion webhook reads. One image, two containers in the operator's Pod.
# `make docker-build IMG=...`.
#
# The base images are build arguments so that a machine without access to
# the public registries can build on local stand-ins with the same contract
# (BUILDER_IMAGE: a Go toolchain; RUNTIME_IMAGE: static, non-root 65532,
# no shell, CA certificates and time-zone data).
ARG BUILDER_IMAGE=golang:1.26
ARG RUNTIME_IMAGE=gcr.io/distroless/static:nonroot

FROM ${BUILDER_IMAGE} AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /workspace

# Dependencies first, so they are cached apart from source changes.
COPY go.mod go.sum ./
RUN go mod download

COPY cmd/ cmd/
COPY internal/ internal/
COPY extensions/ extensions/
# The same packages as `make build`. The binaries go to /out: building
# `-o extensions` here would write into the extensions/ source directory.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/manager ./cmd/manager
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/extensions ./extensions

# No shell, no package manager; runs as uid 65532.
FROM ${RUNTIME_IMAGE}
WORKDIR /opt/platform-operator
COPY --from=builder /out/manager /manager
COPY --from=builder /out/extensions /extensions
COPY watches.yaml watches.yaml
# The sidecar's conversion webhook reads the versions of each kind here.
COPY config/crd/kinds.yaml config/crd/kinds.yaml
COPY helm-charts/ helm-charts/
USER 65532:65532
ENTRYPOINT ["/manager"]
