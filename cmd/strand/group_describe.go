package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupDescription is "strand group describe" as JSON. Type is "classic",
// "consumer" (KIP-848) or "share" (KIP-932); a consumer or share group
// also has its epochs and its server assignor, a consumer group with
// --history its last rebalances.
type groupDescription struct {
	Group           string              `json:"group"`
	Type            string              `json:"type"`
	State           string              `json:"state"`
	ProtocolType    string              `json:"protocol_type"`
	Protocol        string              `json:"protocol"`
	Coordinator     int32               `json:"coordinator"`
	Epoch           int32               `json:"epoch,omitempty"`
	AssignmentEpoch int32               `json:"assignment_epoch,omitempty"`
	Assignor        string              `json:"assignor,omitempty"`
	Members         []memberDescription `json:"members"`
	History         []rebalance         `json:"history,omitempty"`
	// A share group's share-partitions, read from the console
	// (group_share_stats.go), or why they could not be.
	SharePartitions []sharePartitionStats `json:"share_partitions,omitempty"`
	ShareStatsNote  string                `json:"share_stats_note,omitempty"`
}

type memberDescription struct {
	MemberID    string             `json:"member_id"`
	InstanceID  string             `json:"instance_id,omitempty"`
	ClientID    string             `json:"client_id"`
	ClientHost  string             `json:"client_host"`
	Assigned    map[string][]int32 `json:"assigned"`
	MemberEpoch int32              `json:"member_epoch,omitempty"`
	Target      map[string][]int32 `json:"target,omitempty"`
}

// rebalance is one change of a consumer group's target assignment, as the
// console's /api/v1/groups/{group} reports it.
type rebalance struct {
	Time    time.Time      `json:"time"`
	Reason  string         `json:"reason"`
	Epoch   int32          `json:"epoch"`
	Members int            `json:"members"`
	Moved   int            `json:"moved"`
	MovedTo map[string]int `json:"moved_to"`
	// HandedOver partitions went from a releasing member to a new owner
	// after this change; the longest went MaxUnownedSeconds unconsumed.
	HandedOver        int     `json:"handed_over"`
	MaxUnownedSeconds float64 `json:"max_unowned_seconds"`
}

