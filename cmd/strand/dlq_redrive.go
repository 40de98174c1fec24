package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/partitioner"
	"github.com/strandmq/strand/internal/record"
)

// redriveSummary is what "strand dlq redrive" reports.
type redriveSummary struct {
	Topic        string `json:"topic"`
	DLQ          string `json:"dlq"`
	Group        string `json:"group"`
	Redriven     int64  `json:"redriven"`
	StillInvalid int64  `json:"still_invalid"`
	AlreadyDone  int64  `json:"already_done"`
	Interrupted  bool   `json:"interrupted"`
}

func newDLQRedriveCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "redrive <topic>",
		Short: "Produce the quarantined records the topic's validator now accepts back into the topic",
		Long: `Read the topic's DLQ, re-validate each record with the topic's current
validation configs, and produce the now-valid ones back into the topic (to
the partition they were quarantined from, with their original key, headers
and timestamp; the strand.dlq.* headers are dropped and
strand.redrive.source names the DLQ record). Records still invalid stay in
the DLQ.

Progress is the committed offset of the consumer group
strand-redrive-<topic> on the DLQ: a run starts where the last one stopped,
so an interrupted redrive (Ctrl-C) resumes and a rerun writes nothing
twice. Each chunk is produced (idempotently, acks=all) and then committed;
Ctrl-C stops between chunks. Only a crash between a chunk's produce and its
commit can redrive it twice; the copies carry the same strand.redrive.source.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := o.json()
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			var bar *progress
			var done, total atomic.Int64
			onStart := func(n int64) {
				total.Store(n)
				if f, ok := cmd.ErrOrStderr().(*os.File); ok && isTerminal(f) && !asJSON {
					bar = startProgress(f, n, done.Load, done.Load)
				}
			}
			sum, err := redriveDLQ(ctx, o, args[0], onStart, func(n int64) { done.Store(n) })
			bar.finish()
			if err != nil && !sum.Interrupted {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if jerr := writeJSON(w, sum); jerr != nil {
					return jerr
				}
			} else {
				fmt.Fprintf(w, "redriven %d, still invalid %d, already done %d (%s → %s, group %s)\n",
					sum.Redriven, sum.StillInvalid, sum.AlreadyDone, sum.DLQ, sum.Topic, sum.Group)
			}
			if sum.Interrupted {
				return fmt.Errorf("redrive interrupted; run it again to resume: %w", err)
			}
			return nil
		},
	}
}

// redriveDLQ runs a redrive. onStart gets the number of DLQ records to look
// at, onProgress how many have been looked at so far. When ctx is
// cancelled it stops between chunks and returns the summary so far with
// Interrupted set.
func redriveDLQ(ctx context.Context, o *clientOptions, topic string, onStart, onProgress func(int64)) (redriveSummary, error) {
	sum := redriveSummary{Topic: topic, Group: ingest.RedriveGroup(topic)}
	setup, cancel := o.ctx(ctx)
	defer cancel()
	adm, err := o.admin(setup)
	if err != nil {
		return sum, err
	}
	defer adm.Close()
	info, err := describeDLQ(setup, adm, topic)
	if err != nil {
		return sum, err
	}
	sum.DLQ = info.dlq
	v, err := ingest.Compile(info.spec)
	if err != nil {
		return sum, fmt.Errorf("topic %s: validation configs: %w", topic, err)
	}
	starts, ends, err := dlqBounds(setup, adm, info.dlq)
	if err != nil {
		return sum, err
	}
	committed, err := adm.FetchOffsets(setup, sum.Group)
	if err != nil {
		return sum, fmt.Errorf("fetch the progress of group %s: %w", sum.Group, err)
	}
	from := map[int32]int64{}
	var todo int64
	for p, start := range starts {
		f := start
		if c, ok := committed.Lookup(info.dlq, p); ok && c.Err == nil && c.At > f {
			f = c.At
		}
		from[p] = f
		sum.AlreadyDone += f - start
		todo += max(ends[p]-f, 0)
	}
	onStart(todo)
	prod, err := o.client(setup, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return sum, err
	}
	defer prod.Close()

	var seen int64
	err = readDLQ(ctx, o, info.dlq, from, ends, func(recs []*kgo.Record) error {
		var out []*kgo.Record
		for _, r := range recs {
			if v.Validate(r.Key, r.Value) != "" {
				sum.StillInvalid++
				continue
			}
			out = append(out, redriven(r, info))
		}
		// A chunk is produced and committed whole, even if ctx is
		// cancelled meanwhile: stopping between the two would redrive it
		// again on the next run.
		step, cancel := o.ctx(context.WithoutCancel(ctx))
		defer cancel()
		if len(out) > 0 {
			if err := prod.ProduceSync(step, out...).FirstErr(); err != nil {
				return fmt.Errorf("produce to %s: %w", topic, err)
			}
		}
		last := recs[len(recs)-1]
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: info.dlq, Partition: last.Partition, At: last.Offset + 1, LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(step, sum.Group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("commit progress to group %s: %w", sum.Group, err)
		}
		sum.Redriven += int64(len(out))
		seen += int64(len(recs))
		onProgress(seen)
		return nil
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		sum.Interrupted = true
	}
	return sum, err
}

// redriven is the record to produce back for DLQ record r.
func redriven(r *kgo.Record, info dlqTopicInfo) *kgo.Record {
	q := ingest.Inspect(recordHeaders(r))
	p := q.Source.Partition
	if !q.OK || q.Source.Topic != info.topic || p < 0 || p >= info.partitions {
		p = int32(partitioner.ForKey(r.Key, int(info.partitions)))
	}
	hs := make([]kgo.RecordHeader, 0, len(q.Headers)+1)
	for _, h := range q.Headers {
		hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	hs = append(hs, kgo.RecordHeader{Key: ingest.HeaderRedriveSource,
		Value: []byte(ingest.RedriveSource(info.dlq, r.Partition, record.Offset(r.Offset)))})
	return &kgo.Record{Topic: info.topic, Partition: p, Key: r.Key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp}
}
