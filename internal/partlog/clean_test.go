package partlog

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// keepEven is a stand-in cleaner: it keeps the records at even offsets of
// every batch, preserving each batch's base and last offset.
func keepEven(l *Log, bases []record.Offset) func(emit func([]byte) error) error {
	return func(emit func([]byte) error) error {
		for _, b := range bases {
			err := l.ScanSegment(b, func(raw []byte) error {
				batch, err := record.Decode(raw)
				if err != nil {
					return err
				}
				var kept []record.Record
				for _, r := range batch.Records {
					if r.Offset%2 == 0 {
						kept = append(kept, r)
					}
				}
				if len(kept) == 0 {
					return nil
				}
				out, err := record.Encode(kept[0].Offset, kept, batch.Options())
				if err != nil {
					return err
				}
				return emit(out)
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// contents maps offset → value of every visible record.
func contents(t tb, l *Log) map[record.Offset]string {
	out := map[record.Offset]string{}
	for _, r := range readAll(t, l, l.LogStartOffset()) {
		out[r.Offset] = string(r.Value)
	}
	return out
}

func fillLog(t *testing.T, l *Log) {
	for i := range 12 {
		mustAppend(t, l, batch(t, int64(i), fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i), fmt.Sprintf("c%d%s", i, pad(60))))
	}
}

func TestReplaceSegments(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		cfg := Config{SegmentBytes: 600}
		l := mustOpen(t, fs, dir, cfg)
		fillLog(t, l)
		sealed := l.SealedSegments()
		if len(sealed) < 3 {
			t.Fatalf("want several sealed segments, got %d", len(sealed))
		}
		before := contents(t, l)
		bases := []record.Offset{sealed[0].Base, sealed[1].Base, sealed[2].Base}
		if err := l.ReplaceSegments(bases, keepEven(l, bases)); err != nil {
			t.Fatal(err)
		}
		after := contents(t, l)
		for o, v := range before {
			replaced := o < sealed[2].Next
			if got, ok := after[o]; (!replaced || o%2 == 0) != ok || ok && got != v {
				t.Fatalf("offset %d: before %q, after %q (present %v)", o, v, got, ok)
			}
		}
		if l.LogEndOffset() != 36 || len(l.SealedSegments()) != len(sealed)-2 {
			t.Fatalf("end %d, %d sealed segments", l.LogEndOffset(), len(l.SealedSegments()))
		}
		// Appends and reopen keep working; offsets never move.
		mustAppend(t, l, batch(t, 99, "z"))
		l.Close()
		l = mustOpen(t, fs, dir, cfg)
		if got := contents(t, l); len(got) != len(after)+1 || got[36] != "z" || got[0] != before[0] {
			t.Fatalf("after reopen: %d records", len(got))
		}
		// A stale request fails cleanly.
		if err := l.ReplaceSegments(bases[1:], keepEven(l, nil)); !errors.Is(err, ErrNoSegment) {
			t.Fatalf("replacing vanished segments: %v", err)
		}
	})
}

// TestReplaceSegmentsCrash crashes the disk at every step of the swap and
// checks recovery finds exactly the old segment set or exactly the new one.
func TestReplaceSegmentsCrash(t *testing.T) {
	for _, step := range []string{"cleaned", "committed", "removed", "renamed", "done"} {
		t.Run(step, func(t *testing.T) {
			fs := vfs.NewMem()
			cfg := Config{SegmentBytes: 600}
			l := mustOpen(t, fs, "/c", cfg)
			fillLog(t, l)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			before := contents(t, l)
			sealed := l.SealedSegments()
			bases := []record.Offset{sealed[0].Base, sealed[1].Base}
			var crashed *vfs.MemFS
			l.testHook = func(s string) {
				if s == step {
					crashed = fs.CrashClone(vfs.CrashOptions{})
				}
			}
			if err := l.ReplaceSegments(bases, keepEven(l, bases)); err != nil {
				t.Fatal(err)
			}
			after := contents(t, l)
			if step == "done" {
				crashed = fs.CrashClone(vfs.CrashOptions{})
			}
			r := mustOpen(t, crashed, "/c", cfg)
			got := contents(t, r)
			wantNew := step != "cleaned"
			want := before
			if wantNew {
				want = after
			}
			if !maps.Equal(got, want) {
				t.Fatalf("crash at %q: recovered %d records, want the %s set (%d)", step, len(got),
					map[bool]string{true: "new", false: "old"}[wantNew], len(want))
			}
			names, _ := crashed.ReadDir("/c")
			for _, n := range names {
				if strings.HasSuffix(n, swapSuffix) || strings.HasSuffix(n, cleanedSuffix) {
					t.Fatalf("swap leftovers after recovery: %v", names)
				}
			}
			if o := mustAppend(t, r, batch(t, 1, "next")); o != 36 {
				t.Fatalf("append after recovery at %d", o)
			}
		})
	}
}
