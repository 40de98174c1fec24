package sharenode

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/share"
)

// memMeta is a cluster.Store over an image in memory.
type memMeta struct {
	mu  sync.Mutex
	img *cluster.Image
}

func (m *memMeta) Image() *cluster.Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.img
}

func (m *memMeta) Apply(recs ...cluster.Record) (*cluster.Image, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next, err := m.img.With(recs...)
	if err != nil {
		return nil, err
	}
	m.img = next
	return next, nil
}

func (m *memMeta) Subscribe(func(*cluster.Image)) func() { return func() {} }
func (m *memMeta) CatchUp(context.Context) error         { return nil }
func (m *memMeta) finalize(t *testing.T, level int16) {
	t.Helper()
	if _, err := m.Apply(cluster.FinalizeFeature{Name: cluster.MetadataVersion, Level: level}); err != nil {
		t.Fatal(err)
	}
}

// A cluster's group configs live in its metadata: refused with the
// upgrade step below metadata.version 4, then served to the coordinator
// (and through it the share-partition manager) from the image; checked
// as on one node.
func TestClusterGroupConfigs(t *testing.T) {
	ctx := context.Background()
	meta := &memMeta{img: cluster.NewImage("c")}
	coord, err := share.NewCoordinator(&clusterHost{}, nil, share.GroupDefaults{Partition: share.Defaults})
	if err != nil {
		t.Fatal(err)
	}
	coord.SetConfigStore(metaConfigs{meta})
	dlq, limit := "jobs.dlq", "3"
	set := map[string]*string{share.ConfigDeadLetterTopic: &dlq, share.ConfigDeliveryLimit: &limit}
	err = coord.AlterConfigs(ctx, "g", set, false)
	if !errors.Is(err, cluster.ErrUnsupportedFeature) || !strings.Contains(err.Error(), "strand cluster features --upgrade metadata.version=4") {
		t.Fatalf("a group config at metadata.version 1 = %v, want the upgrade step", err)
	}
	if err := coord.AlterConfigs(ctx, "g", set, true); !errors.Is(err, cluster.ErrUnsupportedFeature) {
		t.Fatalf("validate-only at metadata.version 1 = %v, want the refusal too", err)
	}
	meta.finalize(t, cluster.MetadataVersionGroupConfigs)
	if err := coord.AlterConfigs(ctx, "g", set, false); err != nil {
		t.Fatal(err)
	}
	if gc := coord.GroupConfig("g"); gc.DeadLetterTopic != dlq || gc.Partition.DeliveryLimit != 3 {
		t.Fatalf("effective config %+v, want the dead-letter topic and a limit of 3", gc)
	}
	bad := "1"
	if err := coord.AlterConfigs(ctx, "g", map[string]*string{share.ConfigDeliveryLimit: &bad}, false); !errors.Is(err, share.ErrInvalidConfig) {
		t.Fatalf("an out-of-range limit = %v, want ErrInvalidConfig", err)
	}
	if err := coord.AlterConfigs(ctx, "g", map[string]*string{share.ConfigDeliveryLimit: nil}, false); err != nil {
		t.Fatal(err)
	}
	if got := meta.Image().GroupConfigs("g"); len(got) != 1 || got[share.ConfigDeadLetterTopic] != dlq {
		t.Fatalf("metadata holds %v after the delete of one config", got)
	}
	if gc := coord.GroupConfig("g"); gc.Partition.DeliveryLimit != share.Defaults.DeliveryLimit {
		t.Fatalf("a deleted config still applies: %+v", gc)
	}
}
