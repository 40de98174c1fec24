package broker

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"

	"github.com/strandmq/strand/internal/vfs"
)

// meta.json as tests edit it by hand (an operator's mistakes); the broker
// itself reads and writes it through cluster.FileStore.
type metaFile struct {
	Version   int         `json:"version"`
	ClusterID string      `json:"clusterId"`
	Topics    []metaTopic `json:"topics"`
	Deleted   []string    `json:"deletedTopicIds,omitempty"`
}

type metaTopic struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

func readMeta(fs vfs.FS, dir string) (m metaFile, ok bool, err error) {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, metaFileName))
	if errors.Is(err, os.ErrNotExist) {
		return metaFile{}, false, nil
	}
	if err != nil {
		return metaFile{}, false, err
	}
	return m, true, json.Unmarshal(b, &m)
}

func writeMeta(fs vfs.FS, dir string, m metaFile) error {
	sort.Slice(m.Topics, func(i, j int) bool { return m.Topics[i].Name < m.Topics[j].Name })
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return vfs.WriteFileSync(fs, dir, filepath.Join(dir, metaFileName), b)
}
