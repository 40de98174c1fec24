package broker

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/vfs"
)

// TestDataDirLocked: a second broker on a directory in use fails at once,
// naming the directory and the holder's pid; once the first closes, the
// directory opens again.
func TestDataDirLocked(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		b := open(t, fs, dir)
		mustCreate(t, b, TopicSpec{Name: "t", Partitions: 1})
		_, err := Open(Config{FS: fs, Dir: dir, Logger: quiet})
		if !errors.Is(err, vfs.ErrLocked) {
			b.Close()
			t.Fatalf("second Open: %v, want ErrLocked", err)
		}
		for _, want := range []string{dir, "process " + strconv.Itoa(os.Getpid())} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b = open(t, fs, dir)
		if _, err := b.Topic("t"); err != nil {
			t.Fatal(err)
		}
		b.Close()
	})
}

// TestCrashReleasesLock: a crash (the holder died) frees the lock, as the
// kernel frees a killed process's flock.
func TestCrashReleasesLock(t *testing.T) {
	fs := vfs.NewMem()
	b := open(t, fs, "/data")
	defer b.Close()
	fs.Crash(vfs.CrashOptions{})
	b2 := open(t, fs, "/data")
	b2.Close()
}
