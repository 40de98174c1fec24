#!/usr/bin/env bash
# Interop: librdkafka (through kcat) against a running Strand broker.
#
#   test/interop/kcat.sh PORT                 produce + consume + verify
#   test/interop/kcat.sh PORT idem-start      start an idempotent producer that
#   test/interop/kcat.sh PORT idem-finish     spans a broker restart (run.sh
#                                             restarts the broker in between)
#   test/interop/kcat.sh PORT after-restart   re-consume what the first run
#                                             verified and compare
#
# The modes after the first need the same INTEROP_WORK directory (default: a
# new temp dir), which keeps inputs and consumed listings. Prints one line per
# check, "ok ..." or "FAIL ...", and exits 1 if any check failed.
set -euo pipefail

port=${1:?usage: kcat.sh PORT [idem-start|idem-finish|after-restart]}
mode=${2:-full}
case $mode in
  full | idem-start | idem-finish | after-restart) ;;
  *) echo "kcat.sh: unknown mode $mode" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
B=127.0.0.1:$port
KCAT=${KCAT:-kcat}
PY=/usr/bin/python3
work=${INTEROP_WORK:-$(mktemp -d)}
mkdir -p "$work/kcat"
w=$work/kcat
helper() { "$PY" "$here/kcat_helper.py" "$@"; }

