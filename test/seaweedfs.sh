#!/usr/bin/env bash
# SeaweedFS's S3 gateway as the object store of the tiered-storage tests
# (issue 36: a real S3-compatible server built from a Go module, not a mock).
#
#   test/seaweedfs.sh go test -race -run Tiered ./...   run a command against it
#   test/seaweedfs.sh                                   serve until Ctrl-C, printing the env to use
#   test/seaweedfs.sh --build                           only build (or find) the cached weed
#
# It builds `weed` at the pinned version into a cache dir (once per
# version; `go install` refuses the module for its replace directives, so
# it is built as the main module from the module cache), starts
# `weed server -s3` on free loopback ports with its data under a temporary
# directory and an S3 identity (access and secret key, so SigV4 signatures
# are checked), waits until it answers, exports STRAND_TEST_S3_ENDPOINT,
# STRAND_TEST_S3_ACCESS_KEY and STRAND_TEST_S3_SECRET_KEY (which
# internal/tiered/storetest reads: a fresh bucket per test) and stops it
# and removes its data at exit.
set -euo pipefail

SEAWEEDFS_VERSION="${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
cache="${STRAND_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/strand}/seaweedfs/$SEAWEEDFS_VERSION"
weed="$cache/weed"

log() { printf 'seaweedfs: %s\n' "$*" >&2; }

build_weed() {
  [[ -x "$weed" ]] && return
  log "building weed $SEAWEEDFS_VERSION into $cache (minutes, once per version)"
  local tmp dir
  tmp=$(mktemp -d)
  # The module's own go.mod (with its replaces) is honoured only when it is
  # the main module: build it from a writable copy of the module cache's.
  dir=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  [[ -n "$dir" && -d "$dir" ]] || { log "go mod download gave no module directory"; rm -rf "$tmp"; return 1; }
  cp -r "$dir" "$tmp/src"
  chmod -R u+w "$tmp/src"
  mkdir -p "$cache"
  (cd "$tmp/src" && GOFLAGS=-mod=mod go build -o "$weed.partial" ./weed) || { rm -rf "$tmp"; return 1; }
  mv "$weed.partial" "$weed"
  chmod -R u+w "$tmp" && rm -rf "$tmp"
}

# port_busy says whether something listens on a loopback port.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# http_get prints a loopback HTTP/1.0 answer (status line, headers, body).
http_get() {
  local port=$1 path=$2
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$path" "$port" >&3
  timeout 5 cat <&3 || true
  exec 3<&- 3>&-
}

weed_pid=""
work=""
stop_weed() {
  if [[ -n "$weed_pid" ]]; then
    kill "$weed_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$weed_pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$weed_pid" 2>/dev/null || true
    wait "$weed_pid" 2>/dev/null || true
    weed_pid=""
  fi
  [[ -n "$work" ]] && rm -rf "$work"
  work=""
}

# start_weed starts weed server with the S3 gateway on free loopback
# ports: master, volume, filer and S3, each with its gRPC port 10000 up.
start_weed() {
  local base p ok
  for _ in $(seq 20); do
    base=$((20000 + RANDOM % 9000))
    ok=1
    for p in $base $((base + 1)) $((base + 2)) $((base + 3)); do
      if port_busy "$p" || port_busy $((p + 10000)); then ok=0; break; fi
    done
    ((ok)) && break
  done
  ((ok)) || { log "no free ports"; return 1; }
  work=$(mktemp -d)
  mkdir -p "$work/data"
  access=strand
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  cat >"$work/s3.json" <<EOF
{"identities": [{"name": "strand", "credentials": [{"accessKey": "$access", "secretKey": "$secret"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
EOF
  master=$base volume=$((base + 1)) filer=$((base + 2)) s3=$((base + 3))
  "$weed" server -dir="$work/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.telemetry=false \
    -master.port=$master -volume.port=$volume -filer -filer.port=$filer \
    -s3 -s3.port=$s3 -s3.config="$work/s3.json" -s3.port.iceberg=0 -s3.port.lance=0 \
    -master.volumeSizeLimitMB=64 -volume.max=0 >"$work/weed.log" 2>&1 &
  weed_pid=$!
  # Ready: the S3 gateway answers (403 to an unsigned request: auth is on)
  # and the master knows the volume server, so writes can place data.
  for _ in $(seq 120); do
    if ! kill -0 "$weed_pid" 2>/dev/null; then
      log "weed exited:"; tail -20 "$work/weed.log" >&2; weed_pid=""; return 1
    fi
    if http_get "$s3" / 2>/dev/null | head -1 | grep -q ' 403' &&
      http_get "$master" /dir/status 2>/dev/null | grep -q "\"Url\":\"127.0.0.1:$volume\""; then
      export STRAND_TEST_S3_ENDPOINT="http://127.0.0.1:$s3"
      export STRAND_TEST_S3_ACCESS_KEY="$access" STRAND_TEST_S3_SECRET_KEY="$secret"
      log "weed $SEAWEEDFS_VERSION (pid $weed_pid) serves S3 at $STRAND_TEST_S3_ENDPOINT, log $work/weed.log"
      return 0
    fi
    sleep 0.5
  done
  log "weed did not answer within 60s:"; tail -20 "$work/weed.log" >&2
  return 1
}

trap stop_weed EXIT
trap 'exit 130' INT TERM
build_weed
if [[ "${1:-}" == --build ]]; then
  log "weed is $weed"
  exit
fi
started=0
for attempt in 1 2 3; do # a port taken between the check and weed's bind
  if start_weed; then started=1; break; fi
  stop_weed
  log "start attempt $attempt failed"
done
((started)) || exit 1

if (($# == 0)); then
  cat <<EOF
export STRAND_TEST_S3_ENDPOINT=$STRAND_TEST_S3_ENDPOINT
export STRAND_TEST_S3_ACCESS_KEY=$STRAND_TEST_S3_ACCESS_KEY
export STRAND_TEST_S3_SECRET_KEY=$STRAND_TEST_S3_SECRET_KEY
EOF
  log "serving until interrupted"
  wait "$weed_pid"
  exit
fi
"$@"
