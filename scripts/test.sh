#!/usr/bin/env bash
# Installs what the tests need, then runs them. This is the README's test
# command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# The real MCP servers the integration tests start (and an older version
# of one, for toolshelf update), and the real MCP
# clients that drive the gateway (TypeScript SDK, Inspector CLI, conformance
# suite with Node 22), and a small sentence encoder for the semantic
# engines (scripts/embed-server), pinned by their lockfiles. Puppeteer's
# browser download is skipped: listing its tools needs none.
for dir in testdata/servers testdata/registry/npm testdata/clients testdata/idp testdata/apps scripts/embed-server; do
  (cd "$dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
done

# go test's own limit (10 minutes a package) scales with the machine's
# load per core, as the tests' deadlines do (internal/testenv): a loaded
# machine is slower, not failing. $TOOLSHELF_TEST_SCALE sets the factor.
scale=${TOOLSHELF_TEST_SCALE:-$(awk -v cores="$(nproc)" '{ s = $1 / cores; print (s > 1 ? s : 1) }' /proc/loadavg 2>/dev/null || echo 1)}
timeout=$(awk -v s="$scale" 'BEGIN { printf "%dm", 10 * s + 0.999 }')
echo "go test -timeout $timeout (load scale $scale)"

# -race everywhere: the pool, engines and catalogs are shared across
# goroutines by design. scripts/testreport prints each package's line and
# what failed, then every skipped test with its reason (a machine without
# chromium or PostgreSQL skips their tests: it must say so), and the
# summary line last. In CI a skip that scripts/expected-skips.txt does not
# name fails the run.
expected=()
[[ -n ${CI:-} ]] && expected=(-expected scripts/expected-skips.txt)
# The report tool is built in a folder of this run's own: two checkouts
# testing at once must not overwrite each other's.
report=$(mktemp -d "${TMPDIR:-/tmp}/toolshelf-testreport.XXXXXX")
trap 'rm -rf "$report"' EXIT
go build -o "$report/testreport" ./scripts/testreport
go test -race -count=1 -timeout "$timeout" -json ./... | "$report/testreport" "${expected[@]}"