func newGroupDescribeCmd(o *clientOptions) *cobra.Command {
	var (
		history bool
		console string
	)
	cmd := &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Describe consumer groups: type, state, protocol or assignor, members with their partitions",
		Long: `Describe consumer groups of either protocol: classic groups (state, protocol,
members with the partitions their leader assigned) and KIP-848 consumer groups
(state, group and assignment epochs, the server assignor, members with their
epoch, current and target partitions).

--history adds a consumer group's last rebalances — when, why, at which epoch,
how many partitions moved and to whom — which the broker keeps in memory and
serves on its console's JSON API (--console, the broker's --console-listen).

A share group (KIP-932) also shows each share-partition's window (start and
end offsets), its in-flight and acquired records, the delivery-count histogram
(count×offsets) and the oldest lock's age, read from the same console.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, groups []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				out, err := describeGroups(ctx, adm, groups)
				if err != nil {
					return err
				}
				addShareStats(ctx, console, out)
				if history {
					for i := range out {
						if out[i].Type != "consumer" {
							continue
						}
						if out[i].History, err = groupHistory(ctx, console, out[i].Group); err != nil {
							return err
						}
					}
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), out)
				}
				return printGroups(cmd.OutOrStdout(), out, history)
			})
		},
	}
	cmd.Flags().BoolVar(&history, "history", false, "show each consumer group's last rebalances (read from the broker's console)")
	cmd.Flags().StringVar(&console, "console", cmp.Or(os.Getenv("STRAND_CONSOLE"), "127.0.0.1:9645"), "the broker's console address (its --console-listen), for --history and share groups' share-partitions (env STRAND_CONSOLE)")
	return cmd
}

// describeGroups describes each group: classic groups by DescribeGroups,
// and, for an id DescribeGroups reports Dead or (v6) GROUP_ID_NOT_FOUND, as
// Kafka does for a group of the other protocol, by ConsumerGroupDescribe,
// and then by ShareGroupDescribe (KIP-932 share groups).
func describeGroups(ctx context.Context, adm *kadm.Client, groups []string) ([]groupDescription, error) {
	described, err := adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return nil, fmt.Errorf("describe groups: %w", err)
	}
	var out []groupDescription
	for _, id := range groups {
		d, ok := described[id]
		if !ok {
			return nil, fmt.Errorf("describe group %q: no answer", id)
		}
		if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
			return nil, fmt.Errorf("describe group %q: %w", id, d.Err)
		}
		if d.Err == nil && d.State != "Dead" {
			out = append(out, describeGroup(d))
			continue
		}
		cds, err := adm.DescribeConsumerGroups(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("describe consumer group %q: %w", id, err)
		}
		cd, ok := cds[id]
		if !ok || errors.Is(cd.Err, kerr.GroupIDNotFound) {
			sd, err := describeShareGroup(ctx, adm, id)
			if err != nil {
				return nil, err
			}
			out = append(out, sd)
			continue
		}
		if cd.Err != nil {
			return nil, fmt.Errorf("describe consumer group %q: %w", id, cd.Err)
		}
		out = append(out, describeConsumerGroup(cd))
	}
	return out, nil
}

func printGroups(w io.Writer, out []groupDescription, history bool) error {
	for i, d := range out {
		if i > 0 {
			fmt.Fprintln(w)
		}
		tw := newTable(w)
		fmt.Fprintf(tw, "GROUP\t%s\n", d.Group)
		fmt.Fprintf(tw, "TYPE\t%s\n", d.Type)
		fmt.Fprintf(tw, "STATE\t%s\n", d.State)
		if d.Type == "consumer" || d.Type == "share" {
			fmt.Fprintf(tw, "EPOCH\tgroup %d, assignment %d\n", d.Epoch, d.AssignmentEpoch)
			fmt.Fprintf(tw, "ASSIGNOR\t%s\n", d.Assignor)
		} else {
			fmt.Fprintf(tw, "PROTOCOL\t%s/%s\n", orDash(d.ProtocolType), orDash(d.Protocol))
		}
		fmt.Fprintf(tw, "COORDINATOR\t%d\n", d.Coordinator)
		fmt.Fprintf(tw, "MEMBERS\t%d\n", len(d.Members))
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(d.Members) > 0 {
			fmt.Fprintln(w)
			tw = newTable(w)
			switch d.Type {
			case "share": // a share group's partitions may have several members each
				fmt.Fprintln(tw, "MEMBER\tCLIENT ID\tHOST\tEPOCH\tASSIGNED")
				for _, m := range d.Members {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", m.MemberID, m.ClientID, m.ClientHost, m.MemberEpoch, formatAssigned(m.Assigned))
				}
			case "consumer":
				fmt.Fprintln(tw, "MEMBER\tCLIENT ID\tHOST\tEPOCH\tASSIGNED\tTARGET")
				for _, m := range d.Members {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", m.MemberID, m.ClientID, m.ClientHost, m.MemberEpoch, formatAssigned(m.Assigned), formatAssigned(m.Target))
				}
			default:
				fmt.Fprintln(tw, "MEMBER\tCLIENT ID\tHOST\tASSIGNED")
				for _, m := range d.Members {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.MemberID, m.ClientID, m.ClientHost, formatAssigned(m.Assigned))
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if d.Type == "share" {
			if err := printShareStats(w, d); err != nil {
				return err
			}
		}
		if history && d.Type == "classic" {
			fmt.Fprintf(w, "\n%s\n", classicNoHistory)
		}
		if history && d.Type == "consumer" {
			fmt.Fprintln(w)
			tw = newTable(w)
			fmt.Fprintln(tw, "REBALANCE AT\tEPOCH\tMEMBERS\tMOVED\tMOVED TO\tLONGEST UNOWNED\tWHY")
			for _, r := range d.History {
				unowned := "-"
				if r.HandedOver > 0 {
					unowned = (time.Duration(r.MaxUnownedSeconds * float64(time.Second))).Round(time.Millisecond).String()
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), r.Epoch, r.Members, r.Moved, formatMovedTo(r.MovedTo), unowned, r.Reason)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// classicNoHistory is what --history says of a classic group, rather than
// an empty table that reads as "no rebalances happened".
const classicNoHistory = "no rebalance history: Strand records the rebalances of KIP-848 consumer groups only, and this is a classic group\n" +
	"(its members assign partitions among themselves with JoinGroup/SyncGroup); members that join with\n" +
	"`strand consume --group-protocol consumer` or Kafka's group.protocol=consumer make a consumer group"

// groupHistory reads a consumer group's rebalances from the console's JSON
// API: the history is the broker's own (no Kafka API carries it).
func groupHistory(ctx context.Context, console, group string) ([]rebalance, error) {
	u := "http://" + console + "/api/v1/groups/" + url.PathEscape(group)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rebalance history of %q: %w (is --console the broker's --console-listen?)", group, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rebalance history of %q: %s from %s", group, resp.Status, u)
	}
	var body struct {
		Rebalances []rebalance `json:"rebalances"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("rebalance history of %q: %w", group, err)
	}
	if body.Rebalances == nil {
		body.Rebalances = []rebalance{}
	}
	return body.Rebalances, nil
}

