package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterInfo is "strand cluster info": the brokers, the controller and
// the metadata quorum, as any node answers over the Kafka API
// (DescribeCluster, and DescribeQuorum from the controller).
type clusterInfo struct {
	ClusterID    string          `json:"cluster_id"`
	ControllerID int32           `json:"controller_id"`
	Brokers      []clusterBroker `json:"brokers"`
	// Quorum: the raft term (Kafka's leader epoch) and commit index (its
	// high watermark); each voter's applied index is its log end offset.
	Term        int32 `json:"raft_term"`
	CommitIndex int64 `json:"raft_commit_index"`
}

type clusterBroker struct {
	ID      int32  `json:"node_id"`
	Address string `json:"address,omitempty"`
	Rack    string `json:"rack,omitempty"` // --rack (broker.rack)
	State   string `json:"state"`          // live, fenced, absent (a voter that never registered) or removed (a fenced node out of the quorum)
	// Roles: "broker" (hosts partitions), "controller" (a voter of the
	// metadata quorum), or both (--roles).
	Roles      []string `json:"roles"`
	Controller bool     `json:"controller"` // the active controller (the quorum's leader)
	Voter      bool     `json:"voter"`
	// Observer: a broker-only node following the metadata log (a raft
	// non-voter).
	Observer     bool  `json:"observer"`
	AppliedIndex int64 `json:"applied_index"` // -1: unknown
}

func newClusterCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the cluster: brokers, controller and metadata quorum",
	}
	addClientFlags(cmd, o, true, true)
	cmd.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "List the nodes (live or fenced), each one's roles (broker, controller), the active controller, and how far each node's metadata has come",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, asJSON bool) error {
				info, err := describeCluster(ctx, cl)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, info)
				}
				fmt.Fprintf(w, "cluster %s, controller node %d, raft term %d, commit index %d\n\n", info.ClusterID, info.ControllerID, info.Term, info.CommitIndex)
				tw := newTable(w)
				racks := slices.ContainsFunc(info.Brokers, func(b clusterBroker) bool { return b.Rack != "" })
				if racks { // a RACK column only where racks are set
					fmt.Fprintln(tw, "NODE\tADDRESS\tRACK\tSTATE\tROLE\tAPPLIED")
				} else {
					fmt.Fprintln(tw, "NODE\tADDRESS\tSTATE\tROLE\tAPPLIED")
				}
				for _, b := range info.Brokers {
					role := b.Roles
					if b.Controller {
						role = append(slices.Clone(role), "active")
					}
					applied := "-"
					if b.AppliedIndex >= 0 {
						applied = fmt.Sprint(b.AppliedIndex)
					}
					if racks {
						fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", b.ID, orDash(b.Address), orDash(b.Rack), b.State, orDash(strings.Join(role, ",")), applied)
						continue
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", b.ID, orDash(b.Address), b.State, orDash(strings.Join(role, ",")), applied)
				}
				return tw.Flush()
			})
		},
	})
	cmd.AddCommand(newVoterCmd(o, false), newVoterCmd(o, true), newElectCmd(o), newDrainCmd(o), newFeaturesCmd(o))
	return cmd
}

// newVoterCmd is "strand cluster add-voter" or "remove-voter": a change to
// the metadata quorum's membership (Kafka's AddRaftVoter/RemoveRaftVoter).
func newVoterCmd(o *clientOptions, remove bool) *cobra.Command {
	var id int32
	var addr string
	cmd := &cobra.Command{
		Use:   "add-voter",
		Short: "Add a node to the metadata quorum (start it first with `strand serve --join`)",
		Args:  cobra.NoArgs,
	}
	if remove {
		cmd.Use, cmd.Short = "remove-voter", "Remove a node from the metadata quorum"
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if id < 0 {
			return usageErr("--node-id is required")
		}
		return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, asJSON bool) error {
			return changeVoter(ctx, cmd, cl, id, addr, remove, asJSON)
		})
	}
	cmd.Flags().Int32Var(&id, "node-id", -1, "the voter's node id")
	if !remove {
		cmd.Flags().StringVar(&addr, "raft-addr", "", "the new voter's raft address (host:port)")
	}
	return cmd
}

func changeVoter(ctx context.Context, cmd *cobra.Command, cl *kgo.Client, id int32, addr string, remove, asJSON bool) error {
	var code int16
	var msg *string
	if remove {
		warnRemovingLive(ctx, cmd, cl, id)
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.VoterID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("remove voter %d: %w", id, err)
		}
		code, msg = resp.ErrorCode, resp.ErrorMessage
	} else {
		host, port, err := net.SplitHostPort(addr)
		p, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || perr != nil {
			return usageErr("--raft-addr %q: want host:port, the new node's --controller-quorum entry", addr)
		}
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID = id
		l := kmsg.NewAddRaftVoterRequestListener()
		l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(p)
		req.Listeners = append(req.Listeners, l)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("add voter %d: %w", id, err)
		}
		code, msg = resp.ErrorCode, resp.ErrorMessage
	}
	action := map[bool]string{false: "add", true: "remove"}[remove]
	if err := kerr.ErrorForCode(code); err != nil {
		return kafkaError(fmt.Sprintf("%s voter %d", action, id), err, msg)
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), struct {
			NodeID int32  `json:"node_id"`
			Result string `json:"result"`
		}{id, map[bool]string{false: "added", true: "removed"}[remove]})
	}
	verb := "added node %d to the metadata quorum\n"
	if remove {
		verb = "removed node %d from the metadata quorum\n"
	}
	fmt.Fprintf(cmd.OutOrStdout(), verb, id)
	return nil
}

