package sharenode

import (
	"context"
	"fmt"

	"github.com/strandmq/strand/internal/cluster"
)

// metaConfigs is share.ConfigStore over a cluster's metadata: every node's
// coordinator and share-partition manager read a group's configs from its
// own image (AlterGroupConfig records), as Kafka's brokers read a GROUP
// resource's ConfigRecords; a change is proposed to the quorum and
// reaches the other nodes as their images catch up (a heartbeat or so).
type metaConfigs struct{ meta cluster.Store }

func (m metaConfigs) GroupConfigs(group string) map[string]string {
	return m.meta.Image().GroupConfigs(group)
}

// AlterGroupConfigs proposes the change, refused with a clear step while
// the cluster runs below metadata.version 4: older nodes would not know
// the record.
func (m metaConfigs) AlterGroupConfigs(_ context.Context, group string, set map[string]*string, validateOnly bool) error {
	img := m.meta.Image()
	if lvl := img.FeatureLevel(cluster.MetadataVersion); lvl < cluster.MetadataVersionGroupConfigs {
		return fmt.Errorf("%w: share-group configs on a cluster are kept in its metadata, which needs %s %d (group configs) and the cluster runs %d: once every node runs this build, finalize it with strand cluster features --upgrade %s=%d",
			cluster.ErrUnsupportedFeature, cluster.MetadataVersion, cluster.MetadataVersionGroupConfigs, lvl, cluster.MetadataVersion, cluster.MetadataVersionGroupConfigs)
	}
	if validateOnly {
		return nil
	}
	rec := cluster.AlterGroupConfig{Group: group, Set: map[string]string{}}
	for k, v := range set {
		if v == nil {
			rec.Remove = append(rec.Remove, k)
		} else {
			rec.Set[k] = *v
		}
	}
	if _, err := m.meta.Apply(rec); err != nil {
		return fmt.Errorf("sharenode: alter the configs of group %s: %w", group, err)
	}
	return nil
}
