#!/usr/bin/env bash
# Installs what the tests need, then runs them. This is the README's test
# command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# The real MCP servers the integration tests start, pinned by the lockfile.
# Puppeteer's browser download is skipped: listing its tools needs none.
(cd testdata/servers && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)

# -race everywhere: the pool, engines and catalogs are shared across
# goroutines by design.
go test -race ./...
