package partlog

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// Files a log keeps beside its segments.
const (
	startOffsetFile = "log-start-offset"
	epochFile       = "leader-epoch-checkpoint"
	cleanFile       = ".clean-shutdown"
)

// Log is one partition's durable log. One goroutine at a time may write
// (Append, retention, truncation are serialised internally); any number may
// read concurrently with it.
type Log struct {
	fs     vfs.FS
	dir    string
	logger *slog.Logger

	start  atomic.Int64 // log start offset
	end    atomic.Int64 // log end offset: the next offset to assign
	hwm    atomic.Int64 // high watermark: readers see offsets below it
	closed atomic.Bool
	failed atomic.Bool // l.mu.failed is set (for Failed, without the lock)
	// damage, once set, is the damaged data that took the log offline
	// (damage.go): it refuses appends and reads until an operator acts.
	damage atomic.Pointer[CorruptionError]
	// strayAbove: at Open, an empty last segment based above this and its
	// predecessor's end is a stray file (dropStraySegment).
	strayAbove record.Offset

	// mu serialises writers and guards their state.
	mu struct {
		sync.Mutex
		cfg        Config
		failed     error
		epoch      record.Epoch
		manualHWM  bool
		hwTarget   record.Offset // manual mode: the high watermark asked for (hwm may lag it at the fsync gate)
		unflushed  int64
		lastFlush  int64                // unix ms
		writes     uint64               // appends so far (group commit counts in them)
		syncWanted record.Offset        // highest end offset an append waits to see durable
		durable    durable              // where the log was last known to be on disk
		startDirty bool                 // start offset moved inside a segment and is not yet persisted
		tierGate   func() record.Offset // set: tiered retention (tier.go)
	}

	// deleted holds segments out of the list whose files are renamed
	// .deleted and not yet removed (deleteOldestLocked). Its own lock, not
	// mu: the flusher removes them, and Close holds mu while it waits for
	// the flusher to stop.
	deleted struct {
		sync.Mutex
		list []*segment
	}

	// segs guards the segment list. Writers hold it exclusively only to add or
	// remove segments; readers hold it shared for the length of a read, so a
	// segment is never closed under a reader.
	segs struct {
		sync.RWMutex
		list []*segment
	}

	epochs epochCache

	group groupSync // fsyncs the flush policy asks for, in groups (groupsync.go)

	// dirGen counts segments created by rolls, whose directory entries the
	// roll did not make durable; the log's next fsync syncs the directory
	// first (syncDirIfPending) instead of the roll doing it while every
	// append waits. dirSynced is the count the last directory fsync
	// covered; dirMu makes a caller wait for an fsync in progress instead
	// of taking it as done.
	dirGen    atomic.Uint64
	dirMu     sync.Mutex
	dirSynced uint64 // guarded by dirMu

	flush struct {
		kick    chan struct{}
		done    chan struct{}
		err     atomic.Pointer[error]
		pointMu sync.Mutex
		point   record.Offset // recovery point last persisted
	}

	waitMu sync.Mutex
	waitCh chan struct{}
	// waitTaken: Wait handed out waitCh since the last wake, so the next
	// wake must close it (under waitMu). Until then an append leaves it
	// open: a new channel per append was 4% of the broker's CPU when
	// produce spread over 10,000 partitions that nobody long-polled.
	waitTaken bool
	hwSubs    notifiers // NotifyHighWatermark's (notify.go), under waitMu
	ends      endWake   // wakes on appends (hwm.go)
	// hwmSaved is the high watermark last checkpointed (manual mode).
	hwmSaved atomic.Int64

	clean    sync.Mutex        // serialises ReplaceSegments
	testHook func(step string) // called between the steps of a segment swap
}

// Open opens (creating if needed) the log in dir and recovers it: a torn or
// corrupt tail is truncated, invalid indexes are rebuilt.
func Open(fs vfs.FS, dir string, cfg Config) (*Log, error) {
	return OpenTaken(fs, dir, cfg, nil)
}