func describeGroup(d kadm.DescribedGroup) groupDescription {
	g := groupDescription{Group: d.Group, Type: "classic", State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol,
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

// describeShareGroup describes a share group (ShareGroupDescribe); a group
// no protocol knows is errNoGroup.
func describeShareGroup(ctx context.Context, adm *kadm.Client, id string) (groupDescription, error) {
	sds, err := adm.DescribeShareGroups(ctx, id)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) && !errors.Is(err, kerr.UnsupportedVersion) {
		return groupDescription{}, fmt.Errorf("describe share group %q: %w", id, err)
	}
	sd, ok := sds[id]
	if !ok || errors.Is(sd.Err, kerr.GroupIDNotFound) || errors.Is(sd.Err, kerr.UnsupportedVersion) || sd.GroupState == "Dead" {
		return groupDescription{}, errNoGroup(id)
	}
	if sd.Err != nil {
		return groupDescription{}, fmt.Errorf("describe share group %q: %w", id, sd.Err)
	}
	g := groupDescription{Group: id, Type: "share", State: sd.GroupState, ProtocolType: "share",
		Coordinator: sd.Coordinator.NodeID, Epoch: sd.GroupEpoch, AssignmentEpoch: sd.AssignmentEpoch, Assignor: sd.Assignor,
		Members: []memberDescription{}}
	for _, m := range sd.Members {
		assigned := map[string][]int32{}
		m.Assignment.EachPartitions(func(t string, ps []int32) { assigned[t] = slices.Sorted(slices.Values(ps)) })
		g.Members = append(g.Members, memberDescription{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			MemberEpoch: m.MemberEpoch, Assigned: assigned})
	}
	return g, nil
}

func describeConsumerGroup(d kadm.DescribedConsumerGroup) groupDescription {
	g := groupDescription{Group: d.Group, Type: "consumer", State: d.State, ProtocolType: "consumer",
		Coordinator: d.Coordinator.NodeID, Epoch: d.Epoch, AssignmentEpoch: d.AssignmentEpoch, Assignor: d.AssignorName,
		Members: []memberDescription{}}
	sets := func(s kadm.TopicsSet) map[string][]int32 {
		out := map[string][]int32{}
		s.EachPartitions(func(t string, ps []int32) { out[t] = slices.Sorted(slices.Values(ps)) })
		return out
	}
	for _, m := range d.Members {
		md := memberDescription{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, MemberEpoch: m.MemberEpoch,
			Assigned: sets(m.Assignment), Target: sets(m.TargetAssignment)}
		if m.InstanceID != nil {
			md.InstanceID = *m.InstanceID
		}
		g.Members = append(g.Members, md)
	}
	return g
}

// formatMovedTo renders {"m1": 2, "m2": 1} as "m1:2 m2:1".
func formatMovedTo(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, id+":"+strconv.Itoa(m[id]))
	}
	return strings.Join(parts, " ")
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
