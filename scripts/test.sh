#!/usr/bin/env bash
# Installs what the tests need, then runs them. This is the README's test
# command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# -race where concurrency matters: engines and catalogs are shared across
# goroutines by design.
go test -race ./...
