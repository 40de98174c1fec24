package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/share"
)

// The share-coordinator RPCs (KIP-932), which a share-partition's leader
// sends the share coordinator of its state (the leader of the
// __share_group_state partition its key hashes to, share.StatePartitionFor)
// on a cluster:
//
//	InitializeShareGroupState (83) v0, ReadShareGroupState (84) v0,
//	WriteShareGroupState (85) v0–v1, DeleteShareGroupState (86) v0,
//	ReadShareGroupStateSummary (87) v0–v1 — Kafka 4.2's versions.
//
// Behavior:
//   - Served on a cluster node's internal listener only, whose peers are
//     nodes holding Cluster:ClusterAction (the ACL table's inter-broker
//     rule, as Kafka authorizes them); a client listener neither
//     advertises nor serves them.
//   - Per partition: NOT_COORDINATOR where this node does not lead the
//     key's __share_group_state partition, COORDINATOR_LOAD_IN_PROGRESS
//     while it replays it (the caller retries).
//   - Read records a newer leader epoch (durably) before answering and
//     answers FENCED_LEADER_EPOCH to an older one; Write answers
//     FENCED_LEADER_EPOCH / FENCED_STATE_EPOCH to a stale writer; both are
//     durable (acks=all on the state partition) before the answer.
//   - A share-partition with no state reads as state epoch -1 and start
//     offset -1 with no error.
//
// Deviations:
//   - Write replaces the whole state: Strand's leaders send the whole
//     window (Kafka's send the changed batches, merged into the state).
//   - The summary's DeliveryCompleteCount is the acknowledged and archived
//     offsets inside the window.

// shareStateFor is the share coordinator of one share-partition here, or
// the error code to answer.
func (s *Server) shareStateFor(group string, topicID [16]byte, partition int32) (*share.StateShard, share.SPKey, int16) {
	key := share.SPKey{Group: group, TopicID: topicID, Partition: partition}
	sh, err := s.b.Share().StateShard(key)
	if err != nil {
		return nil, key, shareCode(err)
	}
	return sh, key, 0
}

func (s *Server) handleInitializeShareGroupState(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitializeShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			sh, key, code := s.shareStateFor(req.GroupID, t.TopicID, p.Partition)
			if code == 0 {
				err := sh.Initialize(ctx, key, p.StateEpoch, share.Offset(p.StartOffset))
				rp.ErrorCode, rp.ErrorMessage = shareAckCode(err), shareMessage(err)
			} else {
				rp.ErrorCode = code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (s *Server) handleReadShareGroupState(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ReadShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.StateEpoch, rp.StartOffset = p.Partition, -1, -1
			sh, key, code := s.shareStateFor(req.GroupID, t.TopicID, p.Partition)
			if code != 0 {
				rp.ErrorCode = code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			snap, found, err := sh.Read(ctx, key, p.LeaderEpoch)
			rp.ErrorCode, rp.ErrorMessage = shareAckCode(err), shareMessage(err)
			if err == nil && found {
				rp.StateEpoch, rp.StartOffset = snap.StateEpoch, int64(snap.Start)
				for _, b := range snap.Batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = int64(b.First), int64(b.Last), int8(b.State), b.Count
					rp.StateBatches = append(rp.StateBatches, sb)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (s *Server) handleWriteShareGroupState(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.WriteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			sh, key, code := s.shareStateFor(req.GroupID, t.TopicID, p.Partition)
			if code != 0 {
				rp.ErrorCode = code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			snap := share.Snapshot{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, Start: share.Offset(p.StartOffset)}
			for _, b := range p.StateBatches {
				snap.Batches = append(snap.Batches, share.StateBatch{First: share.Offset(b.FirstOffset), Last: share.Offset(b.LastOffset),
					State: share.State(b.DeliveryState), Count: b.DeliveryCount})
			}
			err := sh.Write(ctx, key, snap)
			rp.ErrorCode, rp.ErrorMessage = shareAckCode(err), shareMessage(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (s *Server) handleDeleteShareGroupState(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			sh, key, code := s.shareStateFor(req.GroupID, t.TopicID, p.Partition)
			if code == 0 {
				err := sh.Delete(ctx, key)
				rp.ErrorCode, rp.ErrorMessage = shareAckCode(err), shareMessage(err)
			} else {
				rp.ErrorCode = code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (s *Server) handleReadShareGroupStateSummary(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ReadShareGroupStateSummaryRequest)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = p.Partition, -1, -1, -1
			sh, key, code := s.shareStateFor(req.GroupID, t.TopicID, p.Partition)
			if code != 0 {
				rp.ErrorCode = code
			} else if sum, ok := sh.Summary(key); ok {
				rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset, rp.DeliveryCompleteCount = sum.StateEpoch, sum.LeaderEpoch, int64(sum.Start), int32(sum.Done)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
