package datadir

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/strandmq/strand/internal/vfs"
)

// PartitionMetaFile records, inside each partition directory, the id of the
// topic the data belongs to (Kafka's partition.metadata, same format). The
// directory name alone cannot tell a topic from an older, deleted one of the
// same name; the id can, so the broker never adopts or deletes data on a
// name's say-so.
const PartitionMetaFile = "partition.metadata"

// ErrNoPartitionMeta: the directory predates partition.metadata.
var ErrNoPartitionMeta = errors.New("no " + PartitionMetaFile)

// ReadPartitionMeta returns the topic id a partition directory's data
// belongs to.
func ReadPartitionMeta(fs vfs.FS, dir string) (TopicID, error) {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, PartitionMetaFile))
	if errors.Is(err, os.ErrNotExist) {
		return TopicID{}, ErrNoPartitionMeta
	}
	if err != nil {
		return TopicID{}, fmt.Errorf("read %s: %w", filepath.Join(dir, PartitionMetaFile), err)
	}
	var id TopicID
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "topic_id" {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(raw) != len(id) {
			break
		}
		copy(id[:], raw)
		return id, nil
	}
	return TopicID{}, fmt.Errorf("%s: no valid topic_id", filepath.Join(dir, PartitionMetaFile))
}

// WritePartitionMeta records, durably, which topic a partition directory's
// data belongs to.
func WritePartitionMeta(fs vfs.FS, dir string, id TopicID) error {
	data := "version: 0\ntopic_id: " + id.String() + "\n"
	if err := vfs.WriteFileSync(fs, dir, filepath.Join(dir, PartitionMetaFile), []byte(data)); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, PartitionMetaFile), err)
	}
	return nil
}

// HoldsRecords reports whether a partition directory has any non-empty
// segment: an empty one is what a create interrupted by a crash leaves.
func HoldsRecords(fs vfs.FS, dir string) bool {
	names, err := fs.ReadDir(dir)
	if err != nil {
		return true // unreadable: assume it matters
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".log") {
			continue
		}
		fi, err := fs.Stat(filepath.Join(dir, n))
		if err != nil || fi.Size() > 0 {
			return true
		}
	}
	return false
}
