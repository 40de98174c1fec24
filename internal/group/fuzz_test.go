package group

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// FuzzDecodeRecord: whatever __consumer_offsets holds (a record written by
// another Kafka version, a bug, a hand-edited log), decoding it returns a
// record or ErrCorruptRecord, never a panic. Seeds are real records.
func FuzzDecodeRecord(f *testing.F) {
	o := offsetValue(OffsetAndMetadata{Offset: 42, LeaderEpoch: 3, Metadata: "m"})
	f.Add(offsetKey("g", TopicPartition{Topic: "t", Partition: 1}), o, false)
	f.Add(offsetKey("g", TopicPartition{Topic: "t", Partition: 1}), []byte(nil), true)
	f.Add(groupKey("g"), []byte{0, 3, 0, 8, 'c', 'o', 'n', 's', 'u', 'm', 'e', 'r'}, false)
	f.Add([]byte{0}, []byte{1, 2, 3}, false)
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		d, err := decodeRecord(StoreRecord{Key: key, Value: value})
		if err == nil && d.offset == nil && d.meta == nil && !d.delete {
			t.Fatalf("decoded %x=%x into nothing", key, value)
		}
	})
}

// FuzzDecodeHistory: a rebalance history record of any bytes decodes or is
// errBadHistory, never a panic; what decodes encodes back to the same bytes.
func FuzzDecodeHistory(f *testing.F) {
	f.Add(encodeHistory([]Rebalance{{Time: time.UnixMilli(1700000000000), Reason: "member m joined", Epoch: 2, Members: 2,
		Moved: 3, MovedTo: map[string]int{"m": 3}, HandedOver: 3, MaxUnowned: time.Second}}))
	f.Add(encodeHistory(nil))
	f.Add([]byte{0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHistory(b)
		if err != nil {
			if !errors.Is(err, errBadHistory) {
				t.Fatalf("%x: %v", b, err)
			}
			return
		}
		if again := encodeHistory(h); !bytes.Equal(again, b) {
			t.Fatalf("%x decoded and encoded to %x", b, again)
		}
	})
}
