package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/share"
)

// ShareFetch: v1-v2 (KIP-932; v2 adds KIP-1206's ShareAcquireMode and
// KIP-1222's IsRenewAck). v0 was Kafka 4.0's early access.
//
// Behavior:
//   - Share sessions (KIP-932): epoch 0 opens one for (group, member) on
//     this node and may not carry acknowledgements (INVALID_REQUEST); n > 0
//     must be the session's epoch (INVALID_SHARE_SESSION_EPOCH; no session:
//     SHARE_SESSION_NOT_FOUND) and moves it on; -1 closes it after the
//     acknowledgements, fetches nothing, and releases the member's
//     acquired records. Topics add partitions to the session, forgotten
//     topics remove them; a fetch covers every partition of the session.
//     A partition this node cannot resolve yet (UNKNOWN_TOPIC_ID,
//     UNKNOWN_TOPIC_OR_PARTITION: its metadata not here yet) joins the
//     session too, answered with its error until it resolves, as the
//     client counts it as in the session and will not list it again.
//   - Piggybacked acknowledgements are applied first, per partition all
//     or nothing (AcknowledgeErrorCode: INVALID_RECORD_STATE for an offset
//     the member does not hold). An accepted or rejected record is durable
//     in __share_group_state before the response; a rejected one (or one
//     past share.delivery.count.limit) is in the group's dead-letter topic
//     first.
//   - Records are acquired for the member under a lock of
//     share.record.lock.duration.ms (AcquisitionLockTimeoutMillis), and
//     returned as the whole batches that hold them with their
//     AcquiredRecords ranges and delivery counts. In the record-limit
//     acquire mode (KIP-1206's ShareAcquireMode 1) at most MaxRecords over
//     all partitions; in the batch-optimized mode (0, the default)
//     MaxRecords is soft, as Kafka's: an acquisition that reaches it in
//     the middle of a log batch goes on to the batch's end, so that no
//     member is sent a batch it holds only part of (and decodes twice
//     over with the next member). group.share.partition.max.record.locks
//     stays a hard bound. With nothing to acquire
//     the request waits up to MaxWaitMillis.
//   - IsRenewAck: the acknowledgements are applied (renew extends locks)
//     and nothing is fetched.
//   - On a cluster a partition's share-partition lives on its leader:
//     another node answers the partition NOT_LEADER_OR_FOLLOWER, as Fetch
//     does; the leader loads its state from the share coordinator
//     (share_state.go) on first use and after a leadership change.
//   - A share session belongs to the connection that opened it: when the
//     connection closes, the session closes and the member's acquired
//     records are released (delivered again at once, their delivery
//     counts kept), as Kafka does.
//
// Deviations:
//   - MinBytes is ignored: any acquired record answers the fetch.
//   - Acquisition is not persisted (as Kafka): after a restart the records
//     a member held are available again, with the delivery count of their
//     last persisted state.

const apiKeyShareFetch = 78

func (s *Server) handleShareFetch(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareFetchRequest)
	resp := &shareFetchResponse{ShareFetchResponse: req.ResponseKind().(*kmsg.ShareFetchResponse)}
	node, code := s.shareNode()
	if node == nil {
		resp.ErrorCode = code
		return resp, nil
	}
	group, member := deref(req.GroupID), deref(req.MemberID)
	resp.AcquisitionLockTimeoutMillis = int32(node.Coordinator.GroupConfig(group).Partition.LockDuration / time.Millisecond)
	hasAcks := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			hasAcks = hasAcks || len(p.AcknowledgementBatches) > 0
		}
	}
	if group == "" || member == "" || (req.ShareSessionEpoch == share.SessionOpen && hasAcks) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if err := node.Sessions.Check(group, member, req.ShareSessionEpoch); err != nil {
		resp.ErrorCode, resp.ErrorMessage = shareCode(err), shareMessage(err)
		return resp, nil
	}
	out := newShareFetchAnswer()
	var add, forget []share.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			// Every partition listed joins the session, even one this
			// node cannot resolve yet (a topic created a moment ago
			// whose metadata has not reached it): the client counts it
			// as in the session from now on and will not list it
			// again, so leaving it out would starve it for good.
			tp, err := s.shareTP(t.TopicID, p.Partition)
			if err != nil {
				tp = share.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}
			}
			add = append(add, tp)
			if len(p.AcknowledgementBatches) > 0 {
				if err == nil {
					err = node.Manager.Acknowledge(ctx, group, member, tp, shareFetchAcks(p.AcknowledgementBatches))
				}
				rp := out.partition(t.TopicID, p.Partition)
				rp.AcknowledgeErrorCode, rp.AcknowledgeErrorMessage = shareAckCode(err), shareMessage(err)
			}
		}
	}
	for _, ft := range req.ForgottenTopicsData {
		for _, p := range ft.Partitions {
			if tp, err := s.shareTP(ft.TopicID, p); err == nil {
				forget = append(forget, tp)
			}
		}
	}
	parts, err := node.Sessions.Use(group, member, req.ShareSessionEpoch, add, forget, connOf(ctx))
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = shareCode(err), shareMessage(err)
		return resp, nil
	}
	switch {
	case req.ShareSessionEpoch == share.SessionFinal:
		node.Manager.ReleaseMember(ctx, group, member)
	case !req.IsRenewAck && len(parts) > 0:
		parts = s.resolveSharePartitions(group, member, parts, out)
		if len(parts) == 0 {
			break
		}
		grants := node.Manager.Fetch(ctx, share.FetchSpec{
			Group: group, Member: member, Partitions: parts,
			MaxRecords: int(req.MaxRecords), MaxBytes: int(req.MaxBytes),
			MaxWait:     time.Duration(req.MaxWaitMillis) * time.Millisecond,
			RecordLimit: req.ShareAcquireMode == 1,
		})
		resp.grants = grants
		for _, g := range grants {
			if g.Err == nil && len(g.Ranges) == 0 {
				continue
			}
			rp := out.partition(g.TP.TopicID, g.TP.Partition)
			rp.ErrorCode, rp.ErrorMessage = shareCode(g.Err), shareMessage(g.Err)
			rp.Records = g.Batches
			for _, r := range g.Ranges {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = int64(r.First), int64(r.Last), r.Count
				rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
			}
		}
	}
	resp.Topics = out.topics
	return resp, nil
}

