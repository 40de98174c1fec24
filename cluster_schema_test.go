package strand

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// TestClusterSchemaRegisterThenProduce: a producer registers a schema on
// one node and at once produces with it to a partition led by another
// node, whose replica of _schemas may not have the registration yet: every
// record lands in the topic, none in the DLQ.
func TestClusterSchemaRegisterThenProduce(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(1))
	if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"strand.validation": kmsg.StringPtr("schema")}, "fresh"); err != nil {
		t.Fatal(err)
	}
	leaders := c.leaders(1, "fresh")
	const rounds = 15
	for i := range rounds {
		// Register on a node that does not lead the partition produced to.
		p := int32(i % 3)
		regNode := int32(1)
		for id := range c.nodes {
			if id != leaders[p] {
				regNode = id
				break
			}
		}
		cl, err := sr.NewClient(sr.URLs("http://" + c.nodes[regNode].SchemaRegistryAddr()))
		if err != nil {
			t.Fatal(err)
		}
		schema := fmt.Sprintf(`{"type":"record","name":"V","doc":"round %d","fields":[{"name":"n","type":"long"}]}`, i) // a new id, compatible
		s, err := cl.CreateSchema(ctx, "fresh-value", sr.Schema{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		value := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(s.ID)), 0x02)
		kc := c.client(leaders[p], kgo.RecordPartitioner(kgo.ManualPartitioner()))
		err = kc.ProduceSync(ctx, &kgo.Record{Topic: "fresh", Partition: p, Value: value}).FirstErr()
		kc.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	st := c.nodes[1].b.TopicIngestStats("fresh").Quarantined + c.nodes[2].b.TopicIngestStats("fresh").Quarantined + c.nodes[3].b.TopicIngestStats("fresh").Quarantined
	if st != 0 {
		t.Fatalf("%d of %d records quarantined: the partition leader did not know a schema registered just before", st, rounds)
	}
}
