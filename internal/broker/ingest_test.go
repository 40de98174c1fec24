package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// batchOf encodes values (nil key) as one producer batch at offsets 0…n-1.
func batchOf(t *testing.T, opts record.BatchOptions, values ...string) []byte {
	t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Offset: record.Offset(i), Timestamp: 1000 + int64(i), Value: []byte(v),
			Headers: []record.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}}}
	}
	b, err := record.Encode(0, recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func valuesAt(t *testing.T, b *Broker, topic string, p PartitionID) map[record.Offset]string {
	t.Helper()
	recs, err := b.Fetch(topic, p, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	out := map[record.Offset]string{}
	for _, r := range recs {
		out[r.Offset] = string(r.Value)
	}
	return out
}

func TestValidatedProduce(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		b := open(t, fs, dir)
		defer b.Close()
		mustCreate(t, b, TopicSpec{Name: "orders", Partitions: 2, Configs: map[string]string{ConfigValidation: "json"}})
		p, _ := b.Partition("orders", 1)
		ctx := context.Background()

		for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
			t.Run(codec.String(), func(t *testing.T) {
				opts := record.DefaultBatchOptions()
				opts.Codec = codec
				end := p.LogEndOffset()
				res, err := p.Append(ctx, batchOf(t, opts, `{"a":1}`, `{bad`, `[2]`, `nope`), AcksAll)
				if err != nil || res.BaseOffset != end {
					t.Fatalf("append: %+v, %v", res, err)
				}
				if p.LogEndOffset() != end+4 {
					t.Fatalf("end %d, want %d: quarantined offsets must stay gaps", p.LogEndOffset(), end+4)
				}
				got := valuesAt(t, b, "orders", 1)
				if got[end] != `{"a":1}` || got[end+2] != `[2]` || len(got) != int(end/2+2) {
					t.Fatalf("main topic %v", got)
				}
				for _, o := range []record.Offset{end + 1, end + 3} {
					if _, ok := got[o]; ok {
						t.Fatalf("offset %d is not a gap", o)
					}
				}
			})
		}
		dlq, err := b.Fetch("orders.dlq", 1, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(dlq) != 10 {
			t.Fatalf("%d DLQ records, want 10", len(dlq))
		}
		for i, r := range dlq {
			q := ingest.Inspect(r.Headers)
			wantOff := record.Offset(4*(i/2) + 1 + 2*(i%2))
			if !q.OK || q.Source != (ingest.Source{Topic: "orders", Partition: 1, Offset: wantOff}) || !strings.HasPrefix(q.Reason, "json: ") {
				t.Fatalf("DLQ record %d: %+v", i, q)
			}
			if len(q.Headers) != 1 || r.Timestamp != 1000+int64(wantOff%4) {
				t.Fatalf("DLQ record %d lost its headers or timestamp: %+v", i, r)
			}
		}
		if s := b.TopicIngestStats("orders"); s.Validated != 20 || s.Accepted != 10 || s.Quarantined != 10 {
			t.Fatalf("stats %+v", s)
		}
		dt, _ := b.Topic("orders.dlq")
		if dt.Partitions() != 2 {
			t.Fatalf("DLQ has %d partitions", dt.Partitions())
		}
	})
}

func TestValidatedProduceAllInvalidAndIdempotentRetry(t *testing.T) {
	b := open(t, vfs.NewMem(), "/data")
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "t", Configs: map[string]string{ConfigValidation: "json", ConfigDLQTopic: "poison"}})
	p, _ := b.Partition("t", 0)
	ctx := context.Background()

	res, err := p.Append(ctx, batchOf(t, record.DefaultBatchOptions(), "x", "y"), AcksAll)
	if err != nil || res.BaseOffset != 0 || p.LogEndOffset() != 2 {
		t.Fatalf("all invalid: %+v %v, end %d", res, err, p.LogEndOffset())
	}
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 7, 0, 0
	batch := batchOf(t, opts, `1`, `bad`, `3`)
	for range 2 {
		res, err := p.Append(ctx, append([]byte(nil), batch...), AcksAll)
		if err != nil || res.BaseOffset != 2 {
			t.Fatalf("idempotent: %+v %v", res, err)
		}
	}
	if p.LogEndOffset() != 5 {
		t.Fatalf("end %d", p.LogEndOffset())
	}
	dlq, _ := b.Fetch("poison", 0, 0, 1<<20)
	if len(dlq) != 3 {
		t.Fatalf("%d DLQ records, want 3 (the retry must not quarantine again)", len(dlq))
	}
	// The next batch in sequence is accepted: producer state saw the rewritten batch.
	opts.BaseSequence = 3
	if res, err := p.Append(ctx, batchOf(t, opts, `4`), AcksAll); err != nil || res.BaseOffset != 5 {
		t.Fatalf("next sequence: %+v %v", res, err)
	}
	got := valuesAt(t, b, "t", 0)
	if len(got) != 3 || got[2] != "1" || got[4] != "3" || got[5] != "4" {
		t.Fatalf("main %v", got)
	}
}

