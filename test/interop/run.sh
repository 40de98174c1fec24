#!/usr/bin/env bash
# Non-Go interop: librdkafka (kcat), kafka-python and kafkajs against
# `strand serve`, alone and as a three-node cluster.
#
#   test/interop/run.sh
#
# Builds cmd/strand (or uses $STRAND_BIN), starts it on a free loopback port
# with a temp data directory, runs kcat.sh, kafka_python.py, groups.py, dlq.sh,
# kafkajs/kafkajs.js and kafkajs/schema.js (@kafkajs/confluent-schema-registry
# against the built-in schema registry; after npm ci there), restarts the
# broker on the same data directory and checks that every acknowledged record
# is still there, restarts it with mutual TLS (certificates from openssl) for
# tls.sh, with --sasl-users for sasl.sh and with --authorizer for acl.sh, then stops it. In between, it
# runs kcat.sh, kafka_python.py, groups.py, dlq.sh and kafkajs against a
# three-node cluster (--controller-quorum), each bootstrapped from one node. Needs kcat and Debian's python3-kafka for
# /usr/bin/python3 (python3-snappy, python3-lz4 and python3-zstandard enable
# kafka-python's codec checks; without them those are skipped).
#
# Prints one line per check ("ok ...", "FAIL ...", "skip ..."), then
# "interop: N passed, N failed, N skipped"; exits 1 if anything failed, and
# then prints the tail of the broker's log.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PY=/usr/bin/python3
STARTUP_TIMEOUT=${STARTUP_TIMEOUT:-30}   # seconds for the port to accept
TEST_TIMEOUT=${TEST_TIMEOUT:-900}        # seconds per test script

for tool in kcat "$PY" openssl node npm; do
  command -v "$tool" >/dev/null || { echo "FAIL interop: $tool not installed"; exit 1; }
