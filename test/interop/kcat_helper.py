#!/usr/bin/python3
"""Helpers for kcat.sh: topic creation (kafka-python's admin client), input
generation, and the checker that verifies what kcat consumed.

Run with Debian's /usr/bin/python3 (python3-kafka). Every check prints one
line, "ok <what>" or "FAIL <what>: <details>"; the exit status is 1 if any
check failed.
"""
import argparse
import json
import sys
import time
from collections import defaultdict

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from murmur2 import partition_for_key

failures = 0


def ok(msg):
    print("ok " + msg, flush=True)


def fail(msg, details=()):
    global failures
    failures += 1
    print("FAIL " + msg, flush=True)
    for d in list(details)[:10]:
        print("    " + str(d), flush=True)
    if len(details) > 10:
        print("    ... and %d more" % (len(details) - 10), flush=True)


def check(cond, msg, details=()):
    if cond:
        ok(msg)
    else:
        fail(msg, details)
    return cond


# ---------------------------------------------------------------- create-topic

def cmd_create_topic(a):
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import KafkaError

    admin = None
    try:
        admin = KafkaAdminClient(bootstrap_servers=a.bootstrap, client_id="interop-kcat-admin",
                                 request_timeout_ms=15000)
        resp = admin.create_topics([NewTopic(a.topic, a.partitions, 1)], timeout_ms=15000)
        errs = [t for t in getattr(resp, "topic_errors", []) if t[1] != 0]
        check(not errs, "%s: create topic %s with %d partitions (kafka-python admin)"
              % (a.label, a.topic, a.partitions), ["topic error: %r" % (e,) for e in errs])
    except KafkaError as e:
        fail("%s: create topic %s with %d partitions (kafka-python admin)"
             % (a.label, a.topic, a.partitions), ["%s: %s" % (type(e).__name__, e)])
    finally:
        if admin is not None:
            admin.close()


# ------------------------------------------------------------------------ gen

def record(i, keys):
    key = "key-%04d" % (i % keys)
    # No ':' (kcat's -K delimiter) and no newline; varying length.
    value = "value-%06d-%s-%s" % (i, key, "abcdefghij"[: i % 11] * (1 + i % 7))
    return key, value


def cmd_gen(a):
    with open(a.out, "w") as f:
        for i in range(a.count):
            k, v = record(i, a.keys)
            f.write("%s:%s\n" % (k, v))


# ---------------------------------------------------------------------- check

def load_consumed(path):
    recs, bad = [], []
    # kcat -J writes keys, values and headers as raw bytes inside JSON strings.
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                recs.append(json.loads(line, strict=False))
            except ValueError as e:
                bad.append("line %d: %s: %r" % (n, e, line[:200]))
    return recs, bad


def headers_of(r):
    h = r.get("headers")
    if h is None:
        return []
    if isinstance(h, dict):
        return list(h.items())
    # kcat emits a flat [name, value, name, value, ...] array.
    return [(h[i], h[i + 1]) for i in range(0, len(h) - 1, 2)]


def listing(recs):
    return sorted((r["partition"], r["offset"], r.get("key"), r.get("payload"), headers_of(r))
                  for r in recs)


