# syntax=docker/dockerfile:1
# Switchyard in a container: NATS clients on 4222, MQTT on 1883, HTTP monitoring on 8222,
# MQTT over WebSocket on 8080 (off until a configuration enables it), streams in /data.
#
#   docker build -t switchyard .
#   docker run -d --name switchyard -p 4222:4222 -p 1883:1883 -p 8222:8222 -v switchyard-data:/data switchyard
#
# The same steps run without Docker in CI: scripts/docker-steps.mjs.

# ---- build: compile the TypeScript and bundle it (needs the dev dependencies) ----
FROM node:22-bookworm-slim AS build
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

# ---- runtime: Node and the bundle, nothing else (the bundle has every dependency in it) ----
FROM node:22-bookworm-slim
ENV NODE_ENV=production \
    SWITCHYARD_PORT=4222 \
    SWITCHYARD_MQTT_PORT=1883 \
    SWITCHYARD_HTTP_PORT=8222 \
    SWITCHYARD_STORE_DIR=/data
WORKDIR /app
COPY --from=build /build/package.json ./
COPY --from=build /build/dist/switchyard ./dist/switchyard
COPY bin ./bin
COPY docker/switchyard.conf /etc/switchyard/switchyard.conf
RUN mkdir -p /data && chown node:node /data
# The image's unprivileged user (uid 1000); the store volume is the only place it writes.
USER node
VOLUME ["/data"]
EXPOSE 4222 1883 8222 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.SWITCHYARD_HTTP_PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "bin/switchyard.js"]
CMD ["-c", "/etc/switchyard/switchyard.conf"]
