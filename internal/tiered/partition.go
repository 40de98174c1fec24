package tiered

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// Partition is the tier's state for one partition: its newest manifest
// and the uploads in flight. Its methods are safe for concurrent use;
// one Upload of a partition runs at a time, putting a window of its
// segments at once and recording them in the manifest in offset order.
type Partition struct {
	t      *Tier
	log    *partlog.Log
	prefix string
	logger *slog.Logger

	upload sync.Mutex // one Upload, ApplyRetention or CleanOrphans at a time
	// written are the keys of the manifests this handle wrote, oldest
	// first, at most keepManifests (guarded by upload).
	written []string
	mu      struct {
		sync.Mutex
		man      *Manifest
		key      string // the newest manifest's key, "" when none
		epoch    record.Epoch
		claimed  bool
		loaded   bool
		fenced   bool
		inflight map[string]bool // upload ids not yet in a manifest
	}
	// snapshot returns the producer snapshot at an offset (a sealed
	// segment's next offset), uploaded beside the segment; nil: none.
	snapshot func(at record.Offset) ([]byte, error)

	end   atomic.Int64 // the manifest's End, for the local retention gate
	start atomic.Int64 // the manifest's LogStart when it holds segments, else -1

	// waiting is the oldest sealed segment an upload pass found not yet
	// in the store, and since when (UploadBehind).
	waiting struct {
		sync.Mutex
		base  record.Offset // -1: none waits
		since time.Time
	}
}

// SetSnapshotter makes every later upload put fn(segment's next offset),
// the producer state there, beside the segment (KIP-405's producer
// snapshot). Call it before the first Upload.
func (p *Partition) SetSnapshotter(fn func(at record.Offset) ([]byte, error)) { p.snapshot = fn }

// Prefix is the key prefix of the partition's objects.
func (p *Partition) Prefix() string { return p.prefix }

// UploadedEnd is the offset below which the store holds (or held, before
// total retention) every batch; -1 before the first upload. It is
// partlog's tier gate.
func (p *Partition) UploadedEnd() record.Offset { return record.Offset(p.end.Load()) }

// RemoteStart is the first offset the store holds, or -1 when it holds no
// segment.
func (p *Partition) RemoteStart() record.Offset { return record.Offset(p.start.Load()) }

// Manifest returns a copy of the newest manifest this node knows.
func (p *Partition) Manifest() *Manifest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.man.clone()
}

// Loaded reports whether the newest manifest has been read (Load or
// Claim): until then RemoteStart and UploadedEnd know nothing.
func (p *Partition) Loaded() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.loaded
}

// Load reads the newest manifest without claiming the partition, so that
// reads and offsets know the remote tier at once after a restart.
func (p *Partition) Load(ctx context.Context) error {
	p.upload.Lock()
	defer p.upload.Unlock()
	key, _, err := p.newest(ctx)
	if err != nil {
		return err
	}
	man := emptyManifest()
	if key != "" {
		if man, err = p.load(ctx, key); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.claimed {
		p.mu.man, p.mu.key = man, key
		p.publishLocked()
	}
	p.mu.loaded = true
	return nil
}

// Claimed reports whether Claim succeeded and no newer leader has fenced
// this node since.
func (p *Partition) Claimed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.claimed && !p.mu.fenced
}

// Fenced reports whether a newer leader has claimed the partition.
func (p *Partition) Fenced() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.fenced
}

// newest lists the manifests and returns the greatest key, "" if none.
func (p *Partition) newest(ctx context.Context) (string, []ObjectInfo, error) {
	var objs []ObjectInfo
	err := p.t.retry(ctx, "list manifests", func() error {
		var err error
		objs, err = p.t.cfg.Store.List(ctx, p.prefix+"manifest/")
		return err
	})
	if err != nil {
		return "", nil, err
	}
	objs = slices.DeleteFunc(objs, func(o ObjectInfo) bool {
		_, _, ok := parseManifestKey(p.prefix, o.Key)
		return !ok
	})
	if len(objs) == 0 {
		return "", nil, nil
	}
	return objs[len(objs)-1].Key, objs, nil
}