// OpenTaken is Open with the clean-shutdown marker already taken by
// TakeCleanMarker (nil: Open takes it).
func OpenTaken(fs vfs.FS, dir string, cfg Config, m *CleanMarker) (*Log, error) {
	cfg = cfg.withDefaults()
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("partlog: create %s: %w", dir, err)
	}
	l := &Log{fs: fs, dir: dir, logger: cfg.Logger, waitCh: make(chan struct{})}
	l.mu.cfg = cfg
	l.mu.epoch = record.NoEpoch
	l.mu.lastFlush = cfg.Now().UnixMilli()
	l.epochs.path = filepath.Join(dir, epochFile)
	l.epochs.fs, l.epochs.dir = fs, dir

	if m == nil {
		taken, err := TakeCleanMarker(fs, dir)
		if err != nil {
			return nil, err
		}
		m = &taken
	}
	// The marker's removal is made durable before anything else, so that
	// a crash from now on is seen as unclean.
	if m.Clean && !m.Durable {
		if err := fs.SyncDir(dir); err != nil {
			return nil, fmt.Errorf("partlog: sync %s: %w", dir, err)
		}
	}
	clean, cleanEnd := m.Clean, m.End
	var err error
	l.flush.point = loadRecoveryPoint(fs, dir)
	// The highest base an empty last segment may have: the end offset at a
	// clean close, else the recovery point (see dropStraySegment).
	l.strayAbove = l.flush.point
	if cleanEnd >= 0 {
		l.strayAbove = cleanEnd
	}
	if err := l.openSegments(clean); err != nil {
		l.closeSegments()
		return nil, err
	}
	if err := l.epochs.load(); err != nil {
		cfg.Logger.Warn("partlog: leader epoch checkpoint unreadable; rebuilding it from the batch headers",
			"dir", dir, "file", epochFile, "err", err)
		if err := l.rebuildEpochs(); err != nil {
			l.closeSegments()
			return nil, err
		}
	}
	l.epochs.truncateFromEnd(record.Offset(l.end.Load()))
	if err := l.loadStartOffset(clean); err != nil {
		l.closeSegments()
		return nil, err
	}
	l.openHighWatermark()
	l.group.cond.L = &l.group.mu
	l.mu.Lock()
	l.markDurableLocked() // recovery verified what it kept
	l.mu.syncWanted = record.Offset(l.end.Load())
	l.applyCountRetentionLocked()
	if l.mu.startDirty {
		err = l.storeStartOffsetLocked()
	}
	l.mu.Unlock()
	if err == nil {
		err = l.removeDeleted() // what count retention just deleted
	}
	if err != nil {
		l.closeSegments()
		return nil, err
	}
	l.startFlusher()
	return l, nil
}

// CleanMarker is what a log's clean-shutdown marker said, taken (read and
// removed) by TakeCleanMarker before the log is opened.
type CleanMarker struct {
	// Clean: the marker was there; End is the end offset it recorded (-1
	// when it holds none: older markers are empty).
	Clean bool
	End   record.Offset
	// Durable: the caller already made the removal durable (SyncDir of
	// the log's directory), so OpenTaken need not.
	Durable bool
}

// TakeCleanMarker reads and removes the clean-shutdown marker of the log in
// dir, without making the removal durable: OpenTaken does that before it
// returns. A broker opening thousands of logs takes every marker first, so
// that one directory sync commits all the removals at once instead of one
// journal commit a log.
func TakeCleanMarker(fs vfs.FS, dir string) (CleanMarker, error) {
	p := filepath.Join(dir, cleanFile)
	b, err := vfs.ReadFile(fs, p)
	if err != nil {
		return CleanMarker{End: -1}, nil
	}
	// The marker is written without an fsync: only content that ends in
	// its newline arrived whole.
	m := CleanMarker{Clean: true, End: -1}
	if text, whole := strings.CutSuffix(string(b), "\n"); whole {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil && n >= 0 {
			m.End = record.Offset(n)
		}
	}
	if err := fs.Remove(p); err != nil {
		return CleanMarker{End: -1}, fmt.Errorf("partlog: remove %s: %w", p, err)
	}
	return m, nil
}

