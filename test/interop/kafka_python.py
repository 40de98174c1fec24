#!/usr/bin/python3
"""Interop: kafka-python (Debian's python3-kafka 2.0.2) against a running Strand.

    /usr/bin/python3 test/interop/kafka_python.py PORT
    /usr/bin/python3 test/interop/kafka_python.py PORT --after-restart

kafka-python is the "old client": it probes the broker with ApiVersions and
then speaks older request versions (Produce v7, Fetch v4..v10, Metadata v1,
ListOffsets v1..v2, CreateTopics v0..v3). The first form creates a
6-partition topic, produces 10,000 keyed records with headers (acks=all),
consumes them back with assign() (no consumer group) and verifies them
against what the broker acknowledged; then offsets, seeks, compression codecs,
acks=0 and a few admin calls. --after-restart re-reads the main topic after
the broker was restarted on the same data directory and checks that every
acknowledged record is still there, unchanged, at its acknowledged offset.

One line per check: "ok ...", "FAIL ...: details" or "skip ...: reason".
Exit status 1 if any check failed. INTEROP_WORK (default: a temp dir) keeps
the acknowledged offsets between the two forms.
"""
import json
import logging
import os
import sys
import tempfile
import time
from collections import defaultdict

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from murmur2 import partition_for_key
from rawfetch import partition_codecs

import kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (ConfigResource, ConfigResourceType, KafkaAdminClient,
                         NewPartitions, NewTopic)
from kafka import errors as Errors
from kafka.codec import has_gzip, has_lz4, has_snappy, has_zstd

TOPIC = "interop-kafka-python"
N = 10000
KEYS = 1000
PARTS = 6

failures = 0
WINDOW = {}  # topic -> [ms before the first send, ms after the last ack]


def ok(msg):
    print("ok kafka-python: " + msg, flush=True)


def skip(msg):
    print("skip kafka-python: " + msg, flush=True)


def fail(msg, details=()):
    global failures
    failures += 1
    print("FAIL kafka-python: " + msg, flush=True)
    details = list(details)
    for d in details[:10]:
        print("    " + str(d), flush=True)
    if len(details) > 10:
        print("    ... and %d more" % (len(details) - 10), flush=True)


def check(cond, msg, details=()):
    if cond:
        ok(msg)
    else:
        fail(msg, details)
    return cond


