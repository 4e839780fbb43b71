#!/usr/bin/env bash
# Measures what the patches in this folder would save a call through the
# gateway: the released go-sdk, each patch alone and both, applied to a
# copy of the SDK in a temporary folder and used through a go.work made
# outside the module. The product keeps the released SDK; go.mod and
# go.sum are not touched.
#
#	bash docs/sdk-patches/bench.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
rounds=${1:-3}
version=$(go list -m -f '{{.Version}}' github.com/modelcontextprotocol/go-sdk)
src=$(go list -m -f '{{.Dir}}' github.com/modelcontextprotocol/go-sdk)
work=$(mktemp -d "${TMPDIR:-/tmp}/toolshelf-sdk-patches.XXXXXX")
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

variant() { # name, patches...
  local name=$1; shift
  cp -r "$src" "$work/$name"
  chmod -R u+w "$work/$name"
  for p in "$@"; do
    (cd "$work/$name" && patch -s -p1 < "$root/docs/sdk-patches/$p")
  done
  printf 'go %s\n\nuse %s\n\nreplace github.com/modelcontextprotocol/go-sdk %s => %s\n' \
    "$(go mod edit -json | sed -n 's/.*"Go": "\(.*\)".*/\1/p')" "$root" "$version" "$work/$name" > "$work/$name.work"
}
variant meta 1-meta-typed.patch
variant unmarshal 2-unmarshal-in-place.patch
variant both 1-meta-typed.patch 2-unmarshal-in-place.patch

echo "go-sdk $version, $(nproc) CPUs"
for i in $(seq "$rounds"); do
  for v in released meta unmarshal both; do
    w=off
    [[ $v != released ]] && w=$work/$v.work
    GOWORK=$w go test -run XXX -bench 'BenchmarkCall(HTTP)?$' -benchtime=3000x -benchmem ./gateway |
      awk -v v="$v" '/path=gateway/ { print v, $1, $3, $4, $5, $6, $7, $8 }'
  done
done