func (l *Log) openSegments(clean bool) error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("partlog: list %s: %w", l.dir, err)
	}
	if err := l.recoverSwaps(names); err != nil {
		return err
	}
	// List again only if recoverSwaps may have changed the directory: a
	// listing is one of the few syscalls each of thousands of partitions
	// makes at start-up.
	if slices.ContainsFunc(names, func(n string) bool {
		return strings.HasSuffix(n, swapSuffix) || strings.HasSuffix(n, cleanedSuffix)
	}) {
		if names, err = l.fs.ReadDir(l.dir); err != nil {
			return fmt.Errorf("partlog: list %s: %w", l.dir, err)
		}
	}
	var bases []record.Offset
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") || strings.HasSuffix(n, deletedSuffix) {
			l.fs.Remove(filepath.Join(l.dir, n)) // an interrupted checkpoint write; a deletion the crash cut short
			continue
		}
		if b, ok := parseSegmentName(n); ok {
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	cfg := l.mu.cfg
	var list []*segment
	expect := record.Offset(0)
	for i, b := range bases {
		if b < expect {
			// A segment starting inside its predecessor cannot be trusted.
			return &CorruptionError{File: segmentName(b) + logSuffix, Pos: 0,
				Err: fmt.Errorf("base offset %d overlaps the previous segment ending at %d", b, expect)}
		}
		// Below the recovery point every segment was fsynced whole; from it
		// on, an unclean shutdown may have torn anything. Only that tail may
		// be cut: damage anywhere else takes the log offline (damage.go).
		verify := !clean && (b >= l.flush.point || i == len(bases)-1)
		s, bad, err := openSegment(l.fs, l.dir, b, verify, verify, cfg.IndexIntervalBytes)
		if err != nil {
			return err
		}
		if i > 0 && i == len(bases)-1 && s.size.Load() == 0 && b > expect && b > l.strayAbove {
			if err := l.dropStraySegment(s, expect); err != nil {
				return err
			}
			break
		}
		if s.indexRebuilt != "" {
			cfg.Logger.Warn("partlog: rebuilt the indexes of a segment from its log", "dir", l.dir,
				"file", segmentName(b)+indexSuffix, "reason", s.indexRebuilt)
		}
		if bad != nil && !verify {
			l.MarkDamaged(bad)
			list = append(list, s)
			expect = record.Offset(s.next.Load())
			continue
		}
		if bad != nil {
			cfg.Logger.Warn("partlog: recovered segment by truncating its tail",
				"dir", l.dir, "file", bad.File, "position", bad.Pos, "reason", bad.Err)
		}
		list = append(list, s)
		expect = record.Offset(s.next.Load())
		if verify && bad == nil && i < len(bases)-1 && expect < bases[i+1] {
			// An unsynced sealed segment lost its tail in the crash.
			bad = &CorruptionError{File: s.logName(), Pos: s.size.Load(),
				Err: fmt.Errorf("segment ends at offset %d, before the next segment's %d", expect, bases[i+1])}
			cfg.Logger.Warn("partlog: segment lost its tail", "dir", l.dir, "file", bad.File, "reason", bad.Err)
		}
		if bad != nil && i < len(bases)-1 {
			// Offsets after a torn point were never durable as a sequence:
			// serve nothing past it.
			for _, b := range bases[i+1:] {
				l.logger.Warn("partlog: dropped segment after a torn point", "dir", l.dir, "segment", segmentName(b))
			}
			if err := l.dropSegmentFiles(bases[i+1:], "drop segment after torn point"); err != nil {
				return err
			}
			break
		}
	}
	if len(list) == 0 {
		s, err := createSegment(l.fs, l.dir, 0, cfg.IndexIntervalBytes, true)
		if err != nil {
			return err
		}
		list = append(list, s)
	}
	l.segs.list = list
	last := list[len(list)-1]
	if last.size.Load() > 0 {
		last.firstTS = cfg.Now().UnixMilli()
	}
	l.start.Store(int64(list[0].base))
	l.end.Store(last.next.Load())
	return nil
}

// dropStraySegment removes an empty last segment whose name puts the log's
// end past both its previous segment's end and any end the log recorded:
// a file no roll made (a copy, a typo). Adopting it would move the end
// offset to its name and skip every offset in between; it holds nothing,
// so removing it loses nothing.
func (l *Log) dropStraySegment(s *segment, end record.Offset) error {
	l.logger.Warn("partlog: removing an empty segment file the log never rolled to", "dir", l.dir,
		"file", s.logName(), "log_end_offset", end)
	s.close()
	return l.dropSegmentFiles([]record.Offset{s.base}, "remove stray segment")
}

// dropSegmentFiles deletes the files of segments that were never opened.
func (l *Log) dropSegmentFiles(bases []record.Offset, why string) error {
	for _, b := range bases {
		for _, suf := range segmentSuffixes {
			p := filepath.Join(l.dir, segmentName(b)+suf)
			if err := l.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("partlog: %s: %w", why, err)
			}
		}
	}
	return l.fs.SyncDir(l.dir)
}

