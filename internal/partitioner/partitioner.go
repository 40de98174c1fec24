// Package partitioner maps record keys to partitions exactly as Apache Kafka's
// Java client does by default, so that Strand and every Kafka client agree on
// which partition holds a key (DESIGN.md, invariant 1: per-key ordering).
//
// It owns one thing: the pure function key → partition. It never looks at
// topic metadata, never keeps state and never does I/O; it is safe for
// concurrent use.
//
// The mapping is Kafka's BuiltInPartitioner.partitionForKey:
//
//	partition = toPositive(murmur2(key)) % n,  toPositive(x) = x & 0x7fffffff
//
// toPositive masks the sign bit; it is not abs. The two differ for every
// negative hash (abs(-5) = 5, but -5 & 0x7fffffff = 2147483643), so using abs
// would silently send half of all keys to a different partition than Java.
//
// Records with a null key are not hashed by Kafka clients (they are spread by
// a sticky or round-robin policy); choosing a partition for them is the
// caller's business.
package partitioner

import "encoding/binary"

// murmur2Seed is the seed Kafka's Utils.murmur2 uses.
const murmur2Seed uint32 = 0x9747b28c

// Murmur2 returns the 32-bit MurmurHash2 of data with Kafka's seed, as
// org.apache.kafka.common.utils.Utils.murmur2 computes it (the same bits, as a
// signed int like Java's).
func Murmur2(data []byte) int32 {
	const (
		m = 0x5bd1e995
		r = 24
	)
	h := murmur2Seed ^ uint32(len(data))

	// Body: four bytes at a time, little-endian, as Java assembles them.
	n := len(data) &^ 3
	for i := 0; i < n; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}

	// Tail: the last one to three bytes. Java's switch falls through from the
	// highest byte down; the cascade of ifs below is the same.
	tail := data[n:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}

	// Final avalanche. Java uses >>> (unsigned shift); on uint32 >> is the same.
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// ForKey returns the partition in [0, n) that Kafka's default partitioner
// chooses for key among n partitions: toPositive(murmur2(key)) % n.
//
// n must be positive: a topic always has at least one partition, so n ≤ 0 is
// a bug in the caller and ForKey panics on it.
func ForKey(key []byte, n int) int {
	if n <= 0 {
		panic("partitioner: ForKey with no partitions")
	}
	return int(uint32(Murmur2(key))&0x7fffffff) % n
}
