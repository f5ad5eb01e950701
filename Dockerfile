# syntax=docker/dockerfile:1
# The service image: API, worker, webhook deliverer, operator and the admin CLI,
# one image with several entrypoints (the chart sets each Deployment's command):
#
#   FFKUBE_ROLES=api      node dist/api/main.js   the HTTP API
#   FFKUBE_ROLES=worker   node dist/api/main.js   dispatcher, status projector, file processor
#   FFKUBE_ROLES=webhooks node dist/api/main.js   the webhook deliverer
#   node dist/operator/main.js                    the operator
#   node dist/api/admin/cli.js …                  the admin CLI (kubectl exec)
#
# Build from the repository root: docker build -t ghcr.io/ffkube/ffkube:0.1.0 .
# Node 24 (LTS until April 2028) on Debian 12 bookworm; the code also runs on Node 20.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
# ffprobe's build, as in runner-image/Dockerfile: its own stage, or the folder
# scripts/build-images.sh hands in (`context:ffkube-ffmpeg=local:…`).
ARG FFMPEG_BUILD=ffmpeg-build

# 1: compile api/, operator/ and contracts/ (api/ shares no runner module: the file
# processor starts ffprobe through contracts/tool-process.ts).
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY contracts ./contracts
COPY api ./api
COPY operator ./operator
# The web console the api role serves at /console/: Preact and the typed client, bundled by esbuild.
COPY client ./client
COPY console ./console
COPY scripts/build-console.sh ./scripts/build-console.sh
RUN npx --no-install tsc -p tsconfig.json \
 && bash scripts/build-console.sh \
 && npm prune --omit=dev --no-audit --no-fund --ignore-scripts

# 2: ffmpeg and ffprobe, built by scripts/ffmpeg/build-ffmpeg.sh (docs/adr/0004-ffmpeg-build.md).
FROM ${NODE_IMAGE} AS ffmpeg-compile
COPY scripts/ffmpeg/build-ffmpeg.sh /src/build-ffmpeg.sh
RUN apt-get update \
 && bash /src/build-ffmpeg.sh --build-packages | xargs apt-get install -y --no-install-recommends \
 && bash /src/build-ffmpeg.sh /opt/ffmpeg
FROM scratch AS ffmpeg-build
COPY --from=ffmpeg-compile /opt/ffmpeg/ /
FROM ${FFMPEG_BUILD} AS ffmpeg

# 3: the runtime. ffprobe is there for the file processor (store-file and
# upload metadata); no compiler, no npm; user 65532.
FROM ${NODE_IMAGE}
COPY --from=ffmpeg /bin/ffmpeg /bin/ffprobe /usr/local/bin/
COPY --from=ffmpeg /runtime-packages /usr/local/share/ffkube/ffmpeg-runtime-packages
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates $(cat /usr/local/share/ffkube/ffmpeg-runtime-packages) \
 && rm -rf /var/lib/apt/lists/* \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* /usr/local/bin/yarn /usr/local/bin/yarnpkg \
 && groupadd --gid 65532 ffkube \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin ffkube
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist/contracts ./dist/contracts
COPY --from=build /src/dist/api ./dist/api
COPY --from=build /src/dist/console ./dist/console
COPY --from=build /src/dist/operator ./dist/operator
# Read-only root filesystem in the chart: /tmp and /data are emptyDirs.
ENV NODE_ENV=production \
    EXECUTOR=kubernetes \
    HOST=0.0.0.0 \
    TMPDIR=/tmp \
    FFKUBE_DATA_DIR=/data \
    FFPROBE_PATH=/usr/local/bin/ffprobe \
    FFMPEG_PATH=/usr/local/bin/ffmpeg
USER 65532:65532
EXPOSE 8080
CMD ["node", "dist/api/main.js"]