func (p *Partition) load(ctx context.Context, key string) (*Manifest, error) {
	var b []byte
	err := p.t.retry(ctx, "get manifest", func() error {
		var err error
		b, err = p.t.cfg.Store.Get(ctx, key, 0, -1)
		return err
	})
	if err != nil {
		return nil, err
	}
	return decodeManifest(b)
}

// Claim makes this node the partition's uploader at leader epoch epoch: it
// reads the newest manifest and, when its epoch is lower, writes it again
// under epoch, so that anything a deposed leader writes later sorts below.
// It fails with ErrFenced when a higher epoch already holds the partition.
func (p *Partition) Claim(ctx context.Context, epoch record.Epoch) error {
	p.upload.Lock()
	defer p.upload.Unlock()
	key, _, err := p.newest(ctx)
	if err != nil {
		return err
	}
	man := emptyManifest()
	if key != "" {
		if man, err = p.load(ctx, key); err != nil {
			return err
		}
	}
	p.mu.Lock()
	if man.Epoch > epoch {
		p.mu.fenced = true
		p.mu.Unlock()
		return fmt.Errorf("%w: %s is at epoch %d, this node at %d", ErrFenced, p.prefix, man.Epoch, epoch)
	}
	p.mu.man, p.mu.key, p.mu.epoch, p.mu.fenced = man, key, epoch, false
	p.mu.loaded = true
	p.publishLocked()
	p.mu.Unlock()
	if man.Epoch < epoch {
		next := man.clone()
		next.Epoch, next.Seq = epoch, man.Seq+1
		if err := p.write(ctx, next); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.mu.claimed = true
	p.mu.Unlock()
	return nil
}

func (p *Partition) publishLocked() {
	m := p.mu.man
	p.end.Store(int64(m.End))
	if len(m.Segments) == 0 {
		p.start.Store(-1)
	} else {
		p.start.Store(int64(max(m.LogStart, m.Segments[0].Start)))
	}
}

// write writes next as the newest manifest, unless a higher epoch has
// claimed the partition or the newest manifest is not the one this node
// last read or wrote (both ErrFenced). Its caller holds p.upload, which
// every writer of the manifest holds, and not p.mu: the store may take
// its time (or hang), and the readers of the manifest — a segment roll
// on the append path among them (Loaded) — must not wait for it.
func (p *Partition) write(ctx context.Context, next *Manifest) error {
	key, _, err := p.newest(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	cur := p.mu.key
	p.mu.Unlock()
	if key != cur {
		if e, _, ok := parseManifestKey(p.prefix, key); ok && e >= next.Epoch {
			p.mu.Lock()
			p.mu.fenced = true
			p.mu.Unlock()
			return fmt.Errorf("%w: %s has manifest %s, this node expected %q", ErrFenced, p.prefix, key, cur)
		}
	}
	next.Version = manifestVersion
	b, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("tiered: encode manifest: %w", err)
	}
	nkey := manifestKey(p.prefix, next.Epoch, next.Seq)
	err = p.t.retry(ctx, "put manifest", func() error {
		return p.t.cfg.Store.Put(ctx, nkey, bytes.NewReader(b), int64(len(b)))
	})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.mu.man, p.mu.key = next, nkey
	p.publishLocked()
	p.mu.Unlock()
	p.forgetOld(ctx, nkey)
	return nil
}

// forgetOld deletes the manifests this handle wrote before the newest
// keepManifests, at once rather than at the next orphan pass: every write
// lists the manifests (the fencing check), and at one manifest a segment
// a busy partition's list would otherwise grow by thousands between
// passes. A failed delete is left to the orphan pass.
func (p *Partition) forgetOld(ctx context.Context, key string) {
	p.written = append(p.written, key)
	for len(p.written) > keepManifests {
		_ = p.t.cfg.Store.Delete(ctx, p.written[0])
		p.written = p.written[1:]
	}
}

// Upload copies every sealed segment the manifest does not yet hold, oldest
// first, and records them in new manifests once their objects are
// complete. The segments go in windows of up to the tier's Concurrency:
// a window's objects are put at once, then one manifest records the
// window's segments that completed, in offset order, up to the first that
// failed (the objects of those after it are orphans for CleanOrphans; the
// next pass puts them again). Segments sealed meanwhile join the same
// call, up to maxUploadWindows windows. It returns how many segments it
// uploaded.
func (p *Partition) Upload(ctx context.Context) (int, error) {
	p.upload.Lock()
	defer p.upload.Unlock()
	if err := p.ready(); err != nil {
		return 0, err
	}
	// Noted before and after: a pass stuck on a store that does not
	// answer still shows the segment it waits for.
	p.noteWaiting()
	defer p.noteWaiting()
	n := 0
	for range maxUploadWindows {
		window := p.pending(cap(p.t.sem))
		if len(window) == 0 {
			break
		}
		k, err := p.uploadWindow(ctx, window)
		n += k
		if err != nil {
			p.t.stats.UploadErrors.Add(1)
			return n, err
		}
	}
	return n, nil
}

// maxUploadWindows bounds the windows of one Upload, so that a partition
// produced to faster than its uploads still lets retention and the orphan
// pass (which wait for Upload) run between calls.
const maxUploadWindows = 16

// pending returns up to n of the oldest sealed segments not yet remote. A
// segment that starts below the remote end (this node's segments split
// elsewhere than a former leader's) is uploaded whole and serves from the
// end on: no offset is recorded twice.
func (p *Partition) pending(n int) []partlog.SegmentInfo {
	end := p.UploadedEnd()
	var out []partlog.SegmentInfo
	for _, s := range p.log.SealedSegments() {
		if s.Next > end && len(out) < n {
			out = append(out, s)
		}
	}
	return out
}

// uploadWindow puts the objects of segs (consecutive sealed segments) at
// once, then records the longest prefix of them whose objects are all
// complete in one manifest. It returns how many it recorded, and the
// first failure.
func (p *Partition) uploadWindow(ctx context.Context, segs []partlog.SegmentInfo) (int, error) {
	start := p.UploadedEnd()
	done := make([]Segment, len(segs))
	errs := make([]error, len(segs))
	var wg sync.WaitGroup
	for i, info := range segs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done[i], errs[i] = p.putSegment(ctx, info, max(info.Base, start))
		}()
	}
	wg.Wait()
	ok := 0
	for ok < len(segs) && errs[ok] == nil {
		ok++
	}
	var failed error
	if ok < len(segs) {
		failed = errs[ok]
	}
	if ok == 0 {
		return 0, failed
	}
	if err := p.record(ctx, done[:ok]); err != nil {
		return 0, err
	}
	return ok, failed
}

