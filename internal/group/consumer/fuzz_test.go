package consumer

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"
)

// sampleRecords holds one record of every type, and tombstones.
func sampleRecords() []Record {
	return []Record{
		{Type: TypeGroupMetadata, Group: "g", Epoch: 7},
		{Type: TypeSubscriptionMetadata, Group: "g", Topics: map[string]int32{"a": 6, "b": 1}},
		{Type: TypeMemberMetadata, Group: "g", Member: "m1", Meta: MemberMetadata{
			InstanceID: "i1", Rack: "r1", ClientID: "c", ClientHost: "/127.0.0.1",
			Topics: []string{"a", "b"}, Regex: "x.*", Assignor: "range", RebalanceTimeout: 30 * time.Second}},
		{Type: TypeMemberMetadata, Group: "g", Member: "m2", Meta: MemberMetadata{
			ClientID: "c", ClientHost: "/127.0.0.1", Topics: []string{"a"}, RebalanceTimeout: time.Minute,
			Classic: &ClassicMember{SessionTimeout: 45 * time.Second, Protocols: []ClassicProtocol{
				{Name: "cooperative-sticky", Metadata: []byte{0, 3, 1, 2}}, {Name: "range", Metadata: []byte{9}}}}}},
		{Type: TypeTargetAssignmentMetadata, Group: "g", Epoch: 7},
		{Type: TypeTargetAssignment, Group: "g", Member: "m1", Partitions: append(ps("a", 0, 2), ps("b", 0)...)},
		{Type: TypeCurrentAssignment, Group: "g", Member: "m1", Current: CurrentAssignment{
			Epoch: 6, PreviousEpoch: 5, State: UnrevokedPartitions, Assigned: ps("a", 0), Revoking: ps("a", 1, 3)}},
		{Type: TypeCurrentAssignment, Group: "g", Member: "m1", Tombstone: true},
		{Type: TypeTargetAssignment, Group: "g", Member: "m1", Tombstone: true},
		{Type: TypeMemberMetadata, Group: "g", Member: "m1", Tombstone: true},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	for _, r := range sampleRecords() {
		k, v := r.Encode()
		got, err := Decode(k, v)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
		}
		if r.Tombstone != (v == nil) {
			t.Fatalf("tombstone %v with value %v", r.Tombstone, v)
		}
		// Every strict prefix of a value, and a trailing byte, is corrupt.
		for n := 0; v != nil && n < len(v); n++ {
			if _, err := Decode(k, v[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("type %d value cut at %d: %v", r.Type, n, err)
			}
		}
		if _, err := Decode(k, append(bytes.Clone(v), 0)); v != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("type %d with a trailing byte: %v", r.Type, err)
		}
	}
	if _, err := Decode([]byte{0, 2, 0, 1, 'g'}, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("classic key type 2 accepted: %v", err)
	}
}

// TestReplayRefusesDoubleOwnership: records that would give a partition two
// owners do not become a group.
func TestReplayRefusesDoubleOwnership(t *testing.T) {
	t.Parallel()
	cur := func(id string) Record {
		return Record{Type: TypeCurrentAssignment, Group: "g", Member: id, Current: CurrentAssignment{Epoch: 1, Assigned: ps("a", 0)}}
	}
	if g, err := Replay("g", []Record{cur("m1"), cur("m2")}); !errors.Is(err, ErrCorrupt) || g != nil {
		t.Fatalf("got %v, %v", g, err)
	}
	if g, err := Replay("g", nil); g != nil || err != nil {
		t.Fatalf("no records: %v, %v", g, err)
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to the
// same bytes (the encoding is canonical).
func FuzzDecode(f *testing.F) {
	for _, r := range sampleRecords() {
		k, v := r.Encode()
		f.Add(k, v, v == nil)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		r, err := Decode(key, value)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		k, v := r.Encode()
		if !bytes.Equal(k, key) || !bytes.Equal(v, value) || (v == nil) != (value == nil) {
			t.Fatalf("not canonical: %+v\nkey %x → %x\nvalue %x → %x", r, key, k, value, v)
		}
	})
}

// TestReplayRestore: a group rebuilt from its records and restored carries on
// as the original: the unrevoked member is fenced at its rebalance timeout,
// the others expire a session after the load.
func TestReplayRestore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{SessionTimeout: 45 * time.Second}, sixOfA)
	h.ok(joinReq("m1", "a"))
	h.ok(joinReq("m2", "a"))
	h.ok(beatReq("m1", 1, ps("a", 0, 1, 2, 3, 4, 5))) // m1 now unrevoked
	g, err := Replay("g", h.recs)
	if err != nil {
		t.Fatal(err)
	}
	load := t0.Add(time.Hour)
	g = h.e.Restore(g, load)
	if _, _, gone := h.e.Expire(g, load.Add(29*time.Second)); gone != nil {
		t.Fatalf("expired early: %v", gone)
	}
	if _, _, gone := h.e.Expire(g, load.Add(30*time.Second)); len(gone) != 1 || gone[0] != "m1" {
		t.Fatalf("rebalance timeout: %v", gone)
	}
	if _, _, gone := h.e.Expire(g, load.Add(45*time.Second)); len(gone) != 2 {
		t.Fatalf("sessions: %v", gone)
	}
}
