package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/datadir"
	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/topicconfig"
	"github.com/strandmq/strand/internal/vfs"
)

// twoTopics creates topics a (2 partitions) and b (1) with records in each,
// closes the broker and returns the ids.
func twoTopics(t *testing.T, fs vfs.FS, dir string) (a, bID TopicID) {
	t.Helper()
	b := open(t, fs, dir)
	ta := mustCreate(t, b, TopicSpec{Name: "a", Partitions: 2, Configs: map[string]string{"retention.ms": "123456"}})
	tb := mustCreate(t, b, TopicSpec{Name: "b", Partitions: 1})
	for i := range 10 {
		for _, topic := range []string{"a", "b"} {
			if _, _, err := b.Produce(topic, []byte{byte(i)}, []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return ta.ID, tb.ID
}

func records(t *testing.T, b *Broker, topic string) int {
	t.Helper()
	tp, err := b.Topic(topic)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for p := range tp.Partitions() {
		part, _ := tp.Partition(PartitionID(p))
		n += int(part.LogEndOffset() - part.LogStartOffset())
	}
	return n
}

func editMeta(t *testing.T, fs vfs.FS, dir string, edit func(*metaFile)) {
	t.Helper()
	m, ok, err := readMeta(fs, dir)
	if err != nil || !ok {
		t.Fatalf("meta: %v %v", ok, err)
	}
	edit(&m)
	if err := writeMeta(fs, dir, m); err != nil {
		t.Fatal(err)
	}
}

func mustExist(t *testing.T, fs vfs.FS, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := fs.Stat(p); err != nil {
			t.Errorf("%s is gone: %v", p, err)
		}
	}
}

// TestLostMetaRefusesToStart: without meta.json, a directory full of
// partitions is refused, naming them and the way out; nothing is deleted;
// --recover-topics brings the topics back with their ids and records.
func TestLostMetaRefusesToStart(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		idA, idB := twoTopics(t, fs, dir)
		if err := fs.Remove(filepath.Join(dir, metaFileName)); err != nil {
			t.Fatal(err)
		}
		for range 2 { // a refusal must not change anything a second try sees
			_, err := Open(Config{FS: fs, Dir: dir, Logger: quiet})
			if err == nil {
				t.Fatal("opened a data directory whose meta.json is gone")
			}
			for _, want := range []string{"a-0", "a-1", "b-0", idA.String(), "--recover-topics", "Nothing was deleted"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal lacks %q: %v", want, err)
				}
			}
			mustExist(t, fs, filepath.Join(dir, "a-0"), filepath.Join(dir, "a-1"), filepath.Join(dir, "b-0"))
		}
		b := open(t, fs, dir, func(c *Config) { c.RecoverTopics = true })
		defer b.Close()
		for topic, id := range map[string]TopicID{"a": idA, "b": idB} {
			tp, err := b.Topic(topic)
			if err != nil {
				t.Fatal(err)
			}
			if tp.ID != id || records(t, b, topic) != 10 {
				t.Errorf("recovered %s: id %s (want %s), %d records (want 10)", topic, tp.ID, id, records(t, b, topic))
			}
		}
		if tp, _ := b.Topic(ConsumerOffsetsTopic); tp.Config.Overrides()[ConfigCleanupPolicy] != "compact" {
			t.Errorf("%s recovered without its pinned configs: %v", ConsumerOffsetsTopic, tp.Config.Overrides())
		}
		if tp, _ := b.Topic("a"); tp.Partitions() != 2 {
			t.Errorf("a recovered with %d partitions", tp.Partitions())
		}
	})
}

// TestMetaMissingATopicRefusesToStart: a valid meta.json that lacks one
// topic (an older copy) must not cost that topic's data, and re-creating
// the topic must not adopt it.
func TestMetaMissingATopicRefusesToStart(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		twoTopics(t, fs, dir)
		editMeta(t, fs, dir, func(m *metaFile) {
			dropTopic(m, "b")
		})
		_, err := Open(Config{FS: fs, Dir: dir, Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), "b-0") || strings.Contains(err.Error(), "a-0") {
			t.Fatalf("Open: %v, want a refusal naming b-0 only", err)
		}
		mustExist(t, fs, filepath.Join(dir, "b-0", "00000000000000000000.log"))
	})
}

