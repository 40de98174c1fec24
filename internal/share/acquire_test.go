package share

import (
	"errors"
	"fmt"
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

// TestMemberTable: a share-partition read by more members over its life
// than its member table holds keeps naming the owners of the records still
// acquired, and a member it forgot holds nothing (its acknowledgement
// fails, its release is a no-op).
func TestMemberTable(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p := NewPartition(Config{MaxRecordLocks: 10_000}, 0)
	p.Acquire("keeper", 1, 1, now) // offset 0, held throughout
	for i := range 3 * maxMembers {
		who := fmt.Sprintf("m%d", i)
		got := p.Acquire(who, Offset(i+2), 1, now)
		if len(got) != 1 || got[0].First != Offset(i+1) {
			t.Fatalf("%s acquired %v", who, got)
		}
		if i%50 != 1 {
			if _, err := p.Acknowledge(who, Offset(i+1), Offset(i+1), AckAccept, now); err != nil {
				t.Fatalf("%s accepts: %v", who, err)
			}
		}
	}
	if len(p.members) > maxMembers {
		t.Fatalf("member table holds %d names, more than %d", len(p.members), maxMembers)
	}
	if got := p.Owner(0); got != "keeper" {
		t.Fatalf("offset 0 owned by %q, want keeper", got)
	}
	for i := 1; i < 3*maxMembers; i += 50 {
		if got, want := p.Owner(Offset(i+1)), fmt.Sprintf("m%d", i); got != want {
			t.Fatalf("offset %d owned by %q, want %q", i+1, got, want)
		}
	}
	if _, err := p.Acknowledge("m0", 1, 1, AckAccept, now); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("a done record accepted again: %v", err)
	}
	if dead := p.ReleaseMember("m0"); len(dead) != 0 || p.Stats().Acquired != 1+(3*maxMembers+49)/50 {
		t.Fatalf("releasing a forgotten member: %v, %d acquired", dead, p.Stats().Acquired)
	}
	c := p.CloneInto(NewPartition(Defaults, 99))
	if c.Owner(0) != "keeper" || c.Start() != p.Start() || c.End() != p.End() {
		t.Fatalf("clone into a used partition: owner %q, [%d, %d)", c.Owner(0), c.Start(), c.End())
	}
}
