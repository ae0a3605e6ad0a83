# syntax=docker/dockerfile:1
#
# Build:  docker build --build-arg VERSION=$(git describe --tags --always) -t redlockd .
# Run:    docker run -p 6380:6380 -p 9380:9380 redlockd \
#           --backends redis-1:6379,redis-2:6379,redis-3:6379
#
# The final image has no shell, so it carries no HEALTHCHECK command:
# point your orchestrator's probes at /healthz (liveness) and /readyz
# (a majority of backends answers) on the metrics port instead.

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first: this layer stays cached while only sources change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Without VERSION the binary reports the module's build information
# (the context has no .git, so "devel").
ARG VERSION=
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.Version=${VERSION}" \
      -o /out/redlockd ./cmd/redlockd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/redlockd /usr/local/bin/redlockd
# Numeric ids (distroless's nonroot user): a kubelet running a pod with
# runAsNonRoot can check a number, not a name.
USER 65532:65532
# Inside a container the defaults must listen on every interface; flags,
# REDLOCKD_* variables or a mounted --config file override these.
ENV REDLOCKD_LISTEN=0.0.0.0:6380 \
    REDLOCKD_METRICS_ADDR=0.0.0.0:9380 \
    REDLOCKD_LOG_FORMAT=json
EXPOSE 6380 9380
ENTRYPOINT ["/usr/local/bin/redlockd"]
