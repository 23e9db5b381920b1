#!/usr/bin/env bash
# Starts PostgreSQL and Redis on loopback when they are not running, installing the Debian packages
# when they are absent (a fresh machine). The scale-out tests use postgres@127.0.0.1:5432 (trust)
# and 127.0.0.1:6379, the console tests Debian's chromium (playwright-core drives it and never
# downloads a browser of its own); nothing here is needed by `npm start`.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

pg_up() { command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; }
redis_up() { command -v redis-cli >/dev/null && [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }

missing=()
command -v pg_ctlcluster >/dev/null || missing+=(postgresql)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v chromium >/dev/null || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-services: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! pg_up; then
  version=$(ls /etc/postgresql | sort -V | tail -1)
  hba=/etc/postgresql/$version/main/pg_hba.conf
  # The tests connect as postgres over TCP without a password, as on the development machines.
  if ! grep -qE '^host\s+all\s+all\s+127\.0\.0\.1/32\s+trust' "$hba"; then
    as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  fi
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
fi
pg_up || { echo "ensure-services: PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }
psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='test'" | grep -q 1 ||
  psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE test' >/dev/null

if ! redis_up; then
  as_root redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
fi
redis_up || { echo "ensure-services: Redis is not reachable on 127.0.0.1:6379" >&2; exit 1; }
echo "ensure-services: PostgreSQL and Redis are up, chromium at $(command -v chromium)"
