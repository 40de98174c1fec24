package quorum

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/cluster"
)

// TestObserverFollowsAndNeverVotes: a node opened as an observer (a
// broker-only node) joins a running quorum by itself as a raft non-voter
// at the port it was given (0: a free one), applies the metadata log,
// and is refused as a voter, by the controller whoever asks; registering
// it with other roles later is refused too.
func TestObserverFollowsAndNeverVotes(t *testing.T) {
	voters := []Voter{{1, freeAddr(t)}, {2, freeAddr(t)}, {3, freeAddr(t)}}
	var nodes []*RaftStore
	t.Cleanup(func() {
		for _, s := range nodes {
			s.Close()
		}
	})
	for _, v := range voters {
		s, err := OpenRaftStore(RaftConfig{NodeID: v.ID, Dir: t.TempDir(), Bind: v.Addr, Voters: voters, Controller: ControllerConfig{ClusterID: "c1"}})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, s)
	}
	obs, err := OpenRaftStore(RaftConfig{NodeID: 4, Dir: t.TempDir(), Bind: "127.0.0.1:0", Voters: voters, Observer: true})
	if err != nil {
		t.Fatal(err)
	}
	nodes = append(nodes, obs)
	// A store fails a call fast once it has known no leader for a second;
	// a just-opened observer may take longer to hear from one while the
	// voters still elect under load (it failed so in CI), so that is
	// retried, and a retry finding the topic made by an earlier try is the
	// change made.
	put := cluster.PutTopic{Topic: cluster.Topic{Name: "a", ID: cluster.NewTopicID(), Partitions: 1}}
	for deadline, tries := time.Now().Add(20*time.Second), 0; ; tries++ {
		_, err := obs.ApplyWithin(time.Until(deadline), put)
		if err == nil || (tries > 0 && errors.Is(err, cluster.ErrConflict)) {
			break
		}
		if !errors.Is(err, cluster.ErrNoLeader) || time.Now().After(deadline) {
			t.Fatalf("a change through the observer: %v", err)
		}
	}
	members, err := nodes[0].QuorumMembers()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range members {
		got = append(got, fmt.Sprintf("%d:%v", m.ID, m.Voter))
	}
	if want := []string{"1:true", "2:true", "3:true", "4:false"}; !slices.Equal(got, want) {
		t.Fatalf("quorum %v, want %v", got, want)
	}
	if err := obs.ChangeVoter(VoterChange{ID: 4, Addr: "127.0.0.1:1"}, 10*time.Second); !errors.Is(err, cluster.ErrConflict) || !strings.Contains(err.Error(), "never votes") {
		t.Fatalf("add-voter of the observer: %v, want a refusal", err)
	}
	if _, err := obs.Register(cluster.Registration{ID: 4, IncarnationID: "i1", Roles: []string{cluster.RoleBroker}}, 10*time.Second); err != nil {
		t.Fatalf("registering the broker: %v", err)
	}
	if _, err := nodes[1].Register(cluster.Registration{ID: 4, IncarnationID: "i2", Roles: []string{cluster.RoleController}}, 10*time.Second); !errors.Is(err, cluster.ErrConflict) || !strings.Contains(err.Error(), "keeps its roles") {
		t.Fatalf("node 4 registered again as a controller: %v, want a refusal", err)
	}
	if _, err := nodes[1].Register(cluster.Registration{ID: 2, IncarnationID: "i3", Roles: []string{cluster.RoleBroker}}, 10*time.Second); !errors.Is(err, cluster.ErrConflict) || !strings.Contains(err.Error(), "is a voter") {
		t.Fatalf("voter 2 registered as broker-only: %v, want a refusal", err)
	}
	members, _ = nodes[0].QuorumMembers()
	for _, m := range members {
		if m.ID == 4 && m.Voter {
			t.Fatal("the observer became a voter")
		}
	}
}
