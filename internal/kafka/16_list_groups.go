package kafka

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// ListGroups: v0-v5.
//
// Behavior:
//   - Every group this coordinator knows (all of them: it coordinates every
//     group), sorted by id, with its protocol type ("consumer" for Kafka
//     consumers, "" for a group that only has committed offsets).
//   - v4+ (KIP-518): a states filter, matched case-insensitively; a state
//     name Kafka does not have matches nothing. v4+ also reports each
//     group's state.
//   - v5+ (KIP-848): a types filter and each group's type. Every group here
//     is "classic"; the filter matches case-insensitively, so "classic"
//     lists them all and "consumer" (the new protocol) none.

func (s *Server) handleListGroups(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if req.Version >= 5 && len(req.TypesFilter) > 0 {
		classic := false
		for _, t := range req.TypesFilter {
			classic = classic || strings.EqualFold(t, "classic")
		}
		if !classic {
			return resp, nil
		}
	}
	var states []group.State
	if req.Version >= 4 && len(req.StatesFilter) > 0 {
		for _, name := range req.StatesFilter {
			if st, ok := group.ParseState(name); ok {
				states = append(states, st)
			}
		}
		if len(states) == 0 {
			return resp, nil // only unknown states: nothing matches
		}
	}
	for _, coord := range s.b.Coordinators() { // this node's groups: admin clients ask every broker
		for _, l := range coord.List(ctx, states) {
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState, g.GroupType = l.GroupID, l.ProtocolType, l.State.String(), "classic"
			resp.Groups = append(resp.Groups, g)
		}
	}
	return resp, nil
}