def cmd_check(a):
    label = a.label
    want_headers = [tuple(h.split("=", 1)) for h in a.header]
    with open(a.input) as f:
        inputs = [line.rstrip("\n").split(":", 1) for line in f if line.strip()]
    n = len(inputs)
    recs, bad = load_consumed(a.consumed)
    if bad:
        fail("%s: kcat -J output parses" % label, bad)

    by_idx = defaultdict(list)
    wrong_topic, unparsable, mismatched = [], [], []
    for r in recs:
        if r.get("topic") != a.topic:
            wrong_topic.append(r)
            continue
        payload = r.get("payload") or ""
        try:
            i = int(payload.split("-")[1])
            assert 0 <= i < n
        except Exception:
            unparsable.append(r)
            continue
        by_idx[i].append(r)
        if [r.get("key"), payload] != inputs[i]:
            mismatched.append("p%s o%s: got key=%r value=%r, want %r"
                              % (r["partition"], r["offset"], r.get("key"), payload, inputs[i]))
    missing = [i for i in range(n) if i not in by_idx]
    dups = ["record %d consumed %d times at %s" % (i, len(v), [(x["partition"], x["offset"]) for x in v])
            for i, v in by_idx.items() if len(v) > 1]
    parts = sorted({r["partition"] for r in recs})
    check(not missing and not dups and not wrong_topic and not unparsable and len(recs) == n,
          "%s: %d records consumed exactly once (%d partitions)" % (label, n, len(parts)),
          ["consumed %d records, produced %d" % (len(recs), n)]
          + ["missing record %d (%s)" % (i, inputs[i]) for i in missing[:5]]
          + (["%d missing in total" % len(missing)] if missing else [])
          + dups + ["wrong topic: %r" % r for r in wrong_topic]
          + ["unparsable payload: %r" % r for r in unparsable])
    check(not mismatched, "%s: keys and values intact" % label, mismatched)

    hbad = ["p%s o%s: headers %r, want %r" % (r["partition"], r["offset"], headers_of(r), want_headers)
            for r in recs if headers_of(r) != want_headers]
    check(not hbad, "%s: headers intact %r" % (label, want_headers), hbad)

    # Offsets: per partition strictly increasing in consumption order and
    # exactly 0..n-1 (a fresh topic has no gaps).
    per_part = defaultdict(list)
    for r in recs:
        per_part[r["partition"]].append(r)
    obad = []
    for p, rs in sorted(per_part.items()):
        offs = [r["offset"] for r in rs]
        if any(b <= x for x, b in zip(offs, offs[1:])):
            obad.append("partition %d: offsets not increasing in delivery order" % p)
        if sorted(offs) != list(range(len(offs))):
            obad.append("partition %d: offsets %s.. not contiguous from 0 (%d records, min %d max %d)"
                        % (p, offs[:5], len(offs), min(offs), max(offs)))
    check(not obad and len(parts) == a.partitions,
          "%s: per-partition offsets contiguous from 0 on all %d partitions (%s)"
          % (label, a.partitions, ", ".join("p%d=%d" % (p, len(v)) for p, v in sorted(per_part.items()))),
          obad + (["records on partitions %s, want all of 0..%d" % (parts, a.partitions - 1)]
                  if len(parts) != a.partitions else []))

    # Production order: within a partition, the input order is kept.
    order_bad = []
    for p, rs in sorted(per_part.items()):
        rs = sorted(rs, key=lambda r: r["offset"])
        try:
            idx = [int(r["payload"].split("-")[1]) for r in rs]
        except Exception:
            continue  # already reported as unparsable
        if any(b <= x for x, b in zip(idx, idx[1:])):
            order_bad.append("partition %d: records out of production order" % p)
    check(not order_bad, "%s: per-partition production order kept" % label, order_bad)

    # Per-key ordering: one partition per key, and (with murmur2_random) the
    # partition Kafka's Java client would choose.
    key_parts = defaultdict(set)
    for r in recs:
        key_parts[r.get("key")].add(r["partition"])
    split = ["key %r on partitions %s" % (k, sorted(v)) for k, v in key_parts.items() if len(v) > 1]
    check(not split, "%s: each key on exactly one partition (%d keys)" % (label, len(key_parts)), split)
    if a.murmur2:
        place = ["key %r on partition %d, murmur2 says %d"
                 % (r.get("key"), r["partition"], partition_for_key(r["key"].encode(), a.partitions))
                 for r in recs
                 if r.get("key") is not None
                 and r["partition"] != partition_for_key(r["key"].encode(), a.partitions)]
        check(not place, "%s: key placement equals Kafka's murmur2 partitioner" % label, place)

    if a.ts_window:
        lo, hi = map(int, a.ts_window.split(","))
        tbad = ["p%s o%s: tstype %s ts %s, want create in [%d, %d]"
                % (r["partition"], r["offset"], r.get("tstype"), r.get("ts"), lo, hi)
                for r in recs if r.get("tstype") != "create" or not lo <= (r.get("ts") or 0) <= hi]
        check(not tbad, "%s: CreateTime timestamps kept" % label, tbad)

    if a.save:
        with open(a.save, "w") as f:
            json.dump(listing(recs), f)


def cmd_compare(a):
    recs, bad = load_consumed(a.consumed)
    with open(a.saved) as f:
        want = [tuple(x[:4]) + ([tuple(h) for h in x[4]],) for x in json.load(f)]
    got = [tuple(x[:4]) + ([tuple(h) for h in x[4]],) for x in listing(recs)]
    diff = []
    if got != want:
        gs, ws = set(map(repr, got)), set(map(repr, want))
        diff = (["lost: " + x for x in sorted(ws - gs)[:5]] + ["new/changed: " + x for x in sorted(gs - ws)[:5]]
                + ["got %d records, had %d" % (len(got), len(want))])
    check(not bad and got == want,
          "%s: all %d records identical after broker restart (partition, offset, key, value, headers)"
          % (a.label, len(want)), bad + diff)