// shareFetchResponse is a ShareFetchResponse whose records alias the
// share-partition manager's pooled read buffers (share.Grant): the
// connection's writer splices them into the response (splice.go) and gives
// the buffers back once it is written, never earlier.
type shareFetchResponse struct {
	*kmsg.ShareFetchResponse
	grants []share.Grant
}

func (r *shareFetchResponse) recycle() {
	for i := range r.grants {
		r.grants[i].Release()
	}
	r.grants = nil
}

// resolveSharePartitions returns the session's partitions this node can
// resolve now; each of the others (its topic unknown here, or the
// partition past the count this node knows) is answered with its error
// and stays in the session, to be fetched once the metadata arrives.
func (s *Server) resolveSharePartitions(group, member string, parts []share.TopicPartition, out *shareFetchAnswer) []share.TopicPartition {
	ok := parts[:0:0]
	for _, tp := range parts {
		if tp.Topic != "" {
			ok = append(ok, tp)
			continue
		}
		r, err := s.shareTP(tp.TopicID, tp.Partition)
		if err != nil {
			s.logger.Debug("kafka: share fetch of a partition this node does not know yet", "group", group, "member", member, "partition", tp.Partition, "err", err)
			rp := out.partition(tp.TopicID, tp.Partition)
			rp.ErrorCode, rp.ErrorMessage = errorCode(err), shareMessage(err)
			continue
		}
		ok = append(ok, r)
	}
	return ok
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// shareAckCode is an acknowledgement's error code (0 for none).
func shareAckCode(err error) int16 {
	if err == nil {
		return 0
	}
	return shareCode(err)
}

func shareFetchAcks(bs []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) []share.Ack {
	out := make([]share.Ack, 0, len(bs))
	for _, b := range bs {
		out = append(out, share.Ack{First: share.Offset(b.FirstOffset), Last: share.Offset(b.LastOffset), Types: ackTypes(b.AcknowledgeTypes)})
	}
	return out
}

func ackTypes(ts []int8) []share.AckType {
	out := make([]share.AckType, len(ts))
	for i, t := range ts {
		out[i] = share.AckType(t)
	}
	return out
}

// shareFetchAnswer builds a ShareFetch response's topics, one entry per
// topic and partition.
type shareFetchAnswer struct {
	topics []kmsg.ShareFetchResponseTopic
}

func newShareFetchAnswer() *shareFetchAnswer { return &shareFetchAnswer{} }

func (a *shareFetchAnswer) partition(id [16]byte, p int32) *kmsg.ShareFetchResponseTopicPartition {
	ti := -1
	for i := range a.topics {
		if a.topics[i].TopicID == id {
			ti = i
		}
	}
	if ti < 0 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = id
		a.topics = append(a.topics, t)
		ti = len(a.topics) - 1
	}
	t := &a.topics[ti]
	for i := range t.Partitions {
		if t.Partitions[i].Partition == p {
			return &t.Partitions[i]
		}
	}
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.Partition = p
	t.Partitions = append(t.Partitions, rp)
	return &t.Partitions[len(t.Partitions)-1]
}
