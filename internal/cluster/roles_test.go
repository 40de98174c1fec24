package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// rolesImage is a cluster of live nodes 1..len(roles), node i registered
// with roles[i-1] (--roles spelling) on rack "r<i%3>".
func rolesImage(t *testing.T, roles ...string) *Image {
	t.Helper()
	im := NewImage("c")
	for i, r := range roles {
		parsed, err := ParseRoles(r)
		if err != nil {
			t.Fatal(err)
		}
		id := NodeID(i + 1)
		if im, err = im.WithAt(int64(10+2*i), RegisterBroker{ID: id, IncarnationID: fmt.Sprint("inc", i), Rack: fmt.Sprint("r", i%3), Roles: parsed}); err != nil {
			t.Fatal(err)
		}
		if im, err = im.WithAt(int64(11+2*i), BrokerRegistrationChange{ID: id, Epoch: int64(10 + 2*i), Fenced: -1}); err != nil {
			t.Fatal(err)
		}
	}
	return im
}

func TestParseRoles(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"controller,broker", nil, ""},
		{"broker,controller", nil, ""},
		{" broker , controller ", nil, ""},
		{"broker", []string{RoleBroker}, ""},
		{"controller", []string{RoleController}, ""},
		{"broker,broker", []string{RoleBroker}, ""},
		{"", nil, "empty role"},
		{"broker,", nil, "empty role"},
		{"voter", nil, `unknown role "voter"`},
		{"Broker", nil, `unknown role "Broker"`},
	} {
		got, err := ParseRoles(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseRoles(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseRoles(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestPlacementSkipsControllerOnlyNodes: however many partitions and
// whatever the start, no replica goes to a controller-only node, every
// broker-role node (combined ones too) is used, and a replication factor
// that only counting the controllers would allow is refused.
func TestPlacementSkipsControllerOnlyNodes(t *testing.T) {
	img := rolesImage(t, "controller", "controller", "controller", "broker", "broker", "broker", "controller,broker")
	if got, want := LiveBrokers(img), []NodeID{4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Fatalf("LiveBrokers = %v, want %v", got, want)
	}
	for range 20 { // Place starts at a random broker
		a, err := Place(img, 12, 3)
		if err != nil {
			t.Fatal(err)
		}
		used := map[NodeID]bool{}
		for p, replicas := range a {
			for _, r := range replicas {
				if r <= 3 {
					t.Fatalf("partition %d placed on controller-only node %d: %v", p, r, a)
				}
				used[r] = true
			}
		}
		if len(used) != 4 {
			t.Fatalf("placement used %v, want all four broker-role nodes", used)
		}
	}
	if _, err := Place(img, 1, 5); err == nil {
		t.Fatal("rf 5 over 4 broker-role nodes (and 3 controllers) was placed")
	}
}

// TestAssignmentsRefuseControllerOnlyNodes: a manual assignment
// (CreateTopics with assignments) and a reassignment target naming a
// controller-only node are refused, with the reason.
func TestAssignmentsRefuseControllerOnlyNodes(t *testing.T) {
	img := rolesImage(t, "controller", "broker", "broker", "broker")
	if err := CheckAssignment(img, [][]NodeID{{2, 3, 4}}); err != nil {
		t.Fatalf("brokers only: %v", err)
	}
	if err := CheckAssignment(img, [][]NodeID{{2, 1, 4}}); err == nil || !strings.Contains(err.Error(), "controller-only") {
		t.Fatalf("assignment on the controller: %v, want a controller-only refusal", err)
	}
	if err := checkTarget(img, []NodeID{2, 3, 4}); err != nil {
		t.Fatalf("target of brokers: %v", err)
	}
	if err := checkTarget(img, []NodeID{1, 3, 4}); !errors.Is(err, ErrInvalidReplicaAssignment) || !strings.Contains(err.Error(), "controller-only") {
		t.Fatalf("target on the controller: %v, want INVALID_REPLICA_ASSIGNMENT naming controller-only", err)
	}
}

// TestRolesSurviveSnapshot: a node's roles are in the image a snapshot
// restores (a restarted controller must not forget which nodes host
// nothing), and a combined node's registration leaves them out, so a
// cluster without roles writes what older nodes read.
func TestRolesSurviveSnapshot(t *testing.T) {
	img := rolesImage(t, "controller", "broker", "broker,controller")
	b, err := EncodeImage(img)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeImage(b)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[NodeID][2]bool{1: {false, true}, 2: {true, false}, 3: {true, true}} {
		br, _ := back.Broker(id)
		if br.IsBroker() != want[0] || br.IsController() != want[1] {
			t.Errorf("node %d after a snapshot: broker %v controller %v, want %v", id, br.IsBroker(), br.IsController(), want)
		}
	}
	rec, err := EncodeRecords([]Record{RegisterBroker{ID: 3, IncarnationID: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec), "Roles") {
		t.Errorf("a combined node's registration carries roles: %s", rec)
	}
}