# ---------------------------------------------------------------------- cross

def cmd_cross(a):
    """Records another client produced: count, unique offsets, key placement."""
    recs, bad = load_consumed(a.consumed)
    per_part = defaultdict(list)
    for r in recs:
        per_part[r["partition"]].append(r["offset"])
    for p, offs in sorted(per_part.items()):
        if offs != list(range(len(offs))):
            bad.append("partition %d: offsets %s... not 0,1,2,..." % (p, offs[:8]))
    bad += ["key %r on partition %d, murmur2 says %d" % (r["key"], r["partition"], partition_for_key(r["key"].encode(), a.partitions))
            for r in recs if r.get("key") is not None and r["partition"] != partition_for_key(r["key"].encode(), a.partitions)]
    want_h = dict(h.split("=", 1) for h in a.header)
    bad += ["p%s o%s: headers %r lack %r" % (r["partition"], r["offset"], headers_of(r), want_h)
            for r in recs if not set(want_h.items()) <= set(headers_of(r))]
    check(not bad and len(recs) == a.expect,
          "%s: kcat reads the %d records kafka-python produced (offsets, murmur2 placement, headers)" % (a.label, a.expect),
          ["got %d records" % len(recs)] + bad)


# ----------------------------------------------------------------- wait-count

def cmd_wait_count(a):
    """Exit 0 once the topic's end offsets add up to at least count."""
    from kafka import KafkaConsumer, TopicPartition
    deadline = time.monotonic() + a.timeout
    consumer = KafkaConsumer(bootstrap_servers=a.bootstrap, client_id="interop-kcat-wait",
                             group_id=None, enable_auto_commit=False, request_timeout_ms=10000)
    try:
        tps = [TopicPartition(a.topic, p) for p in range(a.partitions)]
        while time.monotonic() < deadline:
            try:
                if sum(consumer.end_offsets(tps).values()) >= a.count:
                    return
            except Exception:
                pass
            time.sleep(0.2)
    finally:
        consumer.close()
    global failures
    failures += 1


# --------------------------------------------------------------------- codecs

def cmd_codecs(a):
    from rawfetch import partition_codecs
    host, port = a.bootstrap.rsplit(":", 1)
    bad, nb = [], 0
    try:
        for p in range(a.partitions):
            codecs, err = partition_codecs((host, int(port)), a.topic, p)
            nb += len(codecs)
            if err:
                bad.append("partition %d: %s" % (p, err))
            other = sorted(set(codecs) - {a.codec})
            if other:
                bad.append("partition %d: %d of %d batches are %s"
                           % (p, sum(c != a.codec for c in codecs), len(codecs), other))
    except Exception as e:
        bad.append("%s: %s" % (type(e).__name__, e))
    if bad and a.codec in ("gzip", "snappy", "lz4"):
        # librdkafka < 2.11.1 sends these codecs only if the broker's
        # ApiVersions range for Produce includes v0 (rd_kafka_msgset_writer
        # asks ApiVersion_supported(Produce, 0, 0)); otherwise it logs
        # "Broker does not support compression type ..." and sends the batch
        # uncompressed.
        try:
            from kafka.protocol.admin import ApiVersionRequest
            from rawfetch import request
            vers = {k: (lo, hi) for k, lo, hi in request((host, int(port)), ApiVersionRequest[0]()).api_versions}
            lo, hi = vers.get(0, (None, None))
            if lo is None or lo > 0:
                bad.append("cause: the broker advertises Produce v%s..v%s; librdkafka < 2.11.1 only uses "
                           "gzip/snappy/lz4 when Produce v0 is advertised, else sends them uncompressed" % (lo, hi))
            if a.codec == "lz4" and vers.get(10, (1, 0))[0] > 0:
                bad.append("cause: the broker does not advertise FindCoordinator v0 (key 10), librdkafka's "
                           "proxy for LZ4 support (rdkafka_feature.c: RD_KAFKA_FEATURE_LZ4)")
        except Exception as e:
            bad.append("ApiVersions: %s: %s" % (type(e).__name__, e))
    check(not bad and nb > 0, "%s: raw Fetch v4 serves the %d stored batches as %s" % (a.label, nb, a.codec), bad)


