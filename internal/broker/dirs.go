package broker

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
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
// interrupted creates, prunes tombstones whose directories are gone, and
// refuses (or, with Config.RecoverTopics, re-registers) directories holding
// data that m does not explain. changed reports whether m must be written.
func (b *Broker) checkPartitionDirs(m *metaFile) (changed bool, err error) {
	b.deleted = make(map[TopicID]bool)
	for _, d := range m.Deleted {
		id, _ := parseTopicID(d) // checked by readMeta
		b.deleted[id] = true
	}
	orphans, err := b.orphanDirs(m)
	if err != nil {
		return false, err
	}
	remaining := make(map[TopicID]bool) // tombstoned ids with directories left
	var unexplained []orphanDir
	for _, o := range orphans {
		switch path := filepath.Join(b.cfg.Dir, o.name); {
		case !o.id.IsZero() && b.deleted[o.id]:
			b.logger.Info("broker: removing partition directory of a deleted topic", "dir", path, "topic_id", o.id)
			if err := b.fs.RemoveAll(path); err != nil {
				b.logger.Warn("broker: cannot remove partition directory of a deleted topic", "dir", path, "err", err)
				remaining[o.id] = true
			}
		case !holdsRecords(b.fs, path):
			b.logger.Info("broker: removing empty partition directory no topic owns (an interrupted create)", "dir", path)
			if err := b.fs.RemoveAll(path); err != nil {
				b.logger.Warn("broker: cannot remove empty partition directory", "dir", path, "err", err)
			}
		default:
			unexplained = append(unexplained, o)
		}
	}
	if len(remaining) != len(b.deleted) {
		b.deleted, changed = remaining, true
		m.Deleted = m.Deleted[:0]
		for id := range remaining {
			m.Deleted = append(m.Deleted, fmt.Sprintf("%x", id[:]))
		}
	}
	if len(unexplained) == 0 {
		return changed, nil
	}
	if !b.cfg.RecoverTopics {
		return false, unexplainedError(b.cfg.Dir, unexplained)
	}
	if err := b.recoverTopics(m, unexplained); err != nil {
		return false, err
	}
	return true, nil
}

// orphanDirs lists the partition directories that m does not list.
func (b *Broker) orphanDirs(m *metaFile) ([]orphanDir, error) {
	names, err := b.fs.ReadDir(b.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("broker: list data directory %s: %w", b.cfg.Dir, err)
	}
	listed := make(map[string]int32, len(m.Topics))
	for _, t := range m.Topics {
		listed[t.Name] = t.Partitions
	}
	var out []orphanDir
	for _, name := range names {
		topic, part, ok := parsePartitionDir(name)
		if !ok || int32(part) < listed[topic] {
			continue
		}
		path := filepath.Join(b.cfg.Dir, name)
		if fi, err := b.fs.Stat(path); err != nil || !fi.IsDir() {
			continue
		}
		id, err := readPartitionMeta(b.fs, path)
		if err != nil && !errors.Is(err, errNoPartitionMeta) {
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

// recoverTopics adds the topics of unexplained directories to m: a listed
// topic whose id they carry grows to cover them; an unlisted name becomes a
// topic with its directories' id (a new one if they carry none) and default
// configs.
func (b *Broker) recoverTopics(m *metaFile, dirs []orphanDir) error {
	byName := make(map[string][]orphanDir)
	for _, o := range dirs {
		byName[o.topic] = append(byName[o.topic], o)
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		ds := byName[name]
		id := ds[0].id
		n := int32(0)
		for _, o := range ds {
			if o.id != id {
				return fmt.Errorf("broker: --recover-topics: the directories of topic %q carry different topic ids; move the stray ones out of %s", name, b.cfg.Dir)
			}
			n = max(n, int32(o.part)+1)
		}
		if i := slices.IndexFunc(m.Topics, func(t metaTopic) bool { return t.Name == name }); i >= 0 {
			known, _ := parseTopicID(m.Topics[i].ID)
			if !id.IsZero() && id != known {
				return fmt.Errorf("broker: --recover-topics: %s holds topic %q with id %s, but %s's topic %q has id %s; move those directories out of %s",
					b.cfg.Dir, name, id, metaFileName, name, known, b.cfg.Dir)
			}
			b.logger.Warn("broker: recovered partitions of a listed topic", "topic", name, "partitions", n, "was", m.Topics[i].Partitions)
			m.Topics[i].Partitions = n
			continue
		}
		if id.IsZero() {
			id = newTopicID()
		}
		b.logger.Warn("broker: recovered a topic from its directories, with default configs", "topic", name, "topic_id", id, "partitions", n)
		mt := metaTopic{Name: name, ID: fmt.Sprintf("%x", id[:]), Partitions: n}
		if IsInternalTopic(name) { // its pinned configs, not the defaults
			mt.Configs = offsetsTopicSpec().Configs
		}
		m.Topics = append(m.Topics, mt)
	}
	return nil
}

// claimPartitionDir makes dir (a partition directory name) belong to topic
// id before its log opens: it creates it with partition.metadata, records
// the id in a directory that predates the file, replaces a deleted topic's
// leftover, and refuses another topic's data.
func (b *Broker) claimPartitionDir(name string, id TopicID) error {
	path := filepath.Join(b.cfg.Dir, name)
	got, err := readPartitionMeta(b.fs, path)
	switch {
	case err == nil && got == id:
		return nil
	case err == nil && b.deleted[got]:
		b.logger.Info("broker: replacing the leftover directory of a deleted topic", "dir", path, "topic_id", got)
		if err := b.fs.RemoveAll(path); err != nil {
			return err
		}
	case err == nil:
		return fmt.Errorf("%s holds data of topic id %s, not of this topic (id %s); move it out of %s", path, got, id, b.cfg.Dir)
	case !errors.Is(err, errNoPartitionMeta):
		return err
	}
	if err := b.fs.MkdirAll(path, 0o755); err != nil {
		return err
	}
	if err := writePartitionMeta(b.fs, path, id); err != nil {
		return err
	}
	return b.fs.SyncDir(b.cfg.Dir)
}