class ErrorLog(logging.Handler):
    """Collects the client's own ERROR log lines (protocol errors, etc.)."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.lines = []

    def emit(self, record):
        self.lines.append("%s: %s" % (record.name, record.getMessage()))


def benign(record):
    """False for log lines that are the client's own business, not the broker's."""
    msg = record.getMessage()
    # close() cancels the consumer's in-flight long-poll fetch.
    if record.name == "kafka.consumer.fetcher" and "failed: Cancelled" in msg:
        return False
    # The record test_large expects the broker to reject.
    if record.name == "kafka.producer.record_accumulator" and "interop-kafka-python-large" in msg:
        return False
    return True


# ------------------------------------------------------------------ records

def rec_key(i, keys=KEYS):
    return b"key-%04d" % (i % keys)


def rec_value(i):
    if i % 997 == 500:
        return None  # a few null values
    return b"value-%06d|" % i + bytes((i * 31 + j) % 256 for j in range(i % 64))


def rec_headers(i, extra=()):
    return [("idx", str(i).encode()), ("src", b"kafka-python"),
            ("bin", bytes([i % 256, 0, 255])), ("empty", b"")] + list(extra)


def idx_of(headers):
    for k, v in headers or []:
        if k == "idx":
            return int(v)
    return None


# --------------------------------------------------------------- operations

def create_topic(admin, topic, partitions, what):
    try:
        resp = admin.create_topics([NewTopic(topic, partitions, 1)], timeout_ms=15000)
        errs = [e for e in resp.topic_errors if e[1] != 0]
        return check(not errs, "%s: create topic %s with %d partitions" % (what, topic, partitions), errs)
    except Exception as e:
        fail("%s: create topic %s with %d partitions" % (what, topic, partitions),
             ["%s: %s" % (type(e).__name__, e)])
        return False


def produce(topic, count, keys, partitions, what, extra_headers=(), **cfg):
    """Produce count records; return {i: (partition, offset)} as acknowledged, or None."""
    conf = dict(bootstrap_servers=BOOTSTRAP, client_id="interop-" + what.replace(" ", "-"),
                acks="all", linger_ms=5, request_timeout_ms=30000, max_block_ms=30000)
    conf.update(cfg)
    producer = None
    try:
        producer = KafkaProducer(**conf)
        WINDOW[topic] = [int(time.time() * 1000), None]
        futures = []
        for i in range(count):
            futures.append(producer.send(topic, key=rec_key(i, keys), value=rec_value(i),
                                         headers=rec_headers(i, extra_headers)))
        producer.flush(timeout=60)
        WINDOW[topic][1] = int(time.time() * 1000)
        if conf["acks"] == 0:
            ok("%s: sent %d records with acks=0" % (what, count))
            return {}
        acked, errs = {}, []
        for i, f in enumerate(futures):
            try:
                md = f.get(timeout=30)
                acked[i] = (md.partition, md.offset)
            except Exception as e:
                errs.append("record %d: %s: %s" % (i, type(e).__name__, e))
        check(not errs, "%s: %d records acknowledged (acks=%s)" % (what, count, conf["acks"]), errs)
        return acked if not errs else None
    except Exception as e:
        fail("%s: produce" % what, ["%s: %s" % (type(e).__name__, e)])
        return None
    finally:
        if producer is not None:
            producer.close(timeout=10)


def new_consumer(**cfg):
    conf = dict(bootstrap_servers=BOOTSTRAP, client_id="interop-kafka-python-consumer",
                group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
                fetch_max_wait_ms=200, request_timeout_ms=30000)
    conf.update(cfg)
    return KafkaConsumer(**conf)


def consume_all(topic, partitions, expect, what, timeout=60):
    """assign() every partition, seek to the beginning and read until expect
    records arrived (then one more second to catch extras)."""
    consumer = new_consumer()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    out = []
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        extra_until = None
        while time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=500, max_records=5000)
            for msgs in batch.values():
                out.extend(msgs)
            if len(out) >= expect:
                if extra_until is None:
                    extra_until = time.monotonic() + 1.0
                elif time.monotonic() >= extra_until:
                    break
        return out
    except Exception as e:
        fail("%s: consume %s" % (what, topic), ["%s: %s" % (type(e).__name__, e),
                                              "%d records before the error" % len(out)])
        return None
    finally:
        consumer.close()


def verify(msgs, acked, count, keys, partitions, what, extra_headers=()):
    """Check consumed msgs against the acknowledged {i: (partition, offset)}."""
    by_idx = defaultdict(list)
    noidx = []
    for m in msgs:
        i = idx_of(m.headers)
        if i is None or not 0 <= i < count:
            noidx.append("p%d o%d headers %r" % (m.partition, m.offset, m.headers))
        else:
            by_idx[i].append(m)
    missing = [i for i in range(count) if i not in by_idx]
    dups = ["record %d consumed %d times at %s" % (i, len(v), [(m.partition, m.offset) for m in v])
            for i, v in sorted(by_idx.items()) if len(v) > 1]
    check(not missing and not dups and not noidx and len(msgs) == count,
          "%s: %d records consumed exactly once" % (what, count),
          ["consumed %d, produced %d" % (len(msgs), count)]
          + ["missing record %d (acked at %s)" % (i, acked.get(i)) for i in missing[:5]]
          + (["%d missing in total" % len(missing)] if missing else []) + dups + noidx)

    at_ack = ["record %d at p%d o%d, acknowledged at p%d o%d" % ((i, v[0].partition, v[0].offset) + tuple(acked[i]))
              for i, v in sorted(by_idx.items()) if i in acked and (v[0].partition, v[0].offset) != acked[i]]
    check(not at_ack, "%s: every record at the partition and offset the broker acknowledged" % what, at_ack)

    content = []
    for i, v in sorted(by_idx.items()):
        m = v[0]
        if m.key != rec_key(i, keys):
            content.append("record %d key %r, want %r" % (i, m.key, rec_key(i, keys)))
        if m.value != rec_value(i):
            content.append("record %d value %r, want %r" % (i, m.value, rec_value(i)))
        want_h = rec_headers(i, extra_headers)
        if list(m.headers) != want_h:
            content.append("record %d headers %r, want %r" % (i, m.headers, want_h))
    nulls = sum(1 for i in by_idx if rec_value(i) is None)
    check(not content, "%s: keys, values (%d null) and headers intact" % (what, nulls), content)

    lo, hi = WINDOW.get(msgs[0].topic if msgs else None, [None, None])
    if lo is not None and hi is not None:
        tbad = ["p%d o%d: timestamp %d type %d, want CreateTime (0) in [%d, %d]"
                % (m.partition, m.offset, m.timestamp, m.timestamp_type, lo, hi)
                for m in msgs if m.timestamp_type != 0 or not lo <= m.timestamp <= hi]
        check(not tbad, "%s: CreateTime timestamps kept" % what, tbad)

    per_part = defaultdict(list)
    for m in msgs:
        per_part[m.partition].append(m)
    obad = []
    for p, ms in sorted(per_part.items()):
        offs = [m.offset for m in ms]
        if any(b <= a for a, b in zip(offs, offs[1:])):
            obad.append("partition %d: offsets not increasing in delivery order" % p)
        if sorted(offs) != list(range(len(offs))):
            obad.append("partition %d: offsets not contiguous from 0 (%d records, min %d max %d)"
                        % (p, len(offs), min(offs), max(offs)))
        idx = [idx_of(m.headers) for m in sorted(ms, key=lambda m: m.offset)]
        if any(b is None or a is None or b <= a for a, b in zip(idx, idx[1:])):
            obad.append("partition %d: records not in production order" % p)
    check(not obad and len(per_part) == partitions,
          "%s: per-partition order and offsets contiguous from 0 on all %d partitions (%s)"
          % (what, partitions, ", ".join("p%d=%d" % (p, len(v)) for p, v in sorted(per_part.items()))),
          obad + (["records on %d partitions, want %d" % (len(per_part), partitions)]
                  if len(per_part) != partitions else []))

    place = ["key %r on partition %d, murmur2 says %d" % (m.key, m.partition, partition_for_key(m.key, partitions))
             for m in msgs if m.key is not None and m.partition != partition_for_key(m.key, partitions)]
    key_parts = defaultdict(set)
    for m in msgs:
        key_parts[m.key].add(m.partition)
    place += ["key %r on partitions %s" % (k, sorted(v)) for k, v in key_parts.items() if len(v) > 1]
    check(not place, "%s: each key on one partition, the one Kafka's murmur2 picks (%d keys)"
          % (what, len(key_parts)), place)
    return per_part


def check_acks(acked, count, keys, partitions, what):
    """The acknowledged offsets themselves: contiguous per partition, murmur2 placement."""
    per_part = defaultdict(list)
    for i in range(count):
        if i in acked:
            per_part[acked[i][0]].append((acked[i][1], i))
    bad = []
    for p, lst in sorted(per_part.items()):
        offs = [o for o, _ in lst]
        if offs != list(range(len(offs))):
            bad.append("partition %d: acknowledged offsets in send order %s... not 0,1,2,..." % (p, offs[:8]))
    bad += ["record %d acknowledged on partition %d, murmur2 says %d" % (i, acked[i][0], partition_for_key(rec_key(i, keys), partitions))
            for i in acked if acked[i][0] != partition_for_key(rec_key(i, keys), partitions)]
    check(not bad, "%s: acknowledged offsets contiguous from 0 in send order, partitions per murmur2" % what, bad)


def check_stored_codec(topic, partitions, codec, what):
    """Raw Fetch: the broker keeps and serves the producer's batches, codec included."""
    try:
        bad, nb = [], 0
        for p in range(partitions):
            codecs, err = partition_codecs(("127.0.0.1", PORT), topic, p)
            nb += len(codecs)
            if err:
                bad.append("partition %d: %s" % (p, err))
            other = sorted(set(codecs) - {codec})
            if other:
                bad.append("partition %d: %d of %d batches are %s" % (p, sum(c != codec for c in codecs), len(codecs), other))
        check(not bad and nb > 0, "%s: raw Fetch v4 serves the %d stored batches as %s" % (what, nb, codec), bad)
    except Exception as e:
        fail("%s: raw Fetch v4" % what, ["%s: %s" % (type(e).__name__, e)])


