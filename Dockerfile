# Multi-stage build of the static chorus binary; the runtime image runs the gateway.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG CHORUS_VERSION=dev
RUN CHORUS_VERSION=${CHORUS_VERSION} scripts/build.sh /out/chorus

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/chorus /usr/local/bin/chorus
VOLUME ["/var/lib/chorus"]
EXPOSE 1883 8080
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/chorus"]
CMD ["gateway", "--data-dir", "/var/lib/chorus", "--mqtt-listen", "0.0.0.0:1883", "--http-listen", "0.0.0.0:8080"]