func (p *Partition) ready() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.mu.fenced:
		return fmt.Errorf("%w: %s", ErrFenced, p.prefix)
	case !p.mu.claimed:
		return fmt.Errorf("tiered: %s: not claimed", p.prefix)
	}
	return nil
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// putSegment puts one segment's objects under a fresh upload id and
// returns its manifest entry, serving from start on; the caller records
// it. While it runs the id counts as in flight (not an orphan).
func (p *Partition) putSegment(ctx context.Context, info partlog.SegmentInfo, start record.Offset) (Segment, error) {
	select {
	case p.t.sem <- struct{}{}:
	case <-ctx.Done():
		return Segment{}, ctx.Err()
	}
	defer func() { <-p.t.sem }()
	files, err := p.log.OpenSealed(info.Base)
	if err != nil {
		return Segment{}, err
	}
	defer files.Log.Close()
	seg := Segment{ID: newID(), Base: info.Base, Start: start, Next: info.Next, Size: files.Size, MaxTimestamp: info.MaxTimestamp}
	for _, e := range files.Epochs {
		seg.Epochs = append(seg.Epochs, EpochStart{Epoch: e.Epoch, Start: e.Start})
	}
	var snap []byte
	if p.snapshot != nil {
		if snap, err = p.snapshot(info.Next); err != nil {
			return Segment{}, fmt.Errorf("tiered: %s: producer snapshot at %d: %w", p.prefix, info.Next, err)
		}
		seg.Snapshot = true
	}
	p.mu.Lock()
	p.mu.inflight[seg.ID] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.mu.inflight, seg.ID)
		p.mu.Unlock()
	}()
	objects := []struct {
		suffix string
		body   func() io.Reader
		size   int64
	}{
		{".log", func() io.Reader { return p.t.paced(ctx, io.NewSectionReader(files.Log, 0, files.Size)) }, files.Size},
		{".index", func() io.Reader { return bytes.NewReader(files.Index) }, int64(len(files.Index))},
		{".timeindex", func() io.Reader { return bytes.NewReader(files.TimeIndex) }, int64(len(files.TimeIndex))},
	}
	if seg.Snapshot {
		objects = append(objects, struct {
			suffix string
			body   func() io.Reader
			size   int64
		}{".snapshot", func() io.Reader { return bytes.NewReader(snap) }, int64(len(snap))})
	}
	for i, o := range objects {
		key := segmentKey(p.prefix, seg, o.suffix)
		put := func() error { return p.t.cfg.Store.Put(ctx, key, o.body(), o.size) }
		if fp, ok := p.t.cfg.Store.(FilePutter); ok && i == 0 && p.t.pace == nil {
			// The log straight from its file (a MemFS file has no
			// descriptor and goes through Put). Paced uploads go through
			// Put too: the pacer meters a reader.
			if f, err := vfs.Dup(files.Log); err == nil {
				defer f.Close()
				put = func() error { return fp.PutFile(ctx, key, f, files.Size) }
			}
		}
		if err := p.t.retry(ctx, "put "+key, put); err != nil {
			return Segment{}, err // the objects put so far are orphans: CleanOrphans deletes them
		}
	}
	return seg, nil
}

