package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/datadir"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/topicconfig"
)

// The reconciler makes this node's partitions what the metadata image says
// (REPLICATION.md §1.7): each registered partition leads or follows at the
// registered leader epoch, with its replicas and ISR. Images arrive on the
// store's applying goroutine; the newest waiting one replaces any older,
// and one goroutine applies them, so the store never waits on a partition.

// startReconciler subscribes to the metadata and applies the current
// image; Close stops it.
func (b *Broker) startReconciler() {
	b.images = make(chan *cluster.Image, 1)
	b.unsubscribe = b.meta.Subscribe(func(img *cluster.Image) {
		for {
			select {
			case b.images <- img:
				return
			default:
			}
			select { // replace the older image still waiting
			case <-b.images:
			default:
			}
		}
	})
	b.reconcile(b.meta.Image())
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.stop:
				return
			case img := <-b.images:
				b.reconcile(img)
			}
		}
	}()
}

// reconcile makes this node what img says: on a cluster member, the
// registry and open partitions first (syncLocked); then every local
// partition's role, where img's registration is newer (by leader epoch,
// then partition epoch) than what the partition has.
func (b *Broker) reconcile(img *cluster.Image) {
	if b.clustered() {
		b.admin.Lock()
		b.syncLocked(img)
		b.admin.Unlock()
	}
	for _, t := range b.Topics() {
		for _, p := range t.local() {
			if reg, ok := img.Partition(t.ID, int32(p.ID())); ok {
				b.applyRegistration(p, reg)
			}
		}
	}
	if b.clustered() {
		b.syncCoordinators()
	}
}

// applyRegistration makes p lead or follow as reg says, if reg is newer
// than p's state: a new leader epoch changes the role (a follower starts
// fetching from its leader, a new leader stops); a newer partition epoch
// of the same leader epoch changes only the ISR and replicas.
func (b *Broker) applyRegistration(p *Partition, reg cluster.PartitionReg) {
	cur, epoch := p.State(), record.Epoch(reg.LeaderEpoch)
	if epoch < cur.Epoch || (epoch == cur.Epoch && reg.PartitionEpoch <= cur.PartitionEpoch) {
		return
	}
	leads := NodeID(reg.Leader) == b.cfg.NodeID
	if epoch == cur.Epoch && leads == (cur.Role == RoleLeader) && NodeID(reg.Leader) == cur.Leader {
		p.UpdateRegistration(reg)
		return
	}
	replicas, isr := partition.NodeIDs(reg.Replicas), partition.NodeIDs(reg.ISR)
	var err error
	if leads {
		b.fetchers.Unfollow(p) // a fetch in flight is dropped: its answer is for the old role
		err = p.BecomeLeader(epoch, replicas, isr)
	} else {
		err = p.BecomeFollower(epoch, NodeID(reg.Leader), replicas, isr)
	}
	if err != nil {
		b.logger.Warn("broker: applying a partition's registration", "topic", p.Topic(), "partition", p.ID(), "err", err)
		return
	}
	p.SetPartitionEpoch(reg.PartitionEpoch)
	switch {
	case leads:
		p.AdvanceHighWatermark()
	case reg.Leader >= 0 && b.clustered():
		b.fetchers.Follow(p, NodeID(reg.Leader), epoch)
	default:
		b.fetchers.Unfollow(p) // leaderless: nothing to fetch from
	}
}

