package broker

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/datadir"
	"github.com/strandmq/strand/internal/topicconfig"
)

// TopicSpec describes a topic to create.
type TopicSpec struct {
	Name string
	// Partitions is the partition count; -1 or 0 means num.partitions.
	Partitions int32
	// ReplicationFactor must be 1 on a single node; -1 or 0 means the
	// default (1).
	ReplicationFactor int16
	// Assignment optionally places each partition's replicas by hand; on a
	// single node every partition must be [this node]. When set it defines
	// the partition count, and Partitions and ReplicationFactor must be -1.
	Assignment [][]NodeID
	// Configs are topic config overrides (Kafka names).
	Configs map[string]string
	// ValidateOnly checks everything and creates nothing.
	ValidateOnly bool
}

// CreateTopic validates spec and creates the topic. Errors wrap
// ErrInvalidTopic, ErrTopicExists, ErrInvalidPartitions,
// ErrInvalidReplicationFactor, ErrInvalidReplicaAssignment or
// ErrInvalidConfig (a *ConfigError).
func (b *Broker) CreateTopic(spec TopicSpec) (*Topic, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	if err := topicconfig.ValidateTopicName(spec.Name); err != nil {
		return nil, err
	}
	n, err := b.partitionCount(spec)
	if err != nil {
		return nil, err
	}
	tc, err := topicconfig.New(spec.Configs, b.defaults)
	if err == nil {
		err = b.checkTieredConfig(nil, tc)
	}
	if err != nil {
		return nil, fmt.Errorf("broker: create topic %q: %w", spec.Name, err)
	}
	b.admin.Lock()
	defer b.admin.Unlock()
	if err := b.checkNameFreeLocked(spec.Name); err != nil {
		return nil, err
	}
	t := &Topic{Name: spec.Name, ID: newTopicID(), Config: tc}
	if b.clustered() {
		return b.createTopicInCluster(t, n, spec)
	}
	if spec.ValidateOnly {
		t.partitions = make([]*Partition, n)
		return t, nil
	}
	if t.partitions, err = b.openNewPartitions(spec.Name, t.ID, 0, n, tc); err != nil {
		return nil, fmt.Errorf("broker: create topic %q: %w", spec.Name, err)
	}
	if err := b.installLocked(t.Name, t); err != nil {
		b.discard(t.partitions)
		return nil, fmt.Errorf("broker: create topic %q: %w", spec.Name, err)
	}
	b.logger.Info("broker: topic created", "topic", t.Name, "partitions", n, "configs", tc.Overrides())
	return t, nil
}

func (b *Broker) partitionCount(spec TopicSpec) (int32, error) {
	if len(spec.Assignment) > 0 {
		if spec.Partitions > 0 || spec.ReplicationFactor > 0 {
			return 0, fmt.Errorf("%w: both a replica assignment and a partition count or replication factor", ErrInvalidReplicaAssignment)
		}
		if len(spec.Assignment) > MaxPartitionsPerTopic {
			return 0, fmt.Errorf("%w: %d partitions, Strand's limit is %d", ErrInvalidPartitions, len(spec.Assignment), MaxPartitionsPerTopic)
		}
		if err := b.checkAssignment(spec.Assignment); err != nil {
			return 0, err
		}
		return int32(len(spec.Assignment)), nil
	}
	n := spec.Partitions
	if n == -1 || n == 0 {
		n = b.cfg.DefaultPartitions
	}
	switch {
	case n < 1:
		return 0, fmt.Errorf("%w: %d", ErrInvalidPartitions, spec.Partitions)
	case n > MaxPartitionsPerTopic:
		return 0, fmt.Errorf("%w: %d partitions, Strand's limit is %d", ErrInvalidPartitions, n, MaxPartitionsPerTopic)
	}
	if err := b.checkReplicationFactor(spec.ReplicationFactor); err != nil {
		return 0, err
	}
	return n, nil
}

func (b *Broker) checkReplicationFactor(rf int16) error {
	if rf == -1 || rf == 0 || rf == 1 {
		return nil
	}
	if rf < -1 {
		return fmt.Errorf("%w: %d", ErrInvalidReplicationFactor, rf)
	}
	if b.clustered() {
		return nil // place checks it against the live brokers
	}
	return fmt.Errorf("%w: %d, but a single node has 1 broker", ErrInvalidReplicationFactor, rf)
}

func (b *Broker) checkAssignment(a [][]NodeID) error {
	if b.clustered() {
		return checkClusterAssignment(b.meta.Image(), a)
	}
	for i, replicas := range a {
		if len(replicas) != 1 || replicas[0] != b.cfg.NodeID {
			return fmt.Errorf("%w: partition %d on %v, but the only broker is node %d", ErrInvalidReplicaAssignment, i, replicas, b.cfg.NodeID)
		}
	}
	return nil
}

