# syntax=docker/dockerfile:1
# Gatehouse: a production image. It needs DATABASE_URL, a JWT key (JWT_SECRET, JWT_PUBLIC_KEY or
# JWT_JWKS_URL; the last two with JWT_AUDIENCE and JWT_ISSUER) and POLICY_ENV when the policies
# declare environments; it refuses to start without them.
# The embedded PostgreSQL (an optional dependency, for `npm start` on a laptop) is not in the image.
# CI has no Docker daemon: it runs these stages with scripts/docker-stages.mjs, which reads this file.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Optional dependencies included: TypeScript's compiler is one (@typescript/typescript-<platform>),
# and the build needs it; the prune below drops them all, the embedded PostgreSQL with them.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build \
 && npm prune --omit=dev --omit=optional --ignore-scripts

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    POLICY_DIR=/app/policies
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json openapi.yaml ./
COPY migrations ./migrations
# Example policies; mount your own directory over /app/policies.
COPY policies ./policies
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself: stop accepting, finish in-flight requests, exit 0.
CMD ["node", "dist/main.js", "serve"]
