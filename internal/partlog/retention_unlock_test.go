package partlog

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/vfs"
)

// deletedFiles lists dir's files that retention renamed and has not removed.
func deletedFiles(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, deletedSuffix) {
			out = append(out, n)
		}
	}
	return out
}

// A retention pass removes its segments' files after it lets go of the
// log: an append (a produce) goes ahead while a removal is held.
func TestRetentionRemovesFilesOutsideTheLock(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/data/p0"
	l := mustOpen(t, fs, dir, Config{SegmentBytes: 300, RetentionBytes: 700, RetentionTime: -1})
	defer l.Close()
	for i := range 12 {
		mustAppend(t, l, batch(t, 1, fmt.Sprintf("%02d%s", i, pad(100))))
	}
	held, release := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	let := func() { releaseOnce.Do(func() { close(release) }) }
	defer let() // before Close, which a held removal under the lock would block
	fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpRemove && strings.HasSuffix(path, deletedSuffix) {
			once.Do(func() { close(held) })
			<-release
		}
		return nil
	})
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := l.ApplyRetention()
		done <- result{n, err}
	}()
	select {
	case <-held:
	case r := <-done:
		t.Fatalf("retention (%d segments, %v) removed no file renamed .deleted", r.n, r.err)
	}
	if got := deletedFiles(t, fs, dir); len(got) == 0 {
		t.Fatal("no segment file renamed .deleted before its removal")
	}
	appended := make(chan error, 1)
	go func() {
		_, err := l.Append(batch(t, 1, "while retention removes files"))
		appended <- err
	}()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		let()
		t.Fatal("an append waited for retention to remove segment files")
	}
	let()
	r := <-done
	if r.err != nil || r.n == 0 {
		t.Fatalf("retention: %d segments, %v", r.n, r.err)
	}
	if got := deletedFiles(t, fs, dir); len(got) != 0 {
		t.Fatalf("left after retention returned: %v", got)
	}
	if got := readAll(t, l, l.LogStartOffset()); got[len(got)-1].Offset != 12 || got[0].Offset != l.LogStartOffset() {
		t.Fatalf("visible offsets %v with start %d", offsets(got), l.LogStartOffset())
	}
}

// Files renamed .deleted whose removal failed (or a crash cut short) are
// not the log's: the next open removes them and keeps the retention's start.
func TestOpenRemovesDeletedSegmentFiles(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/data/p0"
	l := mustOpen(t, fs, dir, Config{SegmentBytes: 300, RetentionBytes: 700, RetentionTime: -1})
	for i := range 12 {
		mustAppend(t, l, batch(t, 1, fmt.Sprintf("%02d%s", i, pad(100))))
	}
	fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpRemove && strings.HasSuffix(path, deletedSuffix) {
			return errors.New("injected: remove refused")
		}
		return nil
	})
	if n, err := l.ApplyRetention(); n == 0 || err == nil {
		t.Fatalf("retention with removals refused: %d segments, err %v; want segments and an error", n, err)
	}
	start := l.LogStartOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(deletedFiles(t, fs, dir)) == 0 {
		t.Fatal("no .deleted file left to recover from")
	}
	fs.InjectError(nil)
	l = mustOpen(t, fs, dir, Config{SegmentBytes: 300, RetentionBytes: 700, RetentionTime: -1})
	defer l.Close()
	if got := deletedFiles(t, fs, dir); len(got) != 0 {
		t.Fatalf("left after open: %v", got)
	}
	if l.LogStartOffset() != start || l.LogEndOffset() != 12 {
		t.Fatalf("reopened with offsets %d..%d, want %d..12", l.LogStartOffset(), l.LogEndOffset(), start)
	}
}
