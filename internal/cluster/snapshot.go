package cluster

import "encoding/json"

// snapshotForm is an image as a snapshot stores it.
type snapshotForm struct {
	ClusterID  string                             `json:"clusterId"`
	Topics     []Topic                            `json:"topics"`
	Deleted    []TopicID                          `json:"deleted"`
	Brokers    []BrokerReg                        `json:"brokers"`
	Partitions map[TopicID]map[int32]PartitionReg `json:"partitions"`
	// NextProducerID: absent in snapshots from before producer id blocks.
	NextProducerID int64 `json:"nextProducerId,omitempty"`
	// ACLs, ACLVersion: absent in snapshots from before ACLs.
	ACLs       []byte `json:"acls,omitempty"`
	ACLVersion int64  `json:"aclVersion,omitempty"`
	// Scram: absent in snapshots from before SCRAM credentials.
	Scram map[string]map[string]ScramCredential `json:"scram,omitempty"`
	// Quotas: absent in snapshots from before client quotas.
	Quotas map[string]map[string]float64 `json:"clientQuotas,omitempty"`
	// Features: absent in snapshots from before feature levels, and
	// while none is finalized.
	Features map[string]int16 `json:"features,omitempty"`
	// BrokerConfigs: absent in snapshots from before metadata.version 3,
	// and while no dynamic broker config is set.
	BrokerConfigs map[NodeID]map[string]string `json:"brokerConfigs,omitempty"`
	// GroupConfigs: absent in snapshots from before group configs
	// (metadata.version 4), and while no group has one.
	GroupConfigs map[string]map[string]string `json:"groupConfigs,omitempty"`
}

func EncodeImage(im *Image) ([]byte, error) {
	return json.Marshal(snapshotForm{ClusterID: im.ClusterID(), Topics: im.Topics(), Deleted: im.Deleted(),
		Brokers: im.Brokers(), Partitions: im.partitions, NextProducerID: im.nextProducerID,
		ACLs: im.acls, ACLVersion: im.aclVersion, Scram: im.scram, Quotas: im.quotas, Features: im.features, BrokerConfigs: im.brokerConfigs,
		GroupConfigs: im.groupConfigs})
}

func DecodeImage(b []byte) (*Image, error) {
	var s snapshotForm
	if err := UnmarshalStrict(b, &s); err != nil {
		return nil, err
	}
	im := NewImage(s.ClusterID)
	for _, t := range s.Topics {
		im.topics[t.Name] = t
		im.names[t.ID] = t.Name
	}
	for _, id := range s.Deleted {
		im.deleted[id] = true
	}
	for _, b := range s.Brokers {
		im.brokers[b.ID] = b
	}
	for id, ps := range s.Partitions {
		im.partitions[id] = ps
	}
	im.nextProducerID = s.NextProducerID
	im.acls, im.aclVersion = s.ACLs, s.ACLVersion
	im.scram, im.quotas = s.Scram, s.Quotas
	if err := checkSupported(s.Features); err != nil {
		return nil, err
	}
	im.features = s.Features
	im.brokerConfigs = s.BrokerConfigs
	im.groupConfigs = s.GroupConfigs
	return im, nil
}
