package cluster

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
)

// TopicID is a topic's 16-byte UUID (Metadata v10+, Fetch v13+).
type TopicID [16]byte

// String renders the id as Kafka does: unpadded URL-safe base64.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// Hex is the id as meta.json and partition.metadata's neighbours name it.
func (id TopicID) Hex() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether id is the all-zero (absent) id.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// NewTopicID returns a random, non-zero topic id.
func NewTopicID() TopicID {
	var id TopicID
	for id.IsZero() {
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	}
	return id
}

// ParseTopicID parses the hex form (Hex).
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("bad topic id %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// NewClusterID returns a random cluster id (Kafka's: 16 random bytes,
// base64).
func NewClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Topic is a topic as the metadata knows it.
type Topic struct {
	Name       string
	ID         TopicID
	Partitions int32
	// Configs are the topic's overrides (the rest are defaults).
	Configs map[string]string
}

// Image is one version of the cluster metadata. It is immutable: a record
// yields a new image (With), so a reader holding one sees a consistent
// version however the metadata moves on.
type Image struct {
	clusterID  string
	topics     map[string]Topic
	names      map[TopicID]string // topic id → name
	deleted    map[TopicID]bool
	brokers    map[NodeID]BrokerReg
	partitions map[TopicID]map[int32]PartitionReg // inner maps copied on write
	// nextProducerID is the first producer id not yet in a block.
	nextProducerID int64
	// acls is the ACL set in acl.Set's encoding (nil: none), and
	// aclVersion counts its changes (PutACLs' compare-and-set).
	acls       []byte
	aclVersion int64
	// scram holds the SCRAM credentials by user and mechanism; scramOwned
	// says this image may change the map (With copies it on first write).
	scram      map[string]map[string]ScramCredential
	scramOwned bool
	// quotas holds client quota values by entity key; quotasOwned as
	// scramOwned.
	quotas      map[string]map[string]float64
	quotasOwned bool
	// groupConfigs holds group configs by group id (AlterGroupConfig
	// copies the outer map on write; inner maps are never changed).
	groupConfigs map[string]map[string]string
	// features holds finalized feature levels (FinalizeFeature copies
	// it on write); a feature absent has its lowest level.
	features map[string]int16
	// brokerConfigs holds dynamic broker configs by node id
	// (DefaultBrokerConfigNode: the cluster default); BrokerConfig copies
	// it on write.
	brokerConfigs map[NodeID]map[string]string
	// index is the raft index of the entry that made this image (0: not
	// from a raft log, or restored from a snapshot).
	index int64
}

// Index returns the raft index of the entry that made this image: a
// reader that met a newer image ignores an older one (0: unknown).
func (im *Image) Index() int64 { return im.index }

// NewImage returns an empty image of cluster clusterID.
func NewImage(clusterID string) *Image {
	return &Image{clusterID: clusterID, topics: map[string]Topic{}, names: map[TopicID]string{}, deleted: map[TopicID]bool{},
		brokers: map[NodeID]BrokerReg{}, partitions: map[TopicID]map[int32]PartitionReg{}}
}

// ClusterID returns the cluster's id.
func (im *Image) ClusterID() string { return im.clusterID }

// Topic returns the topic named name.
func (im *Image) Topic(name string) (Topic, bool) {
	t, ok := im.topics[name]
	return t, ok
}

// TopicByID returns the topic with id id.
func (im *Image) TopicByID(id TopicID) (Topic, bool) {
	name, ok := im.names[id]
	if !ok {
		return Topic{}, false
	}
	return im.topics[name], true
}

// Topics returns every topic, by name.
func (im *Image) Topics() []Topic {
	out := slices.Collect(maps.Values(im.topics))
	slices.SortFunc(out, func(a, b Topic) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// IsDeleted reports whether id is a deleted topic's whose partition
// directories may remain (a tombstone).
func (im *Image) IsDeleted(id TopicID) bool { return im.deleted[id] }

// Deleted returns the tombstoned topic ids.
func (im *Image) Deleted() []TopicID {
	out := slices.Collect(maps.Keys(im.deleted))
	slices.SortFunc(out, func(a, b TopicID) int { return cmp.Compare(a.Hex(), b.Hex()) })
	return out
}

// With returns the image after recs, applied in order, or the first
// record's error (the image is unchanged then).
func (im *Image) With(recs ...Record) (*Image, error) { return im.WithAt(0, recs...) }

// WithAt is With for records committed at raft index index (a new broker
// incarnation takes it as its epoch).
func (im *Image) WithAt(index int64, recs ...Record) (*Image, error) {
	next := &Image{clusterID: im.clusterID, topics: maps.Clone(im.topics), names: maps.Clone(im.names), deleted: maps.Clone(im.deleted),
		brokers: maps.Clone(im.brokers), partitions: maps.Clone(im.partitions), nextProducerID: im.nextProducerID, index: index,
		acls: im.acls, aclVersion: im.aclVersion, scram: im.scram, quotas: im.quotas, features: im.features, brokerConfigs: im.brokerConfigs,
		groupConfigs: im.groupConfigs}
	for _, r := range recs {
		if err := r.apply(next, index); err != nil {
			return im, err
		}
	}
	return next, nil
}

// MarshalText writes the id in hex (records, snapshots).
func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.Hex()), nil }

// UnmarshalText reads the hex form.
func (id *TopicID) UnmarshalText(b []byte) error {
	v, err := ParseTopicID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}
