package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupLagReport is "strand group lag" as JSON.
type groupLagReport struct {
	Group      string         `json:"group"`
	State      string         `json:"state"`
	Partitions []partitionLag `json:"partitions"`
	Total      int64          `json:"total_lag"`
}

type partitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is -1 when the group has no commit for the partition; its
	// lag then counts from the log start offset.
	Committed int64 `json:"committed"`
	Start     int64 `json:"log_start"`
	End       int64 `json:"end"`
	Lag       int64 `json:"lag"`
	// TimeLagSeconds is how long the next record the group would read has
	// waited (now − its timestamp); 0 when caught up, -1 if unknown.
	TimeLagSeconds float64 `json:"time_lag_seconds"`
	Member         string  `json:"member,omitempty"`
	Error          string  `json:"error,omitempty"`
}

func newGroupLagCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "lag GROUP",
		Short: "Show a group's lag per partition (end − committed) and its total",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				group := args[0]
				rep, err := groupLag(ctx, adm, group)
				if err != nil {
					return err
				}
				o.timeLags(ctx, rep.Partitions)
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, rep)
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "TOPIC\tPARTITION\tEND\tCOMMITTED\tLAG\tTIME LAG\tMEMBER")
				for _, p := range rep.Partitions {
					committed, lag := strconv.FormatInt(p.Committed, 10), strconv.FormatInt(p.Lag, 10)
					if p.Committed < 0 {
						committed = "-"
					}
					if p.Error != "" {
						lag = "error: " + p.Error
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, p.End, committed, lag,
						timeLagText(p.TimeLagSeconds), orDash(p.Member))
				}
				fmt.Fprintf(tw, "TOTAL\t\t\t\t%d\t\t\n", rep.Total)
				return tw.Flush()
			})
		},
	}
}

// groupLag computes a group's lag: kadm's Lag for a classic group;
// for a consumer-protocol group, which DescribeGroups v6 answers
// GROUP_ID_NOT_FOUND (kadm's Lag stops there), consumerGroupLag.
func groupLag(ctx context.Context, adm *kadm.Client, group string) (groupLagReport, error) {
	rep := groupLagReport{Group: group, Partitions: []partitionLag{}}
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return rep, fmt.Errorf("lag of group %q: %w", group, err)
	}
	l, ok := lags[group]
	if !ok {
		return rep, fmt.Errorf("lag of group %q: no answer", group)
	}
	if errors.Is(l.DescribeErr, kerr.GroupIDNotFound) {
		return consumerGroupLag(ctx, adm, group)
	}
	if err := l.Error(); err != nil {
		return rep, fmt.Errorf("lag of group %q: %w", group, err)
	}
	if l.State == "Dead" && len(l.Lag) == 0 {
		return rep, errNoGroup(group)
	}
	rep.State = l.State
	for _, ml := range l.Lag.Sorted() {
		pl := partitionLag{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At,
			Start: ml.Start.Offset, End: ml.End.Offset, Lag: ml.Lag}
		if ml.Member != nil {
			pl.Member = ml.Member.ClientID + " " + ml.Member.MemberID
		}
		if ml.Err != nil {
			pl.Error = ml.Err.Error()
		} else {
			rep.Total += ml.Lag
		}
		rep.Partitions = append(rep.Partitions, pl)
	}
	return rep, nil
}