done
# kafkajs, pinned by package-lock.json, from the npm registry.
(cd "$here/kafkajs" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
  { echo "FAIL interop: npm ci in test/interop/kafkajs"; exit 1; }
"$PY" -c 'import kafka' 2>/dev/null || { echo "FAIL interop: python3-kafka missing for $PY"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/strand-interop.XXXXXX")
export INTEROP_WORK=$tmp/work
mkdir -p "$INTEROP_WORK"
log=$tmp/broker.log
pid=
cluster_pids=()
passed=0 failed=0 skipped=0

stop_broker() {
  [[ -n $pid ]] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "FAIL interop: broker did not exit within 15s of SIGTERM; killing it"
      failed=$((failed + 1))
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  local rc=0
  wait "$pid" 2>/dev/null || rc=$?
  pid=
  return $rc
}

log_shown=
show_log() {
  [[ -z $log_shown ]] || return 0
  log_shown=1
  echo
  echo "== broker log (last 300 of $(wc -l <"$log" 2>/dev/null || echo 0) lines):"
  tail -n 300 "$log" 2>/dev/null || true
  echo "== end of broker log"
}

on_exit() {
  local rc=$?
  local cp
  for cp in "${cluster_pids[@]}"; do kill -KILL "$cp" 2>/dev/null || true; done
  stop_broker || true
  # kcat.sh idem-start's background producer, if it is somehow still there.
  local pg
  pg=$(cat "$INTEROP_WORK/kcat/interop-kcat-idem.pgid" 2>/dev/null || true)
  if [[ -n $pg && $pg != "$(ps -o pgid= -p $$ | tr -d ' ')" ]]; then
    kill -- "-$pg" 2>/dev/null || true
  fi
  if ((rc != 0 || failed > 0)); then show_log; fi
  rm -rf "$tmp"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# --- build -----------------------------------------------------------------
if [[ -n ${STRAND_BIN:-} ]]; then
  bin=$STRAND_BIN
else
  bin=$tmp/strand
  echo "== building ./cmd/strand"
  (cd "$root" && go build -o "$bin" ./cmd/strand)
fi

port=$("$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
srport=$("$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')

start_broker() { # extra arguments go to strand serve
  echo "== starting: strand serve --listen 127.0.0.1:$port --data-dir $tmp/data $*"
  echo "---- strand serve start $(date -u +%FT%TZ) $*" >>"$log"
  # Metrics and console on free ports, the schema registry on one chosen
  # above (schema.js needs its address): a broker already running on this
  # machine (or another run) must not make this one fail to start.
  "$bin" serve --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
    --metrics-listen 127.0.0.1:0 --console-listen 127.0.0.1:0 --schema-registry-listen "127.0.0.1:$srport" "$@" >>"$log" 2>&1 &
  pid=$!
  local deadline=$((SECONDS + STARTUP_TIMEOUT))
  while ((SECONDS < deadline)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "FAIL interop: strand serve exited during startup"
      failed=$((failed + 1)); pid=; return 1
    fi
    if "$PY" -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()' "$port" 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "FAIL interop: strand serve did not accept connections on 127.0.0.1:$port within ${STARTUP_TIMEOUT}s"
  failed=$((failed + 1))
  stop_broker || true
  return 1
}

# run_test NAME CMD...: run one test script, echo its output, tally its lines.
run_test() {
  local name=$1; shift
  local out=$tmp/$name.out rc=0
  echo "== $name"
  timeout "$TEST_TIMEOUT" "$@" >"$out" 2>&1 || rc=$?
  cat "$out"
  local p f s
  p=$(grep -c '^ok ' "$out" || true)
  f=$(grep -c '^FAIL' "$out" || true)
  s=$(grep -c '^skip ' "$out" || true)
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  if ((rc != 0 && f == 0)); then
    if ((rc == 124)); then
      echo "FAIL $name: timed out after ${TEST_TIMEOUT}s"
    else
      echo "FAIL $name: exited with status $rc without reporting a failed check"
    fi
    failed=$((failed + 1))
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "FAIL $name: the broker is no longer running"
    failed=$((failed + 1)); pid=
    return 1
  fi
}

# summary: the broker's log if anything failed, then the closing count line.
summary() {
  if [[ -n $pid ]]; then
    if stop_broker; then
      echo "ok interop: broker exited cleanly on SIGTERM at the end"; passed=$((passed + 1))
    else
      echo "FAIL interop: broker exited with non-zero status on SIGTERM at the end"; failed=$((failed + 1))
    fi
  fi
  if ((failed > 0)); then show_log; fi
  echo
  echo "interop: $passed passed, $failed failed, $skipped skipped"
  ((failed == 0))
}

start_broker || { summary; exit 1; }
run_test kcat "$here/kcat.sh" "$port" || true
[[ -n $pid ]] && run_test kafka-python "$PY" "$here/kafka_python.py" "$port" || true
[[ -n $pid ]] && run_test groups "$PY" "$here/groups.py" "$port" || true
[[ -n $pid ]] && run_test dlq "$here/dlq.sh" "$port" "$bin" || true
[[ -n $pid ]] && run_test kafkajs node "$here/kafkajs/kafkajs.js" "$port" || true
[[ -n $pid ]] && run_test schema node "$here/kafkajs/schema.js" "$port" "http://127.0.0.1:$srport" "$bin" || true
[[ -n $pid ]] && run_test kafkajs-txn node "$here/kafkajs/txn.js" "$port" || true
[[ -n $pid ]] && run_test kcat-idempotent-start "$here/kcat.sh" "$port" idem-start || true

# Restart on the same data directory: nothing acknowledged may be lost.
if [[ -n $pid ]]; then
  echo "== restarting the broker (SIGTERM, same data directory)"
  if stop_broker; then
    echo "ok interop: broker exited cleanly on SIGTERM"; passed=$((passed + 1))
  else
    echo "FAIL interop: broker exited with non-zero status on SIGTERM"; failed=$((failed + 1))
  fi
  if start_broker; then
    run_test kcat-idempotent-finish "$here/kcat.sh" "$port" idem-finish || true
    [[ -n $pid ]] && run_test kcat-after-restart "$here/kcat.sh" "$port" after-restart || true
    [[ -n $pid ]] && run_test kafka-python-after-restart "$PY" "$here/kafka_python.py" "$port" --after-restart || true
    [[ -n $pid ]] && run_test groups-after-restart "$PY" "$here/groups.py" "$port" --after-restart || true
  fi
fi

# Mutual TLS: the same data directory behind a TLS listener that wants
# client certificates (made with openssl: a CA, a server and a client cert).
if [[ -n $pid ]]; then
  echo "== restarting the broker with --tls-cert, --tls-key and --tls-client-ca"
  stop_broker || { echo "FAIL interop: broker exited with non-zero status on SIGTERM"; failed=$((failed + 1)); }
  certs=$tmp/certs
  mkdir -p "$certs"
  (
    cd "$certs"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=interop-ca
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj /CN=localhost
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile server.ext
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout client.key -out client.csr -subj /CN=interop-client
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 1
  ) >>"$log" 2>&1
  if start_broker --tls-cert "$certs/server.pem" --tls-key "$certs/server.key" --tls-client-ca "$certs/ca.pem"; then
    run_test tls "$here/tls.sh" "$port" "$certs" || true
  fi
fi

# A three-node cluster: every client bootstraps from one node and must find
# the partitions and group coordinators on the others.
start_cluster() {
  local n p
  quorum=""
  cports=()
  for n in 1 2 3; do
    p=$("$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
    cports+=("$p")
    r=$("$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
    quorum+="${quorum:+,}$n@127.0.0.1:$r"
  done
  echo "== starting a three-node cluster: Kafka on ${cports[*]}, quorum $quorum"
  for n in 1 2 3; do
    launch_node "$n"
  done
  local deadline=$((SECONDS + STARTUP_TIMEOUT)) up
  while ((SECONDS < deadline)); do
    up=0
    for n in 1 2 3; do
      "$PY" -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()' "${cports[$((n - 1))]}" 2>/dev/null && up=$((up + 1))
    done
    if ((up == 3)) && "$bin" cluster info --brokers "127.0.0.1:${cports[0]}" 2>/dev/null | grep -c ' live ' | grep -qx 3; then
      pid=${cluster_pids[0]}
      return 0
    fi
    sleep 0.2
  done
  echo "FAIL interop: the three-node cluster did not come up within ${STARTUP_TIMEOUT}s"
  failed=$((failed + 1))
  return 1
}
# launch_node starts cluster node n (again, after a kill: same directory).
# Sessions of 3 s make a killed node's partitions fail over quickly.
launch_node() {
  local n=$1
  echo "---- strand serve --node-id $n start $(date -u +%FT%TZ)" >>"$log"
  "$bin" serve --node-id "$n" --listen "127.0.0.1:${cports[$((n - 1))]}" --data-dir "$tmp/cluster/n$n" \
    --metrics-listen "" --console-listen "" --schema-registry-listen "" --controller-quorum "$quorum" \
    --broker-session-timeout 3s --broker-heartbeat-interval 300ms >>"$log" 2>&1 &
  cluster_pids[$((n - 1))]=$!
}
# failover: kafka-python, kcat and kafkajs produce with acks=all to
# replicated topics while node 2 is SIGKILLed and started again
# (failover.py and kafkajs/failover.js check that every acknowledged
# record is there).
failover() {
  local out=$tmp/cluster-failover.out jsout=$tmp/cluster-failover-js.out marker=$tmp/failover-started jsmarker=$tmp/failover-js-started
  local rc=0 jsrc=0 p f
  echo "== cluster-failover"
  rm -f "$marker" "$jsmarker"
  local boot="127.0.0.1:${cports[0]},127.0.0.1:${cports[1]},127.0.0.1:${cports[2]}"
  timeout "$TEST_TIMEOUT" "$PY" "$here/failover.py" "$boot" "$marker" >"$out" 2>&1 &
  local fpid=$!
  timeout "$TEST_TIMEOUT" node "$here/kafkajs/failover.js" "$boot" "$jsmarker" >"$jsout" 2>&1 &
  local jpid=$! deadline=$((SECONDS + 120))
  while { [[ ! -e $marker ]] || [[ ! -e $jsmarker ]]; } && ((SECONDS < deadline)) && { kill -0 "$fpid" 2>/dev/null || kill -0 "$jpid" 2>/dev/null; }; do sleep 0.2; done
  if [[ -e $marker || -e $jsmarker ]]; then
    # Both scripts report their sends only once they stop producing: a
    # report already there means that producer never saw the kill (on a
    # quiet machine kafkajs has about ten seconds to spare).
    if grep -q 'sends acknowledged' "$out" "$jsout"; then
      echo "FAIL cluster-failover: a producer had finished before node 2 was killed: $(grep -h 'sends acknowledged' "$out" "$jsout" | head -1)"; failed=$((failed + 1))
    fi
    echo "---- SIGKILL node 2 $(date -u +%FT%TZ)" >>"$log"
    kill -KILL "${cluster_pids[1]}" 2>/dev/null || true
    wait "${cluster_pids[1]}" 2>/dev/null || true
    sleep 2
    launch_node 2
  fi
  wait "$fpid" || rc=$?
  wait "$jpid" || jsrc=$?
  cat "$out" "$jsout"
  p=$(cat "$out" "$jsout" | grep -c '^ok ' || true)
  f=$(cat "$out" "$jsout" | grep -c '^FAIL' || true)
  passed=$((passed + p)) failed=$((failed + f))
  if [[ ! -e $marker || ! -e $jsmarker ]]; then
    echo "FAIL cluster-failover: a producer never got going (python: $([[ -e $marker ]] && echo yes || echo no), kafkajs: $([[ -e $jsmarker ]] && echo yes || echo no)), so the kill did not straddle it"; failed=$((failed + 1))
  elif ((rc != 0 || jsrc != 0)) && ((f == 0)); then
    echo "FAIL cluster-failover: exited with status $rc (python) / $jsrc (kafkajs) without reporting a failed check"; failed=$((failed + 1))
  fi
}
stop_cluster() {
  local p rc=0
  for p in "${cluster_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${cluster_pids[@]}"; do wait "$p" 2>/dev/null || rc=$?; done
  cluster_pids=() pid=
  return $rc
}
if [[ -n $pid ]]; then
  stop_broker || { echo "FAIL interop: broker exited with non-zero status on SIGTERM"; failed=$((failed + 1)); }
  export INTEROP_WORK=$tmp/cluster-work
  mkdir -p "$INTEROP_WORK"
  if start_cluster; then
    run_test cluster-kcat "$here/kcat.sh" "${cports[0]}" || true
    [[ -n $pid ]] && run_test cluster-kafka-python "$PY" "$here/kafka_python.py" "${cports[1]}" || true
    [[ -n $pid ]] && run_test cluster-groups "$PY" "$here/groups.py" "${cports[2]}" || true
    [[ -n $pid ]] && run_test cluster-dlq "$here/dlq.sh" "${cports[1]}" "$bin" || true
    [[ -n $pid ]] && run_test cluster-kafkajs node "$here/kafkajs/kafkajs.js" "${cports[2]}" || true
    [[ -n $pid ]] && run_test cluster-kafkajs-txn node "$here/kafkajs/txn.js" "${cports[2]}" || true
    [[ -n $pid ]] && failover
  fi
  if stop_cluster; then
    echo "ok interop: the cluster's nodes exited cleanly on SIGTERM"; passed=$((passed + 1))
  else
    echo "FAIL interop: a cluster node exited with non-zero status on SIGTERM"; failed=$((failed + 1))
  fi
  export INTEROP_WORK=$tmp/work
  start_broker || true
fi

# SASL: the same data directory behind a listener that requires it.
if [[ -n $pid ]]; then
  echo "== restarting the broker with --sasl-users"
  stop_broker || { echo "FAIL interop: broker exited with non-zero status on SIGTERM"; failed=$((failed + 1)); }
  printf 'app:s3cret-pw\n' >"$tmp/users"
  if start_broker --sasl-users "$tmp/users"; then
    run_test sasl "$here/sasl.sh" "$port" || true
  fi
fi

# ACLs: the same data directory behind SASL over TLS (SASL_SSL) and the authorizer.
if [[ -n $pid ]]; then
  echo "== restarting the broker with --authorizer"
  stop_broker || { echo "FAIL interop: broker exited with non-zero status on SIGTERM"; failed=$((failed + 1)); }
  printf 'admin:admin-pw\napp:s3cret-pw\n' >"$tmp/acl-users"
  if start_broker --sasl-users "$tmp/acl-users" --authorizer --super-users User:admin \
    --tls-cert "$certs/server.pem" --tls-key "$certs/server.key"; then
    run_test acl "$here/acl.sh" "$port" "$bin" "$certs" || true
  fi
fi

summary
