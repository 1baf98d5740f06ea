#!/usr/bin/env bash
# Runs deepgraph's and eino's benchmarks side by side on the same shapes and
# prints the medians and the eino/deepgraph ratios.
#   ./run.sh            5 runs of each benchmark (COUNT=n to change)
set -euo pipefail
cd "$(dirname "$0")"
count=${COUNT:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
GOFLAGS=-mod=mod go test -run '^$' -bench . -benchmem -count "$count" | tee "$out"
echo
awk '
/^Benchmark/ {
	split($1, p, "/"); shape = p[1]; sub(/^Benchmark/, "", shape); impl = p[2]; sub(/-[0-9]+$/, "", impl)
	key = shape SUBSEP impl
	n[key]++; ns[key, n[key]] = $3; allocs[key] = $7; bytes[key] = $5
	shapes[shape] = 1
}
function median(key,   i, j, t, a, c) {
	c = n[key]
	for (i = 1; i <= c; i++) a[i] = ns[key, i] + 0
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
END {
	printf "%-12s %16s %12s %16s %12s %8s\n", "shape", "deepgraph ns/op", "allocs/op", "eino ns/op", "allocs/op", "ratio"
	for (s in shapes) {
		d = median(s SUBSEP "deepgraph"); e = median(s SUBSEP "eino")
		printf "%-12s %16.0f %12s %16.0f %12s %7.1fx\n", s, d, allocs[s, "deepgraph"], e, allocs[s, "eino"], e / d
	}
}' "$out"