// consumerGroupLag is the lag of a consumer-protocol group (or of an id
// no group has, which may still hold committed offsets): every partition
// assigned or committed, end − committed (or − log start with no commit).
func consumerGroupLag(ctx context.Context, adm *kadm.Client, group string) (groupLagReport, error) {
	rep := groupLagReport{Group: group, Partitions: []partitionLag{}}
	cds, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return rep, fmt.Errorf("describe consumer group %q: %w", group, err)
	}
	cd := cds[group]
	if cd.Err != nil && !errors.Is(cd.Err, kerr.GroupIDNotFound) {
		return rep, fmt.Errorf("describe consumer group %q: %w", group, cd.Err)
	}
	fetched, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		return rep, fmt.Errorf("fetch offsets of group %q: %w", group, err)
	}
	if cd.Err != nil && len(fetched) == 0 {
		return rep, errNoGroup(group)
	}
	rep.State = cd.State
	if cd.Err != nil {
		rep.State = "Dead"
	}
	owner := map[string]map[int32]string{}
	set := kadm.TopicsSet{}
	for _, m := range cd.Members {
		for t, ps := range m.Assignment {
			if owner[t] == nil {
				owner[t] = map[int32]string{}
			}
			for p := range ps {
				owner[t][p] = m.ClientID + " " + m.MemberID
				set.Add(t, p)
			}
		}
	}
	fetched.Each(func(r kadm.OffsetResponse) { set.Add(r.Topic, r.Partition) })
	var start, end kadm.ListedOffsets
	if topics := set.Topics(); len(topics) > 0 {
		if start, err = adm.ListStartOffsets(ctx, topics...); err != nil {
			return rep, fmt.Errorf("list start offsets: %w", err)
		}
		if end, err = adm.ListEndOffsets(ctx, topics...); err != nil {
			return rep, fmt.Errorf("list end offsets: %w", err)
		}
	}
	for _, tp := range set.Sorted() {
		for _, p := range tp.Partitions {
			pl := partitionLag{Topic: tp.Topic, Partition: p, Committed: -1, Member: owner[tp.Topic][p]}
			if c, ok := fetched.Lookup(tp.Topic, p); ok {
				pl.Committed = c.At
			}
			s, okS := start.Lookup(tp.Topic, p)
			e, okE := end.Lookup(tp.Topic, p)
			switch {
			case !okS || !okE:
				pl.Error = "partition missing from the listed offsets"
			case s.Err != nil || e.Err != nil:
				pl.Error = errors.Join(s.Err, e.Err).Error()
			default:
				pl.Start, pl.End = s.Offset, e.Offset
				from := pl.Committed
				if from < 0 {
					from = s.Offset
				}
				pl.Lag = max(e.Offset-from, 0)
				rep.Total += pl.Lag
			}
			rep.Partitions = append(rep.Partitions, pl)
		}
	}
	return rep, nil
}

// timeLags fills each lagging partition's TimeLagSeconds by reading the
// next record the group would consume (at its commit, or the log start) and
// comparing its timestamp with now. It is best effort within a few seconds:
// a partition it cannot read in time says -1 (unknown).
func (o *clientOptions) timeLags(ctx context.Context, parts []partitionLag) {
	want := map[string]map[int32]kgo.Offset{}
	pending := map[string]map[int32]*partitionLag{}
	for i := range parts {
		p := &parts[i]
		if p.Lag <= 0 || p.Error != "" {
			continue
		}
		from := p.Committed
		if from < 0 {
			from = p.Start
		}
		if want[p.Topic] == nil {
			want[p.Topic], pending[p.Topic] = map[int32]kgo.Offset{}, map[int32]*partitionLag{}
		}
		want[p.Topic][p.Partition] = kgo.NewOffset().At(from)
		pending[p.Topic][p.Partition] = p
		p.TimeLagSeconds = -1
	}
	if len(want) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, min(o.timeout, 5*time.Second))
	defer cancel()
	cl, err := o.client(ctx, kgo.ConsumePartitions(want))
	if err != nil {
		return
	}
	defer cl.Close()
	for left := len(parts); left > 0 && ctx.Err() == nil; {
		fs := cl.PollFetches(ctx)
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			if p := pending[r.Topic][r.Partition]; p != nil {
				p.TimeLagSeconds = max(now.Sub(r.Timestamp).Seconds(), 0)
				delete(pending[r.Topic], r.Partition)
			}
		})
		left = 0
		for _, ps := range pending {
			left += len(ps)
		}
	}
}

func timeLagText(s float64) string {
	switch {
	case s < 0:
		return "-"
	case s == 0:
		return "0s"
	}
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}
