#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios (@modelcontextprotocol/conformance) against a
# fresh Workroom on embedded SQLite, and prints its summary. Not part of CI (it installs from the npm
# registry into a scratch directory); see docs/MCP.md, "Conformance".
#
# Two workarounds: the suite needs Node 22 (it imports `globSync` from node:fs), so on Node 20 its one
# import is pointed at the `glob` package instead; and its CLI cannot send a bearer token, so a small
# proxy on 127.0.0.1 adds the bot key to each request. Extra arguments go to `conformance server`
# (e.g. --scenario ping, -o <dir>).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
PORT=${PORT:-3917}
PROXY_PORT=$((PORT + 1))
cleanup() { kill "${PROXY_PID:-}" "${SERVER_PID:-}" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

cd "$WORK"
npm init -y >/dev/null
npm install --no-audit --no-fund --silent @modelcontextprotocol/conformance@0.1.16 glob@10 >/dev/null 2>&1
sed -i 's|import{existsSync as a,globSync as o,mkdtempSync as s,promises as c,readFileSync as l}from"fs";|import{existsSync as a,mkdtempSync as s,promises as c,readFileSync as l}from"fs";import{globSync as o}from"glob";|' \
  node_modules/@modelcontextprotocol/conformance/dist/index.js

(cd "$ROOT" && PORT=$PORT WORKROOM_DATA_DIR="$WORK/data" WORKROOM_ADMIN_PASSWORD=admin-password-1 \
  exec node --import tsx server/src/main.ts >"$WORK/server.log" 2>&1) &
SERVER_PID=$!
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/api/health" >/dev/null && break; sleep 0.5; done
api() { curl -sf -X POST "http://127.0.0.1:$PORT$1" -H 'content-type: application/json' ${2:+-H "authorization: Bearer $2"} -d "$3"; }
field() { node -pe "JSON.parse(require('fs').readFileSync(0, 'utf8'))['$1']"; }
TOKEN=$(api /api/auth/login '' '{"email":"admin@workroom.local","password":"admin-password-1"}' | field token)
BOT=$(api /api/bots "$TOKEN" '{"name":"conformance"}' | field id)
KEY=$(api "/api/bots/$BOT/api-keys" "$TOKEN" '{}' | field key)

KEY=$KEY PORT=$PORT PROXY_PORT=$PROXY_PORT node -e '
  const http = require("http");
  const { KEY, PORT, PROXY_PORT } = process.env;
  http.createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${KEY}`, host: `127.0.0.1:${PORT}` };
    const up = http.request({ host: "127.0.0.1", port: PORT, path: req.url, method: req.method, headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  }).listen(PROXY_PORT, "127.0.0.1");
' &
PROXY_PID=$!
sleep 1
npx conformance server --url "http://127.0.0.1:$PROXY_PORT/api/mcp" "$@" 2>&1 | sed -n '/=== SUMMARY ===/,$p'
