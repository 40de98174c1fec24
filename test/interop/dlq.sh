#!/usr/bin/env bash
# Interop: validation at ingress with librdkafka (kcat) as producer and
# consumer, and the strand CLI's dlq commands, against a running broker.
#
#   test/interop/dlq.sh PORT STRAND_BIN
#
# kcat produces a mix of valid and invalid JSON (uncompressed, then gzip) to
# a strand.validation=json topic: kcat sees no error, the topic holds
# exactly the valid records at the offsets they were sent to, the DLQ holds
# the invalid ones with reason and source headers; after validation is
# relaxed, "strand dlq redrive" brings them back, and a rerun writes nothing.
# Prints one line per check, "ok ..." or "FAIL ...", and exits 1 if any
# check failed.
set -euo pipefail

port=${1:?usage: dlq.sh PORT STRAND_BIN}
bin=${2:?usage: dlq.sh PORT STRAND_BIN}
B=127.0.0.1:$port
KCAT=${KCAT:-kcat}
T=interop-dlq
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
failures=0
ok() { echo "ok $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

"$bin" topic create "$T" --config strand.validation=json --brokers "$B" >/dev/null

# Records i=0..19 per codec; every third is not JSON. One partition, so
# record i of the first run lands at offset i, of the second at 20+i.
for codec in none gzip; do
  for i in $(seq 0 19); do
    if ((i % 3 == 1)); then echo "k$i:{not json $i"; else echo "k$i:{\"codec\":\"$codec\",\"i\":$i}"; fi
  done >"$w/in-$codec"
  if $KCAT -P -b "$B" -t "$T" -p 0 -K: -X compression.codec="$codec" -X linger.ms=100 <"$w/in-$codec" 2>"$w/err"; then
    ok "dlq: kcat produced a mixed $codec batch without error"
  else
    fail "dlq: kcat produce ($codec): $(head -3 "$w/err")"
  fi
done

$KCAT -C -b "$B" -t "$T" -o beginning -e -q -f '%o %k %s\n' >"$w/main" 2>"$w/err" || fail "dlq: consume main: $(head -3 "$w/err")"
want=$(for r in 0 1; do for i in $(seq 0 19); do ((i % 3 == 1)) || echo "$((20 * r + i)) k$i"; done; done)
got=$(awk '{print $1, $2}' "$w/main")
if [[ $got == "$want" ]]; then
  ok "dlq: the topic holds exactly the valid records at their offsets ($(wc -l <"$w/main") records)"
else
  fail "dlq: main topic offsets/keys differ: got $(echo "$got" | head -5 | tr '\n' ',')"
fi

$KCAT -C -b "$B" -t "$T.dlq" -o beginning -e -q -f '%k|%h|%s\n' >"$w/dlq" 2>"$w/err" || fail "dlq: consume DLQ: $(head -3 "$w/err")"
n=$(wc -l <"$w/dlq")
if ((n == 14)) && grep -q 'strand.dlq.reason=json: ' "$w/dlq" && grep -q "strand.dlq.source.topic=$T" "$w/dlq" &&
  grep -q 'k1|.*strand.dlq.source.offset=1\b' "$w/dlq" && grep -q 'k4|.*strand.dlq.source.offset=24\b' "$w/dlq"; then
  ok "dlq: the DLQ holds the 14 invalid records with reason and source headers"
else
  fail "dlq: DLQ has $n records: $(head -2 "$w/dlq")"
fi

if "$bin" dlq list "$T" --brokers "$B" >"$w/list" 2>"$w/err" && grep -q REASON "$w/list" && (($(grep -c 'json: ' "$w/list") == 14)); then
  ok "dlq: strand dlq list shows 14 reasons"
else
  fail "dlq: strand dlq list: $(head -3 "$w/list" "$w/err")"
fi

"$bin" topic alter "$T" --config strand.validation=none --brokers "$B" >/dev/null
out=$("$bin" dlq redrive "$T" --brokers "$B" 2>&1) || true
if [[ $out == "redriven 14, still invalid 0, already done 0"* ]]; then ok "dlq: redrive: $out"; else fail "dlq: redrive: $out"; fi
out=$("$bin" dlq redrive "$T" --brokers "$B" 2>&1) || true
if [[ $out == "redriven 0, still invalid 0, already done 14"* ]]; then ok "dlq: rerun writes nothing"; else fail "dlq: rerun: $out"; fi
n=$($KCAT -C -b "$B" -t "$T" -o beginning -e -q -f '%k\n' | sort -u | wc -l)
total=$($KCAT -C -b "$B" -t "$T" -o beginning -e -q -f '%k %s\n' | wc -l)
if ((total == 40)); then ok "dlq: the topic now holds all 40 records once"; else fail "dlq: the topic holds $total records ($n distinct keys), want 40"; fi

((failures == 0))
