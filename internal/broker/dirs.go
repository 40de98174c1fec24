package broker

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/datadir"
	"github.com/strandmq/strand/internal/partition"
)

// A partition directory is removed for one reason only: its topic id has a
// tombstone in meta.json (the topic was deleted), or it holds no record at
// all (a create interrupted by a crash). Data that meta.json does not
// explain stops the start-up: a lost meta.json must not cost every topic.

// orphanDir is a partition directory meta.json does not list.
type orphanDir struct {
	name  string
	topic string
	part  PartitionID
	id    TopicID // zero when the directory has no partition.metadata
}

// checkPartitionDirs removes the directories of deleted topics and of
// interrupted creates, and refuses (or, with Config.RecoverTopics,
// re-registers) directories holding data that img does not explain. It
// returns the records that bring the metadata in line: tombstones whose
// directories are gone, recovered topics.
func (b *Broker) checkPartitionDirs(img *cluster.Image) ([]cluster.Record, error) {
	orphans, err := b.orphanDirs(img)
	if err != nil {
		return nil, err
	}
	remaining := make(map[TopicID]bool) // tombstoned ids with directories left
	var unexplained []orphanDir
	for _, o := range orphans {
		switch path := filepath.Join(b.cfg.Dir, o.name); {
		case !o.id.IsZero() && img.IsDeleted(o.id):
			b.logger.Info("broker: removing partition directory of a deleted topic", "dir", path, "topic_id", o.id)
			err := partition.ForgetRemote(b.node, o.topic, o.id, o.part) // remote objects, if any: the tier pass deletes them
			if err == nil {
				err = b.fs.RemoveAll(path)
			}
			if err != nil {
				b.logger.Warn("broker: cannot remove partition directory of a deleted topic", "dir", path, "err", err)
				remaining[o.id] = true
			}
		case !datadir.HoldsRecords(b.fs, path):
			b.logger.Info("broker: removing empty partition directory no topic owns (an interrupted create)", "dir", path)
			if err := b.fs.RemoveAll(path); err != nil {
				b.logger.Warn("broker: cannot remove empty partition directory", "dir", path, "err", err)
			}
		default:
			unexplained = append(unexplained, o)
		}
	}
	var recs []cluster.Record
	var gone []TopicID
	for _, id := range img.Deleted() {
		if !remaining[id] {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		recs = append(recs, cluster.ForgetDeleted{IDs: gone})
	}
	if len(unexplained) == 0 {
		return recs, nil
	}
	if !b.cfg.RecoverTopics {
		return nil, unexplainedError(b.cfg.Dir, unexplained)
	}
	recovered, err := b.recoverTopics(img, unexplained)
	if err != nil {
		return nil, err
	}
	return append(recs, recovered...), nil
}

// orphanDirs lists the partition directories that m does not list.
func (b *Broker) orphanDirs(img *cluster.Image) ([]orphanDir, error) {
	names, err := b.fs.ReadDir(b.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("broker: list data directory %s: %w", b.cfg.Dir, err)
	}
	listed := make(map[string]int32)
	for _, t := range img.Topics() {
		listed[t.Name] = t.Partitions
	}
	var out []orphanDir
	for _, name := range names {
		topic, part, ok := partition.ParseDirName(name)
		if !ok || int32(part) < listed[topic] {
			continue
		}
		path := filepath.Join(b.cfg.Dir, name)
		if fi, err := b.fs.Stat(path); err != nil || !fi.IsDir() {
			continue
		}
		id, err := datadir.ReadPartitionMeta(b.fs, path)
		if err != nil && !errors.Is(err, datadir.ErrNoPartitionMeta) {
			return nil, fmt.Errorf("broker: %w", err)
		}
		out = append(out, orphanDir{name: name, topic: topic, part: part, id: id})
	}
	return out, nil
}

func unexplainedError(dir string, dirs []orphanDir) error {
	var list []string
	for i, o := range dirs {
		if i == 10 {
			list = append(list, fmt.Sprintf("and %d more", len(dirs)-i))
			break
		}
		id := "no topic id"
		if !o.id.IsZero() {
			id = "topic id " + o.id.String()
		}
		list = append(list, fmt.Sprintf("%s (%s)", o.name, id))
	}
	return fmt.Errorf("broker: data directory %s holds partition data that %s does not list (was %s lost or replaced by an older copy?): %s. "+
		"Nothing was deleted. Restore %s from a backup, or start once with --recover-topics "+
		"to register these topics again from their directories (their configs return to the defaults)",
		dir, metaFileName, metaFileName, strings.Join(list, ", "), metaFileName)
}

// recoverTopics returns the records that register the topics of
// unexplained directories: a listed topic whose id they carry grows to
// cover them; an unlisted name becomes a topic with its directories' id (a
// new one if they carry none) and default configs.
func (b *Broker) recoverTopics(img *cluster.Image, dirs []orphanDir) ([]cluster.Record, error) {
	byName := make(map[string][]orphanDir)
	for _, o := range dirs {
		byName[o.topic] = append(byName[o.topic], o)
	}
	var recs []cluster.Record
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		ds := byName[name]
		id := ds[0].id
		n := int32(0)
		for _, o := range ds {
			if o.id != id {
				return nil, fmt.Errorf("broker: --recover-topics: the directories of topic %q carry different topic ids; move the stray ones out of %s", name, b.cfg.Dir)
			}
			n = max(n, int32(o.part)+1)
		}
		if known, ok := img.Topic(name); ok {
			if !id.IsZero() && id != known.ID {
				return nil, fmt.Errorf("broker: --recover-topics: %s holds topic %q with id %s, but %s's topic %q has id %s; move those directories out of %s",
					b.cfg.Dir, name, id, metaFileName, name, known.ID, b.cfg.Dir)
			}
			b.logger.Warn("broker: recovered partitions of a listed topic", "topic", name, "partitions", n, "was", known.Partitions)
			known.Partitions = n
			recs = append(recs, cluster.PutTopic{Topic: known})
			continue
		}
		if id.IsZero() {
			id = newTopicID()
		}
		b.logger.Warn("broker: recovered a topic from its directories, with default configs", "topic", name, "topic_id", id, "partitions", n)
		t := cluster.Topic{Name: name, ID: id, Partitions: n}
		if IsInternalTopic(name) { // its pinned configs, not the defaults
			t.Configs = offsetsTopicSpec(1).Configs
		}
		recs = append(recs, cluster.PutTopic{Topic: t})
	}
	return recs, nil
}

// claimPartitionDir makes dir (a partition directory name) belong to topic
// id before its log opens: it creates it with partition.metadata, records
// the id in a directory that predates the file, replaces a deleted topic's
// leftover, and refuses another topic's data.
func (b *Broker) claimPartitionDir(name string, id TopicID) error {
	path := filepath.Join(b.cfg.Dir, name)
	got, err := datadir.ReadPartitionMeta(b.fs, path)
	switch {
	case err == nil && got == id:
		return nil
	case err == nil && b.meta.Image().IsDeleted(got):
		b.logger.Info("broker: replacing the leftover directory of a deleted topic", "dir", path, "topic_id", got)
		if err := b.fs.RemoveAll(path); err != nil {
			return err
		}
	case err == nil:
		return fmt.Errorf("%s holds data of topic id %s, not of this topic (id %s); move it out of %s", path, got, id, b.cfg.Dir)
	case !errors.Is(err, datadir.ErrNoPartitionMeta):
		return err
	}
	if err := b.fs.MkdirAll(path, 0o755); err != nil {
		return err
	}
	if err := datadir.WritePartitionMeta(b.fs, path, id); err != nil {
		return err
	}
	return b.fs.SyncDir(b.cfg.Dir)
}
