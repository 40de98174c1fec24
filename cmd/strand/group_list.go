package main

import (
	"context"
	"fmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"sort"

	"github.com/spf13/cobra"
)

// groupSummary is one row of "strand group list".
type groupSummary struct {
	Group        string `json:"group"`
	Type         string `json:"type"` // "classic", "consumer" (KIP-848) or "share" (KIP-932)
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
}

func newGroupListCmd(o *clientOptions) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List consumer and share groups",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				listed, err := adm.ListGroups(ctx, states...)
				if err != nil {
					return fmt.Errorf("list groups: %w", err)
				}
				rows := []groupSummary{}
				for _, g := range listed {
					rows = append(rows, groupSummary{Group: g.Group, Type: g.GroupType, State: g.State, ProtocolType: g.ProtocolType})
				}
				sort.Slice(rows, func(i, j int) bool { return rows[i].Group < rows[j].Group })
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, rows)
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "GROUP\tTYPE\tSTATE\tPROTOCOL TYPE")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Group, orDash(r.Type), r.State, r.ProtocolType)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only groups in these states (classic: Empty, Stable, PreparingRebalance, CompletingRebalance; consumer: Empty, Assigning, Reconciling, Stable; share: Empty, Stable)")
	return cmd
}