func (l *Log) loadStartOffset(clean bool) error {
	b, err := vfs.ReadFile(l.fs, filepath.Join(l.dir, startOffsetFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("partlog: read %s: %w", startOffsetFile, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		l.logger.Warn("partlog: ignoring unreadable log start offset", "dir", l.dir, "file", startOffsetFile, "err", err)
		return nil
	}
	end := l.end.Load()
	if n > end && clean {
		// Nothing was lost at a clean close, so the checkpoint was never
		// written by this log: honouring it would hide every record.
		l.logger.Warn("partlog: ignoring a log start offset past the log end after a clean shutdown",
			"dir", l.dir, "file", startOffsetFile, "log_start_offset", n, "log_end_offset", end)
		l.mu.startDirty = true
		return nil
	}
	if n > l.start.Load() {
		l.start.Store(min(n, end))
	}
	if n > end {
		// The crash lost records the checkpoint had already passed (they
		// were deleted anyway); the next appends reuse those offsets and
		// must not be hidden by it.
		l.logger.Warn("partlog: log start offset past the log end after a crash; starting the log at its end",
			"dir", l.dir, "file", startOffsetFile, "log_start_offset", n, "log_end_offset", end)
		return l.storeStartOffsetLocked()
	}
	return nil
}

func (l *Log) storeStartOffsetLocked() error {
	data := []byte(strconv.FormatInt(l.start.Load(), 10) + "\n")
	if err := vfs.WriteFileSync(l.fs, l.dir, filepath.Join(l.dir, startOffsetFile), data); err != nil {
		return fmt.Errorf("partlog: persist log start offset: %w", err)
	}
	l.mu.startDirty = false
	return nil
}

// Dir is the directory the log lives in.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset is the first offset a reader may ask for.
func (l *Log) LogStartOffset() record.Offset { return record.Offset(l.start.Load()) }

// LogEndOffset is the offset the next appended record will get.
func (l *Log) LogEndOffset() record.Offset { return record.Offset(l.end.Load()) }

// HighWatermark is the offset below which records are visible to readers.
func (l *Log) HighWatermark() record.Offset { return record.Offset(l.hwm.Load()) }

// SetHighWatermark moves the high watermark (replication calls it once a
// quorum has an offset). It switches the log to manual mode if it was not
// opened in it: from then on the high watermark no longer follows the end
// offset. It never passes the end offset, nor a batch still waiting for the
// fsync the flush policy asks for (it gets there when the fsync does), and
// never moves backwards except through TruncateTo.
func (l *Log) SetHighWatermark(o record.Offset) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.manualHWM = true
	l.mu.hwTarget = max(l.mu.hwTarget, o)
	l.publishManualLocked()
}

// Wait returns a channel closed the next time the high watermark advances or
// the log closes: what a long-polling fetch waits on.
func (l *Log) Wait() <-chan struct{} {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	l.waitTaken = true
	return l.waitCh
}

func (l *Log) publishHWM(o record.Offset) {
	l.hwm.Store(int64(o))
	l.wake()
}

func (l *Log) wake() {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	select {
	case <-l.waitCh: // already closed: the log is closed
		return
	default:
	}
	l.hwSubs.fire()
	closed := l.closed.Load()
	if !l.waitTaken && !closed {
		return // nobody holds the channel: the next waiter can have it
	}
	l.waitTaken = false
	close(l.waitCh)
	if !closed {
		l.waitCh = make(chan struct{})
	}
}

// SetConfig changes the log's tunables; they apply from the next operation.
func (l *Log) SetConfig(cfg Config) {
	cfg = cfg.withDefaults()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.cfg = cfg
	for _, s := range l.segmentsSnapshot() {
		s.indexEvery = cfg.IndexIntervalBytes
	}
	l.applyCountRetentionLocked()
}

func (l *Log) segmentsSnapshot() []*segment {
	l.segs.RLock()
	defer l.segs.RUnlock()
	return append([]*segment(nil), l.segs.list...)
}

func (l *Log) active() *segment {
	l.segs.RLock()
	defer l.segs.RUnlock()
	return l.segs.list[len(l.segs.list)-1]
}

// Size is the number of bytes of batches in the log.
func (l *Log) Size() int64 {
	l.segs.RLock()
	defer l.segs.RUnlock()
	var n int64
	for _, s := range l.segs.list {
		n += s.size.Load()
	}
	return n
}

// AssignEpoch sets the leader epoch stamped on batches appended from now on
// and records that the epoch starts at the current end offset, as Kafka does
// when a leader is elected, so EndOffsetForEpoch knows it before any append.
func (l *Log) AssignEpoch(e record.Epoch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.epoch = e
	if e == record.NoEpoch {
		return nil
	}
	if err := l.epochs.assign(e, record.Offset(l.end.Load())); err != nil {
		return fmt.Errorf("partlog: persist leader epoch %d: %w", e, err)
	}
	return nil
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101) as Kafka does:
// the largest epoch <= e the log knows and the offset where the epoch after
// it starts (the end offset for the latest); for an epoch older than every
// known one, e and the first known epoch's start; (NoEpoch, NoOffset) for
// an epoch above the latest or when it knows none.
func (l *Log) EndOffsetForEpoch(e record.Epoch) (record.Epoch, record.Offset) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(e, record.Offset(l.end.Load()))
}