failures=0
ts_window=
ok() { echo "ok $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
# run_helper: a helper's own ok/FAIL lines count; a non-zero exit is a failure.
run_helper() { if ! helper "$@"; then failures=$((failures + 1)); fi; }
show() { # show FILE: indented excerpt of a command's stderr for FAIL details
  sed -n '1,20s/^/    /p' "$1"
}

# Common producer settings: acks=all, idempotent, Kafka's murmur2 for keys
# (librdkafka's default partitioner is consistent_random, CRC32-based).
PRODUCE_X=(-X acks=all -X enable.idempotence=true -X partitioner=murmur2_random
           -X message.timeout.ms=30000 -X linger.ms=5)

now_ms() { "$PY" -c 'import time; print(int(time.time() * 1000))'; }

# produce LABEL TOPIC INPUT [extra kcat args...]: produce INPUT's key:value
# lines; fails on a non-zero exit or any error reported by librdkafka.
# Sets ts_window to "before,after" (ms) for the CreateTime check.
produce() {
  local label=$1 topic=$2 input=$3; shift 3
  local err=$w/$topic.produce.err t0
  t0=$(now_ms)
  if timeout 120 "$KCAT" -b "$B" -P -t "$topic" -K: -l "${PRODUCE_X[@]}" "$@" "$input" 2>"$err" \
      && ! grep -Eqi 'error|fail' "$err"; then
    ts_window=$t0,$(now_ms)
    ok "$label: kcat produced $(wc -l <"$input") records to $topic"
  else
    fail "$label: kcat produce to $topic (exit or errors below)"; show "$err"
    return 1
  fi
}

# consume LABEL TOPIC OUT: read the whole topic with -e (exit at the end).
consume() {
  local label=$1 topic=$2 out=$3
  local err=$out.err
  if timeout 60 "$KCAT" -b "$B" -C -t "$topic" -o beginning -e -J -q 2>"$err" >"$out" \
      && ! grep -Eqi 'error|fail' "$err"; then
    ok "$label: kcat consumed $topic to the end ($(wc -l <"$out") records)"
  else
    fail "$label: kcat consume $topic (exit or errors below)"; show "$err"
    return 1
  fi
}

# query LABEL TOPIC PARTITIONS TS WANT_JSON WHAT: kcat -Q (ListOffsets by timestamp).
query() {
  local label=$1 topic=$2 parts=$3 ts=$4 want=$5 what=$6 args=() p
  for ((p = 0; p < parts; p++)); do args+=(-t "$topic:$p:$ts"); done
  local out=$w/$topic.query.$ts
  if timeout 60 "$KCAT" -b "$B" -Q -J "${args[@]}" >"$out" 2>"$out.err"; then
    run_helper offsets --label "$label" --what "$what" --want "$want" "$out"
  else
    fail "$label: kcat -Q $topic ts=$ts"; show "$out.err"; show "$out"
  fi
}

# --- idempotent producer spanning a broker restart ---------------------------
# idem-start: one kcat (enable.idempotence=true, acks=all; -E: don't exit when
# the broker is briefly down) gets the first half of its input and keeps
# running in the background, its stdin still open.
# run.sh then restarts the broker; idem-finish feeds the second half through
# the same producer (same producer id, sequences continuing), waits for it
# to exit and checks every record is there exactly once, in order.
IT=interop-kcat-idem
IN=4000
if [[ $mode == idem-start ]]; then
  helper gen "$IN" 400 "$w/$IT.in"
  head -n $((IN / 2)) "$w/$IT.in" >"$w/$IT.in1"
  tail -n +$((IN / 2 + 1)) "$w/$IT.in" >"$w/$IT.in2"
  run_helper create-topic "$B" "$IT" 6 --label "kcat idempotent across restart"
  rm -f "$w/$IT.go" "$w/$IT.rc"
  # The feeder waits (at most 300 s) for idem-finish's go file before the
  # second half; kcat's exit status lands in $IT.rc.
  (
    set +e
    { cat "$w/$IT.in1"
      for _ in $(seq 1 3000); do [[ -e $w/$IT.go ]] && break; sleep 0.1; done
      cat "$w/$IT.in2"; } \
      | timeout 600 "$KCAT" -E -b "$B" -P -t "$IT" -K: "${PRODUCE_X[@]}" -X message.timeout.ms=120000 \
          >"$w/$IT.out" 2>"$w/$IT.err"
    echo "${PIPESTATUS[1]}" >"$w/$IT.rc"
  ) </dev/null >/dev/null 2>&1 &
  # Its process group (timeout's, when run.sh runs us), for run.sh's cleanup.
  ps -o pgid= -p $! | tr -d ' ' >"$w/$IT.pgid"
  # kcat keeps the tail of a partly read stdin block until more input comes,
  # so wait for most, not all, of the first half.
  if helper wait-count "$B" "$IT" 6 $((IN / 2 - 200)) 60; then
    sleep 1
    ok "kcat idempotent across restart: first ~$((IN / 2)) records acknowledged before the restart"
  else
    fail "kcat idempotent across restart: first half not written within 60 s"; show "$w/$IT.err"
  fi
  exit $((failures > 0))
fi
if [[ $mode == idem-finish ]]; then
  touch "$w/$IT.go"
  for _ in $(seq 1 1500); do [[ -s $w/$IT.rc ]] && break; sleep 0.1; done
  rc=$(cat "$w/$IT.rc" 2>/dev/null || echo "none (still running after 150 s)")
  # Connection errors while the broker was down are expected; anything about
  # sequences, producer ids or fatal idempotence errors is not.
  if [[ $rc == 0 ]] && ! grep -Eqi 'sequence|producer.?id|fatal|epoch|delivery failed' "$w/$IT.err"; then
    ok "kcat idempotent across restart: the producer finished cleanly across the restart"
  else
    fail "kcat idempotent across restart: producer exit status $rc"; show "$w/$IT.err"
  fi
  if consume "kcat idempotent across restart" "$IT" "$w/$IT.json"; then
    run_helper check --label "kcat idempotent across restart" --topic "$IT" --input "$w/$IT.in" \
      --consumed "$w/$IT.json" --partitions 6 --murmur2
  fi
  exit $((failures > 0))
fi

if [[ $mode == after-restart ]]; then
  T=interop-kcat
  if [[ ! -f $w/$T.listing.json ]]; then
    fail "kcat after restart: no listing from the first run in $w"
  elif consume "kcat after restart" "$T" "$w/$T.after.json"; then
    run_helper compare --label "kcat after restart" --consumed "$w/$T.after.json" --saved "$w/$T.listing.json"
  fi
  if [[ -f $w/demo.expected ]] \
      && timeout 60 "$KCAT" -b "$B" -C -t demo -e -f '%p %o %k=%s\n' >"$w/demo.after" 2>"$w/demo.after.err" \
      && cmp -s "$w/demo.expected" "$w/demo.after"; then
    ok "kcat after restart: demo topic intact"
  else
    fail "kcat after restart: demo topic"; show "$w/demo.after.err"; show "$w/demo.after"
  fi
  # Cross-client: what kafka-python produced (compressed by kafka-python).
  for codec in gzip snappy lz4 zstd; do
    CT=interop-kafka-python-$codec
    grep -q "\"$CT\"" <(timeout 30 "$KCAT" -b "$B" -L -J 2>/dev/null) || continue
    if consume "kcat reads kafka-python $codec" "$CT" "$w/$CT.json"; then
      run_helper cross --label "kcat reads kafka-python $codec" --consumed "$w/$CT.json" \
        --partitions 3 --expect 1000 --header codec="$codec" --header src=kafka-python
    fi
  done
  exit $((failures > 0))
fi

# --- 1. README smoke path (the README's "Five-minute tour", verbatim) -------
printf 'k1:hello\nk2:world\nk1:again\n' >"$w/demo.in"
printf '0 0 k1=hello\n0 1 k2=world\n0 2 k1=again\n' >"$w/demo.expected"
if timeout 60 "$KCAT" -b "$B" -P -t demo -K: <"$w/demo.in" 2>"$w/demo.produce.err" \
    && ! grep -Eqi 'error|fail' "$w/demo.produce.err"; then
  ok "kcat README smoke: produce 3 keyed records to demo (auto-created)"
else
  fail "kcat README smoke: produce to demo"; show "$w/demo.produce.err"
fi
if timeout 60 "$KCAT" -b "$B" -C -t demo -e -f '%p %o %k=%s\n' >"$w/demo.out" 2>"$w/demo.err" \
    && cmp -s "$w/demo.expected" "$w/demo.out"; then
  ok "kcat README smoke: -C -t demo -e prints the 3 records at offsets 0..2"
else
  fail "kcat README smoke: consume demo"; show "$w/demo.err"; echo "    got:"; show "$w/demo.out"
fi
if timeout 60 "$KCAT" -b "$B" -L >"$w/L.out" 2>"$w/L.err" \
    && grep -q 'topic "demo" with 1 partitions' "$w/L.out" \
    && grep -Eq 'partition 0, leader [0-9]+, replicas: [0-9]+, isrs: [0-9]+' "$w/L.out"; then
  ok "kcat README smoke: -L lists demo with 1 partition, its leader, replicas and ISR"
else
  fail "kcat README smoke: kcat -L"; show "$w/L.err"; show "$w/L.out"
fi

# --- 2. 10,000 keyed records with headers to a 6-partition topic -----------
T=interop-kcat
N=10000
helper gen "$N" 1000 "$w/$T.in"
run_helper create-topic "$B" "$T" 6 --label kcat
if timeout 60 "$KCAT" -b "$B" -L -J -t "$T" >"$w/$T.meta.json" 2>"$w/$T.meta.err"; then
  run_helper metadata --label kcat --topic "$T" --partitions 6 "$w/$T.meta.json"
else
  fail "kcat: kcat -L -t $T"; show "$w/$T.meta.err"
fi
if produce kcat "$T" "$w/$T.in" -H h1=v1 -H "trace=a b=c,d" -H empty= \
    && consume kcat "$T" "$w/$T.json"; then
  run_helper check --label kcat --topic "$T" --input "$w/$T.in" --consumed "$w/$T.json" \
    --partitions 6 --header h1=v1 --header "trace=a b=c,d" --header empty= --murmur2 \
    --ts-window "$ts_window" --save "$w/$T.listing.json"
  run_helper codecs --label kcat "$B" "$T" 6 none
  # ListOffsets through librdkafka: timestamp 0 -> first offset (0), -1 -> end.
  ends=$("$PY" -c 'import json,sys,collections
c=collections.Counter(json.loads(l)["partition"] for l in open(sys.argv[1]) if l.strip())
print(json.dumps({p: c[p] for p in range(6)}))' "$w/$T.json")
  query kcat "$T" 6 0 '{"0":0,"1":0,"2":0,"3":0,"4":0,"5":0}' "timestamp 0 = offset 0 on every partition"
  query kcat "$T" 6 -1 "$ends" "latest (-1) = end offset = records per partition"
fi

# --- 3. every compression codec --------------------------------------------
for codec in gzip snappy lz4 zstd; do
  CT=interop-kcat-$codec
  helper gen 1000 100 "$w/$CT.in"
  run_helper create-topic "$B" "$CT" 3 --label "kcat $codec"
  if produce "kcat $codec" "$CT" "$w/$CT.in" -z "$codec" -X linger.ms=50 -H codec="$codec" \
      && consume "kcat $codec" "$CT" "$w/$CT.json"; then
    run_helper check --label "kcat $codec" --topic "$CT" --input "$w/$CT.in" --consumed "$w/$CT.json" \
      --partitions 3 --header codec="$codec" --murmur2 --ts-window "$ts_window"
    run_helper codecs --label "kcat $codec" "$B" "$CT" 3 "$codec"
  fi
done

# --- 4. plain (non-idempotent, acks=1) producer, as librdkafka defaults ----
T1=interop-kcat-acks1
helper gen 2000 200 "$w/$T1.in"
run_helper create-topic "$B" "$T1" 6 --label "kcat acks=1"
if timeout 120 "$KCAT" -b "$B" -P -t "$T1" -K: -l -X acks=1 -X partitioner=murmur2_random "$w/$T1.in" \
      2>"$w/$T1.produce.err" && ! grep -Eqi 'error|fail' "$w/$T1.produce.err"; then
  ok "kcat acks=1: produced 2000 records (not idempotent)"
  if consume "kcat acks=1" "$T1" "$w/$T1.json"; then
    run_helper check --label "kcat acks=1" --topic "$T1" --input "$w/$T1.in" --consumed "$w/$T1.json" \
      --partitions 6 --murmur2
  fi
else
  fail "kcat acks=1: produce"; show "$w/$T1.produce.err"
fi

exit $((failures > 0))
