package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// topicSummary is one row of "strand topic list".
type topicSummary struct {
	Topic       string `json:"topic"`
	Partitions  int    `json:"partitions"`
	Replication int    `json:"replication_factor"`
	Internal    bool   `json:"internal"`
}

func newTopicListCmd(o *clientOptions) *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List topics",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				var details kadm.TopicDetails
				var err error
				if internal {
					details, err = adm.ListTopicsWithInternal(ctx)
				} else {
					details, err = adm.ListTopics(ctx)
				}
				if err != nil {
					return fmt.Errorf("list topics: %w", err)
				}
				rows := []topicSummary{}
				for _, d := range details.Sorted() {
					rows = append(rows, topicSummary{
						Topic:       d.Topic,
						Partitions:  len(d.Partitions),
						Replication: d.Partitions.NumReplicas(),
						Internal:    d.IsInternal,
					})
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, rows)
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICAS")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%d\t%d\n", r.Topic, r.Partitions, r.Replication)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&internal, "internal", false, "include internal topics (__consumer_offsets)")
	return cmd
}
