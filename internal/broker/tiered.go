package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/tiered"
)

// Tiered storage (KIP-405, issue 36): the topic configs, their checks, and
// the broker's side of the tier: which partitions upload, the read path
// below the local log start, and remote retention. The tier itself is
// internal/tiered.

// Topic configs of tiered storage, as Kafka spells them.
const (
	ConfigRemoteStorageEnable      = "remote.storage.enable"
	ConfigLocalRetentionMs         = "local.retention.ms"
	ConfigLocalRetentionBytes      = "local.retention.bytes"
	ConfigRemoteLogDeleteOnDisable = "remote.log.delete.on.disable"
)

// TieredConfig is the broker's object-storage tier.
type TieredConfig struct {
	// Tier is the object store and its uploader; nil: tiered storage is
	// off, and topics may not set remote.storage.enable.
	Tier *tiered.Tier
	// Interval is how often sealed segments are uploaded and remote
	// retention runs; default 10 s.
	Interval time.Duration
	// OrphanEvery is how many upload passes run between orphan cleanups;
	// default 30.
	OrphanEvery int
}

var tieredConfigDefs = []*ConfigDef{
	{Name: ConfigRemoteStorageEnable, Default: "false", Type: TypeBoolean, check: checkEnum("true", "false"),
		Doc: "Upload sealed segments to the broker's object store (tiered storage) and keep only local.retention.* on local disk. Needs the broker's object store; refused for compacted topics."},
	{Name: ConfigLocalRetentionMs, Default: "-2", Type: TypeLong, check: checkLong(-2, math.MaxInt64),
		Doc: "With remote.storage.enable: how long uploaded segments stay on local disk; -2: retention.ms. At most retention.ms."},
	{Name: ConfigLocalRetentionBytes, Default: "-2", Type: TypeLong, check: checkLong(-2, math.MaxInt64),
		Doc: "With remote.storage.enable: how many bytes of uploaded segments stay on local disk per partition; -2: retention.bytes. At most retention.bytes."},
	{Name: ConfigRemoteLogDeleteOnDisable, Default: "false", Type: TypeBoolean, check: checkEnum("true", "false"),
		Doc: "Must be true, with remote.storage.enable=false, to turn tiered storage off for a topic: its remote data is then deleted."},
}

func init() {
	for _, d := range tieredConfigDefs {
		configDefs = append(configDefs, d)
		configByName[d.Name] = d
	}
	slices.SortFunc(configDefs, func(x, y *ConfigDef) int { return strings.Compare(x.Name, y.Name) })
}

// remoteStorage reports remote.storage.enable.
func (c TopicConfig) remoteStorage() bool {
	v, _ := c.Get(ConfigRemoteStorageEnable)
	return v == "true"
}

// checkTieredConfig makes Kafka's checks (LogConfig.validate): a topic may
// enable remote storage only when the broker has an object store and the
// topic is not compacted; local retention may not exceed the total, nor be
// unlimited under a limited total; and a topic that had it on may turn it
// off only with remote.log.delete.on.disable=true. prev is nil at creation.
func (b *Broker) checkTieredConfig(prev *TopicConfig, next TopicConfig) error {
	if !next.remoteStorage() {
		if prev != nil && prev.remoteStorage() {
			if v, _ := next.Get(ConfigRemoteLogDeleteOnDisable); v != "true" {
				return &ConfigError{Name: ConfigRemoteStorageEnable, Value: "false", Reason: "it is invalid to disable remote storage without deleting remote data: set remote.log.delete.on.disable=true as well"}
			}
		}
		return nil
	}
	if b.cfg.Tiered.Tier == nil {
		return &ConfigError{Name: ConfigRemoteStorageEnable, Value: "true", Reason: "tiered storage is disabled on this broker (no --tier-endpoint): topics cannot be configured with remote log storage"}
	}
	if next.hasPolicy("compact") {
		return &ConfigError{Name: ConfigRemoteStorageEnable, Value: "true", Reason: "remote log storage is unsupported for compacted topics"}
	}
	for _, pair := range [][2]string{{ConfigLocalRetentionBytes, ConfigRetentionBytes}, {ConfigLocalRetentionMs, ConfigRetentionMs}} {
		local, total := next.long(pair[0]), next.long(pair[1])
		if total == -1 || local == -2 {
			continue
		}
		if local == -1 {
			return &ConfigError{Name: pair[0], Value: "-1", Reason: "must not be -1 as " + pair[1] + " is " + strconv.FormatInt(total, 10)}
		}
		if local > total {
			return &ConfigError{Name: pair[0], Value: strconv.FormatInt(local, 10), Reason: "must not be more than " + pair[1] + " (" + strconv.FormatInt(total, 10) + ")"}
		}
	}
	return nil
}

