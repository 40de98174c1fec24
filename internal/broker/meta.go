package broker

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/strandmq/strand/internal/vfs"
)

// metaFileName is the broker's metadata file in the data directory.
//
//	<dir>/meta.json                 this file: cluster id, topics, configs
//	<dir>/producer-ids.json         producer id reservations (package producer)
//	<dir>/.lock                     held (flock) by the broker using the directory
//	<dir>/producer-state/<id>-<p>.json  producer snapshots (topic id in hex)
//	<dir>/<topic>-<partition>/      one partlog.Log per partition, with
//	                                partition.metadata naming its topic id
//
// It is rewritten whole, atomically (vfs.WriteFileSync: temp file, fsync,
// rename, fsync dir), on every topic change. Topic changes are rare and the
// file is small; a per-topic file would save bytes but make a multi-topic
// change non-atomic.
const metaFileName = "meta.json"

// producerStateDir holds producer snapshots written at clean close.
const producerStateDir = "producer-state"

const metaVersion = 1

type metaFile struct {
	Version   int         `json:"version"`
	ClusterID string      `json:"clusterId"`
	Topics    []metaTopic `json:"topics"`
	// Deleted lists the ids (hex) of deleted topics whose partition
	// directories may remain: start-up removes those, and only those.
	Deleted []string `json:"deletedTopicIds,omitempty"`
}

type metaTopic struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"` // hex
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// TopicID is a topic's 16-byte UUID (Metadata v10+, Fetch v13+).
type TopicID [16]byte

// String renders the id as Kafka does: unpadded URL-safe base64.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// IsZero reports whether id is the all-zero (absent) id.
func (id TopicID) IsZero() bool { return id == TopicID{} }

func newTopicID() TopicID {
	var id TopicID
	for id.IsZero() {
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	}
	return id
}

func newClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// readMeta loads meta.json; ok is false when there is none (a fresh
// directory).
func readMeta(fs vfs.FS, dir string) (m metaFile, ok bool, err error) {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, metaFileName))
	if errors.Is(err, os.ErrNotExist) {
		return metaFile{}, false, nil
	}
	if err != nil {
		return metaFile{}, false, fmt.Errorf("broker: read %s: %w", metaFileName, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return metaFile{}, false, fmt.Errorf("broker: parse %s: %w", metaFileName, err)
	}
	if m.Version != metaVersion {
		return metaFile{}, false, fmt.Errorf("broker: %s: unsupported version %d", metaFileName, m.Version)
	}
	for _, d := range m.Deleted {
		if _, err := parseTopicID(d); err != nil {
			return metaFile{}, false, fmt.Errorf("broker: %s: deleted topic id: %w", metaFileName, err)
		}
	}
	for _, t := range m.Topics {
		if _, err := parseTopicID(t.ID); err != nil {
			return metaFile{}, false, fmt.Errorf("broker: %s: topic %q: %w", metaFileName, t.Name, err)
		}
		if t.Partitions < 1 {
			return metaFile{}, false, fmt.Errorf("broker: %s: topic %q: %d partitions", metaFileName, t.Name, t.Partitions)
		}
	}
	return m, true, nil
}

func writeMeta(fs vfs.FS, dir string, m metaFile) error {
	m.Version = metaVersion
	sort.Slice(m.Topics, func(i, j int) bool { return m.Topics[i].Name < m.Topics[j].Name })
	sort.Strings(m.Deleted)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("broker: encode %s: %w", metaFileName, err)
	}
	if err := vfs.WriteFileSync(fs, dir, filepath.Join(dir, metaFileName), b); err != nil {
		return fmt.Errorf("broker: write %s: %w", metaFileName, err)
	}
	return nil
}

func parseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("bad topic id %q", s)
	}
	copy(id[:], b)
	return id, nil
}
