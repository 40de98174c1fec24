"""Kafka's default key partitioner, written from the Java client.

org.apache.kafka.common.utils.Utils.murmur2 and
BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % numPartitions.
Implemented here independently (not imported from a client) so the interop
tests check placement against Kafka itself, not against the client under test.
"""

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Signed 32-bit murmur2 hash, identical to Kafka's Utils.murmur2."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length // 4
    for i in range(n4):
        j = 4 * i
        k = data[j] | (data[j + 1] << 8) | (data[j + 2] << 16) | (data[j + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length & 3
    tail = length & ~3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null key."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


# Vectors from Kafka's own UtilsTest.testMurmur2.
_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def self_test() -> None:
    for data, want in _VECTORS.items():
        got = murmur2(data)
        if got != want:
            raise AssertionError("murmur2(%r) = %d, want %d" % (data, got, want))


self_test()
