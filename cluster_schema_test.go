package strand

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// TestClusterSchemaRegistry: every node serves the registry from its own
// replica of _schemas. A schema registered on one node is served by all;
// schemas registered concurrently on three nodes get distinct ids (writes
// decided on a stale state lose at their offset and are decided again),
// and every node ends with the same subjects, versions and ids.
func TestClusterSchemaRegistry(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := map[int32]*sr.Client{}
	for id, b := range c.nodes {
		cl, err := sr.NewClient(sr.URLs("http://" + b.SchemaRegistryAddr()))
		if err != nil {
			t.Fatal(err)
		}
		clients[id] = cl
	}
	first, err := clients[2].CreateSchema(ctx, "first-value", sr.Schema{Schema: `"string"`})
	if err != nil || first.ID != 1 {
		t.Fatalf("first schema: %+v %v", first, err)
	}

	const per = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]int{}       // subject → id
	for id, cl := range clients { // one writer per node, all at once
		wg.Go(func() {
			for i := range per {
				subject := fmt.Sprintf("n%d-%d-value", id, i)
				schema := fmt.Sprintf(`{"type":"record","name":"R%d_%d","fields":[{"name":"f","type":"long"}]}`, id, i)
				s, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: schema})
				if err != nil {
					t.Errorf("node %d: register %s: %v", id, subject, err)
					return
				}
				mu.Lock()
				ids[subject] = s.ID
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	seen := map[int]string{}
	for subj, id := range ids {
		if other, dup := seen[id]; dup {
			t.Errorf("id %d given to %s and %s", id, subj, other)
		}
		seen[id] = subj
	}
	if len(ids) != per*len(clients) {
		t.Fatalf("%d schemas registered, want %d", len(ids), per*len(clients))
	}
	ids["first-value"] = 1
	for nid, cl := range clients {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			subjects, err := cl.Subjects(ctx)
			if err == nil && len(subjects) == len(ids) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d serves %d subjects (%v), want %d", nid, len(subjects), err, len(ids))
			}
		}
		for subj, id := range ids {
			s, err := cl.SchemaByVersion(ctx, subj, 1)
			if err != nil || s.ID != id {
				t.Errorf("node %d: %s version 1: id %d (%v), want %d", nid, subj, s.ID, err, id)
			}
		}
	}
}