func TestValidationConfigs(t *testing.T) {
	b := open(t, vfs.NewMem(), "/data")
	defer b.Close()
	for _, cfg := range []map[string]string{
		{ConfigValidation: "xml"},
		{ConfigValidation: "jsonschema"},
		{ConfigValidation: "jsonschema", ConfigValidationSchema: "{"},
		{ConfigValidationSchema: `{"type":"bogus"}`},
		{ConfigValidationKeyRequired: "maybe"},
		{ConfigDLQTopic: "bad name"},
	} {
		if _, err := b.CreateTopic(TopicSpec{Name: "t", Configs: cfg}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%v: %v, want ErrInvalidConfig", cfg, err)
		}
	}
	mustCreate(t, b, TopicSpec{Name: "t"})
	if err := b.AlterConfigs("t", map[string]string{ConfigValidation: "jsonschema", ConfigValidationSchema: "[1"}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("alter: %v", err)
	}
	// A validated DLQ is refused at produce time (it would nest validation).
	mustCreate(t, b, TopicSpec{Name: "a", Configs: map[string]string{ConfigValidation: "json", ConfigDLQTopic: "b"}})
	mustCreate(t, b, TopicSpec{Name: "b", Configs: map[string]string{ConfigValidation: "json", ConfigDLQTopic: "a"}})
	if _, err := b.ProduceRecords(context.Background(), "a", 0, []record.Record{{Value: []byte("x")}}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("validated DLQ: %v", err)
	}
}

const amountSchema = `{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`

