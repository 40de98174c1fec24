package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/vfs"
)

// MetaFileName is a single node's metadata file in its data directory.
// It is rewritten whole, atomically (vfs.WriteFileSync: temp file, fsync,
// rename, fsync dir), on every change: changes are rare and the file is
// small, and a multi-topic change stays atomic.
const MetaFileName = "meta.json"

const metaVersion = 1

type metaFile struct {
	Version   int         `json:"version"`
	ClusterID string      `json:"clusterId"`
	Topics    []metaTopic `json:"topics"`
	// Deleted lists the ids (hex) of deleted topics whose partition
	// directories may remain: start-up removes those, and only those.
	Deleted []string `json:"deletedTopicIds,omitempty"`
	// ACLs is the ACL set (acl.Set's encoding, base64) and ACLVersion
	// its change count; absent before the first CreateAcls.
	ACLs       []byte `json:"acls,omitempty"`
	ACLVersion int64  `json:"aclVersion,omitempty"`
	// Scram holds SCRAM credentials (salt, iterations, StoredKey,
	// ServerKey; never a password) by user and mechanism.
	Scram map[string]map[string]ScramCredential `json:"scram,omitempty"`
	// Quotas holds client quota values by entity ("user\x1fclient-id").
	Quotas map[string]map[string]float64 `json:"clientQuotas,omitempty"`
	// Features holds finalized feature levels; absent while none is.
	Features map[string]int16 `json:"features,omitempty"`
}

type metaTopic struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"` // hex
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// FileStore is the metadata of a single node, in meta.json.
type FileStore struct {
	fs  vfs.FS
	dir string
	mu  sync.Mutex // serialises Apply
	img atomic.Pointer[Image]

	subsMu sync.Mutex
	subs   map[int]func(*Image)
	nextID int
}

// OpenFileStore reads dir's meta.json. Without one (a fresh directory) the
// image is empty, without a cluster id until a ClusterInit record, and
// existed is false: the first Apply writes the file.
func OpenFileStore(fs vfs.FS, dir string) (s *FileStore, existed bool, err error) {
	s = &FileStore{fs: fs, dir: dir, subs: map[int]func(*Image){}}
	img, existed, err := readMetaFile(fs, dir)
	if err != nil {
		return nil, false, err
	}
	s.img.Store(img)
	return s, existed, nil
}

// Image returns the current image.
func (s *FileStore) Image() *Image { return s.img.Load() }

// Apply applies recs to the current image, makes the result durable, then
// publishes it and tells subscribers. On an error nothing changes. With no
// records it writes the current image (a fresh directory's first file).
func (s *FileStore) Apply(recs ...Record) (*Image, error) {
	for _, r := range recs {
		switch r.(type) {
		case ClusterInit, PutTopic, RemoveTopic, ForgetDeleted, PutACLs, PutScramCredential, DeleteScramCredential, AlterClientQuota, FinalizeFeature:
		default:
			// meta.json has no place for it: it would be lost at restart.
			return nil, fmt.Errorf("cluster: a single node's metadata does not keep %T records", r)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next, err := s.img.Load().With(recs...)
	if err != nil {
		return nil, err
	}
	if err := writeMetaFile(s.fs, s.dir, next); err != nil {
		return nil, err
	}
	s.img.Store(next)
	s.subsMu.Lock()
	subs := make([]func(*Image), 0, len(s.subs))
	for _, fn := range s.subs {
		subs = append(subs, fn)
	}
	s.subsMu.Unlock()
	for _, fn := range subs {
		fn(next)
	}
	return next, nil
}

// CatchUp returns at once: the file is the image.
func (s *FileStore) CatchUp(context.Context) error { return nil }

// Subscribe calls fn with every image Apply publishes from now on, on the
// applying goroutine, until cancel is called.
func (s *FileStore) Subscribe(fn func(*Image)) (cancel func()) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	id := s.nextID
	s.nextID++
	s.subs[id] = fn
	return func() {
		s.subsMu.Lock()
		defer s.subsMu.Unlock()
		delete(s.subs, id)
	}
}

func readMetaFile(fs vfs.FS, dir string) (*Image, bool, error) {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, MetaFileName))
	if errors.Is(err, os.ErrNotExist) {
		return NewImage(""), false, nil // ClusterInit names it
	}
	if err != nil {
		return nil, false, fmt.Errorf("cluster: read %s: %w", MetaFileName, err)
	}
	var m metaFile
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, false, fmt.Errorf("cluster: parse %s: %w", MetaFileName, err)
	}
	if m.Version != metaVersion {
		return nil, false, fmt.Errorf("cluster: %s: unsupported version %d", MetaFileName, m.Version)
	}
	img := NewImage(m.ClusterID)
	if m.ACLs != nil {
		if _, err := acl.Decode(m.ACLs); err != nil {
			return nil, false, fmt.Errorf("cluster: %s: %w", MetaFileName, err)
		}
		img.acls, img.aclVersion = m.ACLs, m.ACLVersion
	}
	img.scram, img.quotas = m.Scram, m.Quotas
	if err := checkSupported(m.Features); err != nil {
		return nil, false, fmt.Errorf("cluster: %s: %w", MetaFileName, err)
	}
	img.features = m.Features
	for _, d := range m.Deleted {
		id, err := ParseTopicID(d)
		if err != nil {
			return nil, false, fmt.Errorf("cluster: %s: deleted topic id: %w", MetaFileName, err)
		}
		img.deleted[id] = true
	}
	for _, t := range m.Topics {
		id, err := ParseTopicID(t.ID)
		if err != nil {
			return nil, false, fmt.Errorf("cluster: %s: topic %q: %w", MetaFileName, t.Name, err)
		}
		if t.Partitions < 1 {
			return nil, false, fmt.Errorf("cluster: %s: topic %q: %d partitions", MetaFileName, t.Name, t.Partitions)
		}
		img.topics[t.Name] = Topic{Name: t.Name, ID: id, Partitions: t.Partitions, Configs: t.Configs}
		img.names[id] = t.Name
	}
	return img, true, nil
}

func writeMetaFile(fs vfs.FS, dir string, img *Image) error {
	m := metaFile{Version: metaVersion, ClusterID: img.ClusterID()}
	m.ACLs, m.ACLVersion = img.ACLs()
	m.Scram, m.Quotas, m.Features = img.scram, img.quotas, img.features
	for _, t := range img.Topics() {
		m.Topics = append(m.Topics, metaTopic{Name: t.Name, ID: t.ID.Hex(), Partitions: t.Partitions, Configs: t.Configs})
	}
	for _, id := range img.Deleted() {
		m.Deleted = append(m.Deleted, id.Hex())
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("cluster: encode %s: %w", MetaFileName, err)
	}
	if err := vfs.WriteFileSync(fs, dir, filepath.Join(dir, MetaFileName), b); err != nil {
		return fmt.Errorf("cluster: write %s: %w", MetaFileName, err)
	}
	return nil
}
