package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassignment is one partition's reassignment in progress.
type reassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
}

func init() { addTopicSubcommand(newTopicReassignCmd) }

// newTopicReassignCmd is "strand topic reassign" (kafka-reassign-partitions.sh
// --execute, --cancel and --verify in one verb).
func newTopicReassignCmd(o *clientOptions) *cobra.Command {
	var (
		assignment string
		cancel     bool
		wait       bool
		list       bool
		status     bool
		throttle   int64
	)
	cmd := &cobra.Command{
		Use:   "reassign <topic>",
		Short: "Move a topic's partitions to other brokers, change their replication factor, or list moves in progress",
		Long: `Move partitions between brokers (Kafka's AlterPartitionReassignments, as
kafka-reassign-partitions.sh). --replica-assignment gives every partition's
new replicas, the first the preferred leader, in kafka-topics.sh's form:
"1:2:3,2:3:1" puts partition 0 on 1, 2 and 3 and partition 1 on 2, 3 and 1.
New replicas copy the partition from its leader while it keeps taking
writes; the old ones leave only once every new one is in sync. --wait shows
the moves until they are done; --cancel stops those in progress; --list
shows them; --status shows, for each replica being added, how much of the
leader's log it holds and the throttle it copies under. --wait is bounded by
--timeout (15 s unless given).

--throttle RATE (bytes per second) throttles the moves as
kafka-reassign-partitions --throttle does: it sets
leader.replication.throttled.rate and follower.replication.throttled.rate on
every broker involved and lists the moving replicas in the topic's
leader/follower.replication.throttled.replicas. Unlike Kafka, nobody needs to
run --verify to lift it: the controller removes each partition's entries from
those lists as its move completes (so the rates throttle nothing more), and
--wait also removes the rates once every move is done. In-sync replicas are
never throttled. Each node also caps what it copies for any move at its
--reassignment-throttle (strand serve).`,
		Example: `  strand topic reassign orders --replica-assignment 1:2:3,2:3:1 --wait --timeout 10m
  strand topic reassign orders --replica-assignment 1:2:4 --throttle 10485760
  strand topic reassign orders --status
  strand topic reassign orders --list
  strand topic reassign orders --cancel`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			modes := 0
			for _, m := range []bool{assignment != "", cancel, list, status} {
				if m {
					modes++
				}
			}
			if modes != 1 {
				return usageErr("give one of --replica-assignment, --cancel, --list or --status")
			}
			if throttle < 0 || throttle > 0 && assignment == "" {
				return usageErr("--throttle takes a rate in bytes per second, with --replica-assignment")
			}
			replicas, err := parseAssignment(assignment)
			if err != nil {
				return usageErr("%v", err)
			}
			return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, asJSON bool) error {
				w := cmd.OutOrStdout()
				if list {
					moving, err := listReassignments(ctx, cl, topic)
					if err != nil {
						return err
					}
					if asJSON {
						return writeJSON(w, moving)
					}
					return printReassignments(cmd, topic, moving)
				}
				if status {
					st, err := reassignStatus(ctx, cl, topic)
					if err != nil {
						return err
					}
					if asJSON {
						if st == nil {
							st = []moveStatus{}
						}
						return writeJSON(w, st)
					}
					return printReassignStatus(cmd, topic, st)
				}
				var throttled []int32
				if throttle > 0 {
					if throttled, err = throttleMoves(ctx, cl, topic, replicas, throttle); err != nil {
						return err
					}
				}
				n, err := alterReassignments(ctx, cl, topic, replicas, cancel)
				if err != nil {
					return err
				}
				if cancel {
					fmt.Fprintf(w, "cancelled the reassignment of %s of %s\n", plural(n, "partition"), topic)
				} else {
					fmt.Fprintf(w, "reassigning %s of %s\n", plural(n, "partition"), topic)
				}
				if len(throttled) > 0 {
					fmt.Fprintf(w, "throttled at %d bytes/s on brokers %s until each move completes\n", throttle, ints(throttled))
				}
				if !wait {
					return nil
				}
				var targets [][]int32 // cancelled: no target to wait for
				if !cancel {
					targets = replicas
				}
				if err := waitReassigned(ctx, cmd, cl, topic, targets); err != nil {
					return err
				}
				if len(throttled) > 0 {
					if err := clearThrottleRates(ctx, cl, throttled); err != nil {
						return err
					}
					fmt.Fprintf(w, "removed the throttle rates from brokers %s\n", ints(throttled))
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&assignment, "replica-assignment", "", "every partition's new replicas: broker ids, \":\" between replicas (the first leads), \",\" between partitions, e.g. 1:2:3,2:3:1")
	f.BoolVar(&cancel, "cancel", false, "cancel the topic's reassignments in progress (added replicas are dropped)")
	f.BoolVar(&wait, "wait", false, "wait until the moves are complete, showing what is still moving")
	f.BoolVar(&list, "list", false, "list the topic's reassignments in progress")
	f.BoolVar(&status, "status", false, "show each replica being added: how much of the leader's log it holds, and its throttle")
	f.Int64Var(&throttle, "throttle", 0, "throttle the moves at this many bytes per second (Kafka's replication throttles; lifted as each move completes)")
	return cmd
}

// alterReassignments sends the targets (or, cancelling, a null target for
// every partition in progress) and returns how many partitions it named.
func alterReassignments(ctx context.Context, cl *kgo.Client, topic string, replicas [][]int32, cancel bool) (int, error) {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	if cancel {
		moving, err := listReassignments(ctx, cl, topic)
		if err != nil {
			return 0, err
		}
		if len(moving) == 0 {
			return 0, fmt.Errorf("no reassignment of %q in progress", topic)
		}
		for _, m := range moving {
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Partition = m.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	for i, reps := range replicas {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = int32(i), reps
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("reassign %s: %w", topic, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, kafkaError(fmt.Sprintf("cannot reassign topic %q", topic), err, resp.ErrorMessage)
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				if errors.Is(err, kerr.UnknownTopicOrPartition) && p.Partition == 0 {
					return 0, errNoTopic(topic)
				}
				errs = append(errs, kafkaError(fmt.Sprintf("cannot reassign partition %d of %q", p.Partition, topic), err, p.ErrorMessage))
			}
		}
	}
	if len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	return len(rt.Partitions), nil
}

func listReassignments(ctx context.Context, cl *kgo.Client, topic string) ([]reassignment, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list reassignments: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("list reassignments: %w", err)
	}
	out := []reassignment{}
	for _, t := range resp.Topics {
		if topic != "" && t.Topic != topic { // "": every topic's
			continue
		}
		for _, p := range t.Partitions {
			out = append(out, reassignment{t.Topic, p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas})
		}
	}
	return out, nil
}

// replicasInPlace reports whether the metadata shows partition i of topic
// with targets[i] as its replicas, for every i.
func replicasInPlace(ctx context.Context, cl *kgo.Client, topic string, targets [][]int32) (bool, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	have := map[int32][]int32{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			have[p.Partition] = p.Replicas
		}
	}
	for i, want := range targets {
		if !slices.Equal(have[int32(i)], want) {
			return false, nil
		}
	}
	return true, nil
}