// TestInterruptedDeleteFinishes: a delete that crashed after its
// tombstone reached meta.json finishes at start-up; re-creating the topic
// starts empty, at offset 0, with a new id.
func TestInterruptedDeleteFinishes(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		_, idB := twoTopics(t, fs, dir)
		editMeta(t, fs, dir, func(m *metaFile) { // what DeleteTopic writes first
			dropTopic(m, "b")
			m.Deleted = append(m.Deleted, hexID(idB))
		})
		b := open(t, fs, dir)
		defer b.Close()
		if _, err := fs.Stat(filepath.Join(dir, "b-0")); err == nil {
			t.Fatal("the deleted topic's directory is still there")
		}
		if m, _, _ := readMeta(fs, dir); len(m.Deleted) != 0 {
			t.Errorf("tombstones kept after their directories went: %v", m.Deleted)
		}
		tb := mustCreate(t, b, TopicSpec{Name: "b", Partitions: 1})
		if tb.ID == idB || records(t, b, "b") != 0 {
			t.Fatalf("re-created b: id %s (old %s), %d records", tb.ID, idB, records(t, b, "b"))
		}
		if p, o, err := b.Produce("b", []byte("k"), []byte("v")); err != nil || p != 0 || o != 0 {
			t.Fatalf("first produce to re-created b: %d/%d %v", p, o, err)
		}
	})
}

// TestDeleteThenRecreate: the normal path leaves no tombstone behind on
// the next start and never adopts the old data.
func TestDeleteThenRecreate(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		twoTopics(t, fs, dir)
		b := open(t, fs, dir)
		if err := b.DeleteTopic("a"); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, b, TopicSpec{Name: "a", Partitions: 2})
		if n := records(t, b, "a"); n != 0 {
			t.Fatalf("re-created topic has %d records", n)
		}
		b.Close()
		b = open(t, fs, dir)
		defer b.Close()
		if n := records(t, b, "a"); n != 0 {
			t.Fatalf("re-created topic has %d records after restart", n)
		}
	})
}

// TestInterruptedCreateCleaned: an empty partition directory no topic owns
// (a create that crashed before meta.json) is removed, not refused.
func TestInterruptedCreateCleaned(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		twoTopics(t, fs, dir)
		orphan := filepath.Join(dir, "c-0")
		if err := fs.MkdirAll(orphan, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := datadir.WritePartitionMeta(fs, orphan, newTopicID()); err != nil {
			t.Fatal(err)
		}
		f, err := vfs.Create(fs, filepath.Join(orphan, "00000000000000000000.log"))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		b := open(t, fs, dir)
		defer b.Close()
		if _, err := fs.Stat(orphan); err == nil {
			t.Fatal("empty orphan directory kept")
		}
	})
}

// TestForeignPartitionDirRefused: a directory carrying another topic's id
// is never adopted by a topic of the same name.
func TestForeignPartitionDirRefused(t *testing.T) {
	fs, dir := vfs.NewMem(), "/d"
	twoTopics(t, fs, dir)
	if err := datadir.WritePartitionMeta(fs, filepath.Join(dir, "b-0"), newTopicID()); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{FS: fs, Dir: dir, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "holds data of topic id") {
		t.Fatalf("Open: %v", err)
	}
}

