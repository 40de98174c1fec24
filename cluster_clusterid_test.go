package strand

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// syncBuffer is a log sink read back while nodes write to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestClusterRefusesAnotherClustersNode is the CI incident with whole
// nodes: node 3 of cluster A stops, and node 3 of a new cluster B starts
// on its raft address. A's controller keeps reaching that address; before
// the raft port's cluster-id hello, B's node followed A's leader, became
// one of A's brokers and served A's topics (two clusters merged). Now it
// is refused both ways: B forms and serves on its own, A keeps its
// metadata and never sees B's node register, and B's node logs both
// cluster ids.
func TestClusterRefusesAnotherClustersNode(t *testing.T) {
	a := startCluster(t)
	adm := kadm.NewClient(a.client(1))
	if _, err := adm.CreateTopic(context.Background(), 1, 3, nil, "of-a"); err != nil {
		t.Fatal(err)
	}
	idA := a.metadata(1, nil).ClusterID
	if err := a.nodes[3].Close(); err != nil {
		t.Fatal(err)
	}
	delete(a.nodes, 3)
	a.waitLive(1, 2)

	var logs syncBuffer
	b := &testCluster{t: t, dirs: map[int32]string{}, addrs: map[int32]string{}, nodes: map[int32]*Broker{},
		config: func(cfg *Config) {
			if cfg.NodeID == 3 {
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			}
		}}
	root := t.TempDir()
	for id := int32(1); id <= 3; id++ {
		addr := freePort(t)
		if id == 3 {
			addr = a.quorum[2].Addr // A's stopped node 3's raft address
		}
		b.quorum = append(b.quorum, Voter{ID: id, Addr: addr})
		b.dirs[id] = filepath.Join(root, fmt.Sprint("n", id))
		b.addrs[id] = freePort(t)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for id := int32(1); id <= 3; id++ {
		wg.Add(1)
		go func() { // together: each waits for a quorum
			defer wg.Done()
			n, err := b.open(id)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			b.nodes[id] = n
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, n := range b.nodes {
			n.Close()
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	b.waitLive(1, 2, 3)
	mdB := b.metadata(3, nil)
	if mdB.ClusterID == nil || *mdB.ClusterID == "" || idA == nil || *mdB.ClusterID == *idA {
		t.Fatalf("B's node 3 is in cluster %v, A is %v: the two clusters merged", mdB.ClusterID, idA)
	}
	// A's controller keeps trying node 3's address (raft backs off to
	// about 10 s between tries): B's node 3 refuses it, naming both
	// clusters once it knows its own.
	want := []string{"peer_cluster=" + *idA, "this_cluster=" + *mdB.ClusterID}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), want[0]) || !strings.Contains(logs.String(), want[1]); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("B's node 3 logged no refusal naming %v:\n%s", want, logs.String())
		}
	}
	if now := b.metadata(3, nil).ClusterID; now == nil || *now != *mdB.ClusterID {
		t.Fatalf("B's node 3 is now in cluster %v, was %s", now, *mdB.ClusterID)
	}
	if slices.ContainsFunc(mdB.Topics, func(tp kmsg.MetadataResponseTopic) bool { return tp.Topic != nil && *tp.Topic == "of-a" }) {
		t.Fatal("B's node 3 serves A's topic")
	}
	for _, id := range []int32{1, 2} {
		md := a.metadata(id, []string{"of-a"})
		if md.ClusterID == nil || *md.ClusterID != *idA || len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
			t.Fatalf("A's node %d: cluster %v, topics %+v", id, md.ClusterID, md.Topics)
		}
	}
	a.waitLive(1, 2) // B's node 3 never registered with A
}
