package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/schemareg"
	"github.com/strandmq/strand/internal/vfs"
)

// BenchmarkProduceValidation appends batches of 16 one-kilobyte JSON
// records to a topic with strand.validation=none and =json, on the OS file
// system, in the same run: the ratio of the two is the cost of validation at
// ingress (the goal is ≥ 50% of the unvalidated rate). With codec, the
// batches are compressed (validation must decompress them).
//
//	go test -run '^$' -bench ProduceValidation ./internal/broker
//
// On a shared 2-core container (medians of 5, page-cache writes): json /
// none throughput ≈ 0.77 uncompressed and ≈ 0.53 with lz4 (the unvalidated
// path never decompresses; the validated one must).
func BenchmarkProduceValidation(b *testing.B) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecLZ4} {
		for _, mode := range []string{"none", "json"} {
			b.Run(fmt.Sprintf("codec=%s/validation=%s", codec, mode), func(b *testing.B) {
				benchValidatedAppend(b, codec, mode)
			})
		}
	}
}

func benchValidatedAppend(b *testing.B, codec record.Codec, mode string) {
	br, err := Open(Config{FS: vfs.Default, Dir: b.TempDir(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	if _, err := br.CreateTopic(TopicSpec{Name: "t", Configs: map[string]string{ConfigValidation: mode}}); err != nil {
		b.Fatal(err)
	}
	p, _ := br.Partition("t", 0)
	// Hex text: JSON-realistic, and it compresses about as well as real
	// payloads do (a repeated letter would make the compressed batch tiny).
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]record.Record, 16)
	for i := range recs {
		note := make([]byte, 460)
		for j := range note {
			note[j] = byte(rng.IntN(256))
		}
		v := fmt.Sprintf(`{"id":%d,"customer":"c-%04d","amount":12.5,"tags":["a","b"],"note":"%x"}`, i, i, note)
		recs[i] = record.Record{Offset: record.Offset(i), Timestamp: 1_700_000_000_000, Key: fmt.Appendf(nil, "key-%d", i), Value: []byte(v)}
	}
	opts := record.DefaultBatchOptions()
	opts.Codec = codec
	batch, err := record.Encode(0, recs, opts)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, len(batch))
	ctx := context.Background()
	b.SetBytes(int64(16 * 1024))
	b.ReportAllocs()
	for b.Loop() {
		copy(buf, batch)
		if _, err := p.Append(ctx, buf, AcksLeader); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(16*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkProduceSchemaValidation is BenchmarkProduceValidation for
// strand.validation=schema: batches of 16 one-kilobyte Avro records in
// Confluent's wire format (a registered schema of the topic's subject),
// unvalidated and validated in the same run. The goal is ≥ 70% of
// the unvalidated throughput; the difference of the two ns/op divided by
// 16 is the per-record validation cost.
//
//	go test -run '^$' -bench ProduceSchemaValidation ./internal/broker
func BenchmarkProduceSchemaValidation(b *testing.B) {
	for _, mode := range []string{"none", "schema"} {
		b.Run("validation="+mode, func(b *testing.B) { benchSchemaAppend(b, mode) })
	}
}

func benchSchemaAppend(b *testing.B, mode string) {
	br, err := Open(Config{FS: vfs.Default, Dir: b.TempDir(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	h := schemareg.NewHandler(br.Schemas())
	schema := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"customer","type":"string"},` +
		`{"name":"amount","type":"double"},{"name":"tags","type":{"type":"array","items":"string"}},{"name":"note","type":"bytes"}]}`
	if code, body := register(b, h, "t-value", schema); code != 200 {
		b.Fatalf("register: %d %s", code, body)
	}
	if _, err := br.CreateTopic(TopicSpec{Name: "t", Configs: map[string]string{ConfigValidation: mode}}); err != nil {
		b.Fatal(err)
	}
	p, _ := br.Partition("t", 0)
	sch := avro.MustParse(schema)
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]record.Record, 16)
	for i := range recs {
		note := make([]byte, 960)
		for j := range note {
			note[j] = byte(rng.IntN(256))
		}
		v, err := avro.Marshal(sch, map[string]any{"id": int64(i), "customer": fmt.Sprintf("c-%04d", i), "amount": 12.5, "tags": []any{"a", "b"}, "note": note})
		if err != nil {
			b.Fatal(err)
		}
		value := append([]byte{0, 0, 0, 0, 1}, v...)
		recs[i] = record.Record{Offset: record.Offset(i), Timestamp: 1_700_000_000_000, Key: fmt.Appendf(nil, "key-%d", i), Value: value}
	}
	batch, err := record.Encode(0, recs, record.DefaultBatchOptions())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, len(batch))
	ctx := context.Background()
	b.SetBytes(int64(16 * 1024))
	b.ReportAllocs()
	for b.Loop() {
		copy(buf, batch)
		if _, err := p.Append(ctx, buf, AcksLeader); err != nil {
			b.Fatal(err)
		}
	}
	if q := br.TopicIngestStats("t").Quarantined; q != 0 {
		b.Fatalf("%d records quarantined: the benchmark's records must be valid", q)
	}
	b.ReportMetric(float64(16*b.N)/b.Elapsed().Seconds(), "records/s")
}
