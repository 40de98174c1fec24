"""Raw Fetch through kafka-python's protocol classes: what the broker stores
and serves, batch by batch, without a client decoding it first.

Used to check that a producer's compressed batches are kept as they came
(Kafka's compression.type=producer), whatever client produced them.
"""
import socket
import struct

from kafka.protocol.fetch import FetchRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.parser import KafkaProtocol

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def request(addr, req, timeout=10.0):
    proto = KafkaProtocol(client_id="interop-rawfetch")
    proto.send_request(req)
    s = socket.create_connection(addr, timeout=timeout)
    try:
        s.sendall(proto.send_bytes())
        for _ in range(100000):
            data = s.recv(1 << 20)
            if not data:
                raise EOFError("broker closed the connection")
            resps = proto.receive_bytes(data)
            if resps:
                return resps[0][1]
        raise RuntimeError("no response")
    finally:
        s.close()


def batches(records):
    """Yield (base_offset, last_offset, magic, codec) for each whole batch."""
    pos = 0
    while pos + 61 <= len(records):  # v2 batch header is 61 bytes
        base, length = struct.unpack_from(">qi", records, pos)
        if pos + 12 + length > len(records):
            break  # a partial batch at the end of a size-limited response
        magic = records[pos + 16]
        attrs, last_delta = struct.unpack_from(">hi", records, pos + 21)
        yield base, base + last_delta, magic, CODECS.get(attrs & 7, "codec%d" % (attrs & 7))
        pos += 12 + length


def leader_addr(addr, topic, partition):
    """The (host, port) of the partition's leader, as the broker at addr
    says (in a cluster, the partition may live on another node)."""
    resp = request(addr, MetadataRequest[1](topics=[topic]))
    brokers = {b[0]: (b[1], b[2]) for b in resp.brokers}
    for _err, name, _internal, parts in resp.topics:
        if name != topic:
            continue
        for _perr, pid, leader, _replicas, _isr in parts:
            if pid == partition and leader in brokers:
                return brokers[leader]
    return addr


def partition_codecs(addr, topic, partition, max_rounds=1000):
    """Codec of every batch of topic/partition, read from offset 0 to the
    high watermark from its leader. Returns (codecs, error-or-None)."""
    addr = leader_addr(addr, topic, partition)
    out, offset = [], 0
    for _ in range(max_rounds):
        req = FetchRequest[4](replica_id=-1, max_wait_time=100, min_bytes=1, max_bytes=8 << 20,
                              isolation_level=0, topics=[(topic, [(partition, offset, 8 << 20)])])
        resp = request(addr, req)
        (_, parts), = resp.topics
        (_, err, hw, _lso, _aborted, records), = parts
        if err:
            return out, "fetch error code %d at offset %d" % (err, offset)
        got = list(batches(records or b""))
        for base, last, magic, codec in got:
            if magic != 2:
                return out, "batch at %d has magic %d" % (base, magic)
            if last >= offset:
                out.append(codec)
        if got:
            offset = max(offset, got[-1][1] + 1)
        if offset >= hw:
            return out, None
        if not got:
            return out, "no whole batch at offset %d (high watermark %d)" % (offset, hw)
    return out, "gave up after %d fetches" % max_rounds