// record writes one manifest adding segs, consecutive segments whose
// objects are all complete, in offset order after the manifest's own.
func (p *Partition) record(ctx context.Context, segs []Segment) error {
	p.mu.Lock()
	next := p.mu.man.clone()
	next.Seq++
	next.Epoch = p.mu.epoch
	p.mu.Unlock()
	if len(next.Segments) == 0 && next.LogStart < segs[0].Start {
		next.LogStart = segs[0].Start
	}
	next.Segments = append(next.Segments, segs...)
	next.End = segs[len(segs)-1].Next
	if err := p.write(ctx, next); err != nil {
		return err
	}
	for _, seg := range segs {
		p.t.stats.UploadedSegments.Add(1)
		p.t.stats.UploadedBytes.Add(seg.Size)
		p.logger.Debug("tiered: segment uploaded", "base", seg.Base, "next", seg.Next, "bytes", seg.Size)
	}
	return nil
}

// OldestPending returns the newest-record timestamp (ms) of the oldest
// sealed segment not yet in the store, about when it was sealed: how long
// uploads lag in time. ok is false when every sealed segment is uploaded.
func (p *Partition) OldestPending() (ms int64, ok bool) {
	end := p.UploadedEnd()
	for _, s := range p.log.SealedSegments() {
		if s.Next > end {
			return s.MaxTimestamp, true
		}
	}
	return 0, false
}

// noteWaiting records the oldest sealed segment not yet uploaded, keeping
// the time it was first seen while it stays the oldest.
func (p *Partition) noteWaiting() {
	base := record.NoOffset
	end := p.UploadedEnd()
	for _, s := range p.log.SealedSegments() {
		if s.Next > end {
			base = s.Base
			break
		}
	}
	p.waiting.Lock()
	defer p.waiting.Unlock()
	if base != p.waiting.base {
		p.waiting.base, p.waiting.since = base, p.t.cfg.Now()
	}
}