# -------------------------------------------------------------------- tests

def test_main(admin, work):
    if not create_topic(admin, TOPIC, PARTS, "main"):
        return
    try:
        admin.create_topics([NewTopic(TOPIC, PARTS, 1)], timeout_ms=15000)
        fail("main: creating %s again is rejected with TOPIC_ALREADY_EXISTS" % TOPIC, ["no error"])
    except Errors.TopicAlreadyExistsError:
        ok("main: creating %s again is rejected with TOPIC_ALREADY_EXISTS" % TOPIC)
    except Exception as e:
        fail("main: creating %s again is rejected with TOPIC_ALREADY_EXISTS" % TOPIC,
             ["%s: %s" % (type(e).__name__, e)])

    try:
        desc = {t["topic"]: t for t in admin.describe_topics([TOPIC])}
        t = desc.get(TOPIC, {})
        ps = sorted(p["partition"] for p in t.get("partitions", []))
        check(t.get("error_code") == 0 and ps == list(range(PARTS)),
              "main: metadata shows %d partitions" % PARTS, ["metadata: %r" % t])
    except Exception as e:
        fail("main: metadata", ["%s: %s" % (type(e).__name__, e)])

    t0 = int(time.time() * 1000)
    acked = produce(TOPIC, N, KEYS, PARTS, "main")
    if acked is None:
        return
    check_acks(acked, N, KEYS, PARTS, "main")
    with open(os.path.join(work, "acked.json"), "w") as f:
        json.dump({str(i): v for i, v in acked.items()}, f)

    msgs = consume_all(TOPIC, PARTS, N, "main")
    if msgs is None:
        return
    per_part = verify(msgs, acked, N, KEYS, PARTS, "main")
    check_stored_codec(TOPIC, PARTS, "none", "main")
    counts = {p: len(per_part.get(p, [])) for p in range(PARTS)}

    # ListOffsets: earliest, latest, by timestamp.
    consumer = new_consumer(auto_offset_reset="none")
    tps = [TopicPartition(TOPIC, p) for p in range(PARTS)]
    try:
        beg = {tp.partition: o for tp, o in consumer.beginning_offsets(tps).items()}
        end = {tp.partition: o for tp, o in consumer.end_offsets(tps).items()}
        check(beg == {p: 0 for p in range(PARTS)}, "main: beginning_offsets all 0", ["got %s" % beg])
        check(end == counts, "main: end_offsets equal records per partition %s" % counts, ["got %s" % end])
        by_ts = consumer.offsets_for_times({tp: t0 - 60000 for tp in tps})
        got = {tp.partition: (v.offset if v else None) for tp, v in by_ts.items()}
        check(got == {p: 0 for p in range(PARTS)}, "main: offsets_for_times(before the first record) = 0",
              ["got %s" % got])
        future = consumer.offsets_for_times({tp: int(time.time() * 1000) + 3600000 for tp in tps})
        got = {tp.partition: v for tp, v in future.items()}
        check(all(v is None for v in got.values()), "main: offsets_for_times(an hour ahead) = none",
              ["got %s" % got])

        # Replay = seek: start partition 0 in the middle.
        tp0 = tps[0]
        mid = counts[0] // 2
        consumer.assign([tp0])
        consumer.seek(tp0, mid)
        first = None
        deadline = time.monotonic() + 20
        while first is None and time.monotonic() < deadline:
            for ms in consumer.poll(timeout_ms=500, max_records=10).values():
                if ms and first is None:
                    first = ms[0]
        want = sorted(per_part[0], key=lambda m: m.offset)[mid]
        check(first is not None and (first.offset, first.key, first.value) == (want.offset, want.key, want.value),
              "main: seek(p0, %d) re-delivers from offset %d" % (mid, mid),
              ["got %r" % (first,)])

        # Past the end with auto_offset_reset=none: OFFSET_OUT_OF_RANGE.
        consumer.seek(tp0, counts[0] + 1000)
        err = None
        deadline = time.monotonic() + 20
        while err is None and time.monotonic() < deadline:
            try:
                consumer.poll(timeout_ms=500)
            except Errors.OffsetOutOfRangeError as e:
                err = e
        check(err is not None, "main: fetching past the end gives OFFSET_OUT_OF_RANGE", ["no error within 20s"])
    except Exception as e:
        fail("main: offsets", ["%s: %s" % (type(e).__name__, e)])
    finally:
        consumer.close()


