#!/usr/bin/env bash
# Mutual TLS against `strand serve --tls-cert --tls-key --tls-client-ca`:
# kcat (librdkafka/OpenSSL) and kafka-python (Python's ssl) produce and read
# back with a client certificate; without one, or without TLS, they fail.
#
#   test/interop/tls.sh PORT CERTDIR   (run.sh makes CERTDIR with openssl:
#                                       ca.pem, client.pem, client.key)
set -uo pipefail
port=$1 certs=$2
b=127.0.0.1:$port
PY=/usr/bin/python3
topic=interop-tls
ok() { echo "ok tls: $*"; }
fail() { echo "FAIL tls: $*"; }
ssl=(-X security.protocol=ssl -X ssl.ca.location="$certs/ca.pem")
mtls=("${ssl[@]}" -X ssl.certificate.location="$certs/client.pem" -X ssl.key.location="$certs/client.key")

if printf 'one\ntwo\n' | timeout 30 kcat -b "$b" "${mtls[@]}" -P -t "$topic" 2>/tmp/tls-kcat.err; then
  ok "kcat produce over mutual TLS"
else
  fail "kcat produce over mutual TLS: $(tail -1 /tmp/tls-kcat.err)"
fi
got=$(timeout 30 kcat -b "$b" "${mtls[@]}" -C -t "$topic" -e -q -f '%s\n' 2>/dev/null | tr '\n' ' ')
[[ $got == "one two " ]] && ok "kcat consume over mutual TLS" || fail "kcat consumed [$got]"
if timeout 15 kcat -b "$b" "${ssl[@]}" -L -m 5 >/dev/null 2>&1; then
  fail "kcat without a client certificate listed metadata"
else
  ok "kcat without a client certificate is refused"
fi
if timeout 15 kcat -b "$b" -L -m 5 >/dev/null 2>&1; then
  fail "kcat without TLS listed metadata"
else
  ok "kcat without TLS is refused"
fi

"$PY" - "$b" "$topic" "$certs" <<'PYEOF'
import sys
from kafka import KafkaProducer
b, topic, certs = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    p = KafkaProducer(bootstrap_servers=b, security_protocol="SSL", ssl_cafile=certs + "/ca.pem",
                      ssl_certfile=certs + "/client.pem", ssl_keyfile=certs + "/client.key",
                      ssl_check_hostname=False, request_timeout_ms=15000)
    md = p.send(topic, b"python").get(timeout=15)
    p.close()
    print("ok tls: kafka-python produce over mutual TLS (offset %d)" % md.offset)
except Exception as e:  # noqa: BLE001 - report any failure as a check
    print("FAIL tls: kafka-python produce over mutual TLS: %r" % (e,))
PYEOF