// TestLongestTopicName: a 249-character name (Kafka's limit) survives
// idempotent produce, a clean close (producer snapshots) and a reopen on
// the real file system, whose names are limited to 255 bytes.
func TestLongestTopicName(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("x", topicconfig.MaxTopicNameLen)
	b := open(t, vfs.Default, dir)
	mustCreate(t, b, TopicSpec{Name: name, Partitions: 3, Configs: map[string]string{"segment.bytes": "16384"}})
	ctx := context.Background()
	pid := producer.ID(7)
	for p := range PartitionID(3) {
		part, _ := b.Partition(name, p)
		for seq := int32(0); seq < 300; seq += 3 {
			if _, err := part.Append(ctx, idempotent(t, pid, seq, 3), AcksAll); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Close(); err != nil {
		t.Fatalf("clean close with a %d-character topic name: %v", len(name), err)
	}
	b = open(t, vfs.Default, dir)
	defer b.Close()
	if n := records(t, b, name); n != 900 {
		t.Fatalf("%d records after reopen, want 900", n)
	}
	part, _ := b.Partition(name, 2)
	res, err := part.Append(ctx, idempotent(t, pid, 297, 3), AcksAll)
	if err != nil || !res.Duplicate {
		t.Fatalf("retry after reopen: %+v %v ", res, err)
	}
}

func hexID(id TopicID) string { return fmt.Sprintf("%x", id[:]) }

func dropTopic(m *metaFile, name string) {
	m.Topics = slices.DeleteFunc(m.Topics, func(t metaTopic) bool { return t.Name == name })
}

// TestLostProducerIDsFile: without producer-ids.json, the broker still
// never hands out an id that the logs hold (after a clean close and after a
// crash).
func TestLostProducerIDsFile(t *testing.T) {
	for _, crash := range []bool{false, true} {
		fs := vfs.NewMem()
		b := open(t, fs, "/d")
		// flush.messages=1: the batch is on disk when acknowledged, so a
		// crash keeps it.
		mustCreate(t, b, TopicSpec{Name: "t", Partitions: 1, Configs: map[string]string{"flush.messages": "1"}})
		var used producer.ID
		for range 3 {
			id, _, err := b.AllocateProducerID()
			if err != nil {
				t.Fatal(err)
			}
			used = id
		}
		part, _ := b.Partition("t", 0)
		if _, err := part.Append(context.Background(), idempotent(t, used, 0, 2), AcksAll); err != nil {
			t.Fatal(err)
		}
		if crash {
			fs = fs.CrashClone(vfs.CrashOptions{})
		}
		b.Close()
		if err := fs.Remove(filepath.Join("/d", "producer-ids.json")); err != nil {
			t.Fatal(err)
		}
		b = open(t, fs, "/d")
		id, _, err := b.AllocateProducerID()
		b.Close()
		if err != nil || id <= used {
			t.Fatalf("crash=%v: allocated %d after losing producer-ids.json; the log holds %d (%v)", crash, id, used, err)
		}
	}
}

// TestStaleOffsetsSweptAtStart: offsets of a topic that is gone when the
// broker starts (a delete that crashed before removing them) are removed
// before any client can see them, so a topic re-created under the name
// starts with no commit.
func TestStaleOffsetsSweptAtStart(t *testing.T) {
	fs := vfs.NewMem()
	b := open(t, fs, "/d", noDelay)
	tp := mustCreate(t, b, TopicSpec{Name: "gone", Partitions: 1})
	for i := range 5 {
		if _, _, err := b.Produce("gone", []byte{byte(i)}, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	at := group.TopicPartition{Topic: "gone", Partition: 0}
	codes := coordOf(t, b, "g").CommitOffsets(ctx, group.OffsetCommitRequest{GroupID: "g", Generation: group.NoGeneration,
		Offsets: map[group.TopicPartition]group.OffsetAndMetadata{at: {Offset: 5, LeaderEpoch: -1}}})
	if codes[at] != group.CodeNone {
		t.Fatalf("commit: %v", codes[at])
	}
	b.Close()
	editMeta(t, fs, "/d", func(m *metaFile) { // the delete's meta.json write, and no more
		dropTopic(m, "gone")
		m.Deleted = append(m.Deleted, hexID(tp.ID))
	})
	b = open(t, fs, "/d", noDelay)
	defer b.Close()
	offs, code := coordOf(t, b, "g").FetchOffsets(ctx, "g", []group.TopicPartition{at})
	if o, ok := offs[at]; code != group.CodeNone || (ok && o.Offset >= 0) {
		t.Fatalf("offset of a deleted topic survived the restart: %+v %v", offs, code)
	}
}

// TestInternalTopicBadStoredConfigsIgnored: overrides in meta.json that
// would break __consumer_offsets (written before they were refused) are
// ignored at start-up, so no committed offset is wiped.
func TestInternalTopicBadStoredConfigsIgnored(t *testing.T) {
	fs := vfs.NewMem()
	b := open(t, fs, "/d")
	b.Close()
	editMeta(t, fs, "/d", func(m *metaFile) {
		for i := range m.Topics {
			if m.Topics[i].Name == ConsumerOffsetsTopic {
				m.Topics[i].Configs = map[string]string{"cleanup.policy": "delete", "retention.ms": "1", "max.message.bytes": "100", "segment.bytes": "1024"}
			}
		}
	})
	b = open(t, fs, "/d")
	defer b.Close()
	tp, _ := b.Topic(ConsumerOffsetsTopic)
	for k, want := range map[string]string{"cleanup.policy": "compact", "retention.ms": "-1", "max.message.bytes": "67108864", "segment.bytes": "1073741824"} {
		if v, _ := tp.Config.Get(k); v != want {
			t.Errorf("%s = %s, want %s", k, v, want)
		}
	}
}
