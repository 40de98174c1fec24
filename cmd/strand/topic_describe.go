package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicDescription is "strand topic describe"'s answer for one topic.
type topicDescription struct {
	Topic      string             `json:"topic"`
	Partitions []partitionOffsets `json:"partitions"`
	Configs    []topicConfig      `json:"configs"`
}

type partitionOffsets struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	StartOffset int64   `json:"start_offset"`
	EndOffset   int64   `json:"end_offset"`
	Records     int64   `json:"records"` // end − start: an upper bound once compaction leaves gaps; -1 (like the offsets): the leader did not answer
	// Status is "ok", "under-replicated" (fewer in-sync replicas than
	// replicas) or "offline" (no leader).
	Status string `json:"status"`
}

func partitionStatus(leader int32, replicas, isr []int32) string {
	switch {
	case leader < 0:
		return "offline"
	case len(isr) < len(replicas):
		return "under-replicated"
	}
	return "ok"
}

type topicConfig struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

func newTopicDescribeCmd(o *clientOptions) *cobra.Command {
	var allConfigs, underReplicated bool
	cmd := &cobra.Command{
		Use:   "describe <topic>...",
		Short: "Show a topic's partitions (leader, replicas, ISR, start and end offsets) and configs",
		Long: `Show a topic's partitions — leader, replicas, in-sync replicas (ISR), log
start offset and end offset (the next offset to be written), and whether each
is fully replicated, under-replicated (fewer in-sync replicas than replicas) or
offline (no leader) — and the configs set on the topic (--all-configs: every
config, with where its value comes from). --under-replicated lists only the
partitions that are not fully replicated, as kafka-topics.sh
--under-replicated-partitions does.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				details, err := adm.ListTopicsWithInternal(ctx, topics...)
				if err != nil {
					return fmt.Errorf("describe: %w", err)
				}
				for _, t := range topics {
					d, ok := details[t]
					if !ok || d.Err != nil {
						if d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
							return fmt.Errorf("describe %q: %w", t, d.Err)
						}
						return errNoTopic(t)
					}
				}
				// A leader that does not answer (a node just killed, not yet
				// fenced) leaves its partitions' offsets unknown ("?"), not
				// the whole description.
				starts, err := adm.ListStartOffsets(ctx, topics...)
				if err = partial(cmd, "list start offsets", err); err != nil {
					return err
				}
				ends, err := adm.ListEndOffsets(ctx, topics...)
				if err = partial(cmd, "list end offsets", err); err != nil {
					return err
				}
				rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
				if err != nil {
					return fmt.Errorf("describe configs: %w", err)
				}
				var out []topicDescription
				for _, t := range topics {
					d := describeOne(details[t], starts, ends, rcs, allConfigs)
					if underReplicated {
						d.Partitions = slices.DeleteFunc(d.Partitions, func(p partitionOffsets) bool { return p.Status == "ok" })
					}
					out = append(out, d)
				}
				w := cmd.OutOrStdout()
				if asJSON {
					if len(out) == 1 {
						return writeJSON(w, out[0])
					}
					return writeJSON(w, out)
				}
				for i, d := range out {
					if i > 0 {
						fmt.Fprintln(w)
					}
					if err := printDescription(w, d, allConfigs); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&allConfigs, "all-configs", false, "show every config, not only those set on the topic")
	cmd.Flags().BoolVar(&underReplicated, "under-replicated", false, "list only partitions with fewer in-sync replicas than replicas, or no leader")
	return cmd
}

func describeOne(d kadm.TopicDetail, starts, ends kadm.ListedOffsets, rcs kadm.ResourceConfigs, all bool) topicDescription {
	desc := topicDescription{Topic: d.Topic, Partitions: []partitionOffsets{}, Configs: []topicConfig{}}
	for _, p := range d.Partitions.Sorted() {
		po := partitionOffsets{
			Partition: p.Partition, Leader: p.Leader,
			Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR),
			StartOffset: -1, EndOffset: -1,
		}
		if s, ok := starts.Lookup(d.Topic, p.Partition); ok && s.Err == nil {
			po.StartOffset = s.Offset
		}
		if e, ok := ends.Lookup(d.Topic, p.Partition); ok && e.Err == nil {
			po.EndOffset = e.Offset
		}
		po.Records = -1
		if po.StartOffset >= 0 && po.EndOffset >= po.StartOffset {
			po.Records = po.EndOffset - po.StartOffset
		}
		po.Status = partitionStatus(p.Leader, po.Replicas, po.ISR)
		desc.Partitions = append(desc.Partitions, po)
	}
	if rc, err := rcs.On(d.Topic, nil); err == nil {
		for _, c := range rc.Configs {
			if !all && c.Source != kmsg.ConfigSourceDynamicTopicConfig {
				continue
			}
			desc.Configs = append(desc.Configs, topicConfig{
				Name: c.Key, Value: c.MaybeValue(), Source: c.Source.String(),
			})
		}
	}
	return desc
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

func printDescription(w io.Writer, d topicDescription, all bool) error {
	var total int64
	status := map[string]int{}
	for _, p := range d.Partitions {
		total += max(p.Records, 0)
		status[p.Status]++
	}
	fmt.Fprintf(w, "topic %s: %s, %s", d.Topic, plural(len(d.Partitions), "partition"), plural(int(total), "record"))
	if n := status["under-replicated"]; n > 0 {
		fmt.Fprintf(w, ", %d under-replicated", n)
	}
	if n := status["offline"]; n > 0 {
		fmt.Fprintf(w, ", %d offline", n)
	}
	fmt.Fprint(w, "\n\n")
	tw := newTable(w)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tREPLICAS\tISR\tSTATUS\tSTART\tEND\tRECORDS")
	for _, p := range d.Partitions {
		leader := fmt.Sprint(p.Leader)
		if p.Leader < 0 {
			leader = "none"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Partition, leader,
			ints(p.Replicas), ints(p.ISR), p.Status, known(p.StartOffset), known(p.EndOffset), known(p.Records))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(d.Configs) == 0 {
		if all {
			fmt.Fprintln(w, "no configs")
		} else {
			fmt.Fprintln(w, "configs: all defaults (--all-configs lists them)")
		}
		return nil
	}
	tw = newTable(w)
	fmt.Fprintln(tw, "CONFIG\tVALUE\tSOURCE")
	for _, c := range d.Configs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Value, c.Source)
	}
	return tw.Flush()
}

// known prints an offset or count, or "?" when it could not be read (-1).
func known(n int64) string {
	if n < 0 {
		return "?"
	}
	return strconv.FormatInt(n, 10)
}

// partial lets a listing go on without the shards that failed (their
// partitions' leaders did not answer), saying so on stderr; any other
// error ends it.
func partial(cmd *cobra.Command, what string, err error) error {
	var se *kadm.ShardErrors
	if errors.As(err, &se) && !se.AllFailed {
		for _, e := range se.Errs {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: node %d did not answer (%v); its partitions show \"?\"\n", what, e.Broker.NodeID, e.Err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func ints(s []int32) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}
