package main

import (
	"context"
	"fmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"strconv"

	"github.com/spf13/cobra"
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
	Committed int64  `json:"committed"`
	Start     int64  `json:"log_start"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member,omitempty"`
	Error     string `json:"error,omitempty"`
}

func newGroupLagCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "lag GROUP",
		Short: "Show a group's lag per partition (end − committed) and its total",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				group := args[0]
				lags, err := adm.Lag(ctx, group)
				if err != nil {
					return fmt.Errorf("lag of group %q: %w", group, err)
				}
				l, ok := lags[group]
				if !ok {
					return fmt.Errorf("lag of group %q: no answer", group)
				}
				if err := l.Error(); err != nil {
					return fmt.Errorf("lag of group %q: %w", group, err)
				}
				rep := groupLagReport{Group: group, State: l.State, Partitions: []partitionLag{}}
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
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, rep)
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "TOPIC\tPARTITION\tEND\tCOMMITTED\tLAG\tMEMBER")
				for _, p := range rep.Partitions {
					committed, lag := strconv.FormatInt(p.Committed, 10), strconv.FormatInt(p.Lag, 10)
					if p.Committed < 0 {
						committed = "-"
					}
					if p.Error != "" {
						lag = "error: " + p.Error
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", p.Topic, p.Partition, p.End, committed, lag, orDash(p.Member))
				}
				fmt.Fprintf(tw, "TOTAL\t\t\t\t%d\t\n", rep.Total)
				return tw.Flush()
			})
		},
	}
}
