package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/tiered"
	"github.com/strandmq/strand/internal/tiered/storetest"
)

// `strand serve --tier-*` against an S3-compatible server (storetest: gofakes3,
// or the external store CI runs; credentials from a file): a topic's sealed segments go to
// the store, `topic describe` shows the local start moving up, the
// broker is SIGKILLed with uploads pending and restarted, and afterwards
// every record reads from offset 0, the manifest records each segment
// once, and no orphan object is left.
func TestServeTieredStorageSurvivesSIGKILL(t *testing.T) {
	st := storetest.Start(t)
	creds := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = "+st.AccessKey+"\naws_secret_access_key = "+st.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	console := freeAddr(t)
	args := []string{"--data-dir", data, "--console-listen", console, "--tier-endpoint", st.URL, "--tier-bucket", st.Bucket,
		"--tier-credentials-file", creds, "--tier-prefix", "cli/", "--tier-upload-interval", "100ms",
		"--retention-check-interval", "100ms"}
	p := startServe(t, args...)
	ok(t, p.addr, "", "topic", "create", "tiered", "--config", "remote.storage.enable=true",
		"--config", "local.retention.bytes=1", "--config", "segment.bytes=8192")

	const first, second = 400, 400
	produceValues(t, p.addr, 0, first)
	defer func() {
		if t.Failed() {
			t.Log(p.logs.String())
		}
	}()
	localStart := awaitLocalStart(t, p.addr, 1)

	produceValues(t, p.addr, first, second)
	_ = p.cmd.Process.Signal(syscall.SIGKILL) // uploads of the new segments pending or running
	_ = p.wait(t, time.Minute)

	p = startServe(t, args...)
	awaitLocalStart(t, p.addr, localStart+1)
	recs := consumeValues(t, p.addr, first+second)
	for i, r := range recs {
		if r.Offset != int64(i) || string(r.Value) != cliValue(i) {
			t.Fatalf("record %d: offset %d value %.20q", i, r.Offset, r.Value)
		}
	}
	r := ok(t, p.addr, "", "topic", "describe", "tiered", "--console", console)
	if !strings.Contains(r.stdout, "LOCAL START") || !strings.Contains(r.stdout, "REMOTE BYTES") {
		t.Fatalf("topic describe has no LOCAL START or REMOTE BYTES column:\n%s", r.stdout)
	}
	// Where the data lives: the leader's disk (DescribeLogDirs) from the
	// local start, the store up to its end, with its bytes (the console).
	var desc topicDescription
	decodeJSON(t, ok(t, p.addr, "", "topic", "describe", "tiered", "-o", "json", "--console", console).stdout, &desc)
	d := desc.Partitions[0]
	if d.LocalBytes == nil || *d.LocalBytes <= 0 || d.RemoteEndOffset == nil || d.LocalStartOffset == nil ||
		*d.RemoteEndOffset < *d.LocalStartOffset || d.RemoteBytes == nil || *d.RemoteBytes <= 0 {
		t.Fatalf("topic describe's tier columns: %s", r.stdout)
	}

	s3 := storeClient(t, st)
	objs, err := s3.List(context.Background(), "cli/")
	if err != nil {
		t.Fatal(err)
	}
	var manifest string
	segments := 0
	for _, o := range objs {
		switch {
		case strings.Contains(o.Key, "/manifest/"):
			manifest = o.Key
		case strings.Contains(o.Key, "/segments/"):
			segments++
		}
	}
	raw, err := s3.Get(context.Background(), manifest, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var m tiered.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(m.Segments); i++ {
		if m.Segments[i].Base != m.Segments[i-1].Next {
			t.Fatalf("manifest segments %d and %d are not contiguous: %+v", i-1, i, m.Segments)
		}
	}
	// Orphans (objects of an upload the kill cut short) are cleaned only
	// after an hour's grace: the objects are at least the manifest's.
	if segments < 3*len(m.Segments) {
		t.Fatalf("%d segment objects for %d recorded segments", segments, len(m.Segments))
	}
	p.stop(t)
}

func cliValue(i int) string { return fmt.Sprintf("cli-%05d-%0200d", i, i) }

func produceValues(t *testing.T, addr string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("tiered"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < from+n; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(cliValue(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// awaitLocalStart polls `topic describe` until partition 0's local start
// is at least min, and returns it.
func awaitLocalStart(t *testing.T, addr string, min int64) int64 {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var desc topicDescription
		decodeJSON(t, ok(t, addr, "", "topic", "describe", "tiered", "-o", "json").stdout, &desc)
		if ls := desc.Partitions[0].LocalStartOffset; ls != nil && *ls >= min {
			if desc.Partitions[0].StartOffset != 0 {
				t.Fatalf("start offset %d with local start %d: want 0, the remote start", desc.Partitions[0].StartOffset, *ls)
			}
			return *ls
		}
	}
	t.Fatalf("the local log start never reached %d:\n%s", min, ok(t, addr, "", "topic", "describe", "tiered", "-o", "json").stdout)
	return 0
}

func consumeValues(t *testing.T, addr string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"tiered": {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", len(out), n)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatal(errs)
		}
		out = append(out, fs.Records()...)
	}
	return out[:n]
}
