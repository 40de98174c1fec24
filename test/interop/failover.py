#!/usr/bin/python3
"""Interop: kafka-python and kcat produce to a replicated topic while a node dies.

    /usr/bin/python3 test/interop/failover.py BOOTSTRAP MARKER

BOOTSTRAP lists the cluster's three nodes (host:port,...). The script
creates interop-failover (3 partitions, replication factor 3,
min.insync.replicas 2) and produces 3,000 records with acks=all from
kafka-python, at about 150 a second, alongside kcat (librdkafka,
idempotent, acks=all) producing 3,000 more. Once both have had some
records acknowledged it creates MARKER: the caller (run.sh) then SIGKILLs
a node and starts it again while the producers go on. Afterwards it reads
the topic back and checks that every record either client had
acknowledged is there, kafka-python's at the partition and offset the
broker acknowledged, kcat's exactly once (idempotence).

One line per check: "ok ..." or "FAIL ...: details". Exit status 1 if any
check failed.
"""
import subprocess
import tempfile
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

TOPIC = "interop-failover"
PARTS = 3
N = 3000
TIMEOUT = 120

failures = 0


def report(cond, msg, details=()):
    global failures
    if cond:
        print("ok failover: " + msg, flush=True)
        return True
    failures += 1
    print("FAIL failover: " + msg, flush=True)
    for d in list(details)[:10]:
        print("    " + str(d), flush=True)
    return False


def python_producer(bootstrap, acked, failed, started):
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=2147483647,
                      max_in_flight_requests_per_connection=1, request_timeout_ms=10000,
                      retry_backoff_ms=200, linger_ms=5)
    lock = threading.Lock()

    def ok_cb(i):
        def cb(md):
            with lock:
                acked[i] = (md.partition, md.offset)
                if len(acked) == 300:
                    started.set()
        return cb

    def err_cb(i):
        def cb(exc):
            with lock:
                failed[i] = repr(exc)
        return cb

    for i in range(N):
        p.send(TOPIC, key=b"k%d" % (i % 50), value=b"py-%d" % i).add_callback(ok_cb(i)).add_errback(err_cb(i))
        time.sleep(1 / 150)
    p.flush(timeout=TIMEOUT)
    p.close()


def main():
    bootstrap, marker = sys.argv[1].split(","), sys.argv[2]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, PARTS, 3, topic_configs={"min.insync.replicas": "2"})], timeout_ms=15000)
    admin.close()

    errf = tempfile.TemporaryFile(mode="w+")
    lines = "".join("kc%d:kcat-%d\n" % (i % 50, i) for i in range(N))
    kcat = subprocess.Popen(
        ["kcat", "-P", "-b", ",".join(bootstrap), "-t", TOPIC, "-K:",
         "-X", "acks=all", "-X", "enable.idempotence=true", "-X", "message.timeout.ms=120000",
         "-X", "linger.ms=20", "-X", "batch.num.messages=20"],
        stdin=subprocess.PIPE, stderr=errf, text=True)

    def feed():  # paced like the python producer, so both straddle the kill
        for i in range(0, len(lines.splitlines()), 50):
            chunk = lines.splitlines(keepends=True)[i:i + 50]
            kcat.stdin.write("".join(chunk))
            kcat.stdin.flush()
            time.sleep(50 / 150)
        kcat.stdin.close()

    feeder = threading.Thread(target=feed)
    feeder.start()

    acked, failed, started = {}, {}, threading.Event()
    prod = threading.Thread(target=python_producer, args=(bootstrap, acked, failed, started))
    prod.start()
    if started.wait(TIMEOUT):
        open(marker, "w").close()  # the caller kills and restarts a node now
    prod.join()
    feeder.join()
    kcat.wait(timeout=TIMEOUT)
    errf.seek(0)
    kcat_err = errf.read()

    report(len(acked) + len(failed) == N, "kafka-python: %d of %d sends acknowledged with acks=all through the kill (%d failed)" % (len(acked), N, len(failed)),
           list(failed.items())[:5])
    report(kcat.returncode == 0, "kcat: all %d records delivered (idempotent, acks=all) through the kill" % N, kcat_err.splitlines()[-5:])

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    tps = [TopicPartition(TOPIC, p) for p in range(PARTS)]
    consumer.assign(tps)
    ends = consumer.end_offsets(tps)
    at, kcat_seen = {}, {}
    deadline = time.time() + TIMEOUT
    while time.time() < deadline and any(consumer.position(tp) < ends[tp] for tp in tps):
        for msgs in consumer.poll(timeout_ms=1000).values():
            for m in msgs:
                at[(m.partition, m.offset)] = m.value
                if m.value.startswith(b"kcat-"):
                    kcat_seen[m.value] = kcat_seen.get(m.value, 0) + 1
    consumer.close()

    wrong = [(i, pos, at.get(pos)) for i, pos in acked.items() if at.get(pos) != b"py-%d" % i]
    report(not wrong, "kafka-python: every acknowledged record is at the partition and offset acknowledged (%d)" % len(acked), wrong[:5])
    if kcat.returncode == 0:
        missing = [i for i in range(N) if kcat_seen.get(b"kcat-%d" % i, 0) == 0]
        dup = [v for v, n in kcat_seen.items() if n > 1]
        report(not missing and not dup, "kcat: every record read back exactly once (%d)" % N,
               ["missing %s" % missing[:5], "duplicated %s" % dup[:5]])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
