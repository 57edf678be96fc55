# syntax=docker/dockerfile:1
# Coral node image: build the TypeScript workspace, then run `coral-node start` as a non-root user.
# The repository supports Node >= 20.19; the image uses the current LTS.

FROM node:24-slim AS build
WORKDIR /src
# Manifests first, so the dependency layer is cached until a package.json changes.
COPY package.json package-lock.json ./
COPY packages/testkit/package.json packages/testkit/
COPY packages/keyring/package.json packages/keyring/
COPY packages/dsht/package.json packages/dsht/
COPY packages/dnssrv/package.json packages/dnssrv/
COPY packages/httpprx/package.json packages/httpprx/
COPY packages/node/package.json packages/node/
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY packages packages
RUN npx tsc -b && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf packages/*/src packages/*/test packages/*/tsconfig.json packages/*/dist/.tsbuildinfo

FROM node:24-slim AS runtime
ENV NODE_ENV=production \
    CORAL_DATA_DIR=/data \
    CORAL_HOST=0.0.0.0 \
    CORAL_DNS_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/packages packages
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
# proxy, DSHT (UDP), DNS (UDP and TCP; 5353 because a non-root user cannot bind 53), admin
EXPOSE 8090/tcp 8091/udp 5353/udp 5353/tcp 8092/tcp
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.CORAL_ADMIN_PORT||8092)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "packages/node/dist/cli.js"]
CMD ["start"]
