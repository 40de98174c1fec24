package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strandmq/strand/internal/assign"
)

// movePreview is one row of "strand group assign --preview": what one
// assignor would do to the live group after the membership change.
type movePreview struct {
	Assignor string `json:"assignor"`
	// Moved is assign.Moves from the group's current assignment to the
	// assignor's: partitions that change owner (a leaving member's count).
	Moved int `json:"moved"`
	// Revoked is how many partitions members that stay must give up; an
	// eager protocol stops every member whatever it keeps (see Eager).
	Revoked int `json:"revoked_from_staying_members"`
	// Eager is set for assignors whose protocol revokes everything from
	// everyone at each rebalance (classic range, roundrobin, sticky).
	Eager bool `json:"eager"`
}

func newGroupAssignCmd(o *clientOptions) *cobra.Command {
	var (
		preview bool
		add     int
		remove  []string
	)
	cmd := &cobra.Command{
		Use:   "assign GROUP --preview [--add N] [--remove MEMBER...]",
		Short: "Preview how many partitions would move if the group's membership changed, under each assignor",
		Long: `Preview a membership change of a live group — N members joining (--add),
members leaving (--remove, by member id) — under each assignor Strand knows:
classic range, roundrobin, sticky and cooperative-sticky, and the KIP-848 server
assignors uniform and range. It reads the group's current assignment, runs each
assignor locally (internal/assign, the same code the broker runs for KIP-848
groups) and prints how many partitions change owner and how many the members
that stay would give up. Nothing changes in the group.

Every member is taken to subscribe to every topic the group is assigned now
(a homogeneous group, the usual case).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !preview {
				return usageErr("assign: only --preview exists (Strand never moves a live group's partitions from the CLI)")
			}
			if add < 0 || (add == 0 && len(remove) == 0) {
				return usageErr("assign --preview: give --add N (N > 0) and/or --remove MEMBER")
			}
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				ds, err := describeGroups(ctx, adm, args)
				if err != nil {
					return err
				}
				d := ds[0]
				if len(d.Members) == 0 {
					return fmt.Errorf("group %q (%s, %s) has no members to preview a change of: the preview starts from the live members' assignment", d.Group, d.Type, d.State)
				}
				rows, err := previewMoves(ctx, adm, d, add, remove)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, rows)
				}
				fmt.Fprintf(w, "group %s (%s, %d members) → %d members\n\n", d.Group, d.Type, len(d.Members), len(d.Members)+add-len(remove))
				tw := newTable(w)
				fmt.Fprintln(tw, "ASSIGNOR\tMOVED\tREVOKED FROM STAYING MEMBERS")
				for _, r := range rows {
					revoked := fmt.Sprint(r.Revoked)
					if r.Eager {
						revoked += " (eager: every member stops)"
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\n", r.Assignor, r.Moved, revoked)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&preview, "preview", false, "compute and print, change nothing (required)")
	cmd.Flags().IntVar(&add, "add", 0, "members joining")
	cmd.Flags().StringSliceVar(&remove, "remove", nil, "member ids leaving")
	return cmd
}

// previewMoves runs every assignor over the group after the change.
func previewMoves(ctx context.Context, adm *kadm.Client, d groupDescription, add int, remove []string) ([]movePreview, error) {
	before := assign.Assignment{}
	topicSet := map[string]bool{}
	for _, m := range d.Members {
		var ps []assign.Partition
		for t, parts := range m.Assigned {
			topicSet[t] = true
			for _, p := range parts {
				ps = append(ps, assign.Partition{Topic: t, Partition: p})
			}
		}
		slices.SortFunc(ps, func(a, b assign.Partition) int {
			return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		before[m.MemberID] = ps
	}
	for _, id := range remove {
		if _, ok := before[id]; !ok {
			return nil, fmt.Errorf("--remove %s: not a member of group %q", id, d.Group)
		}
	}
	topics := slices.Sorted(maps.Keys(topicSet))
	if len(topics) == 0 {
		return nil, fmt.Errorf("group %q has no partitions assigned to preview a change of", d.Group)
	}
	meta, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("topics of group %q: %w", d.Group, err)
	}
	counts := map[string]int32{}
	for _, t := range meta {
		counts[t.Topic] = int32(len(t.Partitions))
	}
	var ids []string
	for _, m := range d.Members {
		if !slices.Contains(remove, m.MemberID) {
			ids = append(ids, m.MemberID)
		}
	}
	for i := range add {
		ids = append(ids, fmt.Sprintf("new-%d", i+1))
	}
	row := func(name string, eager bool, after assign.Assignment) movePreview {
		r := movePreview{Assignor: name, Moved: assign.Moves(before, after), Eager: eager}
		for id, ps := range before {
			if slices.Contains(remove, id) {
				continue
			}
			keep := map[assign.Partition]bool{}
			for _, p := range after[id] {
				keep[p] = true
			}
			for _, p := range ps {
				if !keep[p] {
					r.Revoked++
				}
			}
		}
		return r
	}
	var rows []movePreview
	for _, name := range []string{"range", "roundrobin", "sticky", "cooperative-sticky"} {
		a, _ := assign.ByName(name)
		members := make([]assign.Member, len(ids))
		for i, id := range ids {
			members[i] = assign.Member{ID: id, Topics: topics, Owned: before[id], Generation: 1}
		}
		after := a.Assign(members, counts)
		if name == "cooperative-sticky" {
			// Its first round withholds what it revokes; the follow-up
			// round assigns it (assign.Moves measures across both).
			for i := range members {
				members[i].Owned, members[i].Generation = after[members[i].ID], 2
			}
			after = a.Assign(members, counts)
		}
		rows = append(rows, row("classic "+name, name != "cooperative-sticky", after))
	}
	md := map[string]assign.TopicMetadata{}
	for t, n := range counts {
		md[t] = assign.TopicMetadata{Partitions: n}
	}
	for _, name := range []string{"uniform", "range"} {
		a, _ := assign.ServerByName(name)
		subs := make([]assign.Subscriber, len(ids))
		for i, id := range ids {
			subs[i] = assign.Subscriber{ID: id, Topics: topics, Current: before[id]}
		}
		rows = append(rows, row("KIP-848 "+name, false, a.Target(subs, md)))
	}
	return rows, nil
}
