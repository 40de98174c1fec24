package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// DeleteTopics: v0-v6.
//
// Behavior:
//   - Deletes each topic and its data; UNKNOWN_TOPIC_OR_PARTITION for an
//     unknown name, UNKNOWN_TOPIC_ID (v6+) for an unknown id.
//   - v6+ names topics by name or, when the name is null, by id; the
//     response carries both.
//   - An internal topic (__consumer_offsets) cannot be deleted:
//     INVALID_REQUEST, as Kafka's controller answers.
//   - Deletion is synchronous; TimeoutMillis is not needed.

func (s *Server) handleDeleteTopics(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	if fwd, ok, err := s.forward(ctx, kreq, req.TimeoutMillis); ok { // a cluster member: the controller decides
		return fwd, err
	}
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	topics := req.Topics
	if req.Version < 6 {
		topics = nil
		for _, name := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = &name
			topics = append(topics, rt)
		}
	}
	for _, rt := range topics {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var err error
		if rt.Topic != nil {
			var t *broker.Topic
			if t, err = s.b.Topic(*rt.Topic); err == nil {
				st.TopicID = t.ID
				err = s.b.DeleteTopic(t.Name)
			}
		} else {
			var name string
			if name, err = s.b.DeleteTopicByID(broker.TopicID(rt.TopicID)); err == nil {
				st.Topic = &name
			}
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			if req.Version >= 5 {
				st.ErrorMessage = errMessage(err)
			}
			s.logUnknown("delete topic", err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
