package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/coordlog"
	"github.com/strandmq/strand/internal/datadir"
	"github.com/strandmq/strand/internal/dlq"
	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/partition/fetcher"
	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/schemareg/schemastore"
	"github.com/strandmq/strand/internal/topicconfig"
	"github.com/strandmq/strand/internal/txn/txncoord"
	"github.com/strandmq/strand/internal/vfs"
	"github.com/strandmq/strand/internal/wire"
)

// Limits that keep one request from exhausting the machine.
const (
	// MaxPartitionsPerTopic bounds CreateTopics and CreatePartitions.
	MaxPartitionsPerTopic = 10000
)

// Config configures a Broker. The zero value of every field is usable except
// Dir.
type Config struct {
	// FS is the file system; default vfs.Default.
	FS vfs.FS
	// Dir is the data directory (log.dirs).
	Dir string
	// NodeID is this broker's node id (node.id); default 0.
	NodeID NodeID
	// DisableAutoCreateTopics turns off auto.create.topics.enable (on by
	// default, as in Kafka): producing to or requesting metadata for an
	// unknown topic creates it with DefaultPartitions partitions.
	DisableAutoCreateTopics bool
	// OffsetsTopicPartitions is offsets.topic.num.partitions for a
	// cluster's __consumer_offsets (created on the first FindCoordinator);
	// default 50. A single node's has one.
	OffsetsTopicPartitions int32
	// DefaultPartitions is num.partitions, for auto-created topics and
	// CreateTopics with -1 partitions; default 1.
	DefaultPartitions int32
	// TopicDefaults overrides Kafka's defaults for topic configs broker-wide
	// (Kafka's log.retention.ms and friends, keyed by the topic config name,
	// e.g. "retention.ms"). They are reported with source
	// STATIC_BROKER_CONFIG.
	TopicDefaults map[string]string
	// ProducerIDExpiration forgets an idle producer's sequence state
	// (producer.id.expiration.ms); default 24h.
	ProducerIDExpiration time.Duration
	// TransactionMaxTimeout is transaction.max.timeout.ms: the longest
	// transaction timeout a producer may ask for; default 15 minutes.
	TransactionMaxTimeout time.Duration
	// TransactionSweepInterval is how often timed-out transactions are
	// aborted (at most 10 s, Kafka's cleanup interval); tests shorten it.
	TransactionSweepInterval time.Duration
	// RetentionCheckInterval is how often time and size retention run
	// (log.retention.check.interval.ms); default 30 s (Kafka's is 5 minutes;
	// a small broker's users expect to see retention act).
	RetentionCheckInterval time.Duration
	Tiered                 TieredConfig // tiered storage (tiered.go); zero: off
	// CleanerBackoff is how often the compaction cleaner looks for dirty
	// compacted partitions (log.cleaner.backoff.ms); default 15 s.
	CleanerBackoff time.Duration
	// OffsetsRetention is offsets.retention.minutes: committed offsets
	// expire this long after their group's consumers are gone (KIP-211);
	// checked with retention, every RetentionCheckInterval. Zero: 7 days;
	// negative: never.
	OffsetsRetention time.Duration
	// CleanerMapBytes bounds the compaction cleaner's offset map
	// (log.cleaner.dedupe.buffer.size); default compact.DefaultMapBytes.
	CleanerMapBytes int64
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms: how
	// long the first rebalance of an empty group waits for more members.
	// Zero: Kafka's default (3s); negative: no delay.
	GroupInitialRebalanceDelay time.Duration
	// GroupMinSessionTimeout and GroupMaxSessionTimeout are
	// group.min.session.timeout.ms and group.max.session.timeout.ms; zero:
	// Kafka's defaults (6s, 30m).
	GroupMinSessionTimeout time.Duration
	GroupMaxSessionTimeout time.Duration
	// GroupConsumerSessionTimeout and GroupConsumerHeartbeatInterval are
	// group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms for KIP-848 consumer groups.
	// Zero: Kafka's defaults (45 s, 5 s).
	GroupConsumerSessionTimeout    time.Duration
	GroupConsumerHeartbeatInterval time.Duration
	// GroupConsumerMigrationPolicy is group.consumer.migration.policy
	// (bidirectional, upgrade, downgrade, disabled); "": bidirectional.
	GroupConsumerMigrationPolicy group.MigrationPolicy
	// RecoverTopics re-registers topics whose partition directories hold
	// data that meta.json does not list (a lost or older meta.json), with
	// default configs, instead of refusing to start.
	RecoverTopics bool
	// ScrubInterval is how often every sealed segment's CRCs are verified
	// in the background (scrub.go). Zero: daily; negative: never.
	ScrubInterval time.Duration
	// ScrubBytesPerSecond bounds the scrub's reads. Zero: 32 MiB/s.
	ScrubBytesPerSecond int64
	// MaxOpenLogFiles caps the descriptors partition logs hold open
	// (segment files and their indexes, vfs.FDCache): past it, the least
	// recently used idle files are closed and opened again on their next
	// use. Zero: half the process's open-file limit (RLIMIT_NOFILE);
	// negative: no cap, every segment file stays open.
	MaxOpenLogFiles int
	// LogWriters bounds how many appends copy their batches into the data
	// directory at once (partlog.WriteGate). Zero: one; negative: no bound.
	LogWriters int
	// Metadata keeps the cluster metadata (topics, ids, configs); default
	// a cluster.FileStore over Dir's meta.json. The broker does not close it.
	// A store that is also a Member (quorum.RaftStore) makes the broker a
	// member of a cluster (member.go).
	Metadata cluster.Store
	// OpenMetadata, if set instead of Metadata, opens the store once the
	// data directory is locked (a raft quorum keeps its log there); the
	// broker owns it and closes it last.
	OpenMetadata func() (cluster.Store, error)
	// Endpoints are the listeners a cluster member registers (its client
	// listener first); Rack is its broker.rack.
	Endpoints []cluster.Endpoint
	Rack      string
	// Roles are a cluster member's roles (cluster.ParseRoles: nil for
	// broker and controller both). They are registered, and kept in
	// meta.properties: a data directory refuses a start with other roles.
	Roles []string
	// HeartbeatInterval and SessionTimeout time a member's heartbeats and
	// how long it serves without an answer; defaults 1 s and 9 s.
	HeartbeatInterval, SessionTimeout time.Duration
	// DefaultReplicationFactor is default.replication.factor: the replica
	// count of topics created without one (auto-created ones too) in a
	// cluster; default 1, as Kafka's.
	DefaultReplicationFactor int
	// Dialer opens this node's connections to other nodes' internal
	// listeners (replica fetches, forwarded requests).
	Dialer wire.Dialer
	// ReplicaLagTime is replica.lag.time.max.ms: a follower that has not
	// caught up with its leader for this long leaves the ISR; default 30 s.
	ReplicaLagTime time.Duration
	// ReassignmentThrottle caps, in bytes per second, what this node
	// fetches for replicas a reassignment is adding (0: no cap); see
	// cluster.Image.FollowerThrottle.
	ReassignmentThrottle int64
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.ProducerIDExpiration <= 0 {
		c.ProducerIDExpiration = 24 * time.Hour
	}
	if c.TransactionMaxTimeout <= 0 {
		c.TransactionMaxTimeout = 15 * time.Minute
	}
	if c.TransactionSweepInterval <= 0 {
		c.TransactionSweepInterval = 10 * time.Second
	}
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = 30 * time.Second
	}
	if c.CleanerBackoff <= 0 {
		c.CleanerBackoff = 15 * time.Second
	}
	if c.ScrubInterval == 0 {
		c.ScrubInterval = DefaultScrubInterval
	}
	if c.MaxOpenLogFiles == 0 {
		c.MaxOpenLogFiles = defaultMaxOpenLogFiles()
	}
	if c.ScrubBytesPerSecond <= 0 {
		c.ScrubBytesPerSecond = DefaultScrubBytesPerSecond
	}
	if c.OffsetsTopicPartitions <= 0 {
		c.OffsetsTopicPartitions = 50
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = 1
	}
	if c.ReplicaLagTime <= 0 {
		c.ReplicaLagTime = DefaultReplicaLagTime
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Broker is a single Strand node's topics and partitions.
type Broker struct {
	cfg Config
	fs  vfs.FS
	// logFS is fs with partition logs' files opened through files, the
	// descriptor cap (Config.MaxOpenLogFiles); fs itself when uncapped.
	logFS vfs.FS
	files *vfs.FDCache
	// node is what this node's partitions share (package partition).
	node   *partition.Node
	logger *slog.Logger
	meta   cluster.Store // topics, ids, configs, tombstones (Config.Metadata)
	// images feeds the reconciler (reconcile.go); unsubscribe ends its feed.
	images      chan *cluster.Image
	unsubscribe func()
	defaults    map[string]string // validated TopicDefaults
	ids         *producer.Allocator
	coords      coordlog.Shards[*Partition, *group.Coordinator] // by __consumer_offsets partition
	txns        coordlog.Shards[*Partition, *TxnCoordinator]    // by __transaction_state partition
	txnEnsure   sync.Mutex                                      // a single node creates __transaction_state once
	txnCount    txncoord.Counters
	member      *membership       // nil on a single node
	fetchers    *fetcher.Fetchers // a follower's fetchers, by leader
	peers       wire.Peers        // calls to other nodes
	started     time.Time
	syncedIndex int64        // newest image syncLocked applied (b.admin)
	ingest      dlq.Stats    // validation counters (package dlq)
	schemas     *SchemaStore // the schema registry's storage (package schemastore)
	share       *ShareNode   // share groups (share.go, package sharenode)
	stats       stats        // traffic counters (stats.go)

	lock      io.Closer // the data directory's .lock, held until Close
	ownedMeta io.Closer // Config.OpenMetadata's store, closed by Close

	stop chan struct{}
	wg   sync.WaitGroup
	// cleaning serialises CleanLogs (cleaner.go).
	cleaning sync.Mutex

	// admin serialises topic changes and meta.json writes.
	admin sync.Mutex

	mu struct {
		sync.RWMutex
		topics map[string]*Topic
		byID   map[TopicID]*Topic
		closed bool
	}
}

// Topic is an immutable snapshot of one topic.
type Topic struct {
	Name   string
	ID     TopicID
	Config TopicConfig

	partitions []*Partition
}

// Partitions returns the topic's partition count.
func (t *Topic) Partitions() int32 { return int32(len(t.partitions)) }

// Partition returns one partition, or an error wrapping
// ErrUnknownTopicOrPartition.
func (t *Topic) Partition(p PartitionID) (*Partition, error) {
	if p < 0 || int(p) >= len(t.partitions) {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownTopicOrPartition, t.Name, p)
	}
	if t.partitions[p] == nil { // a cluster member's partition placed on another node
		return nil, fmt.Errorf("%w: %s-%d is not on this node", ErrNotLeader, t.Name, p)
	}
	return t.partitions[p], nil
}

