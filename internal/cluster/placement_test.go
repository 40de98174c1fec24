package cluster

import (
	"fmt"
	"testing"
)

// rackImage is a cluster of live brokers 1..len(racks), broker i on
// racks[i-1].
func rackImage(t *testing.T, racks ...string) *Image {
	t.Helper()
	im := NewImage("c")
	var recs []Record
	for i, r := range racks {
		recs = append(recs, RegisterBroker{ID: NodeID(i + 1), IncarnationID: fmt.Sprint("inc", i), Rack: r})
	}
	im, err := im.WithAt(10, recs...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range racks { // unfence them, as the controller does
		if im, err = im.WithAt(int64(11+i), BrokerRegistrationChange{ID: NodeID(i + 1), Epoch: 10, Fenced: -1}); err != nil {
			t.Fatal(err)
		}
	}
	return im
}

// TestPlacementSpreadsRacks: with as many racks as replicas, no partition
// has two replicas in one rack, however the brokers are spread over the
// racks; with fewer racks, every rack is used before one is used twice;
// leaders stay even; without racks every partition still
// gets rf distinct brokers.
func TestPlacementSpreadsRacks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		racks []string
		rf    int
	}{
		{"3 racks of 2", []string{"a", "b", "c", "a", "b", "c"}, 3},
		{"3 racks, uneven, ids grouped", []string{"a", "a", "a", "b", "b", "c"}, 3},
		{"2 racks, rf 3", []string{"a", "b", "a", "b"}, 3},
		{"no racks", []string{"", "", "", ""}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := rackImage(t, tc.racks...)
			racks := map[string]bool{}
			for _, r := range tc.racks {
				racks[r] = true
			}
			const n = 60
			a, err := Place(img, n, tc.rf)
			if err != nil {
				t.Fatal(err)
			}
			leaders := map[NodeID]int{}
			for i, ids := range a {
				seen, ranks := map[NodeID]bool{}, map[string]int{}
				for _, id := range ids {
					if seen[id] {
						t.Fatalf("partition %d: broker %d twice in %v", i, id, ids)
					}
					seen[id] = true
					ranks[tc.racks[id-1]]++
				}
				leaders[ids[0]]++
				if len(ids) != tc.rf {
					t.Fatalf("partition %d: %d replicas, want %d", i, len(ids), tc.rf)
				}
				wantRacks := min(tc.rf, len(racks))
				if len(ranks) != wantRacks {
					t.Fatalf("partition %d: replicas %v on %d racks, want %d", i, ids, len(ranks), wantRacks)
				}
			}
			if tc.name == "3 racks of 2" || tc.name == "no racks" {
				for id := range NodeID(len(tc.racks)) {
					if want := n / len(tc.racks); leaders[id+1] != want {
						t.Fatalf("broker %d leads %d partitions, want %d (leaders %v)", id+1, leaders[id+1], want, leaders)
					}
				}
			}
		})
	}
}
