#!/usr/bin/env bash
# Installs what the tests need, then runs them. This is the README's test
# command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# The real MCP servers the integration tests start, and the real MCP
# clients that drive the gateway (TypeScript SDK, Inspector CLI, conformance
# suite with Node 22), and a small sentence encoder for the semantic
# engines (scripts/embed-server), pinned by their lockfiles. Puppeteer's
# browser download is skipped: listing its tools needs none.
for dir in testdata/servers testdata/clients scripts/embed-server; do
  (cd "$dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
done

# -race everywhere: the pool, engines and catalogs are shared across
# goroutines by design.
go test -race -count=1 ./...
