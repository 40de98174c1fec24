#!/usr/bin/env bash
# SASL against `strand serve --sasl-users`: kcat (librdkafka) and
# kafka-python authenticate with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512,
# produce and read back; a wrong password and a client without SASL fail.
#
#   test/interop/sasl.sh PORT     (run.sh starts the broker with the users
#                                  app:s3cret-pw)
set -uo pipefail
port=$1
b=127.0.0.1:$port
PY=/usr/bin/python3
topic=interop-sasl
ok() { echo "ok sasl: $*"; }
fail() { echo "FAIL sasl: $*"; }
k() { # k MECH USER PASS kcat-args...: kcat over SASL_PLAINTEXT
  local mech=$1 user=$2 pass=$3; shift 3
  timeout 30 kcat -b "$b" -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms="$mech" \
    -X sasl.username="$user" -X sasl.password="$pass" "$@"
}

for mech in PLAIN SCRAM-SHA-256 SCRAM-SHA-512; do
  if echo "kcat-$mech" | k "$mech" app s3cret-pw -P -t "$topic" 2>/tmp/sasl-kcat.err; then
    ok "kcat $mech produce"
  else
    fail "kcat $mech produce: $(tail -1 /tmp/sasl-kcat.err)"
  fi
done
got=$(k SCRAM-SHA-512 app s3cret-pw -C -t "$topic" -e -q -f '%s\n' 2>/dev/null | sort | tr '\n' ' ')
if [[ $got == "kcat-PLAIN kcat-SCRAM-SHA-256 kcat-SCRAM-SHA-512 " ]]; then
  ok "kcat consumed what the three mechanisms produced"
else
  fail "kcat consumed [$got]"
fi
if k SCRAM-SHA-256 app wrong -L -m 5 >/dev/null 2>&1; then
  fail "kcat with a wrong SCRAM password listed metadata"
else
  ok "kcat with a wrong SCRAM password is refused"
fi
if timeout 15 kcat -b "$b" -L -m 5 >/dev/null 2>&1; then
  fail "kcat without SASL listed metadata"
else
  ok "kcat without SASL is refused"
fi

"$PY" - "$b" "$topic" <<'PYEOF'
import sys
from kafka import KafkaProducer, KafkaConsumer
from kafka.errors import KafkaError
b, topic = sys.argv[1], sys.argv[2]
for mech in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
    try:
        p = KafkaProducer(bootstrap_servers=b, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mech,
                          sasl_plain_username="app", sasl_plain_password="s3cret-pw", request_timeout_ms=15000)
        md = p.send(topic, b"python-" + mech.encode()).get(timeout=15)
        p.close()
        print("ok sasl: kafka-python %s produce (offset %d)" % (mech, md.offset))
    except Exception as e:  # noqa: BLE001 - report any failure as a check
        print("FAIL sasl: kafka-python %s produce: %r" % (mech, e))
try:
    p = KafkaProducer(bootstrap_servers=b, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                      sasl_plain_username="app", sasl_plain_password="wrong", request_timeout_ms=5000,
                      max_block_ms=5000)
    p.send(topic, b"x").get(timeout=5)
    print("FAIL sasl: kafka-python with a wrong password produced")
except Exception:
    print("ok sasl: kafka-python with a wrong password is refused")
PYEOF
