package tiered

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/strandmq/strand/internal/record"
)

// Where a v2 record batch keeps what segmentCRC32C reads (Kafka's
// DefaultRecordBatch): the batch length after its first 12 bytes, the
// magic byte, and the CRC-32C of everything from the attributes on.
const (
	batchLengthAt = 8
	batchMagicAt  = 16
	batchCRCAt    = 17
	batchCRCFrom  = 21
)

// combineFrom is the batch size from which a batch's own CRC is folded
// into the segment's instead of its bytes being read: folding costs
// about a microsecond whatever the length, hashing a 16 KiB batch
// about three.
const combineFrom = 16 << 10

// segmentCRC32C is the CRC-32C of a segment's bytes b, computed from
// what its batches already say about themselves: for each large batch
// the checksum of its 21 header bytes (the offset and leader epoch the
// broker sets are outside the batch's CRC) folded with the CRC-32C the
// batch carries for the rest, so its record bytes are not read at all;
// small batches are hashed. It is right when every batch's bytes match
// its CRC, which the broker checked when it took them; a batch changed
// on disk since makes it differ from the bytes' checksum, so the store
// refuses the upload and PutFile hashes the bytes instead. ok is false
// when b is not a whole sequence of v2 batches.
func segmentCRC32C(b []byte) (sum uint32, ok bool) {
	for pos := 0; pos < len(b); {
		rest := b[pos:]
		if len(rest) < record.HeaderSize || rest[batchMagicAt] != 2 {
			return 0, false
		}
		n := 12 + int(int32(binary.BigEndian.Uint32(rest[batchLengthAt:])))
		if n < record.HeaderSize || n > len(rest) {
			return 0, false
		}
		if n < combineFrom {
			sum = crc32.Update(sum, castagnoli, rest[:n])
		} else {
			sum = crc32.Update(sum, castagnoli, rest[:batchCRCFrom])
			sum = crc32cCombine(sum, binary.BigEndian.Uint32(rest[batchCRCAt:]), int64(n-batchCRCFrom))
		}
		pos += n
	}
	return sum, true
}

// crc32cCombine is the CRC-32C of a followed by b, given a's CRC, b's
// CRC and b's length, without b's bytes (zlib's crc32_combine, for the
// Castagnoli polynomial): appending n bytes multiplies a's CRC by x^(8n)
// modulo the polynomial, and b's CRC is then added.
func crc32cCombine(crcA, crcB uint32, lenB int64) uint32 {
	return multModP(xPow8n(lenB), crcA) ^ crcB
}

// castagnoliReversed is the Castagnoli polynomial, bit-reversed as the
// CRC computes with it.
const castagnoliReversed = 0x82f63b78

// multModP multiplies a by b modulo the polynomial; bit 31 is x^0.
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ castagnoliReversed
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow2k[k] is x^(2^k) modulo the polynomial.
var xPow2k = func() (t [64]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// xPow8n is x^(8n) modulo the polynomial: the factor n appended bytes
// multiply a CRC by.
func xPow8n(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(xPow2k[k], p)
		}
	}
	return p
}