def test_after_restart(work):
    path = os.path.join(work, "acked.json")
    if not os.path.exists(path):
        fail("after restart: no acknowledged offsets from a first run in %s" % work)
        return
    with open(path) as f:
        acked = {int(i): tuple(v) for i, v in json.load(f).items()}
    msgs = consume_all(TOPIC, PARTS, N, "after restart")
    if msgs is not None:
        verify(msgs, acked, N, KEYS, PARTS, "after restart")


def test_codecs(admin):
    codecs = [("gzip", has_gzip, "gzip"), ("snappy", has_snappy, "python3-snappy"),
              ("lz4", has_lz4, "python3-lz4"), ("zstd", has_zstd, "python3-zstandard")]
    for codec, have, pkg in codecs:
        what = "compression %s" % codec
        if not have():
            skip("%s: python module missing (install %s)" % (what, pkg))
            continue
        topic = "interop-kafka-python-%s" % codec
        if not create_topic(admin, topic, 3, what):
            continue
        extra = [("codec", codec.encode())]
        acked = produce(topic, 1000, 100, 3, what, extra_headers=extra, compression_type=codec,
                        linger_ms=50, batch_size=256 * 1024)
        if acked is None:
            continue
        msgs = consume_all(topic, 3, 1000, what)
        if msgs is not None:
            verify(msgs, acked, 1000, 100, 3, what, extra_headers=extra)
        check_stored_codec(topic, 3, codec, what)


