package partlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// logSink collects a log's lines for assertions.
type logSink struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *logSink) logger() *slog.Logger { return slog.New(slog.NewTextHandler(s, nil)) }

// indexedLog writes n equal one-record batches with an offset index entry
// every two batches over several segments, closes the log cleanly and
// returns its config and the first segment's index entries.
func indexedLog(t *testing.T, fs vfs.FS, dir string, n int) (Config, []offsetEntry) {
	t.Helper()
	cfg := Config{SegmentBytes: 4096, IndexIntervalBytes: 300}
	l, err := Open(fs, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		mustAppend(t, l, batch(t, 1, fmt.Sprintf("v%03d-%s", i, strings.Repeat("x", 100))))
	}
	if len(l.segmentsSnapshot()) < 2 {
		t.Fatal("one segment")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := vfs.ReadFile(fs, filepath.Join(dir, segmentName(0)+indexSuffix))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := decodeOffsetIndex(b, 1<<30)
	if err != nil || len(entries) < 4 || entries[1].rel != 2 {
		t.Fatalf("index entries %v (%v): want one every two batches", entries, err)
	}
	return cfg, entries
}

// writeIndex replaces a segment's offset index file.
func writeIndex(t *testing.T, fs vfs.FS, dir string, entries []offsetEntry) {
	t.Helper()
	var b []byte
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
	}
	if err := vfs.WriteFileSync(fs, dir, filepath.Join(dir, segmentName(0)+indexSuffix), b); err != nil {
		t.Fatal(err)
	}
}

func wantValues(t *testing.T, l *Log, n int) {
	t.Helper()
	got := values(readAll(t, l, 0))
	if len(got) != n {
		t.Fatalf("read %d records, want %d", len(got), n)
	}
	for i, v := range got {
		if !strings.HasPrefix(v, fmt.Sprintf("v%03d-", i)) {
			t.Fatalf("record %d is %.5s", i, v)
		}
	}
}

// TestWrongIndexEntryRepaired: a valid-looking offset index entry that
// points at the wrong batch (the next one) is caught on the read that uses
// it: the read is answered right, a WARN names the index file, and the
// sealed segment's index is rewritten as the writer made it.
func TestWrongIndexEntryRepaired(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		const n = 60
		cfg, entries := indexedLog(t, fs, dir, n)
		size := entries[1].pos / 2 // every batch is the same size
		bad := append([]offsetEntry(nil), entries...)
		bad[2].pos += size // (+4 → the batch of offset 5): increasing, inside the log
		writeIndex(t, fs, dir, bad)

		var logs logSink
		cfg.Logger = logs.logger()
		l := mustOpen(t, fs, dir, cfg)
		data, err := l.Read(record.Offset(bad[2].rel), 1)
		if err != nil {
			t.Fatal(err)
		}
		if h, _ := record.ParseHeader(data); h.BaseOffset != record.Offset(bad[2].rel) {
			t.Fatalf("read at offset %d returned the batch of %d", bad[2].rel, h.BaseOffset)
		}
		wantValues(t, l, n)
		if l.Damaged() != nil {
			t.Fatalf("a wrong index took the log offline: %v", l.Damaged())
		}
		if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, segmentName(0)+indexSuffix) {
			t.Fatalf("no WARN naming the index file:\n%s", out)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		b, _ := vfs.ReadFile(fs, filepath.Join(dir, segmentName(0)+indexSuffix))
		if got, _ := decodeOffsetIndex(b, 1<<30); fmt.Sprint(got) != fmt.Sprint(entries) {
			t.Fatalf("rebuilt index %v, want %v", got, entries)
		}
	})
}

// TestWrongLastIndexEntryRebuiltAtOpen: the last entry of an index is
// checked at open (as Kafka does); a wrong one is rebuilt with a WARN
// instead of sending recovery's walk into the middle of a batch, which
// would take good data for damage.
func TestWrongLastIndexEntryRebuiltAtOpen(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		const n = 60
		cfg, entries := indexedLog(t, fs, dir, n)
		bad := append([]offsetEntry(nil), entries...)
		last := len(bad) - 1
		bad[last].pos -= bad[1].pos / 2 // the batch before the one it names
		writeIndex(t, fs, dir, bad)

		var logs logSink
		cfg.Logger = logs.logger()
		l := mustOpen(t, fs, dir, cfg)
		if l.Damaged() != nil {
			t.Fatalf("open took the log offline: %v", l.Damaged())
		}
		if l.LogEndOffset() != n {
			t.Fatalf("end offset %d, want %d", l.LogEndOffset(), n)
		}
		wantValues(t, l, n)
		if out := logs.String(); !strings.Contains(out, "rebuilt the indexes") || !strings.Contains(out, segmentName(0)+indexSuffix) {
			t.Fatalf("no WARN naming the rebuilt index:\n%s", out)
		}
	})
}

// TestStrayEmptySegmentRemoved: an empty segment file named far past the
// log's end (a file no roll made) is removed with a WARN naming it,
// instead of becoming the active segment and moving the end offset.
func TestStrayEmptySegmentRemoved(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		const n = 60
		cfg, _ := indexedLog(t, fs, dir, n)
		stray := filepath.Join(dir, segmentName(99999)+logSuffix)
		if err := vfs.WriteFileSync(fs, dir, stray, nil); err != nil {
			t.Fatal(err)
		}
		var logs logSink
		cfg.Logger = logs.logger()
		l := mustOpen(t, fs, dir, cfg)
		if l.LogEndOffset() != n {
			t.Fatalf("end offset %d, want %d", l.LogEndOffset(), n)
		}
		if _, err := fs.Stat(stray); err == nil {
			t.Fatal("the stray segment is still there")
		}
		if !strings.Contains(logs.String(), segmentName(99999)+logSuffix) {
			t.Fatalf("no WARN naming the stray file:\n%s", logs.String())
		}
		if o := mustAppend(t, l, batch(t, 1, "next")); o != n {
			t.Fatalf("next append at %d, want %d", o, n)
		}
	})
}