// NotUploading forgets the segment an upload pass found waiting: the
// partition uploads nothing more (remote.log.copy.disable), so nothing
// is behind.
func (p *Partition) NotUploading() {
	p.waiting.Lock()
	defer p.waiting.Unlock()
	p.waiting.base = record.NoOffset
}

// UploadBehind is how long the oldest sealed segment not yet in the store
// has waited, counted from the first upload pass (of this node, as the
// partition's uploader) that found it waiting; 0 when none waits. Unlike
// OldestPending it does not trust record timestamps, which a producer
// sets.
func (p *Partition) UploadBehind() time.Duration {
	p.waiting.Lock()
	defer p.waiting.Unlock()
	if p.waiting.base < 0 {
		return 0
	}
	return max(p.t.cfg.Now().Sub(p.waiting.since), 0)
}

// Retention is the total retention of a tiered partition: retention.ms and
// retention.bytes (negative: unlimited).
type Retention struct {
	TimeMs int64
	Bytes  int64
}

// ApplyRetention deletes remote segments beyond the total retention, oldest
// first: those whose newest record is older than TimeMs, and those that
// keep the partition (remote plus local-only bytes) above Bytes. The
// manifest without them is written first, then the objects deleted, so a
// crash between the two leaves orphans, never a manifest naming a missing
// object. It returns how many segments it deleted.
func (p *Partition) ApplyRetention(ctx context.Context, r Retention) (int, error) {
	p.upload.Lock()
	defer p.upload.Unlock()
	if err := p.ready(); err != nil {
		return 0, err
	}
	p.mu.Lock()
	man := p.mu.man
	p.mu.Unlock()
	segs := man.Segments
	n := 0
	for n < len(segs) && segs[n].Next <= man.LogStart {
		n++ // below a DeleteRecords start
	}
	if r.TimeMs >= 0 {
		cutoff := p.t.cfg.Now().UnixMilli() - r.TimeMs
		for n < len(segs) && segs[n].MaxTimestamp < cutoff {
			n++
		}
	}
	if r.Bytes >= 0 {
		total := man.RemoteBytes() + p.localOnlyBytes(man.End)
		for i := range segs {
			total -= segs[i].Size
			if total < r.Bytes {
				break
			}
			n = max(n, i+1)
		}
	}
	if n == 0 {
		return 0, nil
	}
	return n, p.drop(ctx, n, record.NoOffset)
}

// localOnlyBytes is the size of the local log not yet uploaded.
func (p *Partition) localOnlyBytes(end record.Offset) int64 {
	n := p.log.Size()
	for _, s := range p.log.SealedSegments() {
		if s.Next <= end {
			n -= s.Size
		}
	}
	return max(n, 0)
}

// DeleteRecordsBefore moves the remote log start offset to o (Kafka's
// DeleteRecords reaching into the remote tier), deleting the segments wholly
// below it.
func (p *Partition) DeleteRecordsBefore(ctx context.Context, o record.Offset) error {
	p.upload.Lock()
	defer p.upload.Unlock()
	if err := p.ready(); err != nil {
		return err
	}
	p.mu.Lock()
	man := p.mu.man
	p.mu.Unlock()
	n := 0
	for n < len(man.Segments) && man.Segments[n].Next <= o {
		n++
	}
	return p.drop(ctx, n, o)
}

