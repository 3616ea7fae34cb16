#!/usr/bin/env bash
# Admission latency at concurrency 1, longrun beside the Powertools idempotency peer, in one
# run against one DynamoDB Local: `make bench-peer` runs this under cmd/ddblocal, which sets
# LONGRUN_DYNAMODB_ENDPOINT. It runs the peer's bench.mjs, then longrun's BenchmarkAdmission
# first/c1 and replay/c1 for as many requests, and prints p50/p99 of both with the ratio
# longrun / peer. Raw outputs stay in .cache/bench-peer/.
#
#   usage: bench/peer.sh PEER_DIR     (an installed copy of the peer; PEER_N requests a case)
set -euo pipefail

peer=${1:?usage: bench/peer.sh PEER_DIR}
endpoint=${LONGRUN_DYNAMODB_ENDPOINT:?not set: run under go run ./cmd/ddblocal -- (make bench-peer does)}
n=${PEER_N:-1000}
out=$PWD/.cache/bench-peer
mkdir -p "$out"

echo "bench-peer: Powertools peer, bench.mjs at c=1, n=$n (DynamoDB Local $endpoint)" >&2
# bench.mjs prints a table, then one JSON line (also written to --out); progress goes to stderr.
(cd "$peer" && node bench.mjs --endpoint "$endpoint" --concurrency 1 --n "$n" --repeats 1 \
  --out "$out/peer.json") >"$out/peer.txt" 2>"$out/peer.log" || { tail -20 "$out/peer.log" >&2; exit 1; }

# The peer runs first: its tables (no stream, no index) do not slow a table created after
# them, while a table with longrun's schema is slowed by the admissions written to such
# tables before it (docs/performance.md). BenchmarkAdmission warms up untimed, as bench.mjs does.
echo "bench-peer: longrun, BenchmarkAdmission first/c1 and replay/c1, $n each" >&2
go test -run='^$' -bench='^BenchmarkAdmission$/^(first|replay)$/^c1$' -benchtime="${n}x" \
  ./internal/service/httpapi >"$out/longrun.txt" || { cat "$out/longrun.txt" >&2; exit 1; }

# One row per case and side: "case p50 p99 requests [round-trips]", in ms and per request.
peer_rows=$(node -e '
  const r = require(process.argv[1]);
  for (const k of ["first", "replay"]) {
    // roundTrips: the SDK calls of one request, counted by the peer; they run one after another.
    console.log(k, r[k].c1.p50Ms, r[k].c1.p99Ms, r.roundTrips[k].mean);
  }' "$out/peer.json")
longrun_rows=$(awk '/^BenchmarkAdmission\/(first|replay)\/c1-/ {
    split($1, name, "/")
    for (i = 2; i < NF; i++) m[$(i + 1)] = $i  # value before its unit
    row[name[2]] = name[2] " " m["p50-ms"] " " m["p99-ms"] " " m["requests/op"] " " m["round-trips/op"]
  }
  END { for (k in row) print row[k] }' "$out/longrun.txt")

join <(sort <<<"$longrun_rows") <(sort <<<"$peer_rows") | awk -v n="$n" -v ep="$endpoint" '
  BEGIN {
    printf "Admission at concurrency 1, %d requests a case, one DynamoDB Local (%s)\n\n", n, ep
    printf "%-8s %21s %21s %21s\n", "case", "longrun p50 / p99", "peer p50 / p99", "ratio longrun/peer"
  }
  {
    printf "%-8s %9.2f / %6.2f ms %9.2f / %6.2f ms %12.2f / %6.2f\n", $1, $2, $3, $6, $7, $2 / $6, $3 / $7
    rt[NR] = sprintf("%-8s longrun %.3f requests in %.3f round trips; peer %g requests (sequential)", $1, $4, $5, $8)
  }
  END { print "\nDynamoDB per request:"; for (i = 1; i <= NR; i++) print "  " rt[i] }'
echo "(raw outputs: .cache/bench-peer/{peer.txt,peer.json,longrun.txt})"
