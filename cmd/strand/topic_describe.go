package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
	// ELR are the eligible leader replicas (KIP-966): replicas out of the
	// ISR that still hold every acknowledged record and may lead when the
	// ISR is empty. Absent when the broker does not serve
	// DescribeTopicPartitions (API 75). LastKnownELR is the leader the
	// partition had when its ISR emptied, shown when there is one.
	ELR          []int32 `json:"elr,omitzero"`
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
	// LocalStartOffset is, for a topic with remote.storage.enable, the
	// first offset on the leader's disk (StartOffset: in the object store).
	LocalStartOffset *int64 `json:"local_start_offset,omitempty"`
	// LocalBytes are the bytes on the leader's disk (DescribeLogDirs);
	// RemoteEndOffset is where the object store's data ends (ListOffsets
	// -5, plus one); RemoteBytes what the store holds (from the console's
	// JSON API, when --console answers). Tiered topics only.
	LocalBytes      *int64 `json:"local_bytes,omitempty"`
	RemoteEndOffset *int64 `json:"remote_end_offset,omitempty"`
	RemoteBytes     *int64 `json:"remote_bytes,omitempty"`
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
	var console string
	cmd := &cobra.Command{
		Use:   "describe <topic>...",
		Short: "Show a topic's partitions (leader, replicas, ISR, start and end offsets) and configs",
		Long: `Show a topic's partitions — leader, replicas, in-sync replicas (ISR), log
start offset and end offset (the next offset to be written), and whether each
is fully replicated, under-replicated (fewer in-sync replicas than replicas) or
offline (no leader) — and the configs set on the topic (--all-configs: every
config, with where its value comes from). --under-replicated lists only the
partitions that are not fully replicated, as kafka-topics.sh
--under-replicated-partitions does.

In a cluster, a replica that leaves an ISR smaller than min.insync.replicas
becomes an eligible leader replica (ELR, KIP-966): it holds every acknowledged
record and may lead when the ISR is empty. The ELR column, and LAST KNOWN ELR
(the leader a partition had when its ISR emptied), appear when some partition
has one; -o json always carries "elr" when the broker serves
DescribeTopicPartitions (Kafka 3.8 and later, Strand).

A topic with remote.storage.enable (tiered storage, docs/TIERED.md) has START
where the object store's data begins and four more columns: LOCAL START (the
first offset on the leader's disk), LOCAL BYTES (the leader's disk, as
DescribeLogDirs reports it), REMOTE END (the store holds [START, REMOTE END))
and REMOTE BYTES (from the console of --console; "?" when it does not answer).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, asJSON bool) error {
				adm := kadm.NewClient(cl)
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
				starts, ends, err := listOffsets(ctx, cmd, cl, adm, details, topics)
				if err != nil {
					return err
				}
				rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
				if err != nil {
					return fmt.Errorf("describe configs: %w", err)
				}
				elrs, err := describeELRs(ctx, cl, topics)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v; eligible leader replicas not shown\n", err)
				}
				var out []topicDescription
				for _, t := range topics {
					d := describeOne(details[t], starts, ends, rcs, allConfigs)
					addELRs(&d, elrs)
					addLocalStarts(ctx, adm, &d, rcs, console) // topic_describe_tiered.go
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
	cmd.Flags().StringVar(&console, "console", cmp.Or(os.Getenv("STRAND_CONSOLE"), "127.0.0.1:9645"), "the broker's console address (its --console-listen), for a tiered topic's REMOTE BYTES, which no Kafka API carries (env STRAND_CONSOLE; \"\": leave them out)")
	return cmd
}

// offsetsSettle bounds how long describe waits for partitions whose
// offsets no leader answered for: right after an election the new leaders
// take a moment to be known (and to know they lead).
const offsetsSettle = 5 * time.Second

// listOffsets lists the partitions' start and end offsets. A partition
// with a leader whose offsets did not come back (NOT_LEADER from a node
// that lost it, or a node just killed) is asked again, after a metadata
// refresh, until every one has answered or offsetsSettle (within the
// command's timeout) passes; what is still unknown then shows as "?",
// with a warning on stderr, rather than failing the whole description.
func listOffsets(ctx context.Context, cmd *cobra.Command, cl *kgo.Client, adm *kadm.Client, details kadm.TopicDetails, topics []string) (kadm.ListedOffsets, kadm.ListedOffsets, error) {
	deadline := time.Now().Add(offsetsSettle)
	for {
		starts, serr := adm.ListStartOffsets(ctx, topics...)
		ends, eerr := adm.ListEndOffsets(ctx, topics...)
		last := time.Now().After(deadline) || ctx.Err() != nil
		if !last && (unanswered(details, starts, serr) || unanswered(details, ends, eerr)) {
			cl.ForceMetadataRefresh()
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			if fresh, err := adm.ListTopicsWithInternal(ctx, topics...); err == nil {
				maps.Copy(details, fresh)
			}
			continue
		}
		if err := partial(cmd, "list start offsets", serr); err != nil {
			return nil, nil, err
		}
		if err := partial(cmd, "list end offsets", eerr); err != nil {
			return nil, nil, err
		}
		return starts, ends, nil
	}
}

// unanswered reports whether some partition that has a leader is missing
// from offsets (or came back with an error).
func unanswered(details kadm.TopicDetails, offsets kadm.ListedOffsets, err error) bool {
	var se *kadm.ShardErrors
	if err != nil && !errors.As(err, &se) {
		return false // not a partial answer: partial reports it
	}
	for _, d := range details {
		for _, p := range d.Partitions {
			if p.Leader < 0 {
				continue
			}
			if o, ok := offsets.Lookup(d.Topic, p.Partition); !ok || o.Err != nil {
				return true
			}
		}
	}
	return false
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
	// A partial sum would read as lost records: with any partition's
	// count unknown the header says so instead of printing one.
	unknown := 0
	for _, p := range d.Partitions {
		if p.Records < 0 && p.Leader >= 0 {
			unknown++
		}
	}
	records := plural(int(total), "record")
	if unknown > 0 {
		records = fmt.Sprintf("records unknown (no offsets for %s)", plural(unknown, "partition"))
	}
	fmt.Fprintf(w, "topic %s: %s, %s", d.Topic, plural(len(d.Partitions), "partition"), records)
	if n := status["under-replicated"]; n > 0 {
		fmt.Fprintf(w, ", %d under-replicated", n)
	}
	if n := status["offline"]; n > 0 {
		fmt.Fprintf(w, ", %d offline", n)
	}
	fmt.Fprint(w, "\n\n")
	// The ELR columns come last and only when some partition has one, so
	// the usual table (and scripts reading it) stays as it was.
	withELR := slices.ContainsFunc(d.Partitions, func(p partitionOffsets) bool { return len(p.ELR) > 0 })
	withLast := slices.ContainsFunc(d.Partitions, func(p partitionOffsets) bool { return len(p.LastKnownELR) > 0 })
	tw := newTable(w)
	fmt.Fprint(tw, "PARTITION\tLEADER\tREPLICAS\tISR\tSTATUS\tSTART\tEND\tRECORDS"+localStartCell(d, nil))
	fmt.Fprintln(tw, elrCells(withELR, withLast, "ELR", "LAST KNOWN ELR"))
	for _, p := range d.Partitions {
		leader := fmt.Sprint(p.Leader)
		if p.Leader < 0 {
			leader = "none"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s%s\n", p.Partition, leader,
			ints(p.Replicas), ints(p.ISR), p.Status, known(p.StartOffset), known(p.EndOffset), known(p.Records),
			localStartCell(d, &p), elrCells(withELR, withLast, orDash(ints(p.ELR)), orDash(ints(p.LastKnownELR))))
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
// error ends it. Partitions without a leader fail their shard too: their
// STATUS (offline) says so, and every partition of a topic may be
// offline — when the ELR matters most.
func partial(cmd *cobra.Command, what string, err error) error {
	var se *kadm.ShardErrors
	if errors.As(err, &se) {
		leaderless := func(e kadm.ShardError) bool { return errors.Is(e.Err, kerr.LeaderNotAvailable) }
		if !se.AllFailed || !slices.ContainsFunc(se.Errs, func(e kadm.ShardError) bool { return !leaderless(e) }) {
			for _, e := range se.Errs {
				if !leaderless(e) {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: node %d did not answer (%v); its partitions show \"?\"\n", what, e.Broker.NodeID, e.Err)
				}
			}
			return nil
		}
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

// elrCells is the ELR columns of one table line: elr and last, each only
// when its column is shown.
func elrCells(withELR, withLast bool, elr, last string) string {
	var b strings.Builder
	if withELR {
		b.WriteString("\t" + elr)
	}
	if withLast {
		b.WriteString("\t" + last)
	}
	return b.String()
}

// partitionELR is one partition as DescribeTopicPartitions reports it:
// its leader, replicas and ISR too, so that a row of the description
// comes from one broker's view (an ISR from one node's metadata and an
// ELR from another's, a heartbeat apart, can overlap).
type partitionELR struct {
	leader                        int32
	replicas, isr, elr, lastKnown []int32
}

type topicPartition struct {
	topic     string
	partition int32
}

// describeELRs asks DescribeTopicPartitions (API 75, KIP-966) for the
// partitions of topics, following its cursor from page to page. It
// returns nil, and no error, when the broker does not advertise the API
// (Kafka before 3.8): the description then leaves the ELR out. Metadata
// does not carry the ELR, so this is one more request.
func describeELRs(ctx context.Context, cl *kgo.Client, topics []string) (map[topicPartition]partitionELR, error) {
	vers, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("api versions: %w", err)
	}
	key := kmsg.NewPtrDescribeTopicPartitionsRequest().Key()
	if !slices.ContainsFunc(vers.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == key }) {
		return nil, nil
	}
	out := map[topicPartition]partitionELR{}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, t := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("describe topic partitions: %w", err)
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 || rt.Topic == nil {
				continue // the topic's error was reported from Metadata
			}
			for _, p := range rt.Partitions {
				out[topicPartition{*rt.Topic, p.Partition}] = partitionELR{p.LeaderID, p.Replicas, p.ISR, p.EligibleLeaderReplicas, p.LastKnownELR}
			}
		}
		next := resp.NextCursor
		if next == nil {
			return out, nil
		}
		if c := req.Cursor; c != nil && c.Topic == next.Topic && c.Partition == next.Partition {
			return nil, fmt.Errorf("describe topic partitions: the broker's cursor stays at %s/%d", next.Topic, next.Partition)
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: next.Topic, Partition: next.Partition}
	}
}

// addELRs sets d's partitions' ELR fields, and their leader, replicas,
// ISR and status, from elrs (nil: not known).
func addELRs(d *topicDescription, elrs map[topicPartition]partitionELR) {
	if elrs == nil {
		return
	}
	for i := range d.Partitions {
		p := &d.Partitions[i]
		e, ok := elrs[topicPartition{d.Topic, p.Partition}]
		if !ok {
			continue // a partition created meanwhile: Metadata's view only
		}
		p.Leader, p.Replicas, p.ISR = e.leader, nonNil(e.replicas), nonNil(e.isr)
		p.ELR, p.LastKnownELR = nonNil(e.elr), e.lastKnown
		p.Status = partitionStatus(p.Leader, p.Replicas, p.ISR)
	}
}