// tieredLogConfig sets partlog's local retention from local.retention.*;
// it applies only while the partition's tier gate is set.
func (c TopicConfig) tieredLogConfig(cfg *partlog.Config) {
	if !c.remoteStorage() {
		return
	}
	switch n := c.long(ConfigLocalRetentionMs); {
	case n == -2: // the total: partlog's zero
	case n < 0:
		cfg.LocalRetentionTime = -1
	case n == 0:
		cfg.LocalRetentionTime = time.Nanosecond
	case n <= math.MaxInt64/int64(time.Millisecond):
		cfg.LocalRetentionTime = time.Duration(n) * time.Millisecond
	default:
		cfg.LocalRetentionTime = -1
	}
	switch n := c.long(ConfigLocalRetentionBytes); {
	case n == -2:
	case n < 0:
		cfg.LocalRetentionBytes = -1
	default:
		cfg.LocalRetentionBytes = max(n, 1)
	}
	if !c.hasPolicy("delete") {
		cfg.LocalRetentionTime, cfg.LocalRetentionBytes = -1, -1
	}
}

// totalRetention is retention.ms and retention.bytes for remote retention.
func (c TopicConfig) totalRetention() tiered.Retention {
	r := tiered.Retention{TimeMs: c.long(ConfigRetentionMs), Bytes: c.long(ConfigRetentionBytes)}
	if r.TimeMs == math.MaxInt64 || r.TimeMs < 0 {
		r.TimeMs = -1
	}
	if !c.hasPolicy("delete") {
		r.TimeMs, r.Bytes = -1, -1
	}
	return r
}

// startTiered starts the upload loop when the broker has a tier.
func (b *Broker) startTiered() {
	if b.cfg.Tiered.Tier == nil {
		return
	}
	if b.cfg.Tiered.Interval <= 0 {
		b.cfg.Tiered.Interval = 10 * time.Second
	}
	if b.cfg.Tiered.OrphanEvery <= 0 {
		b.cfg.Tiered.OrphanEvery = 30
	}
	b.wg.Add(1)
	passes := 0
	pass := func() {
		passes++
		b.TierPass(passes%b.cfg.Tiered.OrphanEvery == 0)
	}
	go func() {
		// At once: until a pass reads the manifests, offsets below the
		// local start are unavailable. every's Done is the Add above.
		pass()
		b.every(b.cfg.Tiered.Interval, pass)
	}()
}

// TierPass uploads every sealed segment not yet remote, applies total
// retention to the remote segments and, when orphans is set, deletes
// orphan objects, for every partition this node leads whose topic has
// remote.storage.enable. The broker runs it every TieredConfig.Interval.
func (b *Broker) TierPass(orphans bool) {
	if b.cfg.Tiered.Tier == nil {
		return
	}
	b.cfg.Tiered.Tier.Serialize(func() { b.tierPass(orphans) })
}

func (b *Broker) tierPass(orphans bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for _, t := range b.Topics() {
		for _, p := range t.local() {
			if p.Failed() != nil || p.isClosed() {
				continue
			}
			if err := p.tierStep(ctx, orphans); err != nil && ctx.Err() == nil {
				b.logger.Warn("broker: tiered storage", "topic", t.Name, "partition", p.id, "err", err)
			}
		}
	}
}