func TestRedrive(t *testing.T) {
	b := open(t, vfs.NewMem(), "/data")
	defer b.Close()
	ctx := context.Background()
	mustCreate(t, b, TopicSpec{Name: "pay", Partitions: 2, Configs: map[string]string{ConfigValidation: "jsonschema", ConfigValidationSchema: amountSchema}})
	for p := range PartitionID(2) {
		var recs []record.Record
		for i := range 10 {
			v := fmt.Sprintf(`{"amount":%d}`, i)
			if i%2 == 1 {
				v = fmt.Sprintf(`{"amount":"%d"}`, i)
			}
			if i == 9 {
				v = "garbage"
			}
			recs = append(recs, record.Record{Key: []byte{byte(i)}, Value: []byte(v)})
		}
		if _, err := b.ProduceRecords(ctx, "pay", p, recs); err != nil {
			t.Fatal(err)
		}
	}
	dlq, _ := b.Fetch("pay.dlq", 0, 0, 1<<20)
	if len(dlq) != 5 || !strings.Contains(ingest.Inspect(dlq[0].Headers).Reason, "/amount: got string, want number") {
		t.Fatalf("DLQ %d records, first reason %q", len(dlq), ingest.Inspect(dlq[0].Headers).Reason)
	}
	// Still the old schema: nothing moves.
	res, err := b.Redrive(ctx, "pay", RedriveOptions{})
	if err != nil || res != (RedriveResult{StillInvalid: 10}) {
		t.Fatalf("first redrive %+v %v", res, err)
	}
	if err := b.Group(ingest.RedriveGroup("pay")).Seek(ctx, "pay.dlq", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Group(ingest.RedriveGroup("pay")).Seek(ctx, "pay.dlq", 1, 0); err != nil {
		t.Fatal(err)
	}
	accept := `{"type":"object","properties":{"amount":{"type":["number","string"]}},"required":["amount"]}`
	if err := b.IncrementalAlterConfigs("pay", []ConfigChange{{Name: ConfigValidationSchema, Op: OpSet, Value: accept}}, false); err != nil {
		t.Fatal(err)
	}
	// Interrupted after the first step (one DLQ batch: partition 0's five
	// records), then resumed.
	cctx, cancel := context.WithCancel(ctx)
	res, err = b.Redrive(cctx, "pay", RedriveOptions{ChunkBytes: 1, Progress: func(RedriveResult, int64) { cancel() }})
	if !errors.Is(err, context.Canceled) || res != (RedriveResult{Redriven: 4, StillInvalid: 1}) {
		t.Fatalf("interrupted redrive %+v %v", res, err)
	}
	res, err = b.Redrive(ctx, "pay", RedriveOptions{})
	if err != nil || res != (RedriveResult{Redriven: 4, StillInvalid: 1, AlreadyDone: 5}) {
		t.Fatalf("resumed redrive %+v %v", res, err)
	}
	res, err = b.Redrive(ctx, "pay", RedriveOptions{})
	if err != nil || res != (RedriveResult{AlreadyDone: 10}) {
		t.Fatalf("rerun %+v %v", res, err)
	}
	for p := range PartitionID(2) {
		recs, _ := b.Fetch("pay", p, 0, 1<<20)
		seen := map[string]int{}
		for _, r := range recs {
			seen[string(r.Value)]++
			for _, h := range r.Headers {
				if strings.HasPrefix(h.Key, "strand.dlq.") {
					t.Fatalf("redriven record kept %s", h.Key)
				}
			}
		}
		if len(recs) != 9 {
			t.Fatalf("partition %d has %d records, want 9", p, len(recs))
		}
		for v, n := range seen {
			if n != 1 {
				t.Fatalf("partition %d: %s written %d times", p, v, n)
			}
		}
	}
	if s := b.TopicIngestStats("pay"); s.Redriven != 8 {
		t.Fatalf("stats %+v", s)
	}
	// The DLQ topic's records count like any topic's (10 quarantined).
	dlqIn := int64(-1)
	for _, st := range b.Stats() {
		if st.Topic == "pay.dlq" {
			dlqIn = st.RecordsIn
		}
	}
	if dlqIn != 10 {
		t.Errorf("pay.dlq records in: %d, want 10", dlqIn)
	}
	// A redrive run by a client (the CLI, anyone) marks its records the
	// same way: accepted ones count, on the fast path (all valid) and the
	// slow one (an invalid record beside them); a record marked but
	// quarantined again does not.
	marked := func(v string) record.Record {
		return record.Record{Value: []byte(v), Headers: []record.RecordHeader{
			{Key: "trace", Value: []byte("x")}, {Key: ingest.HeaderRedriveSource, Value: []byte("pay.dlq/0/99")}}}
	}
	if _, err := b.ProduceRecords(ctx, "pay", 0, []record.Record{marked(`{"amount":1}`), {Value: []byte(`{"amount":2}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ProduceRecords(ctx, "pay", 1, []record.Record{marked(`{"amount":3}`), marked("garbage")}); err != nil {
		t.Fatal(err)
	}
	if s := b.TopicIngestStats("pay"); s.Redriven != 10 {
		t.Fatalf("after a client's redrive of two accepted records (and one quarantined again): redriven %d, want 10", s.Redriven)
	}
}

// TestValidatedProduceSurvivesRestart: gaps, an all-invalid (empty) batch
// at the log end and producer state survive a restart, with the producer
// snapshot and with producer state rebuilt by scanning the rewritten batch
// headers: a retry after the restart still quarantines nothing twice.
func TestValidatedProduceSurvivesRestart(t *testing.T) {
	for _, snapshot := range []bool{true, false} {
		t.Run(fmt.Sprintf("snapshot=%v", snapshot), func(t *testing.T) {
			fs := vfs.NewMem()
			b := open(t, fs, "/data")
			mustCreate(t, b, TopicSpec{Name: "t", Configs: map[string]string{ConfigValidation: "json", ConfigMessageTimestampType: "LogAppendTime"}})
			p, _ := b.Partition("t", 0)
			ctx := context.Background()
			opts := record.DefaultBatchOptions()
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 3, 0, 0
			mixed := batchOf(t, opts, `1`, `x`, `3`)
			if _, err := p.Append(ctx, append([]byte(nil), mixed...), AcksAll); err != nil {
				t.Fatal(err)
			}
			opts.BaseSequence = 3
			empty := batchOf(t, opts, `x`, `y`)
			if _, err := p.Append(ctx, append([]byte(nil), empty...), AcksAll); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if !snapshot { // recovery then scans the log's batch headers
				_ = fs.RemoveAll("/data/" + producerStateDir)
				_ = fs.MkdirAll("/data/"+producerStateDir, 0o755)
			}
			b = open(t, fs, "/data")
			defer b.Close()
			p, _ = b.Partition("t", 0)
			if p.LogEndOffset() != 5 {
				t.Fatalf("end %d after restart, want 5", p.LogEndOffset())
			}
			res, err := p.Append(ctx, append([]byte(nil), empty...), AcksAll)
			if err != nil || !res.Duplicate || res.BaseOffset != 3 {
				t.Fatalf("retry after restart: %+v %v", res, err)
			}
			opts.BaseSequence = 5
			if res, err := p.Append(ctx, batchOf(t, opts, `6`), AcksAll); err != nil || res.BaseOffset != 5 {
				t.Fatalf("next: %+v %v", res, err)
			}
			if got := valuesAt(t, b, "t", 0); len(got) != 3 || got[0] != "1" || got[2] != "3" || got[5] != "6" {
				t.Fatalf("main %v", got)
			}
			if dlq, _ := b.Fetch("t.dlq", 0, 0, 1<<20); len(dlq) != 3 {
				t.Fatalf("%d DLQ records, want 3", len(dlq))
			}
		})
	}
}

// TestInternalTopicNotValidated: a broker-wide strand.validation default
// does not apply to __consumer_offsets (the group coordinator's records are
// not the user's to judge), and the topic refuses it as its own config.
func TestInternalTopicNotValidated(t *testing.T) {
	b := open(t, vfs.NewMem(), "/data", func(c *Config) { c.TopicDefaults = map[string]string{ConfigValidation: "json"} })
	defer b.Close()
	ctx := context.Background()
	if err := b.IncrementalAlterConfigs(ConsumerOffsetsTopic, []ConfigChange{{Name: ConfigValidation, Op: OpSet, Value: "json"}}, false); err == nil {
		t.Fatal("validation enabled on the internal topic")
	}
	mustCreate(t, b, TopicSpec{Name: "t"})
	if err := b.Group("g").Seek(ctx, "t", 0, 0); err != nil {
		t.Fatal(err)
	}
	if off, err := b.Group("g").Committed(ctx, "t", 0); err != nil || off != 0 {
		t.Fatalf("committed %d, %v", off, err)
	}
	if _, err := b.Topic(ConsumerOffsetsTopic + ".dlq"); err == nil {
		t.Fatal("a DLQ was created for __consumer_offsets")
	}
}

// TestQuarantineBurstLogsOnce: a burst of quarantines is one log line with
// its count, not a line per record.
func TestQuarantineBurstLogsOnce(t *testing.T) {
	var buf syncBuffer
	b := open(t, vfs.NewMem(), "/q", func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&buf, nil)) })
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "events", Partitions: 1, Configs: map[string]string{ConfigValidation: "json"}})
	p, _ := b.Partition("events", 0)
	for range 5 {
		if _, err := p.Append(context.Background(), batchOf(t, record.DefaultBatchOptions(), `{}`, `bad`, `worse`), AcksAll); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Count(buf.String(), "records quarantined")
	if lines != 1 || !strings.Contains(buf.String(), "records=2") || !strings.Contains(buf.String(), "dlq=events.dlq") {
		t.Fatalf("want one quarantine line for the burst (records=2 at its start), got %d:\n%s", lines, buf.String())
	}
	if got := b.TopicIngestStats("events").Quarantined; got != 10 {
		t.Fatalf("quarantined counter %d, want 10", got)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
