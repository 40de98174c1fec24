package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/record"
)

// This file is a validated topic's dead letters grouped by reason, and the
// redrive action with its dry run.

const (
	// maxReasonExamples bounds the records listed under one reason.
	maxReasonExamples = 20
	// maxDryRun bounds the DLQ records a redrive dry run judges.
	maxDryRun = 100_000
)

// DLQView is a topic's dead letters: the newest maxDLQScan records of each
// DLQ partition that came from the topic, grouped by reason.
type DLQView struct {
	Topic   string      `json:"topic"`
	DLQ     string      `json:"dlq"`
	Scanned []ScanRange `json:"scanned"`
	Total   int         `json:"total"` // records from this topic among those scanned
	Reasons []ReasonRow `json:"reasons"`
	// Redrive is set on the page a redrive (or its dry run) answers.
	Redrive *RedriveView `json:"redrive,omitempty"`
}

// ScanRange is the offsets of one DLQ partition looked at.
type ScanRange struct {
	Partition int32 `json:"partition"`
	From      int64 `json:"from"`
	To        int64 `json:"to"` // exclusive
	LogStart  int64 `json:"log_start_offset"`
	End       int64 `json:"high_watermark"`
}

// ReasonRow is one reason, how many records it holds, and the first
// maxReasonExamples of them.
type ReasonRow struct {
	Reason  string   `json:"reason"`
	Count   int      `json:"count"`
	Records []DLQRef `json:"records"`
}

// RedriveView is a redrive's outcome, or its dry run's.
type RedriveView struct {
	DryRun       bool  `json:"dry_run"`
	Redriven     int64 `json:"redriven"` // a dry run: would be
	StillInvalid int64 `json:"still_invalid"`
	AlreadyDone  int64 `json:"already_done"`
	// Bounded: the dry run stopped after maxDryRun records.
	Bounded bool `json:"bounded,omitempty"`
}

func dlqView(b *broker.Broker, topic string) (DLQView, error) {
	t, err := b.Topic(topic)
	if err != nil {
		return DLQView{}, fmt.Errorf("%w: topic %q", errNotFound, topic)
	}
	name, exists := dlqOf(b, t)
	v := DLQView{Topic: topic, DLQ: name, Scanned: []ScanRange{}, Reasons: []ReasonRow{}}
	if !exists {
		if name == "" {
			return v, fmt.Errorf("%w: topic %q is not validated and has no dead-letter topic", errNotFound, topic)
		}
		return v, nil // validated, nothing quarantined yet
	}
	dt, err := b.Topic(name)
	if err != nil {
		return v, nil // deleted meanwhile
	}
	byReason := map[string]*ReasonRow{}
	for i := range dt.Partitions() {
		p, err := dt.Partition(broker.PartitionID(i))
		if err != nil {
			continue // led elsewhere
		}
		end := int64(p.LastStableOffset())
		sr := ScanRange{Partition: i, From: max(int64(p.LogStartOffset()), end-maxDLQScan), To: end, LogStart: int64(p.LogStartOffset()), End: end}
		err = scanCommitted(b, name, broker.PartitionID(i), sr.From, sr.To, func(r record.Record) bool {
			q := ingest.Inspect(r.Headers)
			if !q.OK || q.Source.Topic != topic {
				return true
			}
			row := byReason[q.Reason]
			if row == nil {
				row = &ReasonRow{Reason: q.Reason}
				byReason[q.Reason] = row
			}
			row.Count++
			v.Total++
			if len(row.Records) < maxReasonExamples {
				row.Records = append(row.Records, DLQRef{SourceOffset: int64(q.Source.Offset), Topic: name, Partition: i,
					Offset: int64(r.Offset), Reason: q.Reason})
			}
			return true
		})
		if err != nil {
			return v, err
		}
		v.Scanned = append(v.Scanned, sr)
	}
	for _, row := range byReason {
		v.Reasons = append(v.Reasons, *row)
	}
	slices.SortFunc(v.Reasons, func(a, b ReasonRow) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
	return v, nil
}

// redrive runs the broker's Redrive (dryRun false) or judges, without
// writing, what it would do: the DLQ records past the redrive group's
// committed offsets that the topic's current validator accepts.
func (c *Console) redrive(w http.ResponseWriter, r *http.Request) error {
	topic := r.PathValue("topic")
	v, err := dlqView(c.b, topic)
	if err != nil {
		return err
	}
	if !v.dlqExists(c.b) {
		return fmt.Errorf("%w: %s has quarantined nothing: no dead letters to redrive", errNotFound, topic)
	}
	if r.PostForm.Get("dryRun") == "1" {
		v.Redrive, err = redriveDryRun(r.Context(), c.b, topic, v.DLQ)
	} else {
		var res broker.RedriveResult
		res, err = c.b.Redrive(r.Context(), topic, broker.RedriveOptions{})
		v.Redrive = &RedriveView{Redriven: res.Redriven, StillInvalid: res.StillInvalid, AlreadyDone: res.AlreadyDone}
		c.logger.Info("console: DLQ redriven", "topic", topic, "redriven", res.Redriven, "client", r.RemoteAddr)
	}
	if err != nil {
		return brokerError(err)
	}
	c.render(w, r, http.StatusOK, "dlq", v)
	return nil
}

func (v DLQView) dlqExists(b *broker.Broker) bool {
	_, err := b.Topic(v.DLQ)
	return v.DLQ != "" && err == nil
}

func redriveDryRun(ctx context.Context, b *broker.Broker, topic, dlqName string) (*RedriveView, error) {
	src, err := b.Topic(topic)
	if err != nil {
		return nil, err
	}
	dt, err := b.Topic(dlqName)
	if err != nil {
		return nil, err
	}
	val := b.TopicValidator(src)
	g := b.Group(ingest.RedriveGroup(topic))
	res := &RedriveView{DryRun: true}
	judged := 0
	for i := range dt.Partitions() {
		p, err := dt.Partition(broker.PartitionID(i))
		if err != nil {
			return nil, brokerError(err)
		}
		from, err := g.Committed(ctx, dlqName, broker.PartitionID(i))
		if err != nil {
			return nil, err
		}
		start := int64(p.LogStartOffset())
		res.AlreadyDone += max(int64(from)-start, 0)
		err = scanCommitted(b, dlqName, broker.PartitionID(i), max(int64(from), start), int64(p.LastStableOffset()), func(r record.Record) bool {
			if judged == maxDryRun {
				res.Bounded = true
				return false
			}
			judged++
			if val.Validate(r.Key, r.Value) != "" {
				res.StillInvalid++
			} else {
				res.Redriven++
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// scanCommitted visits the records of a DLQ partition from from up to stop
// as a read_committed reader sees them: the poison records of a
// transaction that aborted are not dead letters. visit returns false to
// stop.
func scanCommitted(b *broker.Broker, topic string, p broker.PartitionID, from, stop int64, visit func(record.Record) bool) error {
	for pos := from; pos < stop; {
		recs, next, err := b.FetchCommitted(topic, p, record.Offset(pos), 1<<20)
		if errors.Is(err, broker.ErrOffsetOutOfRange) {
			return nil // retention moved the start under us
		}
		if err != nil {
			return err
		}
		for _, r := range recs {
			if int64(r.Offset) >= stop {
				return nil
			}
			if !visit(r) {
				return nil
			}
		}
		if int64(next) <= pos {
			return nil // nothing more below the last stable offset
		}
		pos = int64(next)
	}
	return nil
}
