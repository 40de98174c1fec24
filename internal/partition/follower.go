package partition

import (
	"fmt"

	"github.com/strandmq/strand/internal/record"
)

// FollowerAt reports whether p follows at epoch (p.mu held): an answer
// fetched for an older role is dropped.
func (p *Partition) FollowerAt(epoch record.Epoch) bool {
	s := p.state()
	return !p.mu.closed && s.role == RoleFollower && s.epoch == epoch
}

// TruncateAsFollower cuts the log at o if p still follows at epoch.
func (p *Partition) TruncateAsFollower(epoch record.Epoch, o record.Offset) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.FollowerAt(epoch) {
		return nil
	}
	if o >= p.log.LogEndOffset() {
		// Nothing to cut, but the log must forget an epoch it assigned as
		// leader and wrote nothing in (partlog.TruncateTo does): else its
		// next fetch names that epoch, the leader answers that it
		// diverges, and the follower truncates nowhere — forever.
		if err := p.log.TruncateTo(o); err != nil {
			return storageError(p, err)
		}
		return nil
	}
	return p.truncateLocked(o)
}

// ResetAsFollower empties the log and starts it at o, if p still follows
// at epoch.
func (p *Partition) ResetAsFollower(epoch record.Epoch, o record.Offset) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.FollowerAt(epoch) {
		return nil
	}
	if err := p.log.ResetTo(o); err != nil {
		return storageError(p, err)
	}
	return p.rebuildProducersLocked()
}

// AppendFromLeader appends batches fetched from the leader as they are,
// learns their producers, and takes the leader's high watermark and log
// start offset. Batches this replica has already are skipped; one that
// straddles its end replaces what it has from there.
func (p *Partition) AppendFromLeader(epoch record.Epoch, batches []byte, leaderHW, leaderStart record.Offset) error {
	p.mu.Lock()
	if !p.FollowerAt(epoch) {
		p.mu.Unlock()
		return nil
	}
	leo := p.log.LogEndOffset()
	for len(batches) > 0 {
		h, err := record.ParseHeader(batches)
		if err != nil || h.Size() > len(batches) {
			p.mu.Unlock()
			return fmt.Errorf("%w: %s-%d: the leader sent a batch that does not parse: %v", ErrCorruptMessage, p.Topic(), p.ID(), err)
		}
		if h.BaseOffset+record.Offset(h.LastOffsetDelta) >= leo {
			if h.BaseOffset < leo {
				if err := p.truncateLocked(h.BaseOffset); err != nil {
					p.mu.Unlock()
					return err
				}
			}
			break
		}
		batches = batches[h.Size():]
	}
	pending, err := p.log.AppendAsFollower(batches)
	for rest := batches; len(rest) > 0; {
		h, herr := record.ParseHeader(rest)
		if herr != nil || h.BaseOffset >= p.log.LogEndOffset() {
			break
		}
		p.observeLocked(p.mu.producers, h, rest[:h.Size()])
		rest = rest[h.Size():]
	}
	if rolled := p.log.ActiveBase(); rolled != p.mu.rolledAt {
		p.mu.rolledAt = rolled
		p.snapshotAtRollLocked()
	}
	p.mu.Unlock()
	if err != nil {
		return storageError(p, err)
	}
	if err := pending.Wait(); err != nil { // report only what is durable when the flush policy asks for it
		return storageError(p, err)
	}
	p.log.SetHighWatermark(min(leaderHW, p.log.LogEndOffset()))
	if start := min(leaderStart, p.log.HighWatermark()); start > p.log.LogStartOffset() {
		if _, err := p.log.DeleteRecordsBefore(start); err != nil {
			return fmt.Errorf("broker: %s-%d: follow the leader's log start %d: %w", p.Topic(), p.ID(), start, err)
		}
	}
	return nil
}