# ------------------------------------------------------------------- metadata

def cmd_metadata(a):
    with open(a.file) as f:
        md = json.load(f)
    topics = {t["topic"]: t for t in md.get("topics", [])}
    t = topics.get(a.topic)
    details = []
    if t is None:
        details.append("topic %s not in metadata: %s" % (a.topic, sorted(topics)))
    else:
        if t.get("error"):
            details.append("topic error: %s" % t["error"])
        ps = sorted(p["partition"] for p in t.get("partitions", []))
        if ps != list(range(a.partitions)):
            details.append("partitions %s, want 0..%d" % (ps, a.partitions - 1))
        brokers = {b["id"] for b in md.get("brokers", [])}
        for p in t.get("partitions", []):
            if p.get("error"):
                details.append("partition %s error %s" % (p["partition"], p["error"]))
            if p.get("leader") not in brokers:
                details.append("partition %s leader %s not among brokers %s"
                               % (p["partition"], p.get("leader"), sorted(brokers)))
    check(not details, "%s: kcat -L shows %s with %d partitions and a leader each"
          % (a.label, a.topic, a.partitions), details)


# -------------------------------------------------------------------- offsets

def cmd_offsets(a):
    """Check `kcat -Q` output: lines in JSON (-J) or text form."""
    with open(a.file) as f:
        text = f.read()
    got = {}
    try:
        data = json.loads(text)
        for t in data.values() if isinstance(data, dict) else []:
            for p in t.values() if isinstance(t, dict) else []:
                if isinstance(p, dict) and "partition" in p:
                    got[p["partition"]] = p.get("offset")
    except ValueError:
        pass
    want = json.loads(a.want)
    want = {int(k): v for k, v in want.items()}
    check(got == want, "%s: kcat -Q offsets %s" % (a.label, a.what),
          ["got %s, want %s" % (got, want), "kcat output: %s" % text.strip()[:500]])


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("create-topic")
    p.add_argument("bootstrap"); p.add_argument("topic"); p.add_argument("partitions", type=int)
    p.add_argument("--label", default="kcat")
    p = sub.add_parser("gen")
    p.add_argument("count", type=int); p.add_argument("keys", type=int); p.add_argument("out")
    p = sub.add_parser("check")
    p.add_argument("--label", required=True); p.add_argument("--topic", required=True)
    p.add_argument("--input", required=True); p.add_argument("--consumed", required=True)
    p.add_argument("--partitions", type=int, required=True)
    p.add_argument("--header", action="append", default=[])
    p.add_argument("--murmur2", action="store_true"); p.add_argument("--save")
    p.add_argument("--ts-window", help="LO,HI: every record's CreateTime must lie in [LO, HI] ms")
    p = sub.add_parser("compare")
    p.add_argument("--label", required=True); p.add_argument("--consumed", required=True)
    p.add_argument("--saved", required=True)
    p = sub.add_parser("cross")
    p.add_argument("--label", required=True); p.add_argument("--consumed", required=True)
    p.add_argument("--partitions", type=int, required=True); p.add_argument("--expect", type=int, required=True)
    p.add_argument("--header", action="append", default=[])
    p = sub.add_parser("wait-count")
    p.add_argument("bootstrap"); p.add_argument("topic"); p.add_argument("partitions", type=int)
    p.add_argument("count", type=int); p.add_argument("timeout", type=float)
    p = sub.add_parser("codecs")
    p.add_argument("--label", required=True); p.add_argument("bootstrap"); p.add_argument("topic")
    p.add_argument("partitions", type=int); p.add_argument("codec")
    p = sub.add_parser("metadata")
    p.add_argument("--label", required=True); p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, required=True); p.add_argument("file")
    p = sub.add_parser("offsets")
    p.add_argument("--label", required=True); p.add_argument("--what", required=True)
    p.add_argument("--want", required=True); p.add_argument("file")
    a = ap.parse_args()
    try:
        {"create-topic": cmd_create_topic, "gen": cmd_gen, "check": cmd_check, "compare": cmd_compare, "codecs": cmd_codecs, "cross": cmd_cross,
         "wait-count": cmd_wait_count,
         "metadata": cmd_metadata, "offsets": cmd_offsets}[a.cmd](a)
    except Exception as e:
        import traceback
        fail("%s: kcat_helper %s crashed" % (getattr(a, "label", "kcat"), a.cmd),
             ["%s: %s" % (type(e).__name__, e)] + traceback.format_exc().splitlines()[-6:])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
