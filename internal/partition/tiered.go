package partition

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/tiered"
)

// Tiered storage (KIP-405): a partition's remote tier (package tiered),
// its uploads when it leads, and its reads and offsets below the local
// log start.

// TierStep runs one pass of the tier for p: upload what is sealed, apply
// total retention to the remote segments, and with orphans delete orphan
// objects (the leader only).
func (p *Partition) TierStep(ctx context.Context, orphans bool) error {
	tc := p.config.Load()
	tp := p.tier.Load()
	if !tc.RemoteStorage {
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
		// KIP-405: only the leader uploads. A follower reads the
		// manifest, to serve remote reads (KIP-392 consumers) and to
		// delete local segments the leader has uploaded.
		tp = p.followerTier()
		p.syncTierGate(tp, tc.RemoteCopyDisable)
		return tp.Load(ctx)
	}
	if tp == nil {
		tp = p.tierHandle()
	}
	p.syncTierGate(tp, tc.RemoteCopyDisable)
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
	// With remote.log.copy.disable the remote data is read-only: no
	// upload, but it still expires by the total retention.
	if !tc.RemoteCopyDisable {
		if err := p.upload(ctx, tp); err != nil {
			return err
		}
	} else {
		tp.NotUploading() // nothing waits for an upload that will not come
	}
	if _, err := tp.ApplyRetention(ctx, tc.TotalRetention); err != nil {
		return err
	}
	if orphans {
		if _, err := tp.CleanOrphans(ctx); err != nil {
			return err
		}
	}
	return nil
}

// upload uploads p's sealed segments as the leader. Fenced (a newer
// leader uploads now), it keeps the gate (the local segments stay) and
// claims afresh if this node leads again.
func (p *Partition) upload(ctx context.Context, tp *tiered.Partition) error {
	_, err := tp.Upload(ctx)
	if errors.Is(err, tiered.ErrFenced) {
		if lerr := p.followerTier().Load(ctx); lerr != nil {
			return errors.Join(err, lerr)
		}
	}
	return err
}

// syncTierGate sets the log's local retention to tp's upload end, or,
// with remote.log.copy.disable, takes it off: nothing more is uploaded, so
// the local segments follow the total retention (Kafka 3.9, KIP-950).
func (p *Partition) syncTierGate(tp *tiered.Partition, copyDisabled bool) {
	if copyDisabled {
		p.log.SetTierGate(nil)
	} else {
		p.log.SetTierGate(tp.UploadedEnd)
	}
}

// isTiered reports whether p's topic keeps its data in this node's
// object-storage tier.
func (p *Partition) isTiered() bool { return p.node.Tier != nil && p.config.Load().RemoteStorage }

// tierHandle returns p's remote-tier handle, making it when p has none.
// The local retention gate goes on with it: until the handle has read
// the manifest the gate reads -1, so an unreachable store keeps every
// local segment.
func (p *Partition) tierHandle() *tiered.Partition {
	for {
		if tp := p.tier.Load(); tp != nil {
			return tp
		}
		tp := p.node.Tier.Partition(p.topic, p.topicID.String(), int32(p.id), p.log)
		tp.SetSnapshotter(p.producerSnapshotAt)
		if p.tier.CompareAndSwap(nil, tp) {
			p.log.SetTierGate(tp.UploadedEnd)
			return tp
		}
	}
}

// followerTier returns p's tier handle for reading: a handle this node
// claimed while it led (or one a newer leader fenced) is replaced by a
// fresh one, which only reads the manifests the leader writes.
func (p *Partition) followerTier() *tiered.Partition {
	tp := p.tierHandle()
	if !tp.Claimed() && !tp.Fenced() {
		return tp
	}
	fresh := p.node.Tier.Partition(p.topic, p.topicID.String(), int32(p.id), p.log)
	fresh.SetSnapshotter(p.producerSnapshotAt)
	if !p.tier.CompareAndSwap(tp, fresh) {
		return p.tier.Load()
	}
	p.log.SetTierGate(fresh.UploadedEnd)
	return fresh
}

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
	if p.node.Tier == nil || !p.config.Load().RemoteStorage {
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
func (p *Partition) remoteRead(buf, b []byte, err error, from record.Offset, maxBytes int) ([]byte, error) {
	if err == nil || !errors.Is(err, partlog.ErrOffsetOutOfRange) || !p.belowLocal(from) {
		return b, err
	}
	if !p.remoteHolds(from) {
		return nil, fmt.Errorf("%w: %s-%d: offset %d is below the local log start and the remote tier is not loaded yet",
			ErrOffsetNotAvailable, p.topic, p.id, from)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rb, rerr := p.tier.Load().ReadInto(ctx, buf, from, maxBytes)
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

// earliestPendingUpload answers ListOffsets EARLIEST_PENDING_UPLOAD (-6,
// KIP-1023): the first offset the store does not hold yet — the local log
// start when nothing is uploaded; -1 for a topic that uploads nothing
// (untiered, or remote.log.copy.disable).
func (p *Partition) earliestPendingUpload() (record.Offset, int64, error) {
	if !p.isTiered() || p.config.Load().RemoteCopyDisable {
		return record.NoOffset, -1, nil
	}
	if p.tierPending() {
		return record.NoOffset, -1, fmt.Errorf("%w: %s-%d: the remote tier is not loaded yet", ErrOffsetNotAvailable, p.topic, p.id)
	}
	return max(p.tier.Load().UploadedEnd(), p.log.LogStartOffset()), -1, nil
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
	if tier := p.node.Tier; tp == nil && tier != nil && p.config.Load().RemoteStorage {
		tp = tier.Partition(p.topic, p.topicID.String(), int32(p.id), p.log)
	}
	if tp == nil {
		return
	}
	// Journaled first: a deletion the store refuses, or a crash cuts
	// short, is finished by a later tier pass (remote_deletes.go).
	if err := ForgetRemote(p.node, p.topic, p.topicID, p.id); err != nil {
		p.node.Logger.Warn("broker: remote data is deleted now but not retried if that fails", "topic", p.topic, "partition", p.id, "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tp.DeleteAll(ctx); err != nil {
		p.node.Logger.Warn("broker: delete remote data (the next tier pass retries)", "topic", p.topic, "partition", p.id, "err", err)
		return
	}
	if p.node.RemoteDeletes != "" {
		_ = dropEntry(p.node, journalEntry(p.node, p.topicID, p.id)) // a failure only repeats the deletion later
	}
}
