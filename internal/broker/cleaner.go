package broker

import (
	"github.com/strandmq/strand/internal/compact"
)

// CleanLogs runs the compaction cleaner once, now, on every partition of
// every topic whose cleanup.policy includes compact (__consumer_offsets
// among them); the broker also does so every CleanerBackoff. A partition is
// cleaned only if it is due (see package compact); errors are logged. Calls
// are serialised: one clean at a time per broker.
func (b *Broker) CleanLogs() {
	b.cleaning.Lock()
	defer b.cleaning.Unlock()
	cl := &compact.Cleaner{FS: b.fs, Now: b.cfg.Now, Logger: b.logger, MapBytes: b.cfg.CleanerMapBytes}
	for _, t := range b.Topics() {
		for _, p := range t.local() {
			select {
			case <-b.stop:
				return
			default:
			}
			cfg := t.Config
			if !cfg.Compacted() {
				continue
			}
			pol := cfg.CompactPolicy()
			if pol.Stable, pol.Aborted = p.CleanerTxnBounds(); pol.Stable == 0 {
				continue // an undecided transaction at the log start: nothing is stable
			}
			if _, err := cl.Clean(p.Log(), pol); err != nil && !p.Closed() {
				b.logger.Warn("broker: compaction failed", "topic", t.Name, "partition", p.ID(), "err", err)
			}
		}
	}
}
