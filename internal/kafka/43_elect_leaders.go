package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/cluster"
)

// ElectLeaders: v0-v2.
//
// Behavior:
//   - ElectionType (v1+; v0 is preferred): 0 moves leadership to each
//     partition's first replica where it is a live ISR member
//     (PREFERRED_LEADER_NOT_AVAILABLE otherwise, ELECTION_NOT_NEEDED when
//     it leads); 1 elects a live replica for a leaderless partition, from
//     its ISR if one is back, else from outside it whatever the topic's
//     unclean.leader.election.enable (ELECTION_NOT_NEEDED when it has a
//     leader, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live).
//     Any other type is INVALID_REQUEST for the whole request.
//   - Topics null: every partition, and the response lists only those an
//     election was tried for and did not find unneeded (as Kafka).
//   - Unknown topics and partitions: UNKNOWN_TOPIC_OR_PARTITION each.
//   - The controller decides (a controller RPC from any node); the answer
//     comes once this node's metadata holds the new leaders. A single node
//     leads every partition already: ELECTION_NOT_NEEDED.
//   - No authorization (Kafka requires ALTER on the cluster).

func (s *Server) handleElectLeaders(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.Version >= 1 && req.ElectionType != 0 && req.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	var parts map[string][]int32
	if req.Topics != nil {
		parts = make(map[string][]int32, len(req.Topics))
		for _, t := range req.Topics {
			parts[t.Topic] = append(parts[t.Topic], t.Partitions...)
		}
	}
	results, err := s.b.ElectLeaders(req.Version >= 1 && req.ElectionType == 1, parts)
	if err != nil {
		s.logUnknown("elect leaders", err)
		resp.ErrorCode = electionCode(err)
		return resp, nil
	}
	index := map[string]int{}
	for _, r := range results {
		i, ok := index[r.Topic]
		if !ok {
			t := kmsg.NewElectLeadersResponseTopic()
			t.Topic = r.Topic
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			index[r.Topic] = i
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition, rp.ErrorCode = r.Partition, electionCode(r.Err)
		if r.Err != nil {
			rp.ErrorMessage = errMessage(r.Err)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}

// electionCode maps an election's error, the controller's own first.
func electionCode(err error) int16 {
	switch {
	case errors.Is(err, cluster.ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, cluster.ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, cluster.ErrEligibleLeadersNotAvailable):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, cluster.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, cluster.ErrConflict):
		return kerr.RequestTimedOut.Code // the partition changed meanwhile: ask again
	}
	return errorCode(err)
}
