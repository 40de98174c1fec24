package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeQuorum: v0-v2.
//
// Behavior:
//   - Answered by the controller (clients send it there): the metadata
//     quorum as partition 0 of __cluster_metadata, as KRaft names it —
//     LeaderID, LeaderEpoch (the raft term), HighWatermark (the commit
//     index) and each voter with LogEndOffset = the index its metadata
//     image has applied (from its last heartbeat), LastFetchTimestamp =
//     when the controller last heard from it. Strand's raft log indexes
//     are not Kafka's metadata log offsets, but move the same way: a voter
//     whose number trails the high watermark is behind.
//   - Broker-only nodes (--roles broker, raft non-voters) are Observers.
//   - v2: Nodes lists each voter's raft listener ("CONTROLLER").
//   - Any other cluster member answers NOT_CONTROLLER, which clients
//     retry against the controller Metadata names.
//   - A single node is its own quorum of one, with no metadata log:
//     leader epoch 0, high watermark and log end -1.

const metadataTopic = "__cluster_metadata"

func (s *Server) handleDescribeQuorum(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = metadataTopic
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	switch st, ok := s.b.QuorumStatus(); {
	case ok:
		p.LeaderID, p.LeaderEpoch, p.HighWatermark = st.Leader, int32(st.Term), int64(st.CommitIndex)
		for _, v := range st.Voters {
			r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
			r.ReplicaID, r.LogEndOffset = v.ID, -1 // unknown until it heartbeats this controller
			r.LastFetchTimestamp, r.LastCaughtUpTimestamp = -1, -1
			if !v.LastContact.IsZero() {
				r.LogEndOffset = int64(v.AppliedIndex)
				r.LastFetchTimestamp = v.LastContact.UnixMilli()
				if v.AppliedIndex >= st.CommitIndex {
					r.LastCaughtUpTimestamp = r.LastFetchTimestamp
				}
			}
			if v.Observer { // a broker-only node: it follows the log, votes never
				p.Observers = append(p.Observers, r)
				continue
			}
			p.CurrentVoters = append(p.CurrentVoters, r)
			if host, port, err := splitHostPort(v.Addr); err == nil {
				n := kmsg.NewDescribeQuorumResponseNode()
				n.NodeID = v.ID
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(port)
				n.Listeners = append(n.Listeners, l)
				resp.Nodes = append(resp.Nodes, n)
			}
		}
	case s.b.Clustered():
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	default:
		p.LeaderID, p.LeaderEpoch, p.HighWatermark = int32(s.b.NodeID()), 0, -1
		r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		r.ReplicaID, r.LogEndOffset, r.LastFetchTimestamp, r.LastCaughtUpTimestamp = int32(s.b.NodeID()), -1, -1, -1
		p.CurrentVoters = append(p.CurrentVoters, r)
	}
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp, nil
}

func splitHostPort(addr string) (string, int32, error) {
	ep, err := parseEndpoint(addr)
	if err != nil {
		return "", 0, err
	}
	return ep.host, ep.port, nil
}
