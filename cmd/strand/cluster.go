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
	ID           int32  `json:"node_id"`
	Address      string `json:"address,omitempty"`
	State        string `json:"state"` // live, fenced, absent (a voter that never registered) or removed (a fenced node out of the quorum)
	Controller   bool   `json:"controller"`
	Voter        bool   `json:"voter"`
	AppliedIndex int64  `json:"applied_index"` // -1: unknown
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
		Short: "List the brokers (live or fenced), the controller, and each Raft voter's applied index",
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
				fmt.Fprintln(tw, "NODE\tADDRESS\tSTATE\tROLE\tAPPLIED")
				for _, b := range info.Brokers {
					var role []string
					if b.Controller {
						role = append(role, "controller")
					}
					if b.Voter {
						role = append(role, "voter")
					}
					applied := "-"
					if b.AppliedIndex >= 0 {
						applied = fmt.Sprint(b.AppliedIndex)
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
	dreq := kmsg.NewPtrDescribeClusterRequest()
	dreq.IncludeFencedBrokers = true
	dresp, err := dreq.RequestWith(ctx, cl)
	if err == nil && dresp.ErrorCode != 0 {
		err = fmt.Errorf("error code %d", dresp.ErrorCode)
	}
	if err != nil {
		return info, fmt.Errorf("describe cluster: %w", err)
	}
	info.ClusterID, info.ControllerID = dresp.ClusterID, dresp.ControllerID
	byID := map[int32]*clusterBroker{}
	for _, b := range dresp.Brokers {
		state := "live"
		if b.IsFenced {
			state = "fenced"
		}
		info.Brokers = append(info.Brokers, clusterBroker{ID: b.NodeID, Address: fmt.Sprintf("%s:%d", b.Host, b.Port), State: state, AppliedIndex: -1})
	}
	qresp, err := kmsg.NewPtrDescribeQuorumRequest().RequestWith(ctx, cl)
	if err != nil || qresp.ErrorCode != 0 || len(qresp.Topics) != 1 || len(qresp.Topics[0].Partitions) != 1 {
		return info, fmt.Errorf("describe the metadata quorum: %v (error code %d)", err, codeOf(qresp))
	}
	qp := qresp.Topics[0].Partitions[0]
	info.Term, info.CommitIndex = qp.LeaderEpoch, qp.HighWatermark
	for i := range info.Brokers {
		byID[info.Brokers[i].ID] = &info.Brokers[i]
	}
	for _, v := range qp.CurrentVoters {
		b := byID[v.ReplicaID]
		if b == nil {
			info.Brokers = append(info.Brokers, clusterBroker{ID: v.ReplicaID, State: "absent", AppliedIndex: -1})
			b = &info.Brokers[len(info.Brokers)-1]
			for i := range info.Brokers { // the append may have moved them
				byID[info.Brokers[i].ID] = &info.Brokers[i]
			}
		}
		b.Voter, b.AppliedIndex = true, v.LogEndOffset
	}
	for i := range info.Brokers {
		b := &info.Brokers[i]
		b.Controller = b.ID == info.ControllerID
		// Every node is a voter (Strand has no broker-only nodes): a
		// fenced registration outside the quorum is a removed voter's,
		// not a node that may come back, as "fenced" would suggest.
		if b.State == "fenced" && !b.Voter && len(qp.CurrentVoters) > 0 {
			b.State = "removed"
		}
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