// Open opens (or creates) the broker whose data lives in cfg.Dir, opening
// every partition and recovering producer state.
func Open(cfg Config) (_ *Broker, err error) {
	cfg = cfg.withDefaults()
	if cfg.Dir == "" {
		return nil, errors.New("broker: Config.Dir is empty")
	}
	defaults, err := topicconfig.Parse(cfg.TopicDefaults)
	if err != nil {
		return nil, fmt.Errorf("broker: topic defaults: %w", err)
	}
	b := &Broker{cfg: cfg, fs: cfg.FS, logger: cfg.Logger, defaults: defaults, stop: make(chan struct{}), started: cfg.Now()}
	b.logFS = b.fs
	b.node = &partition.Node{ID: cfg.NodeID, FS: b.fs, Logger: b.logger, Now: cfg.Now,
		SnapshotDir: filepath.Join(cfg.Dir, producerStateDir), ReplicaLagTime: cfg.ReplicaLagTime,
		ProducerIDExpiration: cfg.ProducerIDExpiration, Started: b.started, RemoteDeletes: filepath.Join(cfg.Dir, partition.RemoteDeletesDir),
		RollSnapSlots: make(chan struct{}, partition.RollSnapWriters), Tier: cfg.Tiered.Tier,
		WriteGate: partlog.NewWriteGate(cmp.Or(cfg.LogWriters, 1))}
	b.node.Host = nodeHost{b}
	b.coords = coordlog.Shards[*Partition, *group.Coordinator]{What: "group coordinator", Logger: b.logger,
		Load: func(_ int32, p *Partition) (*group.Coordinator, error) { return b.newCoordinator(p) },
		Stop: (*group.Coordinator).Close}
	b.txns = coordlog.Shards[*Partition, *TxnCoordinator]{What: "transaction coordinator", Logger: b.logger,
		Load: func(_ int32, p *Partition) (*TxnCoordinator, error) { return b.loadTxnCoordinator(p) },
		Stop: (*TxnCoordinator).Stop}
	b.peers = wire.Peers{Dialer: cfg.Dialer, Self: int32(cfg.NodeID), Addr: func(n int32) (string, error) { return b.internalAddr(NodeID(n)) }}
	b.fetchers = fetcher.New(fetcher.Config{NodeID: cfg.NodeID, Addr: b.internalAddr, Dialer: cfg.Dialer, Logger: b.logger,
		BrokerEpoch: func() int64 { return b.member.epoch.Load() },
		Throttle: func(p *partition.Partition) int64 {
			return b.meta.Image().FollowerThrottle(p.Topic(), int32(p.ID()), cluster.NodeID(cfg.NodeID), cfg.ReassignmentThrottle)
		}})
	if cfg.MaxOpenLogFiles > 0 {
		b.files = vfs.NewFDCache(cfg.MaxOpenLogFiles)
		b.logFS = b.files.Wrap(b.fs)
	}
	b.mu.topics = make(map[string]*Topic)
	b.mu.byID = make(map[TopicID]*Topic)
	b.schemas = schemastore.New(schemaNode{b}, b.stop)
	if err := b.fs.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("broker: create %s: %w", cfg.Dir, err)
	}
	if b.lock, err = datadir.Lock(b.fs, cfg.Dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = b.lock.Close()
		}
	}()
	if err := b.fs.MkdirAll(filepath.Join(cfg.Dir, producerStateDir), 0o755); err != nil {
		return nil, fmt.Errorf("broker: create %s: %w", producerStateDir, err)
	}
	if b.ids, err = producer.OpenAllocator(b.fs, cfg.Dir); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if err := checkRoles(b.fs, cfg.Dir, cfg.Roles); err != nil {
		return nil, err
	}
	store := cfg.Metadata
	if cfg.OpenMetadata != nil {
		if store, err = cfg.OpenMetadata(); err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		if c, ok := store.(io.Closer); ok {
			b.ownedMeta = c
			defer func() {
				if err != nil {
					_ = c.Close()
				}
			}()
		}
	}
	if store == nil {
		if store, _, err = cluster.OpenFileStore(b.fs, cfg.Dir); err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
	}
	b.meta = store
	if m, ok := store.(Member); ok {
		return b.openMember(m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = store.CatchUp(ctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	recs, err := b.checkPartitionDirs(store.Image())
	if err != nil {
		return nil, err
	}
	if store.Image().ClusterID() == "" { // a new cluster
		recs = append([]cluster.Record{cluster.ClusterInit{ClusterID: cluster.NewClusterID()}}, recs...)
	}
	if len(recs) > 0 {
		if _, err := store.Apply(recs...); err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
	}
	if err := b.openTopics(store.Image().Topics()); err != nil {
		return nil, err
	}
	b.removeOrphanSnapshots()
	b.reserveLoggedProducerIDs()
	if err := b.openGroups(); err != nil {
		b.closePartitions()
		return nil, err
	}
	if err := b.openSchemas(); err != nil {
		b.closePartitions()
		return nil, err
	}
	if err := b.openTxnState(); err != nil {
		b.closePartitions()
		return nil, err
	}
	if err := b.openShare(); err != nil {
		b.closePartitions()
		return nil, err
	}
	b.startLoops()
	return b, nil
}

// startLoops starts the reconciler and the background maintenance.
func (b *Broker) startLoops() {
	b.startReconciler()
	b.wg.Add(3)
	go b.tailSchemas()
	go b.every(b.cfg.RetentionCheckInterval, b.ApplyRetention)
	b.startTiered()
	go b.every(b.cfg.CleanerBackoff, b.CleanLogs) // log.cleaner.backoff.ms
	if b.cfg.ScrubInterval > 0 {
		b.wg.Add(1)
		go b.every(b.cfg.ScrubInterval, b.scrubInBackground)
	}
	if b.clustered() {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.runISRChecks()
		}()
	}
}

// openTopics opens every partition of every topic, in parallel: each
// open is mostly waiting on the disk (reads, a directory fsync), and a
// broker with thousands of partitions should not start one at a time.
func (b *Broker) openTopics(metas []cluster.Topic) error {
	start := time.Now()
	type job struct {
		t  *Topic
		id PartitionID
	}
	var jobs []job
	var topics []*Topic
	for _, mt := range metas {
		id := mt.ID
		tc, err := topicconfig.New(b.internalOverrides(mt.Name, mt.Configs), b.defaults)
		if err != nil {
			return fmt.Errorf("broker: topic %q: %w", mt.Name, err)
		}
		t := &Topic{Name: mt.Name, ID: id, Config: tc, partitions: make([]*Partition, mt.Partitions)}
		topics = append(topics, t)
		for i := range mt.Partitions {
			jobs = append(jobs, job{t, PartitionID(i)})
		}
	}
	// Every clean-shutdown marker is taken before any log opens: each
	// open then makes its marker's removal durable with a directory sync,
	// and the first of those commits all the removals at once, where one
	// removal and sync after another cost a journal commit a partition
	// (half the start-up time of 10,000 partitions).
	markers := make([]*partlog.CleanMarker, len(jobs))
	err := forEach(len(jobs), func(i int) error {
		var err error
		markers[i], err = b.claimAndTakeMarker(jobs[i].t.Name, jobs[i].t.ID, jobs[i].id)
		return err
	})
	if err != nil {
		return err
	}
	err = forEachN(len(jobs), ioWorkers, func(i int) error {
		if m := markers[i]; m.Clean {
			if err := b.logFS.SyncDir(filepath.Join(b.cfg.Dir, partitionDirName(jobs[i].t.Name, jobs[i].id))); err != nil {
				return err
			}
			m.Durable = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = forEach(len(jobs), func(i int) error {
		j := jobs[i]
		p, err := b.openPartitionTaken(j.t.Name, j.t.ID, j.id, j.t.Config, markers[i])
		j.t.partitions[j.id] = p // each job its own slot
		return err
	})
	if err != nil {
		for _, j := range jobs {
			if p := j.t.partitions[j.id]; p != nil {
				_ = p.Close(false)
			}
		}
		return err
	}
	for _, t := range topics {
		b.mu.topics[t.Name] = t
		b.mu.byID[t.ID] = t
	}
	b.logger.Info("broker: opened partitions", "partitions", len(jobs), "topics", len(topics),
		"took", time.Since(start).Round(time.Millisecond))
	return nil
}

// reserveLoggedProducerIDs keeps the allocator above every producer id the
// recovered logs and snapshots hold: a lost or stale producer-ids.json must
// not hand out an id whose sequence state already exists.
func (b *Broker) reserveLoggedProducerIDs() {
	top := producer.NoID
	for _, t := range b.mu.topics {
		for _, p := range t.local() {
			for _, a := range p.Producers() {
				top = max(top, a.ID)
			}
		}
	}
	if top == producer.NoID {
		return
	}
	if !b.ids.Existed() {
		b.logger.Warn("broker: producer-ids.json is missing but the logs hold producer ids; allocating above them", "highest_logged_id", top)
	}
	b.ids.Above(top)
}

// removeOrphanSnapshots deletes producer snapshots of partitions that no
// longer exist (and of the name-keyed format older versions wrote).
func (b *Broker) removeOrphanSnapshots() {
	dir := filepath.Join(b.cfg.Dir, producerStateDir)
	snaps, err := b.fs.ReadDir(dir)
	if err != nil {
		return
	}
	for _, name := range snaps {
		id, part, ok := partition.ParseSnapshotName(name)
		if t := b.mu.byID[id]; ok && t != nil && int(part) < len(t.partitions) {
			continue
		}
		_ = b.fs.Remove(filepath.Join(dir, name))
	}
}

// every runs fn every interval until Close: the retention and cleaner
// loops.
func (b *Broker) every(interval time.Duration, fn func()) {
	defer b.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// ApplyRetention runs time and size retention on every partition, and
// expires committed offsets, now (the broker also does so every
// RetentionCheckInterval).
func (b *Broker) ApplyRetention() {
	for _, g := range b.coords.Loaded() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		g.ExpireOffsets(ctx)
		cancel()
	}
	for _, t := range b.Topics() {
		for _, p := range t.local() {
			if p.Failed() != nil {
				continue // offline: nothing may change its files
			}
			if _, err := p.Log().ApplyRetention(); err != nil && !p.Closed() {
				b.logger.Warn("broker: retention failed", "topic", t.Name, "partition", p.ID(), "err", err)
			}
		}
	}
}

// Close stops the broker: it writes producer snapshots and closes every
// partition. Safe to call more than once.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		return nil
	}
	b.mu.closed = true
	b.mu.Unlock()
	// The coordinators first: they write to __transaction_state and
	// __consumer_offsets (transaction markers reach the group coordinators).
	b.txns.StopAll()
	b.share.Close()
	b.coords.StopAll()
	b.unsubscribe()
	close(b.stop)
	b.fetchers.Close()
	b.wg.Wait()
	b.cfg.Tiered.Tier.Close()
	b.admin.Lock()
	defer b.admin.Unlock()
	err := b.closePartitions()
	if epoch := b.memberEpoch(); err == nil && epoch > 0 {
		err = b.writeShutdownMarker(epoch) // every log is flushed: this stop was clean
	}
	if b.ownedMeta != nil {
		err = errors.Join(err, b.ownedMeta.Close())
	}
	return errors.Join(err, b.lock.Close())
}

// closePartitions saves every partition's producer state and closes its
// log, in parallel: each close waits on fsyncs, and one at a time a broker
// with thousands of partitions took half a minute to stop.
func (b *Broker) closePartitions() error {
	start := time.Now()
	var all []*Partition
	for _, t := range b.mu.topics {
		all = append(all, t.local()...)
	}
	err := forEach(len(all), func(i int) error { return all[i].Close(true) })
	b.logger.Info("broker: closed partitions", "partitions", len(all), "took", time.Since(start).Round(time.Millisecond))
	return err
}

// NodeID returns the broker's node id.
func (b *Broker) NodeID() NodeID { return b.cfg.NodeID }

// Dialer opens connections to other nodes' internal listeners.
func (b *Broker) Dialer() wire.Dialer { return b.cfg.Dialer }

// ClusterID returns the cluster id, generated on first start and persisted.
func (b *Broker) ClusterID() string { return b.meta.Image().ClusterID() }

// AutoCreateTopics reports whether auto.create.topics.enable is on.
func (b *Broker) AutoCreateTopics() bool { return !b.cfg.DisableAutoCreateTopics }

// DefaultPartitions returns num.partitions.
func (b *Broker) DefaultPartitions() int32 { return b.cfg.DefaultPartitions }

// Dir returns the data directory.
func (b *Broker) Dir() string { return b.cfg.Dir }

// OfflinePartition is a partition that refuses appends: after a failed
// fsync (a restart recovers it) or over damaged data (an operator repairs
// it; Damaged is set).
type OfflinePartition struct {
	Name    string `json:"partition"` // topic-partition
	Damaged bool   `json:"damaged"`
	Reason  string `json:"reason"`
}

// OfflinePartitions lists the partitions that refuse appends, for health
// checks, metrics and the console.
func (b *Broker) OfflinePartitions() []OfflinePartition {
	var out []OfflinePartition
	for _, t := range b.Topics() {
		for _, p := range t.local() {
			if err := p.Failed(); err != nil {
				out = append(out, OfflinePartition{Name: partitionDirName(t.Name, p.ID()), Damaged: errors.Is(err, partlog.ErrDamaged), Reason: err.Error()})
			}
		}
	}
	return out
}

// FailedPartitions names the offline partitions ("topic-partition").
func (b *Broker) FailedPartitions() []string {
	var out []string
	for _, o := range b.OfflinePartitions() {
		out = append(out, o.Name)
	}
	return out
}

// Topics returns a snapshot of every topic, sorted by name.
func (b *Broker) Topics() []*Topic {
	b.mu.RLock()
	ts := slices.Collect(maps.Values(b.mu.topics))
	b.mu.RUnlock()
	slices.SortFunc(ts, func(x, y *Topic) int { return strings.Compare(x.Name, y.Name) })
	return ts
}

// Topic returns a topic, or an error wrapping ErrUnknownTopicOrPartition.
func (b *Broker) Topic(name string) (*Topic, error) {
	b.mu.RLock()
	t := b.mu.topics[name]
	b.mu.RUnlock()
	if t == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopicOrPartition, name)
	}
	return t, nil
}

