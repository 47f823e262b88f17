# syntax=docker/dockerfile:1
# OpenWOP host: a multi-stage image. The build stage compiles TypeScript with every dependency; the
# runtime stage holds only production dependencies and the compiled program, and runs as `node`.
ARG NODE_VERSION=20.20.2

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY plugins plugins
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src src
COPY migrations migrations
# The client commands' printed views are typed from the generated API types (type-only imports).
COPY generated generated
RUN npm run build
# The operator console: built here with the dev tooling (vite, preact); the runtime stage takes only its files.
COPY bin bin
COPY schemas schemas
COPY console console
RUN node bin/build-console.js

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    OPENWOP_DATA_DIR=/app/data \
    OPENWOP_USE_DIST=true
WORKDIR /app
COPY package.json package-lock.json ./
COPY plugins plugins
# The npm cache is a build cache mount, so it never lands in the image.
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --ignore-scripts --no-audit --no-fund
COPY --from=build /app/dist dist
COPY --from=build /app/console/dist console/dist
COPY schemas schemas
COPY bin bin
# The embedded database lives here when DATABASE_URL is unset; mount a volume to keep it.
RUN mkdir -p data && chown node:node data
VOLUME ["/app/data"]
USER node
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/src/main.js", "serve"]
