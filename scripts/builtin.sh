#!/usr/bin/env bash
# Regenerates the built-in catalog (internal/builtin) from the pinned npm
# servers: installs them, exports their tools through examples/servers.json,
# and records the package versions the export came from.
set -euo pipefail
cd "$(dirname "$0")/.."

(cd testdata/servers && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
[[ -s internal/builtin/catalog.json ]] || echo '{"servers":[]}' > internal/builtin/catalog.json
[[ -s internal/builtin/versions.json ]] || echo '{}' > internal/builtin/versions.json
go run ./cmd/toolshelf catalog export --config examples/servers.json > internal/builtin/catalog.json.new
mv internal/builtin/catalog.json.new internal/builtin/catalog.json
node -e '
const pkg = require("./testdata/servers/package.json");
const lock = require("./testdata/servers/package-lock.json");
const out = {};
for (const name of Object.keys(pkg.dependencies).sort()) {
  // Not a server: the SDK testdata/servers/skills-server.mjs is built on.
  if (name === "@modelcontextprotocol/server") continue;
  out[name] = lock.packages["node_modules/" + name].version;
}
process.stdout.write(JSON.stringify(out, null, 2) + "\n");
' > internal/builtin/versions.json
echo "internal/builtin: $(grep -o '"name"' internal/builtin/catalog.json | wc -l) names written" >&2
