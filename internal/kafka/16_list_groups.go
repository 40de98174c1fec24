package kafka

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
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
//   - v5+ (KIP-848): a types filter ("classic", "consumer", matched
//     case-insensitively) and each group's type. A consumer-protocol
//     group's state is its own (Empty, Assigning, Reconciling, Stable); the
//     states filter matches either kind's state names, so "Stable" lists
//     both kinds of stable group.
//   - Before v5 consumer-protocol groups are listed too, with protocol
//     type "consumer".
//   - Share groups (KIP-932) are listed with type and protocol type
//     "share", after the others.

func (s *Server) handleListGroups(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	var types, states []string
	if req.Version >= 5 {
		types = req.TypesFilter
	}
	if req.Version >= 4 {
		states = req.StatesFilter
	}
	matches := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	for _, coord := range s.b.Coordinators() { // this node's groups: admin clients ask every broker
		for _, l := range coord.List(ctx, nil) {
			if !matches(types, l.Type) || !matches(states, l.StateName) {
				continue
			}
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState, g.GroupType = l.GroupID, l.ProtocolType, l.StateName, l.Type
			resp.Groups = append(resp.Groups, g)
		}
	}
	if node, _ := s.shareNode(); node != nil { // share groups (KIP-932): type and protocol type "share"
		for _, l := range node.Coordinator.List() {
			if matches(types, "share") && matches(states, l.State) {
				g := kmsg.NewListGroupsResponseGroup()
				g.Group, g.ProtocolType, g.GroupState, g.GroupType = l.Group, "share", l.State, "share"
				resp.Groups = append(resp.Groups, g)
			}
		}
	}
	return resp, nil
}
