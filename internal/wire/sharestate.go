package wire

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share-coordinator RPCs (KIP-932) a share-partition's leader sends
// the share coordinator of its state on another node:
// InitializeShareGroupState (83), ReadShareGroupState (84),
// WriteShareGroupState (85) and DeleteShareGroupState (86), one
// share-partition per call. Each answers the partition's error as its
// kerr error, wrapped in ErrShareCoordinatorMoving when calling again may
// succeed, or in ErrFencedLeaderEpoch / ErrFencedStateEpoch.

var (
	// ErrShareCoordinatorMoving: the share coordinator is not (yet) on the
	// node called, is loading, or could not write with acks=all right now
	// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
	// COORDINATOR_NOT_AVAILABLE, NOT_ENOUGH_REPLICAS, …): ask again.
	ErrShareCoordinatorMoving = errors.New("wire: the share coordinator is moving")
	// ErrFencedLeaderEpoch: FENCED_LEADER_EPOCH, a newer partition leader
	// owns the share-partition.
	ErrFencedLeaderEpoch = errors.New("wire: fenced leader epoch")
	// ErrFencedStateEpoch: FENCED_STATE_EPOCH.
	ErrFencedStateEpoch = errors.New("wire: fenced state epoch")
)

// ShareKey names a share-partition: a group's view of one topic-partition.
type ShareKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// ShareStateBatch is a run of offsets with one delivery state and count.
type ShareStateBatch struct {
	First, Last int64
	State       int8
	Count       int16
}

// ShareState is a share-partition's persisted state.
type ShareState struct {
	StateEpoch, LeaderEpoch int32
	Start                   int64
	Batches                 []ShareStateBatch
}

// InitializeShareState sets key's state on node to start at start with
// stateEpoch.
func (ps Peers) InitializeShareState(ctx context.Context, node int32, key ShareKey, stateEpoch int32, start int64) error {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.StartOffset = key.Partition, stateEpoch, start
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := ps.RoundTrip(ctx, node, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.InitializeShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return fmt.Errorf("wire: node %d answered an initialize of one share-partition with %d topics", node, len(r.Topics))
	}
	return codeErr(r.Topics[0].Partitions[0].ErrorCode)
}

// ReadShareState reads key's state on node for the leader at
// leaderEpoch; false if it has none.
func (ps Peers) ReadShareState(ctx context.Context, node int32, key ShareKey, leaderEpoch int32) (ShareState, bool, error) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = key.Partition, leaderEpoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := ps.RoundTrip(ctx, node, req)
	if err != nil {
		return ShareState{}, false, err
	}
	r := resp.(*kmsg.ReadShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return ShareState{}, false, fmt.Errorf("wire: node %d answered a read of one share-partition with %d topics", node, len(r.Topics))
	}
	rp := r.Topics[0].Partitions[0]
	if err := codeErr(rp.ErrorCode); err != nil {
		return ShareState{}, false, err
	}
	if rp.StartOffset < 0 { // no state (ShareStateNone)
		return ShareState{}, false, nil
	}
	st := ShareState{StateEpoch: rp.StateEpoch, LeaderEpoch: leaderEpoch, Start: rp.StartOffset}
	for _, b := range rp.StateBatches {
		st.Batches = append(st.Batches, ShareStateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
	}
	return st, true, nil
}

// WriteShareState replaces key's state on node (v1: with the count of
// offsets past the start whose delivery is complete, done).
func (ps Peers) WriteShareState(ctx context.Context, node int32, key ShareKey, st ShareState, done int32) error {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.SetVersion(1)
	req.GroupID = key.Group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount = key.Partition, st.StateEpoch, st.LeaderEpoch, st.Start, done
	for _, b := range st.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.Count
		p.StateBatches = append(p.StateBatches, sb)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := ps.RoundTrip(ctx, node, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.WriteShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return fmt.Errorf("wire: node %d answered a write of one share-partition with %d topics", node, len(r.Topics))
	}
	return codeErr(r.Topics[0].Partitions[0].ErrorCode)
}

// DeleteShareState forgets key's state on node.
func (ps Peers) DeleteShareState(ctx context.Context, node int32, key ShareKey) error {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewDeleteShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	p.Partition = key.Partition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := ps.RoundTrip(ctx, node, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.DeleteShareGroupStateResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return fmt.Errorf("wire: node %d answered a delete of one share-partition with %d topics", node, len(r.Topics))
	}
	return codeErr(r.Topics[0].Partitions[0].ErrorCode)
}

// ShareSummary is what ReadShareGroupStateSummary answers of a
// share-partition: its start offset and how many offsets at or past it
// are done (acknowledged or archived).
type ShareSummary struct {
	StateEpoch, LeaderEpoch int32
	Start                   int64
	Done                    int32
}

// ReadShareStateSummary reads key's summary on node (v1, with the done
// count); false if the group has no state there. It records no epoch.
func (ps Peers) ReadShareStateSummary(ctx context.Context, node int32, key ShareKey) (ShareSummary, bool, error) {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.SetVersion(1)
	req.GroupID = key.Group
	t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	p.Partition, p.LeaderEpoch = key.Partition, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := ps.RoundTrip(ctx, node, req)
	if err != nil {
		return ShareSummary{}, false, err
	}
	r := resp.(*kmsg.ReadShareGroupStateSummaryResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return ShareSummary{}, false, fmt.Errorf("wire: node %d answered a summary of one share-partition with %d topics", node, len(r.Topics))
	}
	rp := r.Topics[0].Partitions[0]
	if err := codeErr(rp.ErrorCode); err != nil {
		return ShareSummary{}, false, err
	}
	if rp.StartOffset < 0 {
		return ShareSummary{}, false, nil
	}
	return ShareSummary{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, Start: rp.StartOffset, Done: rp.DeliveryCompleteCount}, true, nil
}

// codeErr is a share coordinator's answer for one share-partition.
func codeErr(code int16) error {
	err := kerr.ErrorForCode(code)
	switch {
	case code == 0:
		return nil
	case code == kerr.FencedLeaderEpoch.Code:
		return fmt.Errorf("%w: %w", ErrFencedLeaderEpoch, err)
	case code == kerr.FencedStateEpoch.Code:
		return fmt.Errorf("%w: %w", ErrFencedStateEpoch, err)
	}
	for _, e := range []*kerr.Error{kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable,
		kerr.NotLeaderForPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut} {
		if code == e.Code {
			return fmt.Errorf("%w: %w", ErrShareCoordinatorMoving, err)
		}
	}
	return err
}
