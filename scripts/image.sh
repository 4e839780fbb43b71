#!/usr/bin/env bash
# Builds the toolshelf container image with buildah, without a daemon:
# the static binary (CGO off, as release builds are), the system's CA
# certificates, and the Containerfile at the top of the repository.
#
#   scripts/image.sh [TAG]          build TAG (default toolshelf:dev)
#   scripts/image.sh --smoke [TAG]  build, then run the image: serve --http
#                                   must answer /healthz and tools/list on
#                                   the built-in catalog, and search must
#                                   print a result
#
# buildah comes from Debian's package (apt-get install buildah); the vfs
# storage driver needs no kernel overlay support, and chroot isolation no
# cgroups, so both work inside an unprivileged CI container.
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=false
if [[ ${1:-} == --smoke ]]; then
  smoke=true
  shift
fi
tag=${1:-toolshelf:dev}
buildah=(buildah --storage-driver vfs)
certs=/etc/ssl/certs/ca-certificates.crt

command -v buildah >/dev/null || { echo "image.sh: buildah is not installed (apt-get install buildah)" >&2; exit 1; }
[[ -r $certs ]] || { echo "image.sh: no CA certificates at $certs (apt-get install ca-certificates)" >&2; exit 1; }

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/home/config/toolshelf" "$ctx/home/cache" "$ctx/tmp"
cp "$certs" "$ctx/ca-certificates.crt"
echo "== building the static binary"
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$ctx/toolshelf" ./cmd/toolshelf
echo "== building $tag"
"${buildah[@]}" bud --quiet --layers=false -f Containerfile -t "$tag" "$ctx" >/dev/null
"${buildah[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$tag"

$smoke || exit 0

echo "== smoke test of $tag"
ctr=$("${buildah[@]}" from --quiet "$tag")
run() { "${buildah[@]}" run --isolation chroot "$ctr" -- "$@"; }
log=$ctx/serve.log
cleanup() {
  if [[ -n ${serve_pid:-} ]]; then
    kill "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  "${buildah[@]}" rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$ctx"
}
trap cleanup EXIT

out=$(run /toolshelf search "create a pull request" 2>&1)
grep -q 'mcp__github__create_pull_request' <<<"$out" || { echo "search printed no result:"; echo "$out"; exit 1; } >&2
echo "search: ok"

# A free port on loopback; chroot isolation shares the host's network.
port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
token=smoke-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
"${buildah[@]}" run --isolation chroot --env TOOLSHELF_AUTH_TOKEN="$token" "$ctr" -- /toolshelf serve --http "0.0.0.0:$port" >"$log" 2>&1 &
serve_pid=$!
base=http://127.0.0.1:$port
for _ in $(seq 600); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && break
  kill -0 "$serve_pid" 2>/dev/null || { echo "serve exited:"; cat "$log"; exit 1; } >&2
  sleep 0.1
done
health=$(curl -fsS -H "Authorization: Bearer $token" "$base/healthz")
grep -q '"status": "ok"' <<<"$health" || { echo "/healthz: $health"; exit 1; } >&2
echo "healthz: ok"

mcp() { curl -fsS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' "$@" "$base/mcp"; }
headers=$ctx/headers
mcp -D "$headers" -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"1"}}}' >/dev/null
session=$(awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}' "$headers" | tr -d '\r')
[[ -n $session ]] || { echo "initialize gave no session:"; cat "$headers"; exit 1; } >&2
mcp -H "Mcp-Session-Id: $session" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
tools=$(mcp -H "Mcp-Session-Id: $session" -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
grep -q '"search_tools"' <<<"$tools" || { echo "tools/list: $tools"; exit 1; } >&2
echo "tools/list: ok"
echo "smoke test passed: $tag"
