# syntax=docker/dockerfile:1
# driftguard: a static binary on a distroless base, run as a non-root user.
#   make image-docker               (tags ghcr.io/driftguard/driftguard:<chart appVersion>;
#                                    make image builds the same in Go, without an engine)
#   docker build --build-arg VERSION=v0.1.0 -t driftguard:v0.1.0 .
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
# go.mod replaces sigs.k8s.io/kustomize/api with this copy (no network, no
# programs in Kustomize's loader): it must be there before the download.
COPY third_party/ third_party/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/driftguard ./cmd/driftguard

# distroless/static: no shell, no package manager, CA certificates and
# /etc/passwd with the nonroot user (65532) only.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="driftguard" \
      org.opencontainers.image.description="Keeps a Kubernetes cluster equal to Git and stops people from quietly making it different" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/driftguard /driftguard
USER 65532:65532
ENTRYPOINT ["/driftguard"]
CMD ["run"]