// checkNameFreeLocked refuses an existing name and, as Kafka does, a name that
// differs from an existing one only by '.' versus '_' (they collide in
// metric names).
func (b *Broker) checkNameFreeLocked(name string) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if _, ok := b.mu.topics[name]; ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	norm := strings.ReplaceAll(name, ".", "_")
	for other := range b.mu.topics {
		if strings.ReplaceAll(other, ".", "_") == norm {
			return fmt.Errorf("%w: %q collides with existing topic %q", ErrInvalidTopic, name, other)
		}
	}
	return nil
}

// discard removes partitions created by an operation that failed.
// openNewPartitions creates and opens partitions from … to-1 of a topic,
// on ioWorkers goroutines: each is a directory, its files and a few
// fsyncs, so one after another a 10,000-partition topic took most of a
// minute. If any fails, the rest are not started, those opened are
// removed again and the first failure is returned.
func (b *Broker) openNewPartitions(topic string, tid TopicID, from, to int32, tc TopicConfig) ([]*Partition, error) {
	ps := make([]*Partition, to-from)
	var first atomic.Pointer[error]
	_ = forEach(len(ps), func(i int) error {
		if first.Load() != nil {
			return nil
		}
		p, err := b.openPartition(topic, tid, PartitionID(from+int32(i)), tc)
		if err != nil {
			first.CompareAndSwap(nil, &err)
			return nil
		}
		ps[i] = p // each its own slot
		return nil
	})
	if err := first.Load(); err != nil {
		for i, p := range ps {
			if p == nil {
				b.dropFailedPartitionDir(partitionDirName(topic, PartitionID(from+int32(i))), tid)
			}
		}
		b.discard(slices.DeleteFunc(ps, func(p *Partition) bool { return p == nil }))
		return nil, *err
	}
	return ps, nil
}

// dropFailedPartitionDir removes the directory of a partition that failed
// to open during a create, if this create claimed it (it names the new
// topic's id): left behind, it would refuse the next create of the same
// name as another topic's data. A directory of any other topic stays.
func (b *Broker) dropFailedPartitionDir(name string, tid TopicID) {
	path := filepath.Join(b.cfg.Dir, name)
	if got, err := datadir.ReadPartitionMeta(b.fs, path); err != nil || got != tid {
		return
	}
	if err := b.fs.RemoveAll(path); err != nil {
		b.logger.Warn("broker: cannot remove the directory of a partition that failed to open", "dir", path, "err", err)
	}
}

func (b *Broker) discard(ps []*Partition) {
	for _, p := range ps {
		if err := p.Remove(); err != nil {
			b.logger.Warn("broker: cannot remove partition of a failed topic change", "topic", p.Topic(), "partition", p.ID(), "err", err)
		}
	}
}

// DeleteTopic deletes a topic and its data. meta.json forgets it first; if
// the process dies before the directories are gone, the next Open removes
// them.
func (b *Broker) DeleteTopic(name string) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if IsInternalTopic(name) {
		return fmt.Errorf("%w: %q is an internal topic", ErrInternalTopic, name)
	}
	b.admin.Lock()
	defer b.admin.Unlock()
	t, err := b.Topic(name)
	if err != nil {
		return err
	}
	// Groups' committed offsets go first: had the topic gone first, a crash
	// in between would leave them to a topic re-created under the name.
	if err := b.removeTopicOffsets(name); err != nil {
		return fmt.Errorf("broker: delete topic %q: removing its committed offsets: %w (nothing was deleted)", name, err)
	}
	if b.clustered() {
		return b.applyInClusterLocked("delete topic "+strconv.Quote(name), cluster.RemoveTopic{Name: name})
	}
	// The tombstone is in meta.json with the topic's removal, before any
	// data goes: after a crash, the start-up finishes the delete; nothing
	// else may remove a partition directory.
	if err := b.installLocked(name, nil); err != nil {
		return fmt.Errorf("broker: delete topic %q: %w", name, err)
	}
	var errs []error
	for _, p := range t.local() {
		errs = append(errs, p.Remove())
	}
	// A commit that raced the first pass is refused from now on (the
	// partitions are gone); remove any that slipped in.
	if err := b.removeTopicOffsets(name); err != nil {
		b.logger.Warn("broker: removing committed offsets of a deleted topic; the next start retries", "topic", name, "err", err)
	}
	b.logger.Info("broker: topic deleted", "topic", name)
	return errors.Join(errs...)
}

// DeleteTopicByID deletes the topic with the given id.
func (b *Broker) DeleteTopicByID(id TopicID) (string, error) {
	t, err := b.TopicByID(id)
	if err != nil {
		return "", err
	}
	return t.Name, b.DeleteTopic(t.Name)
}

