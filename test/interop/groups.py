#!/usr/bin/python3
"""Interop: consumer groups with kafka-python and librdkafka (kcat -G).

    /usr/bin/python3 test/interop/groups.py PORT
    /usr/bin/python3 test/interop/groups.py PORT --after-restart

The first form produces 3,000 keyed records to a 6-partition topic, then:
  - kafka-python: two KafkaConsumer(group_id=...) members in one group
    consume it to the end with manual commits; every record at least once,
    and the committed offsets are the end offsets; the group is listed and
    described by the admin client;
  - kcat -G: a balanced librdkafka consumer joins its own group, reads the
    topic to the end (-e) and commits on exit; the committed offsets are the
    end offsets.
--after-restart checks that both groups' committed offsets survived a
broker restart on the same data directory.

One line per check: "ok ...", "FAIL ...: details" or "skip ...: reason".
Exit status 1 if any check failed.
"""
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

TOPIC = "interop-groups"
N = 3000
PARTS = 6
PY_GROUP = "interop-py-group"
KCAT_GROUP = "interop-kcat-group"
TIMEOUT = 120  # seconds for any one phase

failures = 0


def report(cond, msg, details=()):
    global failures
    if cond:
        print("ok groups: " + msg, flush=True)
        return True
    failures += 1
    print("FAIL groups: " + msg, flush=True)
    for d in list(details)[:10]:
        print("    " + str(d), flush=True)
    return False


def end_offsets(bootstrap):
    c = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(PARTS)]
        return {tp.partition: off for tp, off in c.end_offsets(tps).items()}
    finally:
        c.close()


def committed(admin, group):
    got = admin.list_consumer_group_offsets(group)
    return {tp.partition: om.offset for tp, om in got.items() if tp.topic == TOPIC}


def py_member(bootstrap, seen, lock, stop, errors):
    try:
        c = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=PY_GROUP,
                          enable_auto_commit=False, auto_offset_reset="earliest",
                          session_timeout_ms=10000, heartbeat_interval_ms=500,
                          consumer_timeout_ms=500)
        while not stop.is_set():
            polled = c.poll(timeout_ms=200)
            for tp, msgs in polled.items():
                with lock:
                    for m in msgs:
                        seen.add((m.partition, m.offset))
            if polled:
                c.commit()
        c.commit()
        c.close()
    except Exception as e:  # reported by the main thread
        errors.append(repr(e))


def py_group(bootstrap, admin, ends):
    seen, lock, stop, errors = set(), threading.Lock(), threading.Event(), []
    members = [threading.Thread(target=py_member, args=(bootstrap, seen, lock, stop, errors)) for _ in range(2)]
    for m in members:
        m.start()
    want = {(p, o) for p in range(PARTS) for o in range(ends[p])}
    deadline = time.time() + TIMEOUT
    while time.time() < deadline and not errors:
        with lock:
            if want <= seen:
                break
        time.sleep(0.1)
    # Every record consumed; wait for the members' commits to cover them.
    commits = {}
    while time.time() < deadline and not errors:
        commits = committed(admin, PY_GROUP)
        if commits == ends:
            break
        time.sleep(0.2)
    groups = admin.list_consumer_groups()
    described = admin.describe_consumer_groups([PY_GROUP])
    stop.set()
    for m in members:
        m.join(TIMEOUT)
    report(not errors, "kafka-python group members ran without errors", errors)
    with lock:
        missing = want - seen
    report(not missing, "kafka-python group of 2 consumed all %d records" % N,
           ["missing %s" % (x,) for x in sorted(missing)[:10]])
    report(commits == ends, "kafka-python group committed the end offsets", ["committed %s" % commits, "end %s" % ends])
    report(any(g[0] == PY_GROUP for g in groups), "list_consumer_groups lists the group", [groups])
    d = described[0] if described else None
    report(d is not None and d.state == "Stable" and len(d.members) == 2 and d.protocol_type == "consumer",
           "describe_consumer_groups: Stable with 2 members", [d])


def kcat_group(bootstrap, admin, ends):
    cmd = ["kcat", "-b", bootstrap, "-G", KCAT_GROUP, "-X", "auto.offset.reset=earliest",
           "-e", "-q", "-f", "%p %o\\n", TOPIC]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        report(False, "kcat -G consumed to the end and exited", ["timed out after %ds" % TIMEOUT, e.stderr])
        return
    got = set()
    for line in out.stdout.splitlines():
        p, o = line.split()
        got.add((int(p), int(o)))
    want = {(p, o) for p in range(PARTS) for o in range(ends[p])}
    report(out.returncode == 0 and want <= got, "kcat -G (balanced consumer) consumed all %d records" % N,
           ["exit status %d, %d of %d records" % (out.returncode, len(got & want), len(want)), out.stderr[-2000:]])
    commits = committed(admin, KCAT_GROUP)
    report(commits == ends, "kcat -G committed the end offsets on exit", ["committed %s" % commits, "end %s" % ends])


def main():
    port = sys.argv[1]
    bootstrap = "127.0.0.1:" + port
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    if "--after-restart" in sys.argv[2:]:
        ends = end_offsets(bootstrap)
        for group in (PY_GROUP, KCAT_GROUP):
            commits = committed(admin, group)
            report(commits == ends, "%s's committed offsets survived the restart" % group,
                   ["committed %s" % commits, "end %s" % ends])
    else:
        admin.create_topics([NewTopic(TOPIC, PARTS, 1)])
        p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        futures = [p.send(TOPIC, key=b"key-%d" % (i % 100), value=b"value-%d" % i) for i in range(N)]
        p.flush()
        errs = [f.exception for f in futures if f.failed()]
        p.close()
        report(not errs, "produced %d records" % N, errs)
        ends = end_offsets(bootstrap)
        report(sum(ends.values()) == N, "end offsets sum to %d" % N, [ends])
        py_group(bootstrap, admin, ends)
        kcat_group(bootstrap, admin, ends)
    admin.close()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