// drop writes a manifest without the n oldest segments, with its log
// start at least start, then deletes their objects. Its caller holds
// p.upload.
func (p *Partition) drop(ctx context.Context, n int, start record.Offset) error {
	p.mu.Lock()
	next := p.mu.man.clone()
	gone := next.Segments[:n]
	next.Segments = slices.Clone(next.Segments[n:])
	next.Seq++
	next.Epoch = p.mu.epoch
	p.mu.Unlock()
	if len(next.Segments) > 0 {
		next.LogStart = max(next.LogStart, next.Segments[0].Start, start)
	} else {
		next.LogStart = max(next.LogStart, next.End, start)
	}
	if err := p.write(ctx, next); err != nil {
		return err
	}
	var errs []error
	for _, s := range gone {
		for _, suf := range segmentSuffixes(s) {
			key := segmentKey(p.prefix, s, suf)
			errs = append(errs, p.t.retry(ctx, "delete "+key, func() error { return p.t.cfg.Store.Delete(ctx, key) }))
		}
		p.t.cache.forget(s.ID)
		p.t.stats.DeletedSegments.Add(1)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tiered: %s: retention (the next orphan pass retries): %w", p.prefix, err)
	}
	p.logger.Info("tiered: remote retention deleted segments", "segments", n, "remote_log_start", next.LogStart)
	return nil
}

// keepManifests is how many of the newest manifests CleanOrphans keeps.
const keepManifests = 3

// CleanOrphans deletes segment objects no manifest names (left by a crash
// between upload and manifest write, by a failed deletion, or by a deposed
// leader) once they are older than OrphanGrace, and all but the newest few
// manifests. It does nothing when a newer leader holds the partition. It
// returns how many objects it deleted.
func (p *Partition) CleanOrphans(ctx context.Context) (int, error) {
	p.upload.Lock()
	defer p.upload.Unlock()
	if err := p.ready(); err != nil {
		return 0, err
	}
	key, manifests, err := p.newest(ctx)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	if key != p.mu.key {
		p.mu.fenced = true
		p.mu.Unlock()
		return 0, fmt.Errorf("%w: %s has manifest %s", ErrFenced, p.prefix, key)
	}
	keep := map[string]bool{}
	for _, s := range p.mu.man.Segments {
		keep[s.ID] = true
	}
	for id := range p.mu.inflight {
		keep[id] = true
	}
	p.mu.Unlock()
	var objs []ObjectInfo
	err = p.t.retry(ctx, "list segments", func() error {
		var err error
		objs, err = p.t.cfg.Store.List(ctx, p.prefix+"segments/")
		return err
	})
	if err != nil {
		return 0, err
	}
	cutoff := p.t.cfg.Now().Add(-p.t.cfg.OrphanGrace)
	var doomed []string
	for _, o := range objs {
		if id, ok := segmentIDOf(p.prefix, o.Key); ok && !keep[id] && !o.Modified.After(cutoff) {
			doomed = append(doomed, o.Key)
		}
	}
	for i := 0; i < len(manifests)-keepManifests; i++ {
		doomed = append(doomed, manifests[i].Key)
	}
	var errs []error
	for _, k := range doomed {
		errs = append(errs, p.t.cfg.Store.Delete(ctx, k))
	}
	if len(doomed) > 0 {
		p.logger.Info("tiered: deleted orphans and old manifests", "objects", len(doomed))
	}
	return len(doomed), errors.Join(errs...)
}

// DeleteAll deletes every object of the partition (topic deletion, or
// remote.storage.enable turned off with remote.log.delete.on.disable).
func (p *Partition) DeleteAll(ctx context.Context) error {
	p.upload.Lock()
	defer p.upload.Unlock()
	var objs []ObjectInfo
	err := p.t.retry(ctx, "list", func() error {
		var err error
		objs, err = p.t.cfg.Store.List(ctx, p.prefix)
		return err
	})
	if err != nil {
		return err
	}
	// Manifests last: until they go, a reader sees a consistent history.
	slices.SortStableFunc(objs, func(a, b ObjectInfo) int {
		_, _, am := parseManifestKey(p.prefix, a.Key)
		_, _, bm := parseManifestKey(p.prefix, b.Key)
		switch {
		case am == bm:
			return 0
		case am:
			return 1
		}
		return -1
	})
	var errs []error
	for _, o := range objs {
		errs = append(errs, p.t.cfg.Store.Delete(ctx, o.Key))
	}
	p.mu.Lock()
	p.mu.man, p.mu.key = emptyManifest(), ""
	p.publishLocked()
	p.mu.Unlock()
	return errors.Join(errs...)
}
