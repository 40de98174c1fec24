package share

import (
	"reflect"
	"testing"
	"time"
)

// TestAcquireBatches: in the batch-optimized mode an acquisition that
// reaches max inside a log batch takes the rest of that batch (and no
// more), redeliveries included, within limit and MaxRecordLocks; in the
// record-limit mode it stops at max.
func TestAcquireBatches(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	ends := func(o Offset) Offset { return o/4*4 + 3 } // batches of 4: [0,3], [4,7], ...
	cases := []struct {
		name   string
		locks  int
		limit  Offset
		max    int
		ends   func(Offset) Offset
		expect []Range
	}{
		{"record limit", 100, 20, 5, nil, []Range{{0, 4, 1}}},
		{"to the batch end", 100, 20, 5, ends, []Range{{0, 7, 1}}},
		{"already at a batch end", 100, 20, 4, ends, []Range{{0, 3, 1}}},
		{"not past the log read", 100, 6, 5, ends, []Range{{0, 5, 1}}},
		{"not past the record locks", 6, 20, 5, ends, []Range{{0, 5, 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartition(Config{MaxRecordLocks: tc.locks}, 0)
			if got := p.AcquireBatches("m", tc.limit, tc.max, now, nil, tc.ends); !reflect.DeepEqual(got, tc.expect) {
				t.Fatalf("got %v, want %v", got, tc.expect)
			}
		})
	}
	// A redelivery: offsets 1-2 released, then a batch-optimized
	// acquisition of 1 takes them and the rest of their batch, 3 being
	// held already.
	p := NewPartition(Config{MaxRecordLocks: 100}, 0)
	p.AcquireBatches("a", 20, 4, now, nil, nil)
	if _, err := p.Acknowledge("a", 1, 2, AckRelease, now); err != nil {
		t.Fatal(err)
	}
	if got, want := p.AcquireBatches("b", 20, 1, now, nil, ends), []Range{{1, 2, 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("redelivery: got %v, want %v", got, want)
	}
}