// openMember opens a broker that is a member of a cluster. Its partitions
// are the image's: the reconciler opens those placed on this node as the
// image names them, so a member whose image is still catching up (or
// cannot reach the quorum) opens what it knows and waits for the rest; it
// serves nothing until the controller unfences it.
func (b *Broker) openMember(m Member) (*Broker, error) {
	b.member = &membership{m: m, incarnation: cluster.NewClusterID(), stopped: make(chan struct{})}
	b.node.Clustered = true
	prev, err := b.takeShutdownMarker()
	if err != nil {
		return nil, err
	}
	b.member.previousEpoch = prev
	// A data directory this node never ran on has no marker either: only
	// one with the node's identity in it stopped uncleanly.
	if _, ranHere, _ := datadir.ReadNodeMeta(b.fs, b.cfg.Dir); prev == cluster.UncleanShutdown && ranHere {
		b.logger.Warn("broker: no clean-shutdown marker: the last process did not stop cleanly; the controller keeps this node out of every ISR and ELR until it catches up", "node", b.cfg.NodeID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = m.CatchUp(ctx)
	cancel()
	if errors.Is(err, cluster.ErrInconsistentClusterID) {
		return nil, fmt.Errorf("broker: %w", err)
	} else if err != nil {
		b.logger.Warn("broker: the metadata quorum is not reachable yet; starting with the metadata this node has, serving nothing until the controller answers", "err", err)
	} else {
		// Caught up with the commit index raft knows; the entries may still
		// be on their way into the image, and the cluster id is among the
		// first.
		for deadline := time.Now().Add(10 * time.Second); m.Image().ClusterID() == "" && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if err := b.checkNodeMeta(m.Image().ClusterID()); err != nil {
			return nil, err
		}
		if err := b.migrateSingleNode(m); err != nil {
			return nil, err
		}
		if err := b.registerAtStart(); err != nil {
			return nil, err
		}
	}
	if _, statErr := b.fs.Stat(filepath.Join(b.cfg.Dir, metaFileName)); err != nil && statErr == nil {
		return nil, fmt.Errorf("broker: %s holds a single node's topics (meta.json) to bring into the cluster, but the metadata quorum is not reachable to take them (%w); start the other nodes", b.cfg.Dir, err)
	}
	if err := b.openShare(); err != nil {
		return nil, err
	}
	b.startLoops() // the reconciler's first pass opens what the image places here
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.runMembership()
	}()
	return b, nil
}

// migrateSingleNode brings a single node's topics (meta.json) into the
// cluster on the first start as a member: each topic not in the cluster's
// metadata is registered with its id and configs and its partitions
// placed on this node, which holds their data. meta.json is then renamed
// meta.json.migrated, so the next start does not look at it again.
func (b *Broker) migrateSingleNode(m Member) error {
	path := filepath.Join(b.cfg.Dir, metaFileName)
	if _, err := b.fs.Stat(path); err != nil {
		return nil // nothing to migrate
	}
	fsStore, _, err := cluster.OpenFileStore(b.fs, b.cfg.Dir)
	if err != nil {
		return fmt.Errorf("broker: reading the single node's topics to migrate: %w", err)
	}
	img := m.Image()
	self := []cluster.NodeID{cluster.NodeID(b.cfg.NodeID)}
	var recs []cluster.Record
	var names []string
	for _, t := range fsStore.Image().Topics() {
		switch have, ok := img.Topic(t.Name); {
		case ok && have.ID == t.ID:
			continue // migrated already (a crash before the rename)
		case ok:
			return fmt.Errorf("broker: the single node's topic %q (id %s) exists in the cluster with another id (%s): rename one before joining", t.Name, t.ID, have.ID)
		}
		recs = append(recs, cluster.PutTopic{Topic: t})
		for i := range t.Partitions {
			recs = append(recs, cluster.Partition{TopicID: t.ID, PartitionID: i, Replicas: self, ISR: self, Leader: self[0]})
		}
		names = append(names, t.Name)
	}
	if floor := int64(b.ids.Floor()); len(recs) > 0 && floor > img.NextProducerID() {
		// The single node handed out producer ids below floor, which its
		// partitions' producer state remembers: the cluster's blocks start
		// above them.
		recs = append(recs, cluster.ProducerIDBlock{Broker: cluster.NodeID(b.cfg.NodeID), First: floor, Count: 1})
	}
	if len(recs) > 0 {
		if _, err := m.Apply(recs...); err != nil {
			return fmt.Errorf("broker: migrating the single node's topics into the cluster: %w", err)
		}
		b.logger.Info("broker: migrated a single node's topics into the cluster, placed on this node", "topics", names)
	}
	if err := b.fs.Rename(path, path+".migrated"); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return b.fs.SyncDir(b.cfg.Dir)
}

// registerAtStart registers before serving, so a second process with this
// node id is refused at start. The controller cannot tell a live twin
// from this node's own previous process that died without a word until
// that one's session expires, so it keeps trying for two sessions: only a
// registration that stays refused that long is a live twin. One session
// is not enough when the dead process was the controller: its successor
// gives every broker a fresh session when it takes over (it cannot know
// when they were last heard from), and that one may start after this
// process did.
func (b *Broker) registerAtStart() error {
	deadline := time.Now().Add(2*b.cfg.SessionTimeout + 2*b.cfg.HeartbeatInterval)
	warned := false
	for {
		err := b.register(b.cfg.HeartbeatInterval * 5)
		switch {
		case !errors.Is(err, cluster.ErrDuplicateBroker):
			return nil // registered, or the quorum is away: the membership loop goes on trying
		case time.Now().After(deadline):
			return fmt.Errorf("broker: node %d is already running in this cluster (%w); each process needs its own --node-id", b.cfg.NodeID, err)
		case !warned:
			warned = true
			b.logger.Warn("broker: the controller still has a live registration for this node id; waiting for its session to expire (a previous process that died) or refusing to start (another process with this id)",
				"node", b.cfg.NodeID, "session", b.cfg.SessionTimeout)
		}
		time.Sleep(b.cfg.HeartbeatInterval)
	}
}

// syncLocked makes a member's registry what img says: every topic listed
// (partitions placed elsewhere as nil), this node's replicas open, configs
// current, and the local data of deleted topics removed. b.admin must be
// held.
func (b *Broker) syncLocked(img *cluster.Image) {
	// Images reach here from two paths (the reconciler's feed, and an
	// admin change's result), so an older one can arrive after a newer:
	// applying it would close partitions of topics created in between.
	if img.Index() > 0 && img.Index() < b.syncedIndex {
		return
	}
	b.syncedIndex = max(b.syncedIndex, img.Index())
	defer b.syncCoordinators()
	seen := map[string]bool{}
	for _, mt := range img.Topics() {
		seen[mt.Name] = true
		b.syncTopicLocked(img, mt)
	}
	for _, t := range b.Topics() {
		if seen[t.Name] {
			continue
		}
		b.mu.Lock()
		delete(b.mu.topics, t.Name)
		delete(b.mu.byID, t.ID)
		b.mu.Unlock()
		if img.IsDeleted(t.ID) {
			b.dropDeletedLocked(t)
		} else {
			b.closeLocal(t)
		}
	}
}

// syncTopicLocked brings one topic of the image into the registry.
func (b *Broker) syncTopicLocked(img *cluster.Image, mt cluster.Topic) {
	self := cluster.NodeID(b.cfg.NodeID)
	old, _ := b.Topic(mt.Name)
	if old != nil && old.ID != mt.ID { // deleted and created again
		b.dropDeletedLocked(old)
		old = nil
	}
	tc, err := topicconfig.New(b.internalOverrides(mt.Name, mt.Configs), b.defaults)
	if err != nil {
		b.logger.Warn("broker: topic configs from the cluster's metadata do not parse; keeping defaults", "topic", mt.Name, "err", err)
		tc, _ = topicconfig.New(nil, b.defaults)
	}
	nt := &Topic{Name: mt.Name, ID: mt.ID, Config: tc, partitions: make([]*Partition, mt.Partitions)}
	changed := old == nil || old.Partitions() != mt.Partitions || !maps.Equal(old.Config.Overrides(), tc.Overrides())
	for i := range mt.Partitions {
		var p *Partition
		if old != nil && int(i) < len(old.partitions) {
			p = old.partitions[i]
		}
		reg, ok := img.Partition(mt.ID, i)
		if p != nil && ok && !slices.Contains(reg.Replicas, self) { // reassigned away
			b.dropMovedLocked(p)
			p, changed = nil, true
		}
		if p == nil && ok && slices.Contains(reg.Replicas, self) {
			if p, err = b.openPartition(mt.Name, mt.ID, PartitionID(i), tc); err != nil {
				b.logger.Error("broker: cannot open a partition placed on this node", "topic", mt.Name, "partition", i, "err", err)
				continue
			}
			changed = true
			b.applyRegistration(p, reg)
		}
		nt.partitions[i] = p
	}
	if !changed {
		return
	}
	for _, p := range nt.local() {
		p.SetConfig(b.partitionConfig(tc, p.Topic(), partitionDirName(p.Topic(), p.ID())))
	}
	b.mu.Lock()
	b.mu.topics[nt.Name] = nt
	b.mu.byID[nt.ID] = nt
	b.mu.Unlock()
}

// dropDeletedLocked removes a deleted topic's local data and, where this
// node coordinates groups, their committed offsets of it.
func (b *Broker) dropDeletedLocked(t *Topic) {
	for _, p := range t.local() {
		if err := p.Remove(); err != nil {
			b.logger.Warn("broker: removing a deleted topic's partition", "topic", t.Name, "partition", p.ID(), "err", err)
		}
	}
	if len(b.coords.Loaded()) > 0 {
		b.wg.Add(1)
		go func() { // a write to __consumer_offsets; not under b.admin
			defer b.wg.Done()
			if err := b.removeTopicOffsets(t.Name); err != nil {
				b.logger.Warn("broker: removing committed offsets of a deleted topic", "topic", t.Name, "err", err)
			}
		}()
	}
	b.logger.Info("broker: topic deleted", "topic", t.Name)
}

// dropMovedLocked removes a replica a reassignment took off this node:
// it stops fetching (remove), and its data goes — the replicas that
// replaced it held all of it before the move completed.
func (b *Broker) dropMovedLocked(p *Partition) {
	p.StepDown()
	if err := p.RemoveReplica(); err != nil { // the store's copy stays: the remaining replicas share it
		b.logger.Warn("broker: removing a replica moved off this node", "topic", p.Topic(), "partition", p.ID(), "err", err)
		return
	}
	b.logger.Info("broker: replica moved off this node; its data is removed", "topic", p.Topic(), "partition", p.ID())
}

// closeLocal closes a topic's local partitions, keeping their data.
func (b *Broker) closeLocal(t *Topic) {
	for _, p := range t.local() {
		_ = p.Close(true)
	}
}

// local returns the topic's partitions this node holds.
func (t *Topic) local() []*Partition {
	out := make([]*Partition, 0, len(t.partitions))
	for _, p := range t.partitions {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}
