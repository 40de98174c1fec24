package kafka

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// OffsetFetch: v0-v9.
//
// Behavior:
//   - Returns a group's committed offsets (offset, leader epoch, metadata)
//     from the group coordinator. A partition without a commit, and any
//     partition of an unknown group, answers offset -1, leader epoch -1,
//     empty metadata and no error, as Kafka does.
//   - A null topic list (v2+) returns every committed partition of the
//     group, sorted by topic and partition.
//   - v0-v7 fetch one group; a group-level error goes to the top-level
//     ErrorCode (v2+) or to every partition (v0-v1). v8+ fetch several
//     groups at once, each with its own error code.
//   - RequireStable (v7+, KIP-447): a partition with offsets pending in an
//     open transaction answers UNSTABLE_OFFSET_COMMIT (retriable) until the
//     transaction ends.
//   - v9: MemberID/MemberEpoch name the member asking. In a
//     consumer-protocol (KIP-848) group the member must exist
//     (UNKNOWN_MEMBER_ID) at exactly that epoch (STALE_MEMBER_EPOCH); no
//     member id and a negative epoch is an admin fetch. Classic groups
//     ignore both, as Kafka does.
//
// Deviations:
//   - v10 (topic ids) is not served.

func (s *Server) handleOffsetFetch(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []offsetFetchTopic
			if rg.Topics != nil {
				topics = make([]offsetFetchTopic, 0, len(rg.Topics))
				for _, rt := range rg.Topics {
					topics = append(topics, offsetFetchTopic{rt.Topic, rt.Partitions})
				}
			}
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group = rg.Group
			memberID, epoch := (*string)(nil), int32(-1)
			if req.Version >= 9 {
				memberID, epoch = rg.MemberID, rg.MemberEpoch
			}
			res, code := s.fetchOffsets(ctx, rg.Group, memberID, epoch, topics, req.RequireStable)
			sg.ErrorCode = int16(code)
			for _, rt := range res {
				st := kmsg.NewOffsetFetchResponseGroupTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					sp.Partition, sp.Offset, sp.LeaderEpoch, sp.Metadata, sp.ErrorCode = rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode
					st.Partitions = append(st.Partitions, sp)
				}
				sg.Topics = append(sg.Topics, st)
			}
			resp.Groups = append(resp.Groups, sg)
		}
		return resp, nil
	}
	var topics []offsetFetchTopic
	if req.Topics != nil || req.Version < 2 {
		topics = make([]offsetFetchTopic, 0, len(req.Topics))
		for _, rt := range req.Topics {
			topics = append(topics, offsetFetchTopic{rt.Topic, rt.Partitions})
		}
	}
	res, code := s.fetchOffsets(ctx, req.Group, nil, -1, topics, req.RequireStable)
	if code != group.CodeNone && req.Version < 2 {
		for i := range res {
			for j := range res[i].Partitions {
				res[i].Partitions[j].ErrorCode = int16(code)
			}
		}
	}
	resp.ErrorCode = int16(code)
	resp.Topics = res
	return resp, nil
}

type offsetFetchTopic struct {
	topic      string
	partitions []int32
}

// fetchOffsets answers one group: the requested partitions (every committed
// one when topics is nil).
func (s *Server) fetchOffsets(ctx context.Context, groupID string, memberID *string, epoch int32, topics []offsetFetchTopic, requireStable bool) ([]kmsg.OffsetFetchResponseTopic, group.Code) {
	var want []group.TopicPartition
	if topics != nil {
		want = []group.TopicPartition{}
		for _, t := range topics {
			for _, p := range t.partitions {
				want = append(want, group.TopicPartition{Topic: t.topic, Partition: p})
			}
		}
	}
	var offsets map[group.TopicPartition]group.OffsetAndMetadata
	var unstable map[group.TopicPartition]bool
	var code group.Code
	if g, err := s.b.GroupCoordinator(groupID); requireStable && err == nil {
		offsets, unstable, code = g.FetchStableOffsets(ctx, groupID, memberID, epoch, want)
	} else {
		offsets, code = s.groupsFor(groupID).FetchMemberOffsets(ctx, groupID, memberID, epoch, want)
	}
	if topics == nil {
		for tp := range offsets {
			want = append(want, tp)
		}
		slices.SortFunc(want, func(a, b group.TopicPartition) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		byTopic := map[string]int{}
		for _, tp := range want {
			i, ok := byTopic[tp.Topic]
			if !ok {
				i = len(topics)
				byTopic[tp.Topic] = i
				topics = append(topics, offsetFetchTopic{topic: tp.Topic})
			}
			topics[i].partitions = append(topics[i].partitions, tp.Partition)
		}
	}
	out := make([]kmsg.OffsetFetchResponseTopic, 0, len(topics))
	for _, t := range topics {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = t.topic
		for _, p := range t.partitions {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition, sp.Offset, sp.LeaderEpoch = p, -1, -1
			empty := ""
			sp.Metadata = &empty
			if o, ok := offsets[group.TopicPartition{Topic: t.topic, Partition: p}]; ok {
				md := o.Metadata
				sp.Offset, sp.LeaderEpoch, sp.Metadata = o.Offset, o.LeaderEpoch, &md
			}
			if unstable[group.TopicPartition{Topic: t.topic, Partition: p}] {
				sp.ErrorCode = kerr.UnstableOffsetCommit.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		out = append(out, st)
	}
	return out, code
}
