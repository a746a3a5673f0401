# Multi-stage: a static binary on a distroless, non-root base.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/driftguard ./cmd/driftguard

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/driftguard /driftguard
USER 65532:65532
ENTRYPOINT ["/driftguard"]
CMD ["run"]
