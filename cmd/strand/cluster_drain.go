package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// move is one partition's replica set before and after a drain.
type move struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	From      []int32 `json:"from"`
	To        []int32 `json:"to"`
}

// newDrainCmd is "strand cluster drain": every replica off one node, so it
// can be stopped and removed without leaving a partition short of replicas.
func newDrainCmd(o *clientOptions) *cobra.Command {
	var (
		node   int32
		noWait bool
		dryRun bool
		undo   bool
	)
	cmd := &cobra.Command{
		Use:   "drain",
		Short: "Move every replica off a node (before stopping and removing it)",
		Long: `Move every partition replica a node holds — internal topics' too — to the
other live brokers, through the controller's reassignments (Kafka's
AlterPartitionReassignments): each replica goes to the broker on the same rack
if there is one, else to a rack the partition is not on yet, and among those
to the one with the fewest replicas. The node keeps serving while the new
replicas copy the data; it leaves each partition only once the new replica is
in sync, and leadership moves to an in-sync replica. The command waits until
every move is done, showing progress (--no-wait returns at once; moves are
bounded by --timeout, so give one that fits the data, e.g. --timeout 30m), and
then checks that the node holds nothing. A partition whose replicas cover
every live broker cannot move: add a broker first, or lower its replication
factor with "strand topic reassign".`,
		Example: `  strand cluster drain --node-id 4 --timeout 30m
  strand cluster drain --node-id 4 --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if node < 0 {
				return usageErr("--node-id is required")
			}
			return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, asJSON bool) error {
				w := cmd.OutOrStdout()
				if undo {
					if err := markDrained(ctx, cl, node, false); err != nil {
						return err
					}
					fmt.Fprintf(w, "node %d is no longer drained: placement and the partition balancer may use it again\n", node)
					return nil
				}
				moves, err := planDrain(ctx, cl, node)
				if err != nil {
					return err
				}
				if !dryRun {
					// First, so that neither new topics nor the balancer
					// put replicas back while it drains.
					if err := markDrained(ctx, cl, node, true); err != nil {
						return err
					}
				}
				if asJSON && (dryRun || len(moves) == 0) {
					return writeJSON(w, moves)
				}
				if len(moves) == 0 {
					fmt.Fprintf(w, "node %d holds no replicas\n", node)
					return nil
				}
				if dryRun {
					tw := newTable(w)
					fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tNEW REPLICAS")
					for _, m := range moves {
						fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.Topic, m.Partition, ints(m.From), ints(m.To))
					}
					return tw.Flush()
				}
				if err := sendMoves(ctx, cl, moves); err != nil {
					return err
				}
				fmt.Fprintf(w, "draining node %d: moving %s\n", node, plural(len(moves), "replica"))
				if noWait {
					return nil
				}
				return waitDrained(ctx, cmd, cl, node, moves)
			})
		},
	}
	f := cmd.Flags()
	f.Int32Var(&node, "node-id", -1, "the node to drain")
	f.BoolVar(&noWait, "no-wait", false, "start the moves and return")
	f.BoolVar(&dryRun, "dry-run", false, "print where each replica would go, and move nothing")
	f.BoolVar(&undo, "undo", false, "clear the node's drained mark (it takes partitions again: new topics, the partition balancer)")
	return cmd
}

// markDrained sets or clears node's strand.drained broker config: a
// drained node is no target of placement or of the partition balancer.
func markDrained(ctx context.Context, cl *kgo.Client, node int32, drained bool) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(node))
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = "strand.drained", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(strconv.FormatBool(drained))
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && len(resp.Resources) == 1 && resp.Resources[0].ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
		if m := resp.Resources[0].ErrorMessage; m != nil {
			err = fmt.Errorf("%w: %s", err, *m)
		}
	}
	if err != nil {
		return fmt.Errorf("mark node %d drained=%t: %w", node, drained, err)
	}
	return nil
}

// drainLookup is how long planDrain looks for a node it does not see live:
// the node answering may apply the node's unfencing a moment after the one
// that showed it live (a just-started node, as in the README's tour).
const drainLookup = 5 * time.Second

// planDrain decides where each of node's replicas goes.
func planDrain(ctx context.Context, cl *kgo.Client, node int32) ([]move, error) {
	md, rack, err := liveBrokers(ctx, cl, node)
	for deadline := time.Now().Add(drainLookup); err == nil; {
		if _, ok := rack[node]; ok {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("node %d is not a live broker of this cluster (live: %v); \"strand cluster info\" shows each node's state", node, slices.Sorted(maps.Keys(rack)))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		md, rack, err = liveBrokers(ctx, cl, node)
	}
	if err != nil {
		return nil, err
	}
	load := map[int32]int{}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				load[r]++
			}
		}
	}
	var moves []move
	var stuck []string
	for _, t := range md.Topics.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			i := slices.Index(p.Replicas, node)
			if i < 0 {
				continue
			}
			to, ok := drainTarget(p.Replicas, node, rack, load)
			if !ok {
				stuck = append(stuck, fmt.Sprintf("%s-%d (replicas %s)", t.Topic, p.Partition, ints(p.Replicas)))
				continue
			}
			next := slices.Clone(p.Replicas)
			next[i] = to // the new replica takes the drained one's place: preferred leaders stay spread
			load[to]++
			moves = append(moves, move{t.Topic, p.Partition, p.Replicas, next})
		}
	}
	if len(stuck) > 0 {
		return nil, fmt.Errorf("cannot drain node %d: %s on every other live broker already: %v; add a broker first, or lower the replication factor (strand topic reassign)",
			node, plural(len(stuck), "partition has a replica"), stuck)
	}
	return moves, nil
}

// liveBrokers returns the cluster's metadata and the rack of each live
// broker that can host replicas, and of node if it is live.
func liveBrokers(ctx context.Context, cl *kgo.Client, node int32) (kadm.Metadata, map[int32]string, error) {
	md, err := kadm.NewClient(cl).Metadata(ctx)
	if err != nil {
		return md, nil, fmt.Errorf("metadata: %w", err)
	}
	hosts, err := brokerRoleNodes(ctx, cl)
	if err != nil {
		return md, nil, err
	}
	rack := map[int32]string{}
	for _, b := range md.Brokers {
		if hosts[b.NodeID] || b.NodeID == node { // a controller-only node hosts nothing: never a target
			rack[b.NodeID] = derefOr(b.Rack, "")
		}
	}
	return md, rack, nil
}

// drainTarget picks the broker that takes node's replica of a partition
// on replicas: not a replica already; on node's rack if one is free there,
// else on a rack the partition is not on yet, else any; the least loaded,
// then the lowest id.
func drainTarget(replicas []int32, node int32, rack map[int32]string, load map[int32]int) (int32, bool) {
	used := map[string]bool{}
	for _, r := range replicas {
		if r != node {
			used[rack[r]] = true
		}
	}
	rank := func(b int32) int {
		switch {
		case rack[b] == rack[node]:
			return 0
		case !used[rack[b]]:
			return 1
		}
		return 2
	}
	var cands []int32
	for b := range rack {
		if b != node && !slices.Contains(replicas, b) {
			cands = append(cands, b)
		}
	}
	if len(cands) == 0 {
		return -1, false
	}
	slices.SortFunc(cands, func(a, b int32) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(load[a], load[b]), cmp.Compare(a, b))
	})
	return cands[0], true
}

// sendMoves asks the controller for every move in one request.
func sendMoves(ctx context.Context, cl *kgo.Client, moves []move) error {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = 30000
	byTopic := map[string]int{}
	for _, m := range moves {
		i, ok := byTopic[m.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[m.Topic] = i
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = m.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = m.Partition, m.To
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("reassign: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return kafkaError("cannot start the drain", err, resp.ErrorMessage)
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs = append(errs, kafkaError(fmt.Sprintf("cannot move partition %d of %q", p.Partition, t.Topic), err, p.ErrorMessage))
			}
		}
	}
	return errors.Join(errs...)
}

// waitDrained polls the moves in progress until none of ours is left,
// saying on stderr how many are done whenever that changes, then checks
// that node is in no replica set.
func waitDrained(ctx context.Context, cmd *cobra.Command, cl *kgo.Client, node int32, moves []move) error {
	start, last := time.Now(), -1
	for {
		moving, err := listReassignments(ctx, cl, "")
		if err != nil {
			return err
		}
		left := 0
		for _, m := range moves {
			if slices.ContainsFunc(moving, func(r reassignment) bool { return r.Topic == m.Topic && r.Partition == m.Partition }) {
				left++
			}
		}
		if left != last {
			fmt.Fprintf(cmd.ErrOrStderr(), "moved %d of %d replicas (%.0f s)\n", len(moves)-left, len(moves), time.Since(start).Seconds())
			last = left
		}
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d moves still running when --timeout ended (they go on; see strand topic reassign <topic> --list): %w", left, len(moves), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
	// A node's metadata follows the controller's by a heartbeat or so:
	// look until it shows the moves.
	for {
		rest, err := planDrain(ctx, cl, node)
		if err != nil {
			return err
		}
		if len(rest) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d still holds %s after the moves (a topic created meanwhile?): run the drain again", node, plural(len(rest), "replica"))
		case <-time.After(200 * time.Millisecond):
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "node %d drained in %.1f s: it holds no replicas and can be stopped (and, if it is a voter, removed with strand cluster remove-voter)\n", node, time.Since(start).Seconds())
	return nil
}

func derefOr(s *string, or string) string {
	if s == nil {
		return or
	}
	return *s
}

// brokerRoleNodes are the nodes that may host replicas: DescribeCluster's
// brokers, which leave controller-only nodes out (Metadata lists them, so
// clients reach the controller).
func brokerRoleNodes(ctx context.Context, cl kmsg.Requestor) (map[int32]bool, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 1
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && resp.ErrorCode != 0 {
		err = fmt.Errorf("error code %d", resp.ErrorCode)
	}
	if err != nil {
		return nil, fmt.Errorf("describe cluster: %w", err)
	}
	out := map[int32]bool{}
	for _, b := range resp.Brokers {
		out[b.NodeID] = true
	}
	return out, nil
}