def test_acks0(admin):
    what = "acks=0"
    topic = "interop-kafka-python-acks0"
    if not create_topic(admin, topic, 1, what):
        return
    if produce(topic, 500, 50, 1, what, acks=0) is None:
        return
    # A broker that wrongly answers acks=0 desynchronises the connection; a
    # second, acked producer on the same topic must still work.
    acked = produce(topic, 1, 50, 1, what + " then acks=1", extra_headers=[("after", b"1")], acks=1)
    if acked is None:
        return
    msgs = consume_all(topic, 1, 501, what)
    if msgs is None:
        return
    n0 = sum(1 for m in msgs if ("after", b"1") not in m.headers)
    offs = [m.offset for m in msgs]
    check(n0 == 500 and offs == list(range(501)) and acked[0] == (0, 500),
          "acks=0: all 500 records written, then the acks=1 record at offset 500",
          ["%d acks=0 records consumed, offsets %s..%s, acks=1 record acknowledged at %s"
           % (n0, offs[:3], offs[-3:], acked.get(0))])


def test_large(admin):
    """Records near max.message.bytes, consumed with a per-partition fetch
    limit smaller than one record (KIP-74: the first batch comes anyway); and
    one record over max.message.bytes, which the broker must reject."""
    what = "large records"
    topic = "interop-kafka-python-large"
    if not create_topic(admin, topic, 1, what):
        return
    sizes = [1, 100 << 10, 500 << 10, 900 << 10, 1000 << 10, 10, 700 << 10]
    values = [bytes((i * 7 + j) % 251 for j in range(n)) for i, n in enumerate(sizes)]
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, client_id="interop-large", acks="all",
                             max_request_size=8 << 20, request_timeout_ms=30000)
    try:
        acked = []
        for i, v in enumerate(values):
            md = producer.send(topic, key=b"big-%d" % i, value=v).get(timeout=30)
            acked.append((md.partition, md.offset))
        check(acked == [(0, i) for i in range(len(values))],
              "%s: %d records up to 1000 KiB acknowledged at offsets 0..%d" % (what, len(values), len(values) - 1),
              ["acked %s" % acked])
        try:
            producer.send(topic, key=b"too-big", value=b"x" * (2 << 20)).get(timeout=30)
            fail("%s: a 2 MiB record is rejected with MESSAGE_TOO_LARGE (max.message.bytes)" % what, ["it was acknowledged"])
        except Errors.MessageSizeTooLargeError:
            ok("%s: a 2 MiB record is rejected with MESSAGE_TOO_LARGE (max.message.bytes)" % what)
        except Exception as e:
            fail("%s: a 2 MiB record is rejected with MESSAGE_TOO_LARGE (max.message.bytes)" % what,
                 ["%s: %s" % (type(e).__name__, e)])
        md = producer.send(topic, key=b"after", value=b"small").get(timeout=30)
        check((md.partition, md.offset) == (0, len(values)),
              "%s: the next record after the rejected one gets offset %d" % (what, len(values)),
              ["acked at %s" % ((md.partition, md.offset),)])
    except Exception as e:
        fail("%s: produce" % what, ["%s: %s" % (type(e).__name__, e)])
        return
    finally:
        producer.close(timeout=10)

    consumer = new_consumer(max_partition_fetch_bytes=64 << 10, fetch_max_bytes=64 << 10)
    tp = TopicPartition(topic, 0)
    got = []
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + 30
        while len(got) < len(values) + 1 and time.monotonic() < deadline:
            for ms in consumer.poll(timeout_ms=500).values():
                got.extend(ms)
    except Exception as e:
        fail("%s: consume with 64 KiB fetch limits" % what, ["%s: %s" % (type(e).__name__, e)])
        return
    finally:
        consumer.close()
    want = [(i, b"big-%d" % i, v) for i, v in enumerate(values)] + [(len(values), b"after", b"small")]
    have = [(m.offset, m.key, m.value) for m in got]
    check(have == want, "%s: all consumed intact with 64 KiB fetch limits (KIP-74)" % what,
          ["got %d records: %s" % (len(have), [(o, k, len(v or b"")) for o, k, v in have])])