// warnRemovingLive says so when the voter about to be removed still
// serves: it leaves the quorum, but the process keeps running, holding
// its ports and partitions, until it is stopped. The removal goes on, as
// Kafka's does; the warning is for the operator who meant another node.
func warnRemovingLive(ctx context.Context, cmd *cobra.Command, cl *kgo.Client, id int32) {
	info, err := describeCluster(ctx, cl)
	if err != nil {
		return
	}
	for _, b := range info.Brokers {
		// A node stopped a moment ago is still "live" until its session
		// lapses: only one whose Kafka listener answers is running.
		if b.ID == id && b.State == "live" && listening(ctx, b.Address) {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: node %d is still running (live at %s): it leaves the metadata quorum but keeps serving its partitions until you stop it; stop a node before removing it\n", id, b.Address)
		}
	}
}

// listening reports whether something accepts connections at addr.
func listening(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func describeCluster(ctx context.Context, cl kmsg.Requestor) (clusterInfo, error) {
	var info clusterInfo
	byID := map[int32]*clusterBroker{}
	node := func(id int32) *clusterBroker {
		if b := byID[id]; b != nil {
			return b
		}
		b := &clusterBroker{ID: id, State: "absent", AppliedIndex: -1}
		byID[id] = b
		return b
	}
	// The brokers (nodes with the broker role), then the controllers (the
	// quorum's voters: KIP-919's controller endpoint type).
	for _, endpoints := range []int8{1, 2} {
		dreq := kmsg.NewPtrDescribeClusterRequest()
		dreq.IncludeFencedBrokers, dreq.EndpointType = true, endpoints
		dresp, err := dreq.RequestWith(ctx, cl)
		if err == nil && dresp.ErrorCode != 0 {
			err = fmt.Errorf("error code %d", dresp.ErrorCode)
		}
		if err != nil {
			if endpoints == 2 {
				break // a node from before roles: every node is both
			}
			return info, fmt.Errorf("describe cluster: %w", err)
		}
		info.ClusterID, info.ControllerID = dresp.ClusterID, dresp.ControllerID
		for _, d := range dresp.Brokers {
			b := node(d.NodeID)
			if d.Host != "" {
				b.Address, b.State = fmt.Sprintf("%s:%d", d.Host, d.Port), "live"
				if d.Rack != nil && *d.Rack != "" {
					b.Rack = *d.Rack
				}
				if d.IsFenced {
					b.State = "fenced"
				}
			}
			role := map[int8]string{1: "broker", 2: "controller"}[endpoints]
			if !slices.Contains(b.Roles, role) {
				b.Roles = append(b.Roles, role)
			}
		}
	}
	qresp, err := kmsg.NewPtrDescribeQuorumRequest().RequestWith(ctx, cl)
	if err != nil || qresp.ErrorCode != 0 || len(qresp.Topics) != 1 || len(qresp.Topics[0].Partitions) != 1 {
		return info, fmt.Errorf("describe the metadata quorum: %v (error code %d)", err, codeOf(qresp))
	}
	qp := qresp.Topics[0].Partitions[0]
	info.Term, info.CommitIndex = qp.LeaderEpoch, qp.HighWatermark
	info.ControllerID = qp.LeaderID
	for _, v := range qp.CurrentVoters {
		b := node(v.ReplicaID)
		b.Voter, b.AppliedIndex = true, v.LogEndOffset
	}
	for _, v := range qp.Observers {
		b := node(v.ReplicaID)
		b.Observer, b.AppliedIndex = true, v.LogEndOffset
	}
	for _, b := range byID {
		b.Controller = b.ID == info.ControllerID
		if b.Voter && !slices.Contains(b.Roles, "controller") {
			b.Roles = append(b.Roles, "controller")
		}
		// A broker-only node is an observer of the quorum: a fenced
		// registration that is neither voter nor observer is a removed
		// node's, not one that may come back, as "fenced" would suggest.
		if b.State == "fenced" && !b.Voter && !b.Observer && len(qp.CurrentVoters) > 0 {
			b.State = "removed"
		}
		slices.Sort(b.Roles) // "broker", "broker,controller", "controller"
		info.Brokers = append(info.Brokers, *b)
	}
	slices.SortFunc(info.Brokers, func(a, b clusterBroker) int { return int(a.ID - b.ID) })
	return info, nil
}

func codeOf(r *kmsg.DescribeQuorumResponse) int16 {
	if r == nil {
		return 0
	}
	return r.ErrorCode
}
