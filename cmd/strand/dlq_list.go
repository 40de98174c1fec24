package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/record"
)

// dlqEntry is one row of "strand dlq list".
type dlqEntry struct {
	Partition       int32   `json:"partition"`
	Offset          int64   `json:"offset"`
	SourceTopic     string  `json:"source_topic"`
	SourcePartition int32   `json:"source_partition"`
	SourceOffset    int64   `json:"source_offset"`
	Timestamp       string  `json:"timestamp"`
	TimestampMs     int64   `json:"timestamp_ms"`
	Key             *string `json:"key"` // null: no key, as consume -o json
	Value           string  `json:"value"`
	Reason          string  `json:"reason"`
	// KeyEncoding and ValueEncoding say "base64" for a key or value that
	// is not UTF-8 text (consume -o json's rule).
	KeyEncoding   encoding `json:"key_encoding,omitempty"`
	ValueEncoding encoding `json:"value_encoding,omitempty"`
}

func newDLQListCmd(o *clientOptions) *cobra.Command {
	var limit int
	var encName string
	cmd := &cobra.Command{
		Use:   "list <topic>",
		Short: "Print a topic's quarantined records with the reason each was rejected",
		Long: `Print the records of a topic's DLQ (strand.dlq.topic, default <topic>.dlq):
where each came from (source partition and offset, now a gap in the topic),
its key and value, and why validation rejected it. A quarantined value is
often not text (a payload in the wrong wire format): --encoding hex or base64
prints keys and values that way, as consume's --encoding does.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := o.json()
			if err != nil {
				return err
			}
			enc, err := parseEncoding(encName)
			if err != nil {
				return err
			}
			ctx, cancel := o.ctx(cmd.Context())
			defer cancel()
			rows, err := listDLQ(ctx, o, args[0], limit, enc)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, rows)
			}
			tw := newTable(w)
			fmt.Fprintln(tw, "PARTITION\tOFFSET\tSOURCE\tKEY\tVALUE\tREASON")
			for _, r := range rows {
				fmt.Fprintf(tw, "%d\t%d\t%s-%d@%d\t%s\t%s\t%s\n", r.Partition, r.Offset,
					r.SourceTopic, r.SourcePartition, r.SourceOffset, orDash(clip(deref(r.Key), 20)), clip(r.Value, 40), r.Reason)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "print at most this many records (0: all)")
	cmd.Flags().StringVar(&encName, "encoding", "raw", "how keys and values are printed: raw, hex or base64 (JSON prints bytes that are not UTF-8 as base64 and says so)")
	return cmd
}

// clip shortens s for a table cell and keeps it on one line.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t' || r == '\r':
			return ' '
		case unicode.IsControl(r): // a NUL or a backspace would garble the terminal
			return '.'
		}
		return r
	}, s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// listDLQ reads the DLQ from its start to its current end.
func listDLQ(ctx context.Context, o *clientOptions, topic string, limit int, enc encoding) ([]dlqEntry, error) {
	adm, err := o.admin(ctx)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	info, err := describeDLQ(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	rows := []dlqEntry{}
	starts, ends, err := dlqBounds(ctx, adm, info.dlq)
	if err != nil {
		if err = info.missing(err); err == nil {
			return rows, nil // validated, nothing quarantined yet
		}
		return nil, err
	}
	err = readDLQ(ctx, o, info.dlq, starts, ends, func(recs []*kgo.Record) error {
		for _, r := range recs {
			if limit > 0 && len(rows) >= limit {
				return errStopReading
			}
			rows = append(rows, dlqRow(r, enc))
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopReading) {
		return nil, err
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Partition != rows[j].Partition {
			return rows[i].Partition < rows[j].Partition
		}
		return rows[i].Offset < rows[j].Offset
	})
	return rows, nil
}

func dlqRow(r *kgo.Record, enc encoding) dlqEntry {
	q := ingest.Inspect(recordHeaders(r))
	row := dlqEntry{
		Partition: r.Partition, Offset: r.Offset,
		SourceTopic: q.Source.Topic, SourcePartition: q.Source.Partition, SourceOffset: int64(q.Source.Offset),
		Timestamp: jsonTime(r.Timestamp), TimestampMs: r.Timestamp.UnixMilli(),
		Reason: q.Reason,
	}
	row.Key, row.KeyEncoding = enc.nullable(r.Key)
	row.Value, row.ValueEncoding = enc.text(r.Value)
	return row
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// dlqBounds returns the DLQ's start and end offsets per partition.
func dlqBounds(ctx context.Context, adm *kadm.Client, dlq string) (map[int32]int64, map[int32]int64, error) {
	st, err := adm.ListStartOffsets(ctx, dlq)
	if err == nil {
		err = st.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("DLQ %s: %w", dlq, err)
	}
	// The last stable offsets: a transaction's quarantined records count
	// once it commits (an abort takes them back).
	en, err := adm.ListCommittedOffsets(ctx, dlq)
	if err == nil {
		err = en.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("DLQ %s: %w", dlq, err)
	}
	starts, ends := map[int32]int64{}, map[int32]int64{}
	st.Each(func(l kadm.ListedOffset) { starts[l.Partition] = l.Offset })
	en.Each(func(l kadm.ListedOffset) { ends[l.Partition] = l.Offset })
	return starts, ends, nil
}

// brokerAnswers returns nil when the broker still answers about topic
// within --timeout, and an error saying it does not otherwise.
func brokerAnswers(ctx context.Context, o *clientOptions, cl *kgo.Client, topic string) error {
	lctx, cancel := o.ctx(ctx)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(lctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("read %s: no records came and the broker does not answer (is it running?): %w", topic, err)
	}
	return nil
}

var errStopReading = errors.New("stop reading")

// readIdle is how long readDLQ waits for records it knows exist before it
// takes the rest of a partition to be gaps.
const readIdle = 2 * time.Second

// readDLQ consumes each partition of topic dlq (or any topic) from[p] up to
// (not including) to[p], read_committed, handing fn the records of each poll, partition by
// partition in offset order. fn's error stops the read and is returned.
func readDLQ(ctx context.Context, o *clientOptions, dlq string, from, to map[int32]int64, fn func([]*kgo.Record) error) error {
	parts := map[int32]kgo.Offset{}
	for p, f := range from {
		if f < to[p] {
			parts[p] = kgo.NewOffset().At(f)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	cl, err := o.client(ctx, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{dlq: parts}), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for len(parts) > 0 {
		// A partition is done at its record before to[p]; but when that
		// offset is a gap (a quarantined or compacted-away record), no
		// record says so: the data below to[p] is already there, so a poll
		// that stays empty for readIdle means only gaps are left.
		pctx, cancel := context.WithTimeout(ctx, readIdle)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		if fs.Empty() && pctx.Err() != nil {
			// Gaps, or a broker that went away: only an answer tells.
			return brokerAnswers(ctx, o, cl, dlq)
		}
		if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("read %s: %w", dlq, err)
		}
		var ferr error
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if ferr == nil {
				ferr = ctx.Err() // stop between chunks
			}
			if ferr != nil {
				return
			}
			var recs []*kgo.Record
			for _, r := range fp.Records {
				if r.Offset < to[fp.Partition] {
					recs = append(recs, r)
				}
			}
			if len(recs) > 0 {
				ferr = fn(recs)
			}
			if n := len(fp.Records); n > 0 && fp.Records[n-1].Offset >= to[fp.Partition]-1 {
				delete(parts, fp.Partition)
			}
		})
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// recordHeaders converts a Kafka record's headers for package ingest.
func recordHeaders(r *kgo.Record) []record.RecordHeader {
	hs := make([]record.RecordHeader, len(r.Headers))
	for i, h := range r.Headers {
		hs[i] = record.RecordHeader{Key: h.Key, Value: h.Value}
	}
	return hs
}