// CreatePartitions grows a topic to total partitions. assignment, if set,
// places the new partitions (one entry per new partition).
func (b *Broker) CreatePartitions(name string, total int32, assignment [][]NodeID, validateOnly bool) (*Topic, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	b.admin.Lock()
	defer b.admin.Unlock()
	t, err := b.Topic(name)
	if err != nil {
		return nil, err
	}
	cur := t.Partitions()
	switch {
	case IsInternalTopic(name):
		return nil, fmt.Errorf("%w: the partition count of internal topic %q cannot change: the broker maps its records to partitions by that count", ErrPolicyViolation, name)
	case total <= cur:
		return nil, fmt.Errorf("%w: topic %q has %d partitions, asked for %d; partitions can only be added", ErrInvalidPartitions, name, cur, total)
	case total > MaxPartitionsPerTopic:
		return nil, fmt.Errorf("%w: %d partitions, Strand's limit is %d", ErrInvalidPartitions, total, MaxPartitionsPerTopic)
	case assignment != nil && len(assignment) != int(total-cur):
		return nil, fmt.Errorf("%w: %d assignments for %d new partitions", ErrInvalidReplicaAssignment, len(assignment), total-cur)
	}
	if err := b.checkAssignment(assignment); err != nil {
		return nil, err
	}
	if b.clustered() {
		return b.addPartitionsInCluster(t, total, assignment, validateOnly)
	}
	nt := &Topic{Name: t.Name, ID: t.ID, Config: t.Config, partitions: append([]*Partition(nil), t.partitions...)}
	if validateOnly {
		nt.partitions = append(nt.partitions, make([]*Partition, total-cur)...)
		return nt, nil
	}
	added, err := b.openNewPartitions(name, t.ID, cur, total, t.Config)
	if err != nil {
		return nil, fmt.Errorf("broker: create partitions of %q: %w", name, err)
	}
	nt.partitions = append(nt.partitions, added...)
	if err := b.installLocked(name, nt); err != nil {
		b.discard(added)
		return nil, fmt.Errorf("broker: create partitions of %q: %w", name, err)
	}
	b.logger.Info("broker: partitions added", "topic", name, "from", cur, "to", total)
	return nt, nil
}

// AlterConfigs replaces a topic's config overrides with configs (Kafka's
// non-incremental AlterConfigs: whatever is not listed reverts to its
// default).
func (b *Broker) AlterConfigs(name string, configs map[string]string, validateOnly bool) error {
	return b.alterConfigs(name, validateOnly, func(TopicConfig) (map[string]string, error) {
		return maps.Clone(configs), nil
	})
}

// IncrementalAlterConfigs applies SET/DELETE/APPEND/SUBTRACT operations to a
// topic's config overrides.
func (b *Broker) IncrementalAlterConfigs(name string, changes []ConfigChange, validateOnly bool) error {
	return b.alterConfigs(name, validateOnly, func(cur TopicConfig) (map[string]string, error) {
		return topicconfig.Apply(cur, changes)
	})
}

func (b *Broker) alterConfigs(name string, validateOnly bool, next func(TopicConfig) (map[string]string, error)) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	b.admin.Lock()
	defer b.admin.Unlock()
	t, err := b.Topic(name)
	if err != nil {
		return err
	}
	overrides, err := next(t.Config)
	if err != nil {
		return fmt.Errorf("broker: alter configs of %q: %w", name, err)
	}
	tc, err := topicconfig.New(overrides, b.defaults)
	if err != nil {
		return fmt.Errorf("broker: alter configs of %q: %w", name, err)
	}
	if err := checkInternalConfig(name, tc); err != nil {
		return err
	}
	if err := b.checkTieredConfig(&t.Config, tc); err != nil {
		return fmt.Errorf("broker: alter configs of %q: %w", name, err)
	}
	if validateOnly {
		return nil
	}
	if b.clustered() {
		prev := cluster.Topic{Name: t.Name, ID: t.ID, Partitions: t.Partitions(), Configs: t.Config.Overrides()}
		return b.applyInClusterLocked("alter configs of "+strconv.Quote(name),
			cluster.PutTopic{Topic: cluster.Topic{Name: t.Name, ID: t.ID, Partitions: t.Partitions(), Configs: tc.Overrides()}, Prev: &prev})
	}
	nt := &Topic{Name: t.Name, ID: t.ID, Config: tc, partitions: t.partitions}
	if err := b.installLocked(name, nt); err != nil {
		return fmt.Errorf("broker: alter configs of %q: %w", name, err)
	}
	for _, p := range nt.partitions {
		p.SetConfig(b.partitionConfig(tc, p.Topic(), partitionDirName(p.Topic(), p.ID())))
	}
	b.logger.Info("broker: topic configs altered", "topic", name, "configs", tc.Overrides())
	return nil
}

// DescribeConfigs returns a topic's effective configs.
func (b *Broker) DescribeConfigs(name string) ([]ConfigEntry, error) {
	t, err := b.Topic(name)
	if err != nil {
		return nil, err
	}
	return t.Config.Entries(), nil
}