def test_cross():
    """kafka-python reads what kcat (librdkafka) produced, if kcat.sh ran first."""
    topic = "interop-kcat"
    consumer = new_consumer()
    try:
        if topic not in consumer.topics():
            skip("cross-client: %s not there (kcat.sh did not run first)" % topic)
            return
    finally:
        consumer.close()
    msgs = consume_all(topic, PARTS, N, "cross-client")
    if msgs is None:
        return
    want_h = [("h1", b"v1"), ("trace", b"a b=c,d"), ("empty", b"")]
    bad = []
    per_part = defaultdict(list)
    for m in msgs:
        per_part[m.partition].append(m.offset)
        if m.headers != want_h:
            bad.append("p%d o%d headers %r, want %r" % (m.partition, m.offset, m.headers, want_h))
        if m.key is None or m.partition != partition_for_key(m.key, PARTS):
            bad.append("p%d o%d key %r not on its murmur2 partition" % (m.partition, m.offset, m.key))
        if m.value is None or not m.value.startswith(b"value-") or m.key not in m.value:
            bad.append("p%d o%d value %r does not match key %r" % (m.partition, m.offset, m.value, m.key))
    for p, offs in sorted(per_part.items()):
        if offs != list(range(len(offs))):
            bad.append("partition %d: offsets %s... not 0,1,2,..." % (p, offs[:8]))
    check(not bad and len(msgs) == N,
          "cross-client: reads the %d records kcat produced (offsets, keys, values, headers)" % N,
          ["got %d records" % len(msgs)] + bad)