// tierStep runs one pass of the tier for p.
func (p *Partition) tierStep(ctx context.Context, orphans bool) error {
	tc := p.config.Load()
	tp := p.tier.Load()
	if !tc.remoteStorage() {
		if tp == nil {
			return nil
		}
		// Turned off, which the config checks allow only with
		// remote.log.delete.on.disable: the remote data goes.
		p.log.SetTierGate(nil)
		p.tier.Store(nil)
		return tp.DeleteAll(ctx)
	}
	if p.notLeader() != nil {
		return nil // KIP-405: only the leader uploads
	}
	if tp == nil {
		// The gate goes on first: until the claim succeeds it reads -1,
		// so an unreachable store keeps every local segment.
		tp = p.b.cfg.Tiered.Tier.Partition(p.topic, p.topicID.String(), int32(p.id), p.log)
		p.tier.Store(tp)
		p.log.SetTierGate(tp.UploadedEnd)
	}
	if !tp.Loaded() {
		if err := tp.Load(ctx); err != nil {
			return err
		}
	}
	if !tp.Claimed() {
		if err := tp.Claim(ctx, p.log.LatestEpoch()); err != nil {
			return err
		}
	}
	if _, err := tp.Upload(ctx); err != nil {
		if errors.Is(err, tiered.ErrFenced) {
			// A newer leader uploads now. Keep the gate (the local
			// segments stay) and claim afresh if this node leads again.
			fresh := p.b.cfg.Tiered.Tier.Partition(p.topic, p.topicID.String(), int32(p.id), p.log)
			if lerr := fresh.Load(ctx); lerr != nil {
				return errors.Join(err, lerr)
			}
			p.tier.Store(fresh)
			p.log.SetTierGate(fresh.UploadedEnd)
		}
		return err
	}
	if _, err := tp.ApplyRetention(ctx, tc.totalRetention()); err != nil {
		return err
	}
	if orphans {
		if _, err := tp.CleanOrphans(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Tier returns the broker's object-storage tier, nil when it has none.
func (b *Broker) Tier() *tiered.Tier { return b.cfg.Tiered.Tier }

// Tier returns the partition's remote-tier handle, nil when it has none.
func (p *Partition) Tier() *tiered.Partition { return p.tier.Load() }

// LocalLogStartOffset is the first offset on this node's disk (Kafka's
// local-log-start-offset); LogStartOffset includes the remote tier.
func (p *Partition) LocalLogStartOffset() record.Offset { return p.log.LogStartOffset() }

// logStart is the partition's log start offset across both tiers.
func (p *Partition) logStart() record.Offset {
	local := p.log.LogStartOffset()
	if tp := p.tier.Load(); tp != nil {
		if rs := tp.RemoteStart(); rs >= 0 && rs < local {
			return rs
		}
	}
	return local
}

// tierPending reports whether p is tiered but its remote tier is not yet
// known (right after a start, or while the store does not answer): offsets
// below the local log start are then unavailable, not out of range.
func (p *Partition) tierPending() bool {
	if p.b.cfg.Tiered.Tier == nil || !p.config.Load().remoteStorage() {
		return false
	}
	tp := p.tier.Load()
	return tp == nil || !tp.Loaded()
}

// belowLocal reports whether a read at from is the remote tier's to serve
// (or to refuse as not available yet).
func (p *Partition) belowLocal(from record.Offset) bool {
	return p.remoteHolds(from) || (from < p.log.LogStartOffset() && p.tierPending())
}

// abortedHorizon is the offset below which no reader can fetch, so the
// aborted transactions before it may be forgotten: the log start across
// both tiers (read_committed readers of remote data need them), and
// nothing while a tiered partition's remote start is not known yet.
func (p *Partition) abortedHorizon() record.Offset {
	if p.tierPending() {
		return 0
	}
	return p.logStart()
}

// remoteRead serves a read the local log refused as out of range from the
// remote tier, when the tier holds from; otherwise it returns b and err
// unchanged.
func (p *Partition) remoteRead(b []byte, err error, from record.Offset, maxBytes int) ([]byte, error) {
	if err == nil || !errors.Is(err, partlog.ErrOffsetOutOfRange) || !p.belowLocal(from) {
		return b, err
	}
	if !p.remoteHolds(from) {
		return nil, fmt.Errorf("%w: %s-%d: offset %d is below the local log start and the remote tier is not loaded yet",
			ErrOffsetNotAvailable, p.topic, p.id, from)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rb, rerr := p.tier.Load().Read(ctx, from, maxBytes)
	if rerr != nil {
		if errors.Is(rerr, tiered.ErrOutOfRange) {
			return b, err
		}
		// KAFKA_STORAGE_ERROR: retriable, the client fetches again.
		return nil, fmt.Errorf("%w: remote read of %s-%d at %d: %w", ErrStorage, p.topic, p.id, from, rerr)
	}
	return rb, nil
}

// remoteHolds reports whether from is below the local log start and in
// the remote tier.
func (p *Partition) remoteHolds(from record.Offset) bool {
	tp := p.tier.Load()
	if tp == nil || from >= p.log.LogStartOffset() {
		return false
	}
	rs := tp.RemoteStart()
	return rs >= 0 && from >= rs
}

// latestTiered answers ListOffsets LATEST_TIERED_TIMESTAMP (-5): the
// highest offset in remote storage, -1 when there is none.
func (p *Partition) latestTiered() record.Offset {
	if tp := p.tier.Load(); tp != nil && tp.UploadedEnd() > 0 {
		return tp.UploadedEnd() - 1
	}
	return record.NoOffset
}

// remoteOffsetForTimestamp searches the remote tier for ListOffsets by
// time; ok is false when the local log is to be searched instead.
func (p *Partition) remoteOffsetForTimestamp(ts int64) (record.Offset, int64, bool, error) {
	tp := p.tier.Load()
	if tp == nil || tp.RemoteStart() < 0 {
		return record.NoOffset, -1, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	off, found, ok, err := tp.OffsetForTimestamp(ctx, ts)
	if err != nil {
		return record.NoOffset, -1, false, fmt.Errorf("broker: remote offset for timestamp %d in %s-%d: %w", ts, p.topic, p.id, err)
	}
	return off, found, ok, nil
}

// deleteRecordsTiered is DeleteRecords on a partition with remote data: an
// offset at or below the local log start moves only the remote start (done
// is then true); a higher one first drops every remote segment below it
// and leaves the local log to the caller.
func (p *Partition) deleteRecordsTiered(before record.Offset) (start record.Offset, done bool, err error) {
	tp := p.tier.Load()
	if tp == nil || tp.RemoteStart() < 0 {
		return record.NoOffset, false, nil
	}
	if cur := p.logStart(); before <= cur {
		return cur, true, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tp.DeleteRecordsBefore(ctx, before); err != nil {
		return record.NoOffset, false, fmt.Errorf("broker: delete remote records of %s-%d: %w", p.topic, p.id, err)
	}
	if before <= p.log.LogStartOffset() {
		return before, true, nil
	}
	return record.NoOffset, false, nil
}

// dropRemote deletes the partition's remote data (topic deletion).
func (p *Partition) dropRemote() {
	tp := p.tier.Load()
	if tier := p.b.cfg.Tiered.Tier; tp == nil && tier != nil && p.config.Load().remoteStorage() {
		tp = tier.Partition(p.topic, p.topicID.String(), int32(p.id), p.log)
	}
	if tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tp.DeleteAll(ctx); err != nil {
		p.b.logger.Warn("broker: delete remote data (orphans remain)", "topic", p.topic, "partition", p.id, "err", err)
	}
}
