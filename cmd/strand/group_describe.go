package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// groupDescription is "strand group describe" as JSON.
type groupDescription struct {
	Group        string              `json:"group"`
	State        string              `json:"state"`
	ProtocolType string              `json:"protocol_type"`
	Protocol     string              `json:"protocol"`
	Coordinator  int32               `json:"coordinator"`
	Members      []memberDescription `json:"members"`
}

type memberDescription struct {
	MemberID   string             `json:"member_id"`
	InstanceID string             `json:"instance_id,omitempty"`
	ClientID   string             `json:"client_id"`
	ClientHost string             `json:"client_host"`
	Assigned   map[string][]int32 `json:"assigned"`
}

func newGroupDescribeCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Describe consumer groups: state, protocol and members with their partitions",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, groups []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				described, err := adm.DescribeGroups(ctx, groups...)
				if err != nil {
					return fmt.Errorf("describe groups: %w", err)
				}
				var out []groupDescription
				for _, id := range groups {
					d, ok := described[id]
					if !ok {
						return fmt.Errorf("describe group %q: no answer", id)
					}
					if d.Err != nil {
						return fmt.Errorf("describe group %q: %w", id, d.Err)
					}
					if d.State == "Dead" {
						return errNoGroup(id)
					}
					out = append(out, describeGroup(d))
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, out)
				}
				for i, d := range out {
					if i > 0 {
						fmt.Fprintln(w)
					}
					tw := newTable(w)
					fmt.Fprintf(tw, "GROUP\t%s\n", d.Group)
					fmt.Fprintf(tw, "STATE\t%s\n", d.State)
					fmt.Fprintf(tw, "PROTOCOL\t%s/%s\n", orDash(d.ProtocolType), orDash(d.Protocol))
					fmt.Fprintf(tw, "COORDINATOR\t%d\n", d.Coordinator)
					fmt.Fprintf(tw, "MEMBERS\t%d\n", len(d.Members))
					if err := tw.Flush(); err != nil {
						return err
					}
					if len(d.Members) == 0 {
						continue
					}
					fmt.Fprintln(w)
					tw = newTable(w)
					fmt.Fprintln(tw, "MEMBER\tCLIENT ID\tHOST\tASSIGNED")
					for _, m := range d.Members {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.MemberID, m.ClientID, m.ClientHost, formatAssigned(m.Assigned))
					}
					if err := tw.Flush(); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}

func describeGroup(d kadm.DescribedGroup) groupDescription {
	g := groupDescription{Group: d.Group, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol,
		Coordinator: d.Coordinator.NodeID, Members: []memberDescription{}}
	for _, m := range d.Members {
		md := memberDescription{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assigned: map[string][]int32{}}
		if m.InstanceID != nil {
			md.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				md.Assigned[t.Topic] = append(md.Assigned[t.Topic], t.Partitions...)
				slices.Sort(md.Assigned[t.Topic])
			}
		}
		g.Members = append(g.Members, md)
	}
	return g
}

// formatAssigned renders {"t": [0 1]} as "t[0,1]".
func formatAssigned(a map[string][]int32) string {
	if len(a) == 0 {
		return "-"
	}
	topics := make([]string, 0, len(a))
	for t := range a {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	parts := make([]string, 0, len(topics))
	for _, t := range topics {
		ps := make([]string, len(a[t]))
		for i, p := range a[t] {
			ps[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, t+"["+strings.Join(ps, ",")+"]")
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
