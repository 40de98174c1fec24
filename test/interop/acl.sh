#!/usr/bin/env bash
# ACLs and API-managed SCRAM users against `strand serve --authorizer` on a
# SASL_SSL listener: the super user creates a SCRAM user over the Kafka API
# (strand user) and prefixed ACLs (strand acl); kcat (librdkafka, a
# --sasl-users user) and kafka-python 2.0.2 (the API-made user,
# SCRAM-SHA-256) produce and consume under the prefix over TLS, and are
# refused TOPIC_AUTHORIZATION_FAILED outside it.
#
#   test/interop/acl.sh PORT BIN CERTDIR  (run.sh starts the broker with the
#                                          users admin:admin-pw and
#                                          app:s3cret-pw, --authorizer
#                                          --super-users User:admin and
#                                          --tls-cert/--tls-key from CERTDIR,
#                                          whose ca.pem signed them)
set -uo pipefail
port=$1 bin=$2 certs=$3
b=127.0.0.1:$port
PY=/usr/bin/python3
ok() { echo "ok acl: $*"; }
fail() { echo "FAIL acl: $*"; }
as_admin() { STRAND_BROKERS=$b STRAND_SASL_USER=admin STRAND_SASL_PASSWORD=admin-pw timeout 30 "$bin" "$@" --tls-ca "$certs/ca.pem"; }
k() { # k kcat-args...: kcat as app over SCRAM-SHA-512 and TLS
  timeout 30 kcat -b "$b" -X security.protocol=SASL_SSL -X ssl.ca.location="$certs/ca.pem" -X sasl.mechanisms=SCRAM-SHA-512 \
    -X sasl.username=app -X sasl.password=s3cret-pw "$@"
}

for t in acl-ok.kcat acl-ok.py acl-denied; do
  as_admin topic create "$t" --if-not-exists >/dev/null || fail "topic create $t"
done
if printf 'py-s3cret-pw\n' | as_admin user create py --mechanism SCRAM-SHA-256 >/dev/null; then
  ok "strand user create (AlterUserScramCredentials)"
else
  fail "strand user create"
fi
for p in User:app User:py; do
  if as_admin acl create --allow "$p" --operation write --operation read --topic acl-ok. --prefixed >/dev/null &&
     as_admin acl create --allow "$p" --operation read --group acl-g --prefixed >/dev/null; then
    ok "strand acl create for $p"
  else
    fail "strand acl create for $p"
  fi
done

if echo one | k -P -t acl-ok.kcat 2>/tmp/acl-kcat.err; then
  ok "kcat produce under the allowed prefix"
else
  fail "kcat produce under the allowed prefix: $(tail -1 /tmp/acl-kcat.err)"
fi
got=$(k -C -t acl-ok.kcat -e -q -f '%s\n' 2>/dev/null)
[[ $got == one ]] && ok "kcat consume under the allowed prefix" || fail "kcat consumed [$got]"
echo two | k -P -t acl-denied >/dev/null 2>/tmp/acl-kcat.err
if grep -qi "authoriz" /tmp/acl-kcat.err; then
  ok "kcat produce outside the prefix refused: $(grep -io 'topic authorization failed' /tmp/acl-kcat.err | head -1)"
else
  fail "kcat produce outside the prefix: $(tail -2 /tmp/acl-kcat.err | tr '\n' ' ')"
fi

"$PY" - "$b" "$certs/ca.pem" <<'PYEOF'
import sys
from kafka import KafkaProducer, KafkaConsumer
from kafka.errors import TopicAuthorizationFailedError
b, ca = sys.argv[1], sys.argv[2]
cfg = dict(bootstrap_servers=b, security_protocol="SASL_SSL", ssl_cafile=ca, sasl_mechanism="SCRAM-SHA-256",
           sasl_plain_username="py", sasl_plain_password="py-s3cret-pw")
try:
    p = KafkaProducer(request_timeout_ms=15000, **cfg)
    md = p.send("acl-ok.py", b"python").get(timeout=15)
    print("ok acl: kafka-python (API-made user) produce under the prefix (offset %d)" % md.offset)
    try:
        p.send("acl-denied", b"no").get(timeout=15)
        print("FAIL acl: kafka-python produced outside the prefix")
    except TopicAuthorizationFailedError:
        print("ok acl: kafka-python produce outside the prefix refused: TopicAuthorizationFailedError")
    except Exception as e:  # noqa: BLE001
        print("FAIL acl: kafka-python outside the prefix: %r" % (e,))
    p.close()
except Exception as e:  # noqa: BLE001
    print("FAIL acl: kafka-python produce: %r" % (e,))
try:
    c = KafkaConsumer("acl-ok.py", group_id="acl-g.py", auto_offset_reset="earliest",
                      consumer_timeout_ms=10000, **cfg)
    vals = [m.value for m in c]
    c.close()
    if vals == [b"python"]:
        print("ok acl: kafka-python consumed in group acl-g.py")
    else:
        print("FAIL acl: kafka-python consumed %r" % (vals,))
except Exception as e:  # noqa: BLE001
    print("FAIL acl: kafka-python consume: %r" % (e,))
PYEOF
