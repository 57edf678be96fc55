# Coral node image: build the TypeScript workspace, then run `coral-node start` as a non-root user.
#
#   docker build -t coral-node:local .
#
# Needs BuildKit (the default builder since Docker 23 and in `docker compose` v2; with an older
# client set DOCKER_BUILDKIT=1). NODE_IMAGE is the base of both stages: the current LTS by default
# (the repository supports Node.js 24 and 26); any image with node, npm and a POSIX shell works, e.g.
# the locally made one of `npm run test:containers`.
#
# Behind a TLS-intercepting proxy, give npm the CA bundle it needs as a build secret; it is mounted
# for the one `npm ci` step and never stored in a layer:
#
#   docker build --secret id=npm_ca,src=/etc/ssl/certs/ca-certificates.crt -t coral-node:local .
ARG NODE_IMAGE=node:24-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
# Manifests first, so the dependency layer is cached until a package.json changes. Scripts are
# skipped here (the root `prepare` builds the workspace, whose sources are not copied yet) and run
# by `npm rebuild` below.
COPY package.json package-lock.json ./
COPY packages/runtime/package.json packages/runtime/
COPY packages/testkit/package.json packages/testkit/
COPY packages/keyring/package.json packages/keyring/
COPY packages/names/package.json packages/names/
COPY packages/connguard/package.json packages/connguard/
COPY packages/accesslog/package.json packages/accesslog/
COPY packages/dsht/package.json packages/dsht/
COPY packages/sim/package.json packages/sim/
COPY packages/dnssrv/package.json packages/dnssrv/
COPY packages/httpprx/package.json packages/httpprx/
COPY packages/node/package.json packages/node/
RUN --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then \
      export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca npm_config_cafile=/run/secrets/npm_ca; \
    fi; \
    npm ci --ignore-scripts --no-audit --no-fund && npm rebuild --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY packages packages
RUN npx tsc -b && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf packages/*/src packages/*/tsconfig.json \
           packages/*/dist/.tsbuildinfo

FROM ${NODE_IMAGE} AS runtime
# MALLOC_*: glibc malloc's thresholds fixed at 128 KiB, two arenas (NODE_RUNTIME_ENV in
# packages/node/src/runtime-env.ts says why; keep the two in step).
ENV NODE_ENV=production \
    CORAL_DATA_DIR=/data \
    CORAL_HOST=0.0.0.0 \
    CORAL_DNS_HOST=0.0.0.0 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=131072 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/packages packages
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
# proxy (http, https), DSHT (UDP), DNS (UDP and TCP; 5353 because a non-root user cannot bind 53), admin
EXPOSE 8090/tcp 8443/tcp 8091/udp 5353/udp 5353/tcp 8092/tcp
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.CORAL_ADMIN_PORT||8092)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "packages/node/bin/coral-node.js"]
CMD ["start"]
