# syntax=docker/dockerfile:1
# RoadSave services in one image: roadsave-ingest, roadsave-detect and roadsave-notify (plus roadsave, for
# send/tail/ctl/replay inside the network). docker-compose.yml runs one container of it per service.
#
#   docker build -t roadsave:latest .
#
# No Docker engine runs on the development machines, so this file is not built there; the integration tests
# (Tests/IntegrationTests/ContainerFileTests.swift) check it and docker-compose.yml against the executables.
# The package needs a Swift 6 toolchain; pass --build-arg SWIFT_IMAGE=swift:6.x-bookworm to match the one the
# project is developed with if 6.0 lags behind it.

ARG SWIFT_IMAGE=swift:6.0-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# ---- build: the toolchain and the C libraries' development packages ---------------------------------------------
FROM ${SWIFT_IMAGE} AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libzmq3-dev libmsgpack-dev libsodium-dev libsqlite3-dev libzstd-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Package.swift names every target, test targets included, so their folders must be present to load it.
COPY Package.swift ./
COPY Shared ./Shared
COPY Services ./Services
COPY Tests ./Tests
RUN swift build -c release --product roadsave-ingest \
    && swift build -c release --product roadsave-detect \
    && swift build -c release --product roadsave-notify \
    && swift build -c release --product roadsave
# Stage what the runtime image needs: the four executables and the Swift runtime libraries they link
# (their RUNPATH is /usr/lib/swift/linux, where the toolchain image keeps them).
RUN mkdir -p /staging/bin /staging/swift \
    && bin="$(swift build -c release --show-bin-path)" \
    && cp "$bin/roadsave" "$bin/roadsave-ingest" "$bin/roadsave-detect" "$bin/roadsave-notify" /staging/bin/ \
    && cp -P /usr/lib/swift/linux/*.so* /staging/swift/

# ---- runtime: Debian slim, the shared C libraries, the Swift runtime, a non-root user ---------------------------
FROM ${RUNTIME_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libzmq5 libmsgpackc2 libsodium23 libsqlite3-0 libzstd1 sqlite3 \
        libcurl4 libxml2 libstdc++6 zlib1g tzdata ca-certificates bash \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /staging/swift/ /usr/lib/swift/linux/
COPY --from=build /staging/bin/ /usr/local/bin/
RUN echo /usr/lib/swift/linux > /etc/ld.so.conf.d/swift.conf && ldconfig \
    && groupadd --system --gid 10001 roadsave \
    && useradd --system --uid 10001 --gid roadsave --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin roadsave \
    && mkdir -p /var/lib/roadsave/ingest /var/lib/roadsave/detect /var/lib/roadsave/notify \
    && chown -R roadsave:roadsave /var/lib/roadsave && chmod -R 700 /var/lib/roadsave
# Each service's durable state: ROADSAVE_DATA_DIR=/var/lib/roadsave/<service>, a named volume per service in
# docker-compose.yml (no VOLUME here: it would add an anonymous volume beside those). The directories exist in the
# image, owned by the service user, so a new named volume mounted on one takes that ownership.
USER roadsave:roadsave
WORKDIR /tmp
# gateways 5550, records (internal) 5551, control 5552, events (internal) 5553, subscribers 5554, catch-up 5555
EXPOSE 5550 5551 5552 5553 5554 5555
# The services stop gracefully on SIGTERM (stop taking input, finish what is in hand, exit 0).
STOPSIGNAL SIGTERM
CMD ["roadsave", "--help"]
