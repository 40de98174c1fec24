package txn

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/producer"
)

// hexBytes turns a commented hex layout into bytes: everything after "//"
// on a line is a comment, whitespace is ignored.
func hexBytes(t *testing.T, layout string) []byte {
	t.Helper()
	var clean strings.Builder
	for _, line := range strings.Split(layout, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatalf("golden layout: %v", err)
	}
	return b
}

func TestKeyGolden(t *testing.T) {
	t.Parallel()
	want := hexBytes(t, `
		0000            // int16 version 0
		0003 747831     // string TransactionalId: int16 length 3, "tx1"
	`)
	got := EncodeKey("tx1")
	if !bytes.Equal(got, want) {
		t.Fatalf("key = %x, want %x", got, want)
	}
	id, err := DecodeKey(want)
	if err != nil || id != "tx1" {
		t.Fatalf("DecodeKey = %q, %v", id, err)
	}
}

// ongoing is an Ongoing transaction over two topics, written by a TV2 client
// after a rollover (so every v1 tag differs from its default).
var ongoing = Metadata{
	TransactionalID: "tx1", ProducerID: 1000, PreviousProducerID: 999, NextProducerID: 1001,
	Epoch: 5, LastEpoch: NoEpoch, TimeoutMs: 60000, State: Ongoing,
	Partitions: []Partition{{"a", 0}, {"a", 2}, {"bb", 1}},
	StartMs:    0x0102030405060708, LastUpdateMs: 0x1112131415161718, Client: TV2,
}

func TestValueGoldenV0(t *testing.T) {
	t.Parallel()
	want := hexBytes(t, `
		0000                 // int16 version 0
		00000000000003e8     // int64 ProducerId 1000
		0005                 // int16 ProducerEpoch 5
		0000ea60             // int32 TransactionTimeoutMs 60000
		01                   // int8 TransactionStatus 1 (Ongoing)
		00000002             // array TransactionPartitions: int32 count 2
		  0001 61            //   string Topic "a"
		  00000002           //   array PartitionIds: int32 count 2
		    00000000         //     0
		    00000002         //     2
		  0002 6262          //   string Topic "bb"
		  00000001 00000001  //   PartitionIds [1]
		1112131415161718     // int64 TransactionLastUpdateTimestampMs
		0102030405060708     // int64 TransactionStartTimestampMs
	`)
	got := EncodeValue(ongoing, ValueVersion0)
	if !bytes.Equal(got, want) {
		t.Fatalf("value v0 =\n%x\nwant\n%x", got, want)
	}
	md, err := DecodeValue("tx1", want)
	if err != nil {
		t.Fatal(err)
	}
	// v0 carries no tags: they read back as their defaults.
	exp := ongoing.clone()
	exp.PreviousProducerID, exp.NextProducerID, exp.Client = producer.NoID, producer.NoID, 0
	if md.String() != exp.String() {
		t.Fatalf("decoded %v, want %v", md, exp)
	}
}

func TestValueGoldenV1(t *testing.T) {
	t.Parallel()
	want := hexBytes(t, `
		0001                 // int16 version 1 (flexible)
		00000000000003e8     // int64 ProducerId 1000
		0005                 // int16 ProducerEpoch 5
		0000ea60             // int32 TransactionTimeoutMs 60000
		01                   // int8 TransactionStatus 1 (Ongoing)
		03                   // compact array TransactionPartitions: uvarint 2+1
		  02 61              //   compact string Topic: uvarint 1+1, "a"
		  03                 //   compact array PartitionIds: uvarint 2+1
		    00000000         //     0
		    00000002         //     2
		  00                 //   entry's tagged fields: none
		  03 6262            //   compact string Topic "bb"
		  02 00000001        //   PartitionIds [1]
		  00                 //   entry's tagged fields: none
		1112131415161718     // int64 TransactionLastUpdateTimestampMs
		0102030405060708     // int64 TransactionStartTimestampMs
		03                   // tagged fields: 3
		  00 08 00000000000003e7 // tag 0 PreviousProducerId, 8 bytes, 999
		  01 08 00000000000003e9 // tag 1 NextProducerId, 8 bytes, 1001
		  02 02 0002         // tag 2 ClientTransactionVersion, 2 bytes, 2
	`)
	got := EncodeValue(ongoing, ValueVersion1)
	if !bytes.Equal(got, want) {
		t.Fatalf("value v1 =\n%x\nwant\n%x", got, want)
	}
	md, err := DecodeValue("tx1", want)
	if err != nil {
		t.Fatal(err)
	}
	if md.String() != ongoing.String() {
		t.Fatalf("decoded %v, want %v", md, ongoing)
	}
}

func TestValueGoldenEmptyDefaults(t *testing.T) {
	t.Parallel()
	empty := Metadata{TransactionalID: "x", ProducerID: 7, PreviousProducerID: producer.NoID, NextProducerID: producer.NoID,
		Epoch: 0, LastEpoch: NoEpoch, TimeoutMs: 1000, State: Empty, StartMs: -1, LastUpdateMs: 42}
	want := hexBytes(t, `
		0001 0000000000000007 0000 000003e8 00  // v1, pid 7, epoch 0, timeout 1000, Empty
		00                                      // compact array: null (Empty is written with null partitions)
		000000000000002a                        // last update 42
		ffffffffffffffff                        // start -1
		00                                      // no tagged fields: all at their defaults
	`)
	if got := EncodeValue(empty, ValueVersion1); !bytes.Equal(got, want) {
		t.Fatalf("empty v1 = %x, want %x", got, want)
	}
	wantV0 := hexBytes(t, `
		0000 0000000000000007 0000 000003e8 00
		ffffffff                                // int32 -1: null array
		000000000000002a ffffffffffffffff
	`)
	if got := EncodeValue(empty, ValueVersion0); !bytes.Equal(got, wantV0) {
		t.Fatalf("empty v0 = %x, want %x", got, wantV0)
	}
}