// LatestEpoch is the newest leader epoch the log knows (from a batch or
// an election), or NoEpoch: what a follower sends as its last fetched
// epoch.
func (l *Log) LatestEpoch() record.Epoch {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.epochs.latest(); ok {
		return e.epoch
	}
	return record.NoEpoch
}

// syncDirIfPending makes the directory entries of segments created by
// rolls durable, if any are not yet.
func (l *Log) syncDirIfPending() error {
	l.dirMu.Lock()
	defer l.dirMu.Unlock()
	// Loaded before the fsync: a roll counted after it is synced next time.
	gen := l.dirGen.Load()
	if gen == l.dirSynced {
		return nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("partlog: sync dir after rolling a segment: %w", err)
	}
	l.dirSynced = gen
	return nil
}

// Sync makes everything appended so far durable.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	return l.syncLocked()
}

func (l *Log) syncLocked() error {
	if l.mu.failed != nil || l.damage.Load() != nil {
		return l.refusal()
	}
	if err := l.flushErr(); err != nil {
		l.setFailedLocked(err)
		return err
	}
	if err := l.syncDirIfPending(); err != nil {
		l.setFailedLocked(err)
		return err
	}
	list := l.segmentsSnapshot()
	for _, s := range list {
		if !s.dirty.Load() {
			continue
		}
		if err := errors.Join(s.flushIndexes(), s.sync()); err != nil {
			l.setFailedLocked(err)
			return err
		}
	}
	if err := l.advanceRecoveryPoint(list[len(list)-1].base); err != nil {
		return err
	}
	l.mu.unflushed = 0
	l.mu.lastFlush = l.mu.cfg.Now().UnixMilli()
	l.markDurableLocked()
	l.publishDurableLocked()
	if l.mu.startDirty {
		return l.storeStartOffsetLocked()
	}
	return nil
}

// Close syncs the log, marks it cleanly shut down and releases its files.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Swap(true) {
		return nil
	}
	l.stopFlusher()
	var err error
	if l.damage.Load() == nil { // a damaged log stays as found: no sync, no clean marker
		err = l.syncLocked()
	}
	if err == nil && l.damage.Load() == nil && l.mu.manualHWM {
		err = l.checkpointHWM()
	}
	if err == nil && l.damage.Load() == nil {
		err = l.writeCleanMarker()
	}
	l.segs.Lock()
	err = errors.Join(err, l.closeSegments())
	l.segs.Unlock()
	err = errors.Join(err, l.removeDeleted())
	l.wake()
	l.ends.wake(true)
	return err
}

// writeCleanMarker records a clean close and the end offset. It is not
// fsynced, and need not be: the data it vouches for was synced before it
// was written, so it can never be durable without them, and a marker the
// crash lost only makes the next open verify what was fine.
func (l *Log) writeCleanMarker() error {
	f, err := vfs.Create(l.fs, filepath.Join(l.dir, cleanFile))
	if err != nil {
		return fmt.Errorf("partlog: write clean-shutdown marker: %w", err)
	}
	_, err = f.Write([]byte(strconv.FormatInt(l.end.Load(), 10) + "\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("partlog: write clean-shutdown marker: %w", err)
	}
	return nil
}

func (l *Log) closeSegments() error {
	var errs []error
	for _, s := range l.segs.list {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	l.mu.Lock()
	if !l.closed.Swap(true) {
		l.stopFlusher()
	}
	l.segs.Lock()
	l.closeSegments()
	l.segs.Unlock()
	l.mu.Unlock()
	l.wake()
	if err := l.fs.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("partlog: delete %s: %w", l.dir, err)
	}
	return nil
}

// cfgLogger is the configured logger, safe to call without l.mu: the logger
// is fixed at Open.
func (l *Log) cfgLogger() *slog.Logger { return l.logger }
