package group

import "testing"

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
