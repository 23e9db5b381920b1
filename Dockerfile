# Soundry image for both profiles (ROLE, DATABASE_URL, REDIS_URL, BLOB_STORE pick the profile at run time).
# Not built on the development machines (no Docker engine runs there); see docs/deploy.md.
FROM node:20-bookworm-slim
# better-sqlite3 builds from source; ffmpeg comes from npm (@ffmpeg-installer), a system one is preferred when present.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ ffmpeg ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund && npm cache clean --force
COPY . .
ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
RUN mkdir -p /data && chown node:node /data
VOLUME /data
EXPOSE 8080
USER node
CMD ["node", "--import", "tsx", "src/main.ts"]