func printReassignments(cmd *cobra.Command, topic string, moving []reassignment) error {
	w := cmd.OutOrStdout()
	if len(moving) == 0 {
		fmt.Fprintf(w, "no reassignment of %s in progress\n", topic)
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "PARTITION\tREPLICAS\tADDING\tREMOVING")
	for _, m := range moving {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Partition, ints(m.Replicas), orDash(ints(m.Adding)), orDash(ints(m.Removing)))
	}
	return tw.Flush()
}

// waitReassigned polls until no partition of topic is moving and each of
// targets (partition i's new replicas) is in place, saying on stderr what
// still moves whenever that changes. Both are checked because the node
// answering may not yet have applied the reassignment the controller
// started: its list is then empty before the move has begun.
func waitReassigned(ctx context.Context, cmd *cobra.Command, cl *kgo.Client, topic string, targets [][]int32) error {
	start, last := time.Now(), -1
	for {
		moving, err := listReassignments(ctx, cl, topic)
		if err != nil {
			return err
		}
		if len(moving) == 0 && len(targets) > 0 {
			placed, err := replicasInPlace(ctx, cl, topic, targets)
			if err != nil {
				return err
			}
			if !placed {
				moving = []reassignment{{Topic: topic}} // not begun where we asked
			}
		}
		if len(moving) == 0 {
			fmt.Fprintf(cmd.OutOrStdout(), "reassignment of %s complete in %.1f s\n", topic, time.Since(start).Seconds())
			return nil
		}
		if len(moving) != last {
			last = len(moving)
			fmt.Fprintf(cmd.ErrOrStderr(), "%s still moving (new replicas catching up)\n", plural(len(moving), "partition"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reassignment of %s still in progress (%s): %w; \"strand topic reassign %s --list\" shows it", topic, plural(len(moving), "partition"), ctx.Err(), topic)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
