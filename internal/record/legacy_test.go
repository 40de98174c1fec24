package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// legacyMessage builds one magic-0 or magic-1 message with a correct size and CRC.
func legacyMessage(magic int8, attrs int8, ts int64, key, value []byte) []byte {
	var b []byte
	if magic == 0 {
		m := kmsg.MessageV0{Magic: 0, Attributes: attrs, Key: key, Value: value}
		b = m.AppendTo(nil)
	} else {
		m := kmsg.MessageV1{Magic: 1, Attributes: attrs, Timestamp: ts, Key: key, Value: value}
		b = m.AppendTo(nil)
	}
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
	return b
}

func TestFromMessageSet(t *testing.T) {
	const now = 1_700_000_000_000
	plain := append(legacyMessage(1, 0, 1000, []byte("k1"), []byte("v1")), legacyMessage(1, 0, 2000, nil, []byte("v2"))...)
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4} {
		t.Run(c.String(), func(t *testing.T) {
			inner, err := Compress(c, plain)
			if err != nil {
				t.Fatal(err)
			}
			set := legacyMessage(1, int8(c), 2000, nil, inner)
			b, err := FromMessageSet(set, now)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.Compression() != c || len(got.Records) != 2 {
				t.Fatalf("codec %v, %d records; want %v, 2", got.Compression(), len(got.Records), c)
			}
			r0, r1 := got.Records[0], got.Records[1]
			if string(r0.Key) != "k1" || string(r0.Value) != "v1" || r0.Timestamp != 1000 || r1.Key != nil || r1.Timestamp != 2000 {
				t.Fatalf("records %+v %+v", r0, r1)
			}
		})
	}
	t.Run("magic0", func(t *testing.T) {
		b, err := FromMessageSet(legacyMessage(0, 0, 0, []byte("k"), nil), now)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := Decode(b)
		if r := got.Records[0]; r.Timestamp != now || r.Value != nil || string(r.Key) != "k" {
			t.Fatalf("magic 0 record %+v", r)
		}
	})
	t.Run("logAppendTime", func(t *testing.T) {
		b, _ := FromMessageSet(legacyMessage(1, AttrTimestampType, 5, nil, []byte("x")), now)
		got, _ := Decode(b)
		if got.Records[0].Timestamp != now {
			t.Fatalf("timestamp %d, want broker time", got.Records[0].Timestamp)
		}
	})
}

func TestFromMessageSetRejects(t *testing.T) {
	good := legacyMessage(1, 0, 1, nil, []byte("v"))
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 1
	inner, _ := Compress(CodecGzip, legacyMessage(1, int8(CodecGzip), 1, nil, []byte("x")))
	cases := map[string]struct {
		set  []byte
		want error
	}{
		"empty":     {nil, ErrInvalid},
		"crc":       {badCRC, ErrCRC},
		"truncated": {good[:len(good)-1], ErrShortBatch},
		"nested":    {legacyMessage(1, int8(CodecGzip), 1, nil, inner), ErrInvalid},
		"magic2": {func() []byte {
			b := append([]byte(nil), good...)
			b[16] = 2
			binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
			return b
		}(), ErrBadMagic},
	}
	for name, c := range cases {
		if _, err := FromMessageSet(c.set, 0); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", name, err, c.want)
		}
	}
}

func FuzzFromMessageSet(f *testing.F) {
	f.Add(legacyMessage(1, 0, 1, []byte("k"), []byte("v")))
	f.Add(legacyMessage(0, 0, 0, nil, []byte("v")))
	inner, _ := Compress(CodecGzip, legacyMessage(1, 0, 1, nil, []byte("x")))
	f.Add(legacyMessage(1, int8(CodecGzip), 1, nil, inner))
	f.Fuzz(func(t *testing.T, set []byte) {
		b, err := FromMessageSet(set, 1)
		if err != nil {
			return
		}
		if _, err := Decode(b); err != nil {
			panic(fmt.Sprintf("FromMessageSet produced an undecodable batch: %v", err))
		}
	})
}
