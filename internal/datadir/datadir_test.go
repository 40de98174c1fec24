package datadir

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/vfs"
)

// TestFilesRoundTrip: what is written is read back — a partition's topic
// id, the node and cluster ids — a directory without partition.metadata
// says so, and the clean-shutdown marker is read once: taking it removes
// it, so a crash after it is not taken for clean.
func TestFilesRoundTrip(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/d"
	if err := fs.MkdirAll(filepath.Join(dir, "t-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPartitionMeta(fs, filepath.Join(dir, "t-0")); !errors.Is(err, ErrNoPartitionMeta) {
		t.Fatalf("no partition.metadata: %v, want ErrNoPartitionMeta", err)
	}
	id := cluster.NewTopicID()
	if err := WritePartitionMeta(fs, filepath.Join(dir, "t-0"), id); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadPartitionMeta(fs, filepath.Join(dir, "t-0")); err != nil || got != id {
		t.Fatalf("partition.metadata: %v, %v; want %v", got, err, id)
	}
	if HoldsRecords(fs, filepath.Join(dir, "t-0")) {
		t.Fatal("a directory without segments holds records")
	}
	if _, ok, err := ReadNodeMeta(fs, dir); ok || err != nil {
		t.Fatalf("no meta.properties: %v, %v", ok, err)
	}
	if err := WriteNodeMeta(fs, dir, NodeMeta{NodeID: 3, ClusterID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if m, ok, err := ReadNodeMeta(fs, dir); !ok || err != nil || m != (NodeMeta{NodeID: 3, ClusterID: "c1"}) {
		t.Fatalf("meta.properties: %+v, %v, %v", m, ok, err)
	}
	if e, err := TakeShutdownMarker(fs, dir); err != nil || e != cluster.UncleanShutdown {
		t.Fatalf("no marker: epoch %d, %v; want UncleanShutdown", e, err)
	}
	if err := WriteShutdownMarker(fs, dir, 42); err != nil {
		t.Fatal(err)
	}
	if e, err := TakeShutdownMarker(fs, dir); err != nil || e != 42 {
		t.Fatalf("marker: epoch %d, %v; want 42", e, err)
	}
	if e, _ := TakeShutdownMarker(fs, dir); e != cluster.UncleanShutdown {
		t.Fatalf("a marker taken twice: epoch %d", e)
	}
}
