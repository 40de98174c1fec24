package strand_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/tiered/storetest"
	"github.com/strandmq/strand/internal/vfs"
)

// tieredTopicWithObjects creates a tiered topic on b, produces n records
// and uploads its sealed segments, and returns how many objects the
// topic has in the store.
func tieredTopicWithObjects(t *testing.T, b *strand.Broker, cl *kgo.Client, st *storetest.Server, topic string, n int) int {
	t.Helper()
	ctx := context.Background()
	createTieredTopic(t, cl, topic, 2)
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(tieredValue(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b.TierPass(false)
	objs := topicObjects(t, st, topic)
	if objs == 0 {
		t.Fatalf("no object of %s in the store after an upload pass", topic)
	}
	return objs
}

// storeAndDir starts a store and returns it, a tier on it that uploads
// only when a test asks (TierPass) and a data directory.
func storeAndDir(t *testing.T) (*storetest.Server, *strand.TieredStorageConfig, string) {
	st := storetest.Start(t)
	return st, &strand.TieredStorageConfig{Endpoint: st.URL, Bucket: st.Bucket, AccessKey: st.AccessKey, SecretKey: st.SecretKey,
		Prefix: "test/", UploadInterval: time.Hour}, filepath.Join(t.TempDir(), "data")
}

// topicObjects counts the store's objects under topic's prefixes.
func topicObjects(t *testing.T, st *storetest.Server, topic string) int {
	t.Helper()
	objs, err := storeClient(t, st).List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if strings.HasPrefix(o.Key, "test/"+topic+"-") {
			n++
		}
	}
	return n
}

// journaled lists the data directory's journal of remote deletions.
func journaled(t *testing.T, dir string) []string {
	t.Helper()
	names, err := os.ReadDir(filepath.Join(dir, partition.RemoteDeletesDir))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		out = append(out, n.Name())
	}
	return out
}

// A topic deletion whose object deletions the store refuses leaves its
// partitions in the data directory's journal; after a restart, once the
// store takes deletions again, a tier pass deletes every object of the
// topic and empties the journal (issue 36: no orphan for ever).
func TestTieredTopicDeletionRetried(t *testing.T) {
	st, store, dir := storeAndDir(t)
	b, cl := startTiered(t, dir, store)
	const topic = "gone"
	before := tieredTopicWithObjects(t, b, cl, st, topic, 400)

	st.Refuse(func(r *http.Request) bool { return r.Method == http.MethodDelete })
	if _, err := kadm.NewClient(cl).DeleteTopics(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	if n := topicObjects(t, st, topic); n != before {
		t.Fatalf("%d of %d objects left with deletions refused, want all", n, before)
	}
	if j := journaled(t, dir); len(j) != 2 {
		t.Fatalf("journal of remote deletions %v, want both partitions", j)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b, cl = startTiered(t, dir, store)
	defer func() {
		cl.Close()
		b.Close()
	}()
	b.TierPass(false) // still refused: nothing changes, nothing is forgotten
	if n, j := topicObjects(t, st, topic), journaled(t, dir); n != before || len(j) != 2 {
		t.Fatalf("after a refused pass: %d objects (want %d), journal %v (want both partitions)", n, before, j)
	}
	st.Refuse(nil)
	b.TierPass(false)
	if n := topicObjects(t, st, topic); n != 0 {
		t.Fatalf("%d objects of the deleted topic left after a pass with the store taking deletions", n)
	}
	if j := journaled(t, dir); len(j) != 0 {
		t.Fatalf("journal %v after the objects went, want empty", j)
	}
}

// A node that stopped after its metadata recorded a topic deletion but
// before it removed the partitions (a crash in between) removes their
// directories at the next start, and journals their remote objects,
// which the next tier pass deletes.
func TestTieredTopicDeletionAfterCrash(t *testing.T) {
	st, store, dir := storeAndDir(t)
	b, cl := startTiered(t, dir, store)
	const topic = "crashed"
	tieredTopicWithObjects(t, b, cl, st, topic, 400)
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The deletion reaches the metadata only, as if the node died right
	// after writing it.
	meta, _, err := cluster.OpenFileStore(vfs.OS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := meta.Apply(cluster.RemoveTopic{Name: topic}); err != nil {
		t.Fatal(err)
	}

	b, cl = startTiered(t, dir, store)
	defer func() {
		cl.Close()
		b.Close()
	}()
	for _, p := range []string{topic + "-0", topic + "-1"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Fatalf("partition directory %s of the deleted topic after the restart: %v", p, err)
		}
	}
	b.TierPass(false)
	if n := topicObjects(t, st, topic); n != 0 {
		t.Fatalf("%d objects of the topic deleted before the crash left after a tier pass", n)
	}
	if j := journaled(t, dir); len(j) != 0 {
		t.Fatalf("journal %v after the objects went, want empty", j)
	}
}
