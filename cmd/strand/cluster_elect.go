package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// electionResult is one partition's outcome of "strand cluster
// elect-leaders".
type electionResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Result    string `json:"result"` // "elected" or the Kafka error name
	Message   string `json:"message,omitempty"`
}

// "strand topic elect-leaders" too: the verb is about partitions.
func init() { addTopicSubcommand(newElectCmd) }

// newElectCmd is "strand cluster elect-leaders" and "strand topic
// elect-leaders" (kafka-leader-election.sh).
func newElectCmd(o *clientOptions) *cobra.Command {
	var (
		topics    []string
		partition int32
		unclean   bool
	)
	cmd := &cobra.Command{
		Use:   "elect-leaders",
		Short: "Move leadership back to preferred replicas, or elect leaders for leaderless partitions (--unclean)",
		Long: `Ask the controller for leader elections (Kafka's ElectLeaders, as
kafka-leader-election.sh). By default a preferred election: each partition's
first replica leads again if it is an in-sync live replica — after a failover
leadership stays where it went until this, or the controller's periodic
balancing (--leader-imbalance-check-interval), brings it back. --unclean
elects a live replica for each leaderless partition even from outside its
ISR, losing what only the ISR had: the last resort when every in-sync replica
is gone for good.`,
		Example: `  strand cluster elect-leaders
  strand cluster elect-leaders --topic orders --partition 2
  strand cluster elect-leaders --topic payments --unclean`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if partition >= 0 && len(topics) != 1 {
				return usageErr("--partition needs exactly one --topic")
			}
			return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, asJSON bool) error {
				results, err := electLeaders(ctx, cl, topics, partition, unclean)
				if err != nil {
					return err
				}
				return printElections(cmd, results, asJSON)
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&topics, "topic", nil, "elect for this topic's partitions only (repeatable; default: every partition)")
	f.Int32Var(&partition, "partition", -1, "with one --topic: only this partition")
	f.BoolVar(&unclean, "unclean", false, "unclean election for leaderless partitions (may lose acknowledged records)")
	return cmd
}

func electLeaders(ctx context.Context, cl *kgo.Client, topics []string, partition int32, unclean bool) ([]electionResult, error) {
	req := kmsg.NewPtrElectLeadersRequest()
	req.TimeoutMillis = 30000
	if unclean {
		req.ElectionType = 1
	}
	if len(topics) > 0 {
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		counts := map[string]int32{}
		for _, t := range meta.Topics {
			if t.Topic != nil {
				counts[*t.Topic] = int32(len(t.Partitions))
			}
		}
		for _, name := range topics {
			n, ok := counts[name]
			if !ok {
				return nil, errNoTopic(name)
			}
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = name
			for p := range n {
				if partition < 0 || p == partition {
					rt.Partitions = append(rt.Partitions, p)
				}
			}
			if partition >= n {
				rt.Partitions = append(rt.Partitions, partition) // the broker names the error
			}
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("elect leaders: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("elect leaders: %w", err)
	}
	out := []electionResult{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			r := electionResult{Topic: t.Topic, Partition: p.Partition, Result: "elected"}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				var ke *kerr.Error
				if errors.As(err, &ke) {
					r.Result = ke.Message
				}
				if p.ErrorMessage != nil {
					r.Message = *p.ErrorMessage
				}
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func printElections(cmd *cobra.Command, results []electionResult, asJSON bool) error {
	w := cmd.OutOrStdout()
	if asJSON {
		return writeJSON(w, results)
	}
	elected := 0
	for _, r := range results {
		if r.Result == "elected" {
			elected++
		}
	}
	fmt.Fprintf(w, "%s elected", plural(elected, "leader"))
	if other := len(results) - elected; other > 0 {
		fmt.Fprintf(w, ", %d not", other)
	}
	fmt.Fprintln(w)
	if len(results) == 0 {
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tRESULT\tDETAIL")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", r.Topic, r.Partition, r.Result, orDash(r.Message))
	}
	return tw.Flush()
}
