# research in a container: a static binary on an empty image, run as a user
# without privileges. docs/install.md says how to build and run it.
#
#   docker build -t deepgraph/research .                    # the static image
#   docker build --target chromium -t deepgraph/research:chromium .
#                                                           # with Debian's Chromium
#   docker build --build-arg VERSION=v1.2.3 -t deepgraph/research:v1.2.3 .
#
# The default target is the last stage, "static".

ARG GO_VERSION=1.26
ARG DEBIAN=bookworm

# ---------------------------------------------------------------- build
FROM golang:${GO_VERSION}-${DEBIAN} AS build
WORKDIR /src
# The modules first, so that a change to the code does not download them
# again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# CGO_ENABLED=0: a static binary (the SQLite driver is pure Go), as
# scripts/release.sh builds them; -X main.version is what `research version`
# prints. research-temporal beside it is the program research hands research
# worker, batch and --temporal to (the build tag temporal; docs/temporal.md).
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/research ./cmd/research \
    && CGO_ENABLED=0 go build -trimpath -tags temporal -ldflags "-s -w -X main.version=${VERSION}" -o /out/research-temporal ./cmd/research \
    && /out/research version && /out/research-temporal version
# What the empty image needs: CA certificates for HTTPS, time zones, a user
# (uid 10001) with a home it owns, and a /tmp.
RUN mkdir -p /rootfs/etc /rootfs/tmp /rootfs/home/research \
    && chmod 1777 /rootfs/tmp && chmod 0700 /rootfs/home/research \
    && echo 'research:x:10001:10001:research:/home/research:/sbin/nologin' > /rootfs/etc/passwd \
    && echo 'research:x:10001:' > /rootfs/etc/group

# ------------------------------------------------------------- chromium
# Debian's Chromium beside the binary, for the agent's browser tool
# (research agent --browser), which finds it at /usr/bin/chromium. Chromium
# runs as the same unprivileged user; Docker's default seccomp profile
# denies the user namespaces its sandbox needs, so run this image with
# -e DEEPGRAPH_BROWSER_NO_SANDBOX=true, or give it a profile that allows
# them and keep the sandbox.
FROM debian:${DEBIAN}-slim AS chromium
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium ca-certificates fonts-liberation tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --user-group --create-home --home-dir /home/research --shell /usr/sbin/nologin research \
    && chmod 0700 /home/research
COPY --from=build /out/research /out/research-temporal /usr/local/bin/
ENV DEEPGRAPH_BROWSER_CHROMIUM=/usr/bin/chromium HOME=/home/research
USER 10001:10001
WORKDIR /home/research
ENTRYPOINT ["research"]
CMD ["--help"]

# --------------------------------------------------------------- static
FROM scratch AS static
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /usr/share/zoneinfo /usr/share/zoneinfo
COPY --from=build /rootfs/etc/ /etc/
COPY --from=build /rootfs/tmp /tmp
COPY --from=build --chown=10001:10001 /rootfs/home/research /home/research
COPY --from=build /out/research /out/research-temporal /
ENV HOME=/home/research
USER 10001:10001
WORKDIR /home/research
ENTRYPOINT ["/research"]
CMD ["--help"]
