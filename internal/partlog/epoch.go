package partlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// epochCache maps leader epochs to the first offset written in each, the
// record a follower needs to truncate correctly after a leader change
// (KIP-101). It is persisted in Kafka's leader-epoch-checkpoint text format:
//
//	0                 version
//	2                 number of entries
//	0 0               epoch start-offset
//	3 1200
//
// Guarded by Log.mu.
type epochCache struct {
	fs      vfs.FS
	dir     string
	path    string
	entries []epochEntry
}

type epochEntry struct {
	epoch record.Epoch
	start record.Offset
}

func (c *epochCache) load() error {
	b, err := vfs.ReadFile(c.fs, c.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if len(lines) < 2 || string(lines[0]) != "0" {
		return fmt.Errorf("partlog: %s: bad header", epochFile)
	}
	n, err := strconv.Atoi(string(lines[1]))
	if err != nil || n != len(lines)-2 {
		return fmt.Errorf("partlog: %s: bad entry count", epochFile)
	}
	for _, ln := range lines[2:] {
		var e, o int64
		if _, err := fmt.Sscanf(string(ln), "%d %d", &e, &o); err != nil {
			return fmt.Errorf("partlog: %s: %q: %w", epochFile, ln, err)
		}
		c.entries = append(c.entries, epochEntry{record.Epoch(e), record.Offset(o)})
	}
	return nil
}

func (c *epochCache) store() error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(c.entries))
	for _, e := range c.entries {
		fmt.Fprintf(&b, "%d %d\n", e.epoch, e.start)
	}
	return vfs.WriteFileSync(c.fs, c.dir, c.path, b.Bytes())
}

func (c *epochCache) latest() (epochEntry, bool) {
	if len(c.entries) == 0 {
		return epochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch e starts at offset start, if e is new.
func (c *epochCache) assign(e record.Epoch, start record.Offset) error {
	if last, ok := c.latest(); ok && last.epoch >= e {
		return nil
	}
	c.entries = append(c.entries, epochEntry{e, start})
	return c.store()
}

// rebuildEpochs recomputes the epoch cache from the leader epoch every
// batch header carries (Kafka rebuilds its leader-epoch-checkpoint the same
// way), and stores it. An epoch learned only at an election, before any
// batch of it, cannot be recovered; the next AssignEpoch records it again.
func (l *Log) rebuildEpochs() error {
	l.epochs.entries = nil
	if l.Damaged() != nil {
		return nil // offline: its headers cannot be trusted
	}
	err := l.ScanHeaders(record.Offset(l.start.Load()), func(h record.Header) error {
		if last, ok := l.epochs.latest(); h.LeaderEpoch >= 0 && (!ok || h.LeaderEpoch > last.epoch) {
			l.epochs.entries = append(l.epochs.entries, epochEntry{h.LeaderEpoch, h.BaseOffset})
		}
		return nil
	})
	if errors.Is(err, ErrDamaged) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("partlog: rebuild %s: %w", epochFile, err)
	}
	return l.epochs.store()
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor: the latest
// epoch ends at the log end; an epoch above it, or none asked, is unknown
// (−1, −1); otherwise the largest known epoch ≤ e and the start of the
// next one.
func (c *epochCache) endOffsetFor(e record.Epoch, end record.Offset) (record.Epoch, record.Offset) {
	last, ok := c.latest()
	switch {
	case !ok || e == record.NoEpoch || e > last.epoch:
		return record.NoEpoch, record.NoOffset
	case e == last.epoch:
		return last.epoch, end
	}
	// The first entry with an epoch above e starts where e's run ends.
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].epoch > e })
	if i == 0 {
		// Older than anything the log remembers (retention took its
		// records): Kafka answers with the asked epoch, ending where the
		// first known one starts, so a follower truncates to there.
		return e, c.entries[0].start
	}
	return c.entries[i-1].epoch, c.entries[i].start
}

// truncateFromEnd forgets epochs that start at or after end.
func (c *epochCache) truncateFromEnd(end record.Offset) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].start >= end })
	if i == len(c.entries) {
		return false
	}
	c.entries = c.entries[:i]
	return true
}

// truncateFromStart forgets epochs wholly below start; the epoch in force at
// start is kept, starting at start.
func (c *epochCache) truncateFromStart(start record.Offset) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].start > start })
	if i <= 1 && (i == 0 || c.entries[0].start == start) {
		return false
	}
	kept := c.entries[i-1:]
	kept[0].start = start
	c.entries = append([]epochEntry(nil), kept...)
	return true
}
