#!/usr/bin/env bash
# slip.sh compares the speed of the working tree's commit with an earlier
# one, so that a change to search, the catalog, the gateway's call path or
# the proxy says what it costs:
#
#   scripts/slip.sh COMMIT [ROUNDS]
#
# It builds the benchmarks of both commits, runs them in the same session,
# alternating base and head ROUNDS times (default 6) so that a busy
# machine weighs on both alike, and prints benchstat's comparison: each
# figure's median with its spread, the change, and whether it is more than
# noise (p < 0.05). Benchmarks that the earlier commit does not have are
# shown for the head only, unless HEAD_BENCHMARKS=1: then the earlier
# commit is measured with the head's benchmark files (each package's
# bench_test.go, and internal/bigcatalog), so that both run the same
# benchmarks on the same catalogs. BENCHTIME (default 1s) sets each run's
# length; BENCH overrides the benchmarks, as "package:regexp" words.
set -euo pipefail

base=${1:?usage: scripts/slip.sh COMMIT [ROUNDS]}
rounds=${2:-6}
root=$(git rev-parse --show-toplevel)
head=$(git -C "$root" rev-parse --short HEAD)
base=$(git -C "$root" rev-parse --short "$base^{commit}")
benches=${BENCH:-"search:^Benchmark(Search|Build)\$/engine=bm25/ catalog:^BenchmarkDecode\$ gateway:^BenchmarkCall\$ proxy:^BenchmarkCachedRequest\$"}
benchstat=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

work=$(mktemp -d)
cleanup() {
	git -C "$root" worktree remove --force "$work/base" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
git -C "$root" worktree add --detach --quiet "$work/base" "$base"
if [ "${HEAD_BENCHMARKS:-}" = 1 ]; then
	mkdir -p "$work/base/internal/bigcatalog"
	cp "$root"/internal/bigcatalog/*.go "$work/base/internal/bigcatalog/"
	for b in $benches; do
		pkg=${b%%:*}
		[ -f "$root/$pkg/bench_test.go" ] && cp "$root/$pkg/bench_test.go" "$work/base/$pkg/"
	done
fi

# build compiles each package's test binary of one side.
build() {
	local side=$1 dir=$2
	for b in $benches; do
		pkg=${b%%:*}
		if [ -d "$dir/$pkg" ]; then
			(cd "$dir" && go test -c -o "$work/$side-$pkg.test" "./$pkg") >&2
		fi
	done
}
echo "building $base (base) and $head (head, with the working tree's changes)" >&2
build base "$work/base"
build head "$root"

# run runs one side's benchmarks once, each binary in its package's
# folder (tests read their testdata relative to it).
run() {
	local side=$1 dir=$2
	for b in $benches; do
		pkg=${b%%:*} re=${b#*:}
		bin="$work/$side-$pkg.test"
		[ -x "$bin" ] || continue
		(cd "$dir/$pkg" && "$bin" -test.run '^$' -test.bench "$re" -test.benchmem \
			-test.benchtime "${BENCHTIME:-1s}" -test.count 1) | { grep -E "^(Benchmark|goos|goarch|pkg|cpu)" || true; } >>"$work/$side.txt"
	done
}
for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	if [ $((r % 2)) -eq 1 ]; then
		run base "$work/base"; run head "$root"
	else
		run head "$root"; run base "$work/base"
	fi
done

echo "machine: $(nproc) cores, $(go env GOVERSION); base $base, head $head; $rounds rounds"
go run "$benchstat" "base=$work/base.txt" "head=$work/head.txt"
