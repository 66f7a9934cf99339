# syntax=docker/dockerfile:1
#
# soakd's image: a static binary (CGO off) on a distroless base, running as
# a non-root user. The version is stamped at build time:
#
#   docker build --build-arg VERSION=v1.2.3 -t soakd .
#
# There is no HEALTHCHECK: liveness (/healthz) and readiness (/readyz) are
# the orchestrator's probes (see deploy/kubernetes and deploy/compose).

FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# BuildKit sets these to the platform being built (docker buildx build
# --platform linux/arm64); no default, which would pin amd64. Without
# BuildKit they are empty and the build is for the builder's own platform.
ARG TARGETOS
ARG TARGETARCH
# The same command deploy's TestDockerfileBuild runs.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-$(go env GOOS)} GOARCH=${TARGETARCH:-$(go env GOARCH)} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/soakd ./cmd/soakd

# distroless/static: CA certificates, tzdata and /etc/passwd, no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/soakd /usr/local/bin/soakd
USER 65532:65532
EXPOSE 9480
ENTRYPOINT ["/usr/local/bin/soakd"]