// TopicByID returns a topic by id, or an error wrapping ErrUnknownTopicID.
func (b *Broker) TopicByID(id TopicID) (*Topic, error) {
	b.mu.RLock()
	t := b.mu.byID[id]
	b.mu.RUnlock()
	if t == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopicID, id)
	}
	return t, nil
}

// TopicOrCreate returns a topic, creating it with the default partition count
// and configs if it does not exist and auto-creation is enabled.
func (b *Broker) TopicOrCreate(name string) (*Topic, error) {
	t, err := b.Topic(name)
	if err == nil || b.cfg.DisableAutoCreateTopics {
		return t, err
	}
	t, err = b.CreateTopic(TopicSpec{Name: name, Partitions: -1, ReplicationFactor: -1})
	if errors.Is(err, ErrTopicExists) { // lost a race with another creator
		return b.Topic(name)
	}
	return t, err
}

// AllocateProducerID hands out a fresh producer id at epoch 0
// (InitProducerId for a non-transactional producer: Kafka always allocates a
// new id then).
func (b *Broker) AllocateProducerID() (producer.ID, producer.Epoch, error) {
	if b.clustered() {
		id, err := b.member.nextProducerID(b)
		return id, 0, err
	}
	id, err := b.ids.Next()
	if err != nil {
		return producer.NoID, -1, fmt.Errorf("broker: %w", err)
	}
	return id, 0, nil
}

func (b *Broker) checkOpen() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.mu.closed {
		return ErrClosed
	}
	return nil
}

// installLocked records t (added or replaced; name removed, when t is nil)
// in the cluster metadata and then publishes it in the registry. b.admin
// must be held.
func (b *Broker) installLocked(name string, t *Topic) error {
	var rec cluster.Record = cluster.RemoveTopic{Name: name}
	if t != nil {
		rec = cluster.PutTopic{Topic: cluster.Topic{Name: t.Name, ID: t.ID, Partitions: t.Partitions(), Configs: t.Config.Overrides()}}
	}
	if _, err := b.meta.Apply(rec); err != nil {
		return err
	}
	b.mu.Lock()
	if old := b.mu.topics[name]; old != nil {
		delete(b.mu.byID, old.ID)
	}
	if t == nil {
		delete(b.mu.topics, name)
	} else {
		b.mu.topics[name] = t
		b.mu.byID[t.ID] = t
	}
	b.mu.Unlock()
	return nil
}

func partitionDirName(topic string, p PartitionID) string {
	return topic + "-" + strconv.Itoa(int(p))
}