// TestStartOffsetPastEndIgnored: after a clean shutdown, a log-start-offset
// past the end cannot be the log's own (nothing was lost): it is ignored
// with a WARN instead of hiding every record.
func TestStartOffsetPastEndIgnored(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		const n = 60
		cfg, _ := indexedLog(t, fs, dir, n)
		if err := vfs.WriteFileSync(fs, dir, filepath.Join(dir, startOffsetFile), []byte("100000\n")); err != nil {
			t.Fatal(err)
		}
		var logs logSink
		cfg.Logger = logs.logger()
		l := mustOpen(t, fs, dir, cfg)
		if l.LogStartOffset() != 0 {
			t.Fatalf("log start offset %d, want 0", l.LogStartOffset())
		}
		wantValues(t, l, n)
		if !strings.Contains(logs.String(), startOffsetFile) {
			t.Fatalf("no WARN naming %s:\n%s", startOffsetFile, logs.String())
		}
	})
}

// flipBytes inverts n bytes of a file at pos.
func flipBytes(t *testing.T, fs vfs.FS, path string, pos int64, n int) {
	t.Helper()
	data, err := vfs.ReadFile(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(n) {
		data[pos+i] ^= 0xff
	}
	if err := vfs.WriteFileSync(fs, filepath.Dir(path), path, data); err != nil {
		t.Fatal(err)
	}
}

// TestScrubFindsFlippedBytes: 16 flipped bytes inside a record of a sealed
// segment pass every header check, so a clean open and reads serve them;
// the scrub's CRC check finds them, takes the log offline naming the file
// and position, and logs one ERROR however often it is read after.
func TestScrubFindsFlippedBytes(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		const n = 60
		cfg, entries := indexedLog(t, fs, dir, n)
		size := int64(entries[1].pos / 2)
		flipBytes(t, fs, filepath.Join(dir, segmentName(0)+logSuffix), 3*size+size/2, 16) // inside batch 3
		var logs logSink
		cfg.Logger = logs.logger()
		l := mustOpen(t, fs, dir, cfg)
		if l.Damaged() != nil {
			t.Fatalf("damage seen at a clean open: %v", l.Damaged())
		}
		paced := 0
		verified, err := l.Scrub(context.Background(), func(context.Context, int) error { paced++; return nil })
		if !errors.Is(err, ErrDamaged) {
			t.Fatalf("scrub: %v (verified %d bytes)", err, verified)
		}
		derr := l.Damaged()
		if derr == nil || !strings.Contains(derr.Error(), segmentName(0)+logSuffix) || !strings.Contains(derr.Error(), fmt.Sprintf("position %d", 3*size)) {
			t.Fatalf("Damaged() = %v, want the file and position %d", derr, 3*size)
		}
		for range 100 {
			if _, err := l.Read(0, 1<<20); !errors.Is(err, ErrDamaged) {
				t.Fatalf("read after the scrub: %v", err)
			}
		}
		if got := strings.Count(logs.String(), "level=ERROR"); got != 1 {
			t.Fatalf("%d ERROR lines, want 1:\n%s", got, logs.String())
		}
	})
}

// TestScrubCleanLog: a scrub of intact data verifies every sealed byte,
// paced, and changes nothing.
func TestScrubCleanLog(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		const n = 200
		cfg, _ := indexedLog(t, fs, dir, n)
		l := mustOpen(t, fs, dir, cfg)
		var sealed int64
		for _, s := range l.segmentsSnapshot()[:len(l.segmentsSnapshot())-1] {
			sealed += s.size.Load()
		}
		paced := 0
		verified, err := l.Scrub(context.Background(), func(context.Context, int) error { paced++; return nil })
		if err != nil || verified != sealed {
			t.Fatalf("scrub verified %d of %d sealed bytes: %v", verified, sealed, err)
		}
		if l.Damaged() != nil {
			t.Fatal(l.Damaged())
		}
		wantValues(t, l, n)
	})
}

// TestReadOfBadBatchLengthTakesLogOffline: a batch length corrupted to
// run past its segment is met by the read that parses it: the log goes
// offline with one ERROR instead of failing every fetch with a fresh one.
func TestReadOfBadBatchLengthTakesLogOffline(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		const n = 60
		cfg, entries := indexedLog(t, fs, dir, n)
		size := int64(entries[1].pos / 2)
		flipBytes(t, fs, filepath.Join(dir, segmentName(0)+logSuffix), 2*size+8, 1) // batch 2's length, high byte
		var logs logSink
		cfg.Logger = logs.logger()
		l := mustOpen(t, fs, dir, cfg)
		for range 100 {
			if _, err := l.Read(2, 1<<20); !errors.Is(err, ErrDamaged) {
				t.Fatalf("read of the bad batch: %v", err)
			}
		}
		if got := strings.Count(logs.String(), "level=ERROR"); got != 1 {
			t.Fatalf("%d ERROR lines, want 1:\n%s", got, logs.String())
		}
	})
}
