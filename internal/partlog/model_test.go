package partlog

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// logModel is the plain-slice model the real log is checked against: the
// value at every offset ever assigned, and the window [start, end) still held.
type logModel struct {
	values  []string // index = offset
	start   int
	synced  int // offsets below this survive a crash
	durable int // the start offset a crash cannot take back
	keep    int64
}

// TestModel drives append / read / roll / retention / delete / truncate /
// crash+reopen against the model (pgregory.net/rapid).
func TestModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fs := vfs.NewMem()
		cfg := Config{
			SegmentBytes:       int64(rapid.IntRange(400, 3000).Draw(rt, "segmentBytes")),
			IndexIntervalBytes: int64(rapid.IntRange(1, 1000).Draw(rt, "indexInterval")),
			RetentionRecords:   -1,
		}
		l, err := Open(fs, "/m", cfg)
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { l.Close() }()
		m := &logModel{}
		check := func() {
			if int(l.LogStartOffset()) != m.start || int(l.LogEndOffset()) != len(m.values) {
				rt.Fatalf("start/end %d/%d, model %d/%d", l.LogStartOffset(), l.LogEndOffset(), m.start, len(m.values))
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"append": func(rt *rapid.T) {
				n := rapid.IntRange(1, 5).Draw(rt, "n")
				vals := make([]string, n)
				for i := range vals {
					vals[i] = fmt.Sprintf("o%d:%s", len(m.values)+i, pad(rapid.IntRange(0, 40).Draw(rt, "size")))
				}
				o, err := l.Append(batch(rt, int64(len(m.values)), vals...))
				if err != nil || int(o) != len(m.values) {
					rt.Fatalf("append = %d, %v; want %d", o, err, len(m.values))
				}
				m.values = append(m.values, vals...)
				if m.keep > 0 && int64(len(m.values)-m.start) > m.keep {
					m.start = len(m.values) - int(m.keep)
				}
				check()
			},
			"read": func(rt *rapid.T) {
				if m.start == len(m.values) {
					return
				}
				from := rapid.IntRange(m.start, len(m.values)-1).Draw(rt, "from")
				got := readAll(rt, l, record.Offset(from))
				if want := m.values[from:]; !slices.Equal(values(got), want) {
					rt.Fatalf("read from %d: %d values, want %d", from, len(got), len(want))
				}
			},
			"readOutOfRange": func(rt *rapid.T) {
				if _, err := l.Read(record.Offset(len(m.values)+1), 100); err == nil {
					rt.Fatal("read past end succeeded")
				}
				if m.start > 0 {
					if _, err := l.Read(record.Offset(m.start-1), 100); err == nil {
						rt.Fatal("read below start succeeded")
					}
				}
			},
			"roll": func(rt *rapid.T) {
				if err := l.Roll(); err != nil {
					rt.Fatal(err)
				}
			},
			"sync": func(rt *rapid.T) {
				if err := l.Sync(); err != nil {
					rt.Fatal(err)
				}
				m.synced = len(m.values)
				m.durable = m.start
			},
			"retainCount": func(rt *rapid.T) {
				m.keep = int64(rapid.IntRange(1, 20).Draw(rt, "keep"))
				cfg.RetentionRecords = m.keep
				l.SetConfig(cfg)
				if int64(len(m.values)-m.start) > m.keep {
					m.start = len(m.values) - int(m.keep)
				}
				check()
			},
			"deleteRecords": func(rt *rapid.T) {
				to := rapid.IntRange(0, len(m.values)).Draw(rt, "to")
				got, err := l.DeleteRecordsBefore(record.Offset(to))
				if err != nil {
					rt.Fatal(err)
				}
				if to > m.start {
					m.start, m.durable = to, to // persisted before returning
				}
				if int(got) != m.start {
					rt.Fatalf("DeleteRecordsBefore(%d) = %d, model %d", to, got, m.start)
				}
				check()
			},
			"truncate": func(rt *rapid.T) {
				if m.start == len(m.values) {
					return
				}
				to := rapid.IntRange(m.start+1, len(m.values)).Draw(rt, "to")
				cuts := to < len(m.values)
				if err := l.TruncateTo(record.Offset(to)); err != nil {
					rt.Fatal(err)
				}
				// Batches are atomic: the log may cut below to; the model follows.
				end := int(l.LogEndOffset())
				if end > to {
					rt.Fatalf("TruncateTo(%d) left end %d", to, end)
				}
				m.values = m.values[:end]
				if end < m.start { // the cut batch held the start offset
					m.start, m.durable = end, end
				}
				if cuts {
					m.synced = end // a truncation is made durable
				}
				check()
			},
			"crash": func(rt *rapid.T) {
				crashed := fs.CrashClone(vfs.CrashOptions{})
				l.Close()
				fs = crashed
				var err error
				if l, err = Open(fs, "/m", cfg); err != nil {
					rt.Fatal(err)
				}
				end := int(l.LogEndOffset())
				if end < m.synced || end > len(m.values) {
					rt.Fatalf("recovered end %d outside [synced %d, written %d]", end, m.synced, len(m.values))
				}
				m.values = m.values[:end]
				// Count retention persists the start offset lazily (at sync),
				// as Kafka's checkpoint does; DeleteRecords persists it at once.
				if got := int(l.LogStartOffset()); got < min(m.durable, end) || got > m.start {
					rt.Fatalf("start after crash %d, want in [%d, %d]", got, min(m.durable, end), m.start)
				}
				m.start = int(l.LogStartOffset())
				m.synced = end
				m.durable = m.start
				check()
			},
			"reopen": func(rt *rapid.T) {
				l.Close()
				var err error
				if l, err = Open(fs, "/m", cfg); err != nil {
					rt.Fatal(err)
				}
				m.synced = len(m.values)
				m.durable = m.start
				check()
			},
		})
	})
}