def test_admin(admin):
    # DescribeConfigs: Kafka's topic defaults.
    try:
        res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
        entries, errs = {}, []
        for r in res:
            for error_code, error_message, _rtype, _rname, configs in r.resources:
                if error_code:
                    errs.append("error %d %s" % (error_code, error_message))
                for c in configs:
                    entries[c[0]] = c[1]
        want = {"retention.ms": "604800000", "cleanup.policy": "delete"}
        got = {k: entries.get(k) for k in want}
        check(not errs and got == want, "admin: describe_configs shows Kafka's defaults %s" % want,
              errs + ["got %s" % got])
    except Exception as e:
        fail("admin: describe_configs", ["%s: %s" % (type(e).__name__, e)])

    # AlterConfigs, then DescribeConfigs sees it.
    topic = "interop-kafka-python-admin"
    if not create_topic(admin, topic, 2, "admin"):
        return
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000"})])
        res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        got = {c[0]: c[1] for r in res for x in r.resources for c in x[4]}.get("retention.ms")
        check(got == "3600000", "admin: alter_configs retention.ms=3600000 is described back", ["got %r" % got])
    except Exception as e:
        fail("admin: alter_configs", ["%s: %s" % (type(e).__name__, e)])

    # CreatePartitions 2 -> 4.
    try:
        admin.create_partitions({topic: NewPartitions(total_count=4)}, timeout_ms=15000)
        t = {t["topic"]: t for t in admin.describe_topics([topic])}.get(topic, {})
        ps = sorted(p["partition"] for p in t.get("partitions", []))
        check(ps == [0, 1, 2, 3], "admin: create_partitions grows %s from 2 to 4 partitions" % topic, ["got %s" % ps])
    except Exception as e:
        fail("admin: create_partitions", ["%s: %s" % (type(e).__name__, e)])

    # DeleteTopics.
    try:
        admin.delete_topics([topic], timeout_ms=15000)
        deadline = time.monotonic() + 10
        while topic in admin.list_topics() and time.monotonic() < deadline:
            time.sleep(0.2)
        check(topic not in admin.list_topics(), "admin: delete_topics removes %s" % topic)
    except Exception as e:
        fail("admin: delete_topics", ["%s: %s" % (type(e).__name__, e)])


def main():
    global BOOTSTRAP, PORT
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    PORT = int(sys.argv[1])
    BOOTSTRAP = "127.0.0.1:%d" % PORT
    after_restart = "--after-restart" in sys.argv[2:]
    work = os.path.join(os.environ.get("INTEROP_WORK") or tempfile.mkdtemp(), "kafka_python")
    os.makedirs(work, exist_ok=True)

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="    kafka-python log: %(levelname)s %(name)s: %(message)s")
    errlog = ErrorLog()
    errlog.addFilter(benign)
    for h in logging.getLogger().handlers:
        h.addFilter(benign)
    logging.getLogger("kafka").addHandler(errlog)

    if after_restart:
        test_after_restart(work)
    else:
        admin = None
        try:
            admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, client_id="interop-kafka-python-admin",
                                     request_timeout_ms=15000)
            ok("client %s detected broker version %s via ApiVersions"
               % (kafka.__version__, ".".join(map(str, admin.config["api_version"]))))
        except Exception as e:
            fail("admin client connects", ["%s: %s" % (type(e).__name__, e)])
        if admin is not None:
            test_main(admin, work)
            test_codecs(admin)
            test_acks0(admin)
            test_large(admin)
            test_cross()
            test_admin(admin)
            admin.close()

    check(not errlog.lines, "the client logged no errors", errlog.lines)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
