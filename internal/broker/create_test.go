package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// Partitions of a new topic (and partitions added to one) are created on
// several goroutines: each must still be its own partition, in its own
// directory, and all of them must be there after a restart.
func TestCreateManyPartitions(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		b := open(t, fs, dir)
		mustCreate(t, b, TopicSpec{Name: "wide", Partitions: 150})
		if _, err := b.CreatePartitions("wide", 200, nil, false); err != nil {
			t.Fatal(err)
		}
		tp, err := b.Topic("wide")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i := range PartitionID(200) {
			p, err := tp.Partition(i)
			if err != nil || p.ID() != i {
				t.Fatalf("partition %d: %v, %v", i, p, err)
			}
			for range int(i % 3) {
				if _, err := p.Append(ctx, batchOf(t, record.DefaultBatchOptions(), fmt.Sprint(i)), AcksAll); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b = open(t, fs, dir)
		defer b.Close()
		if tp, err = b.Topic("wide"); err != nil || tp.Partitions() != 200 {
			t.Fatalf("after a restart: %v, %v", tp, err)
		}
		for i := range PartitionID(200) {
			got := valuesAt(t, b, "wide", i)
			if len(got) != int(i%3) || (len(got) > 0 && got[0] != fmt.Sprint(i)) {
				t.Fatalf("partition %d holds %v, want %d records of %q", i, got, i%3, fmt.Sprint(i))
			}
		}
	})
}

// A partition that cannot be created fails the whole topic: the caller
// gets the reason, no partition directory is left behind, and the topic
// can be created once the fault is gone.
func TestCreateTopicFailureLeavesNothing(t *testing.T) {
	fs := vfs.NewMem()
	b := open(t, fs, "/data")
	defer b.Close()
	fs.InjectError(vfs.ErrorOnce(vfs.OpCreate, ".log", syscall.EIO))
	if _, err := b.CreateTopic(TopicSpec{Name: "wide", Partitions: 100}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("create with a failing segment create: %v, want EIO", err)
	}
	if _, err := b.Topic("wide"); err == nil {
		t.Fatal("the failed topic exists")
	}
	names, err := fs.ReadDir("/data")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "wide-") {
			t.Fatalf("directory %s left behind by the failed create", n)
		}
	}
	if tp := mustCreate(t, b, TopicSpec{Name: "wide", Partitions: 100}); tp.Partitions() != 100 {
		t.Fatalf("%d partitions after the retry", tp.Partitions())
	}
}
