package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/record"
)

func init() { addTopicSubcommand(newTopicTableCmd) }

// tableRow is one key of "strand topic table": its latest value, and where.
type tableRow struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

const topicTableLong = `Print the compacted view of a topic as it stands now: every key with its
latest value — what a consumer of a compacted topic ends up with after reading
it from the start. A key whose latest record is a tombstone (a null value) is
deleted and not shown; records without a key are ignored.

Every partition is read from its earliest offset to its high watermark over
the Kafka protocol, so this works on any topic (compacted or not) and against
any Kafka-compatible broker. Keys and values are shown as text; one that is
not printable UTF-8 is shown quoted, with escapes.`

func newTopicTableCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "table <topic>",
		Short: "Print the latest value of every key (the compacted view)",
		Long:  topicTableLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := o.json()
			if err != nil {
				return err
			}
			ctx, cancel := o.ctx(cmd.Context())
			defer cancel()
			cl, err := o.client(ctx)
			if err != nil {
				return err
			}
			defer cl.Close()
			rows, err := readTable(ctx, cl, args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, rows)
			}
			tw := newTable(w)
			fmt.Fprintln(tw, "KEY\tVALUE\tPARTITION\tOFFSET")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", printable(r.Key), printable(r.Value), r.Partition, r.Offset)
			}
			return tw.Flush()
		},
	}
}

// printable shows s as it is when it is printable UTF-8 without tabs or
// newlines (which would break the table), else Go-quoted.
func printable(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// readTable reads every partition of topic from its start offset to its
// high watermark and returns the latest value of each key, sorted by key and
// partition.
func readTable(ctx context.Context, cl *kgo.Client, topic string) ([]tableRow, error) {
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	td, ok := topics[topic]
	switch {
	case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return nil, errNoTopic(topic)
	case td.Err != nil:
		return nil, fmt.Errorf("topic %s: %w", topic, td.Err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	rows := []tableRow{}
	for _, pd := range td.Partitions.Sorted() {
		s, _ := starts.Lookup(topic, pd.Partition)
		e, _ := ends.Lookup(topic, pd.Partition)
		if err := cmp.Or(pd.Err, s.Err, e.Err); err != nil {
			return nil, fmt.Errorf("partition %d: %w", pd.Partition, err)
		}
		part, err := readPartition(ctx, cl, td, pd, s.Offset, e.Offset)
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", pd.Partition, err)
		}
		rows = append(rows, part...)
	}
	slices.SortFunc(rows, func(a, b tableRow) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Partition, b.Partition))
	})
	return rows, nil
}

// readPartition fetches [from, to) of one partition from its leader with
// plain Fetch requests and folds it into rows as compact.Fold does, keeping
// each key's offset for display. Fetching by hand, rather than
// with a consumer, lets it know exactly when it has reached to, even when
// the offsets before it are gaps, empty batches or transaction markers.
func readPartition(ctx context.Context, cl *kgo.Client, td kadm.TopicDetail, pd kadm.PartitionDetail, from, to int64) ([]tableRow, error) {
	type latest struct {
		offset int64
		value  []byte
	}
	view := map[string]latest{}
	for off := from; off < to; {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 16<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = td.Topic, td.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = pd.Partition, off, 16<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(pd.Leader)))
		if err != nil {
			return nil, fmt.Errorf("fetch at offset %d: %w", off, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, fmt.Errorf("fetch at offset %d: %w", off, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil, fmt.Errorf("fetch at offset %d: response for %d topics", off, len(resp.Topics))
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return nil, fmt.Errorf("fetch at offset %d: %w", off, err)
		}
		before := off
		sc := record.Batches(p.RecordBatches)
		for sc.Next() {
			h := sc.Header()
			if int64(h.NextOffset()) <= off {
				continue
			}
			if !h.IsControl() {
				b, err := record.Decode(sc.Batch())
				if err != nil {
					return nil, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
				}
				for _, r := range b.Records {
					switch {
					case int64(r.Offset) < off || int64(r.Offset) >= to || r.Key == nil:
					case r.Value == nil:
						delete(view, string(r.Key))
					default:
						view[string(r.Key)] = latest{int64(r.Offset), r.Value}
					}
				}
			}
			off = int64(h.NextOffset())
		}
		if off == before {
			return nil, fmt.Errorf("fetch at offset %d: no progress (high watermark %d)", off, p.HighWatermark)
		}
	}
	rows := make([]tableRow, 0, len(view))
	for k, v := range view {
		rows = append(rows, tableRow{Key: k, Value: string(v.value), Partition: pd.Partition, Offset: v.offset})
	}
	return rows, nil
}
