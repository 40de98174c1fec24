package kafka

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

// legacySet builds a magic-1 message set: one gzip wrapper around the given
// values, as librdkafka before 2.11 and Produce v2 clients send.
func legacySet(t *testing.T, values ...string) []byte {
	t.Helper()
	msg := func(attrs int8, key, value []byte) []byte {
		m := kmsg.MessageV1{Magic: 1, Attributes: attrs, Timestamp: 1_700_000_000_000, Key: key, Value: value}
		b := m.AppendTo(nil)
		binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
		binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
		return b
	}
	var inner []byte
	for i, v := range values {
		inner = append(inner, msg(0, []byte{'k', byte('0' + i)}, []byte(v))...)
	}
	z, err := record.Compress(record.CodecGzip, inner)
	if err != nil {
		t.Fatal(err)
	}
	return msg(int8(record.CodecGzip), nil, z)
}

// TestProduceLegacyMessageSets covers Produce v0–v2: message sets are
// up-converted to v2 batches that keep the producer's codec.
func TestProduceLegacyMessageSets(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "old", 1, nil)
	c := dial(t, ts.addr)
	for v := int16(0); v <= 2; v++ {
		got := producePartition(t, c.do(produceReq("old", 0, legacySet(t, "a", "b")), v))
		if got.ErrorCode != 0 || got.BaseOffset != int64(2*v) {
			t.Fatalf("v%d: error %v, base offset %d", v, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
		}
	}
	recs, err := ts.b.Fetch("old", 0, 0, 1<<20)
	if err != nil || len(recs) != 6 || string(recs[5].Value) != "b" || string(recs[4].Key) != "k0" {
		t.Fatalf("fetch: %d records, %v", len(recs), err)
	}
	// Stored compressed, as sent.
	tp, _ := ts.b.Topic("old")
	p, _ := tp.Partition(0)
	res, err := p.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.ParseHeader(res.Batches)
	if err != nil || h.Compression() != record.CodecGzip {
		t.Fatalf("stored batch codec %v (%v), want gzip", h.Compression(), err)
	}
	// A bad CRC is CORRUPT_MESSAGE with Kafka's -1 base offset.
	bad := legacySet(t, "x")
	bad[len(bad)-1] ^= 1
	got := producePartition(t, c.do(produceReq("old", 0, bad), 2))
	if got.ErrorCode != kerr.CorruptMessage.Code || got.BaseOffset != -1 {
		t.Fatalf("bad crc: error %v, base offset %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
}
