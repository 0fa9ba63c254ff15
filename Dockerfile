# Builds the platform-operator image: the Helm runtime (manager) with the
# charts and watches.yaml it serves. `make docker-build IMG=...`.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /workspace

# Dependencies first, so they are cached apart from source changes.
COPY go.mod go.sum ./
RUN go mod download

COPY cmd/ cmd/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o manager ./cmd/manager

# No shell, no package manager; runs as uid 65532.
FROM gcr.io/distroless/static:nonroot
WORKDIR /opt/platform-operator
COPY --from=builder /workspace/manager /manager
COPY watches.yaml watches.yaml
COPY helm-charts/ helm-charts/
USER 65532:65532
ENTRYPOINT ["/manager"]
