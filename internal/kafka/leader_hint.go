package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// KIP-951 leader hints. A partition that answers NOT_LEADER_OR_FOLLOWER
// (Produce v10+, Fetch v16+) or FENCED_LEADER_EPOCH (Fetch v16+) names the
// leader this node's metadata knows — CurrentLeader{LeaderID,
// LeaderEpoch} — and the response lists that leader's endpoint in
// NodeEndpoints, so a client moves to it without a metadata round trip
// (franz-go and librdkafka do, when the epoch is newer than theirs). A
// leader this node does not know, or one on a fenced broker, is left out:
// the client then refreshes metadata as before. The hint is only as fresh
// as this node's image; a client ignores one that is not newer than what
// it knows, so a stale hint costs nothing.

// Versions from which the responses carry the hint (KIP-951).
const (
	produceLeaderHintVersion = 10
	fetchLeaderHintVersion   = 16
)

// leaderHints collects the endpoints of the leaders a response names.
type leaderHints struct {
	s     *Server
	nodes map[broker.NodeID]bool
}

// leaderFor returns the leader and leader epoch of partition p of the
// topic named by name or id, as this node's image has them; ok is false
// when no live leader is known.
func (h *leaderHints) leaderFor(name string, id [16]byte, version, idVersion int16, p int32) (leader, epoch int32, ok bool) {
	var (
		t   *broker.Topic
		err error
	)
	if version >= idVersion {
		t, err = h.s.b.TopicByID(broker.TopicID(id))
	} else {
		t, err = h.s.b.Topic(name)
	}
	if err != nil || p < 0 || p >= t.Partitions() {
		return -1, -1, false
	}
	info := h.s.b.PartitionInfo(t, broker.PartitionID(p))
	if info.Leader < 0 {
		return -1, -1, false
	}
	if h.nodes == nil {
		h.nodes = make(map[broker.NodeID]bool)
	}
	h.nodes[info.Leader] = true
	return int32(info.Leader), info.LeaderEpoch, true
}

// endpoints returns the client-listener endpoints (as this listener
// advertises them) of the leaders named, among the unfenced brokers.
func (h *leaderHints) endpoints() []broker.BrokerInfo {
	if len(h.nodes) == 0 {
		return nil
	}
	var out []broker.BrokerInfo
	for _, bi := range h.s.brokers(false) {
		if h.nodes[bi.ID] {
			out = append(out, bi)
		}
	}
	return out
}

// addProduceLeaderHints fills CurrentLeader for every partition of resp
// that answers NOT_LEADER_OR_FOLLOWER, and NodeEndpoints with their
// leaders (Produce v10+).
func (s *Server) addProduceLeaderHints(resp *kmsg.ProduceResponse) {
	if resp.Version < produceLeaderHintVersion {
		return
	}
	h := leaderHints{s: s}
	for i := range resp.Topics {
		st := &resp.Topics[i]
		for j := range st.Partitions {
			sp := &st.Partitions[j]
			if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			if id, epoch, ok := h.leaderFor(st.Topic, st.TopicID, resp.Version, 13, sp.Partition); ok {
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = id, epoch
			}
		}
	}
	for _, bi := range h.endpoints() {
		b := kmsg.NewProduceResponseBroker()
		b.NodeID, b.Host, b.Port = int32(bi.ID), bi.Host, bi.Port
		if bi.Rack != "" {
			b.Rack = &bi.Rack
		}
		resp.Brokers = append(resp.Brokers, b)
	}
}

// addFetchLeaderHints is addProduceLeaderHints for a consumer's Fetch
// (v16+), whose hints also answer FENCED_LEADER_EPOCH, as Kafka's do.
func (s *Server) addFetchLeaderHints(resp *kmsg.FetchResponse) {
	if resp.Version < fetchLeaderHintVersion {
		return
	}
	h := leaderHints{s: s}
	for i := range resp.Topics {
		st := &resp.Topics[i]
		for j := range st.Partitions {
			sp := &st.Partitions[j]
			if sp.ErrorCode != kerr.NotLeaderForPartition.Code && sp.ErrorCode != kerr.FencedLeaderEpoch.Code {
				continue
			}
			if id, epoch, ok := h.leaderFor(st.Topic, st.TopicID, resp.Version, 13, sp.Partition); ok {
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = id, epoch
			}
		}
	}
	for _, bi := range h.endpoints() {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = int32(bi.ID), bi.Host, bi.Port
		if bi.Rack != "" {
			b.Rack = &bi.Rack
		}
		resp.Brokers = append(resp.Brokers, b)
	}
}
