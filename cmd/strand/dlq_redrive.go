package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
so an interrupted redrive resumes and a rerun writes nothing twice. Each
chunk is one transaction (transactional id strand-redrive-<topic>): its
records produced to the topic and the group's new position in the DLQ
commit together, or neither does. A run killed at any point leaves its
open transaction to be aborted when the next run starts (or when it times
out), so read_committed consumers see every redriven record exactly once.
Ctrl-C stops between chunks.`,
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
		return sum, info.missing(err) // nil: validated, nothing quarantined yet
	}
	committed, err := adm.FetchOffsets(setup, sum.Group)
	if err != nil {
		return sum, fmt.Errorf("fetch the progress of group %s: %w", sum.Group, err)
	}
	from := map[int32]int64{}
	skip := map[int32]map[int64]bool{} // DLQ offsets an interrupted run produced but did not commit
	var todo int64
	for p, start := range starts {
		f := start
		if c, ok := committed.Lookup(info.dlq, p); ok && c.Err == nil {
			f = max(f, c.At)
			if c.Metadata != "" {
				if skip[p], err = alreadyRedriven(setup, o, info, p, c.Metadata); err != nil {
					return sum, err
				}
			}
		}
		from[p] = f
		sum.AlreadyDone += f - start
		todo += max(ends[p]-f, 0)
	}
	onStart(todo)
	txnID := ingest.RedriveGroup(topic) // one redrive of a topic at a time: a second fences the first
	prod, err := o.client(setup, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.TransactionalID(txnID), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		return sum, err
	}
	defer prod.Close()

	var seen int64
	written := map[int32]int64{} // per topic partition: the end of what was redriven
	err = readDLQ(ctx, o, info.dlq, from, ends, func(recs []*kgo.Record) error {
		var out []*kgo.Record
		for _, r := range recs {
			if skip[r.Partition][r.Offset] {
				sum.AlreadyDone++
				continue
			}
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
		last := recs[len(recs)-1]
		if len(out) > 0 {
			if err := redriveChunk(step, prod, txnID, sum.Group, info.dlq, last.Partition, last.Offset+1, out); err != nil {
				return fmt.Errorf("redrive to %s: %w", topic, err)
			}
			for _, r := range out { // set by the produce: where each record landed
				written[r.Partition] = max(written[r.Partition], r.Offset+1)
			}
		} else if err := commitPosition(step, adm, sum.Group, info.dlq, last.Partition, last.Offset+1, ""); err != nil {
			return err
		}
		sum.Redriven += int64(len(out))
		seen += int64(len(recs))
		onProgress(seen)
		return nil
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		sum.Interrupted = true
	}
	if err == nil {
		err = awaitStable(ctx, o, adm, topic, written)
	}
	return sum, err
}

// awaitStable waits until read_committed consumers can read every record
// the redrive committed: a commit is answered before its markers are
// written (as in Kafka), and a redrive that reports records redriven should
// mean they can be read.
func awaitStable(ctx context.Context, o *clientOptions, adm *kadm.Client, topic string, written map[int32]int64) error {
	if len(written) == 0 {
		return nil
	}
	wait, cancel := o.ctx(ctx)
	defer cancel()
	for {
		stable, err := adm.ListCommittedOffsets(wait, topic)
		if err == nil {
			done := true
			for p, end := range written {
				if l, ok := stable.Lookup(topic, p); !ok || l.Err != nil || l.Offset < end {
					done = false
				}
			}
			if done {
				return nil
			}
		}
		select {
		case <-wait.Done():
			return fmt.Errorf("the redriven records of %s are committed but not yet readable (read_committed): %w", topic, wait.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
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

// redriveAfterProduce, when set (tests), runs after a chunk is produced and
// its position committed in the transaction, before the transaction ends;
// its error ends the redrive there, as a crash would.
var redriveAfterProduce func() error

// redriveChunk produces out and commits the group's position at (dlq, p)
// in one transaction of cl.
func redriveChunk(ctx context.Context, cl *kgo.Client, txnID, group, dlq string, p int32, at int64, out []*kgo.Record) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	err := cl.ProduceSync(ctx, out...).FirstErr()
	if err == nil {
		err = commitInTxn(ctx, cl, txnID, group, dlq, p, at)
	}
	if err == nil && redriveAfterProduce != nil {
		return redriveAfterProduce() // a crash: the transaction stays open
	}
	if eerr := cl.EndTransaction(ctx, kgo.TransactionEndTry(err == nil)); err == nil {
		err = eerr
	}
	return err
}

// commitInTxn commits the group's position at (dlq, p) inside cl's open
// transaction: AddOffsetsToTxn, then TxnOffsetCommit to the group's
// coordinator (franz-go offers this only to a consuming group session).
func commitInTxn(ctx context.Context, cl *kgo.Client, txnID, group, dlq string, p int32, at int64) error {
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, pid, epoch, group
	addResp, err := add.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(addResp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("add the offsets of group %s to the transaction: %w", group, err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = txnID, group, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = dlq
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = p, at, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("commit progress to group %s: %w", group, err)
	}
	for _, t := range resp.Topics {
		for _, pr := range t.Partitions {
			if err := kerr.ErrorForCode(pr.ErrorCode); err != nil {
				return fmt.Errorf("commit progress to group %s: %w", group, err)
			}
		}
	}
	return nil
}

// redriveIntent is the metadata a redrive before transactional redrives
// committed with a DLQ partition's position while it produced a chunk: the
// chunk's last DLQ offset and the end offsets, before the produce, of the
// topic partitions it went to. A run finding one left behind skips the
// records that chunk put in the topic.
type redriveIntent struct {
	Through int64           `json:"through"`
	Ends    map[int32]int64 `json:"ends"`
}

func commitPosition(ctx context.Context, adm *kadm.Client, group, dlq string, p int32, at int64, metadata string) error {
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: dlq, Partition: p, At: at, LeaderEpoch: -1, Metadata: metadata})
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("commit progress to group %s: %w", group, err)
	}
	return nil
}

// alreadyRedriven reads the topic from the end offsets an interrupted run
// recorded and returns the offsets of DLQ partition p that it finds
// redriven there.
func alreadyRedriven(ctx context.Context, o *clientOptions, info dlqTopicInfo, p int32, metadata string) (map[int64]bool, error) {
	var in redriveIntent
	if err := json.Unmarshal([]byte(metadata), &in); err != nil || len(in.Ends) == 0 {
		return nil, nil // not ours, or nothing was to be produced
	}
	adm, err := o.admin(ctx)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	ends, err := adm.ListCommittedOffsets(ctx, info.topic) // readDLQ reads read_committed
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", info.topic, err)
	}
	to := map[int32]int64{}
	for tp := range in.Ends {
		if l, ok := ends.Lookup(info.topic, tp); ok {
			to[tp] = l.Offset
		}
	}
	prefix := info.dlq + "/" + strconv.Itoa(int(p)) + "/"
	found := map[int64]bool{}
	err = readDLQ(ctx, o, info.topic, in.Ends, to, func(recs []*kgo.Record) error {
		for _, r := range recs {
			for _, h := range r.Headers {
				if h.Key != ingest.HeaderRedriveSource || !strings.HasPrefix(string(h.Value), prefix) {
					continue
				}
				if off, err := strconv.ParseInt(strings.TrimPrefix(string(h.Value), prefix), 10, 64); err == nil && off <= in.Through {
					found[off] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for records an interrupted redrive produced: %w", err)
	}
	return found, nil
}
