package strand_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
)

// remote.log.copy.disable (Kafka 3.9): a tiered topic with it set uploads
// nothing and keeps its local data by the total retention (here
// unlimited, so local.retention.bytes=1 deletes nothing); ListOffsets -6
// is -1. Set back to false, the sealed segments go to the store and local
// retention applies again; the records read from 0 throughout.
func TestTieredCopyDisable(t *testing.T) {
	store := startObjectStore(t)
	b, cl := startTiered(t, filepath.Join(t.TempDir(), "data"), store)
	defer func() {
		cl.Close()
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	const topic, n = "readonly", 300
	createTieredTopic(t, cl, topic, 1, "remote.log.copy.disable", "true")
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(tieredValue(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b.TierPass(false)
	b.ApplyRetention()
	if tiered, local, pending := listOffset(t, cl, topic, -5), listOffset(t, cl, topic, -4), listOffset(t, cl, topic, -6); tiered != -1 || local != 0 || pending != -1 {
		t.Fatalf("with remote.log.copy.disable: latest tiered %d, earliest local %d, earliest pending upload %d; want -1, 0, -1", tiered, local, pending)
	}

	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "remote.log.copy.disable", Value: kadm.StringPtr("false")},
	}, topic)
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	b.TierPass(false)
	b.ApplyRetention()
	tiered, local := listOffset(t, cl, topic, -5), listOffset(t, cl, topic, -4)
	if tiered <= 0 || local != tiered+1 {
		t.Fatalf("copy enabled again: latest tiered %d, earliest local %d; want uploads and local retention after them", tiered, local)
	}
	for i, r := range consumeFromZero(t, b.Addr(), topic, n)[:n] {
		if r.Offset != int64(i) || string(r.Value) != tieredValue(i) {
			t.Fatalf("record %d: offset %d", i, r.Offset)
		}
	}
}

// The console's topic page says where a tiered partition's data lives:
// remote from 0 to the upload end, local from there, with both sizes.
func TestTieredConsoleShowsTiers(t *testing.T) {
	store := startObjectStore(t)
	b, err := strand.Start(context.Background(), strand.Config{Dir: t.TempDir(), TieredStorage: store, RetentionCheckInterval: time.Hour,
		ConsoleAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic("where", 1, map[string]string{"remote.storage.enable": "true", "local.retention.bytes": "1", "segment.bytes": "8192"}); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, _, err := b.Produce("where", nil, []byte(tieredValue(i))); err != nil {
			t.Fatal(err)
		}
	}
	b.TierPass(false)
	b.ApplyRetention()
	resp, err := http.Get("http://" + b.ConsoleAddr() + "/api/v1/topics/where")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		Tiered     bool
		Partitions []struct {
			Bytes int64
			Tier  *struct {
				RemoteStart int64 `json:"remote_start_offset"`
				UploadedEnd int64 `json:"remote_end_offset"`
				RemoteBytes int64 `json:"remote_bytes"`
				LocalStart  int64 `json:"local_start_offset"`
				LocalBytes  int64 `json:"local_bytes"`
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if !d.Tiered || len(d.Partitions) != 1 || d.Partitions[0].Tier == nil {
		t.Fatalf("console topic: %+v", d)
	}
	tr := d.Partitions[0].Tier
	if tr.RemoteStart != 0 || tr.UploadedEnd <= 0 || tr.LocalStart != tr.UploadedEnd || tr.RemoteBytes <= tr.LocalBytes || tr.LocalBytes <= 0 {
		t.Fatalf("where the data lives: %+v", *tr)
	}
	page, err := http.Get("http://" + b.ConsoleAddr() + "/topics/where")
	if err != nil {
		t.Fatal(err)
	}
	defer page.Body.Close()
	html, _ := io.ReadAll(page.Body)
	if !strings.Contains(string(html), `<table id="tiers">`) || !strings.Contains(string(html), fmt.Sprintf(`<td class="num local-start">%d</td>`, tr.LocalStart)) {
		t.Fatalf("the topic page does not show the tiers:\n%s", html)
	}
}
