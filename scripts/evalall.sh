#!/usr/bin/env bash
# Prints the headline retrieval metrics of one engine on every dataset in
# ../shared/datasets: recall@5, recall@10 and complete@10 per subset, and
# abstentions. Usage: scripts/evalall.sh [ENGINE | --variant NAME]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == --variant ]]; then
  choice=(--variant "$2")
else
  choice=(--engine "${1:-bm25}")
fi
go build -o /tmp/toolshelf-eval ./cmd/toolshelf
for d in ../shared/datasets/*/; do
  /tmp/toolshelf-eval eval --dataset "$d" "${choice[@]}" --json
done | python3 -c '
import json, sys
dec = json.JSONDecoder(); s = sys.stdin.read(); i = 0
while i < len(s):
    while i < len(s) and s[i].isspace(): i += 1
    if i >= len(s): break
    r, i = dec.raw_decode(s, i)
    for k, v in sorted(r["subsets"].items()):
        if k != "all" and not k.startswith("level"): continue
        if v.get("queries", 0) == 0 and "abstain" in v:
            a = v["abstain"]; print("%-15s %-8s abstained %d/%d (%d empty, %d flagged weak)" % (r["dataset"].rstrip("/").split("/")[-1], k, max(a["no_hits"], a.get("weak", 0)), a["queries"], a["no_hits"], a.get("weak", 0))); continue
        print("%-15s %-8s r@1 %.3f r@5 %.3f r@10 %.3f c@10 %.3f mrr %.3f weak %d" % (r["dataset"].rstrip("/").split("/")[-1], k, v["recall@1"], v["recall@5"], v["recall@10"], v["complete@10"], v["mrr@10"], v.get("weak", 0)))
'