// TestValueMatchesKmsg checks the encoder against franz-go's generated
// TxnMetadataValue (an independent reading of the same JSON schema).
func TestValueMatchesKmsg(t *testing.T) {
	t.Parallel()
	for _, version := range []int16{0, 1} {
		for _, md := range []Metadata{ongoing, {TransactionalID: "e", ProducerID: 3, PreviousProducerID: -1, NextProducerID: -1, State: CompleteAbort, StartMs: 5, LastUpdateMs: 6, TimeoutMs: 9, Epoch: 32767}} {
			v := kmsg.NewTxnMetadataValue()
			v.Version = version
			v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = int64(md.ProducerID), int16(md.Epoch), md.TimeoutMs
			v.State = kmsg.TransactionState(md.State)
			v.LastUpdateTimestamp, v.StartTimestamp = md.LastUpdateMs, md.StartMs
			if version >= 1 {
				v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion = int64(md.PreviousProducerID), int64(md.NextProducerID), int16(md.Client)
			}
			v.Topics = []kmsg.TxnMetadataValueTopic{} // non-Empty states write an array, maybe empty
			for i, p := range md.Partitions {
				if i == 0 || p.Topic != md.Partitions[i-1].Topic {
					v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: p.Topic})
				}
				last := &v.Topics[len(v.Topics)-1]
				last.Partitions = append(last.Partitions, p.Partition)
			}
			want := v.AppendTo(nil)
			if got := EncodeValue(md, version); !bytes.Equal(got, want) {
				t.Errorf("v%d %v:\n got %x\nkmsg %x", version, md, got, want)
			}
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	good := EncodeValue(ongoing, ValueVersion1)
	cases := map[string][]byte{
		"empty":          nil,
		"version 2":      append([]byte{0, 2}, good[2:]...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(append([]byte{}, good...), 0),
		"bad state":      func() []byte { b := bytes.Clone(good); b[16] = 9; return b }(),
		"tag wrong size": hexBytes(t, `0001 0000000000000007 0000 000003e8 00 00 0000000000000000 0000000000000000 01 00 04 00000001`),
	}
	for name, b := range cases {
		if _, err := DecodeValue("x", b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := DecodeKey([]byte{0, 1, 0, 0}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("key version 1: err = %v", err)
	}
	// An unknown tag (KIP-939's NextProducerEpoch, tag 3) is skipped.
	withTag3 := hexBytes(t, `0001 0000000000000007 0000 000003e8 00 00 0000000000000000 0000000000000000 01 03 02 0005`)
	if md, err := DecodeValue("x", withTag3); err != nil || md.ProducerID != 7 {
		t.Errorf("tag 3: %v, %v", md, err)
	}
}

func TestPartitionFor(t *testing.T) {
	t.Parallel()
	// Java: "".hashCode() = 0; "a" = 97; "tx1" = 115-based polynomial;
	// "polygenelubricants".hashCode() = Integer.MIN_VALUE → Utils.abs → 0.
	cases := []struct {
		id   string
		n    int32
		want int32
	}{
		{"", 50, 0},
		{"a", 50, 97 % 50},
		{"tx1", 50, (116*31*31 + 120*31 + 49) % 50},
		{"polygenelubricants", 50, 0},
		{"é", 50, 233 % 50},                  // UTF-16 code unit, not UTF-8 bytes
		{"😀", 50, (0xD83D*31 + 0xDE00) % 50}, // surrogate pair
	}
	for _, c := range cases {
		if got := PartitionFor(c.id, c.n); got != c.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", c.id, got, c.want)
		}
	}
}

func FuzzDecodeValue(f *testing.F) {
	f.Add(EncodeValue(ongoing, ValueVersion0))
	f.Add(EncodeValue(ongoing, ValueVersion1))
	f.Add(EncodeKey("tx1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := DecodeValue("f", b)
		if err != nil {
			return
		}
		// whatever decodes re-encodes to something that decodes the same
		version := int16(b[0])<<8 | int16(b[1])
		again, err := DecodeValue("f", EncodeValue(md, version))
		if err != nil || again.String() != md.String() {
			t.Fatalf("re-decode: %v, %v; first %v", again, err, md)
		}
		matchKmsg(t, b, md)
		if _, err := DecodeKey(b); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("DecodeKey error not ErrCorrupt: %v", err)
		}
	})
}

// matchKmsg checks that franz-go's generated decoder reads what DecodeValue
// accepted the same way (it is laxer: it may accept what we refuse).
func matchKmsg(t *testing.T, b []byte, md Metadata) {
	t.Helper()
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(b); err != nil {
		t.Fatalf("kmsg refuses what DecodeValue accepted: %v", err)
	}
	got := Metadata{TransactionalID: md.TransactionalID, ProducerID: producer.ID(v.ProducerID), Epoch: producer.Epoch(v.ProducerEpoch),
		LastEpoch: NoEpoch, TimeoutMs: v.TimeoutMillis, State: State(v.State), StartMs: v.StartTimestamp, LastUpdateMs: v.LastUpdateTimestamp,
		PreviousProducerID: producer.ID(v.PreviousProducerID), NextProducerID: producer.ID(v.NextProducerID), Client: Version(v.ClientTransactionVersion)}
	if got.State != Empty {
		var parts []Partition
		for _, tp := range v.Topics {
			for _, p := range tp.Partitions {
				parts = append(parts, Partition{Topic: tp.Topic, Partition: p})
			}
		}
		got.Partitions = union(nil, parts)
	}
	if got.String() != md.String() {
		t.Fatalf("kmsg reads %v, DecodeValue %v", got, md)
	}
}
