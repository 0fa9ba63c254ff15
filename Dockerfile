# Builds the platform-operator image: the Helm runtime (/manager) with the
# charts and watches.yaml it serves, and the extensions sidecar
# (/extensions). One image, two containers in the operator's Pod.
# `make docker-build IMG=...`.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /workspace

# Dependencies first, so they are cached apart from source changes.
COPY go.mod go.sum ./
RUN go mod download

COPY cmd/ cmd/
COPY internal/ internal/
COPY extensions/ extensions/
# The same packages as `make build`.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o manager ./cmd/manager
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o extensions ./extensions

# No shell, no package manager; runs as uid 65532.
FROM gcr.io/distroless/static:nonroot
WORKDIR /opt/platform-operator
COPY --from=builder /workspace/manager /manager
COPY --from=builder /workspace/extensions /extensions
COPY watches.yaml watches.yaml
COPY helm-charts/ helm-charts/
USER 65532:65532
ENTRYPOINT ["/manager"]
