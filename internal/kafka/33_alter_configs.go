package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// AlterConfigs: v0-v2.
//
// Behavior:
//   - TOPIC resources: the listed configs replace all of the topic's own
//     settings (Kafka's non-incremental semantics: what is not listed
//     reverts to its default). Each is validated (INVALID_CONFIG); a null
//     value is INVALID_CONFIG. Changes apply to the live partitions at once
//     and are persisted.
//   - ValidateOnly checks and changes nothing.
//   - Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
//
// Deviations:
//   - BROKER resources are read-only in Strand (set them on the command
//     line or in the config file): INVALID_REQUEST.

func (s *Server) handleAlterConfigs(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterConfigsRequest)
	if fwd, ok, err := s.forward(ctx, kreq, 0); ok { // a cluster member: the controller decides
		return fwd, err
	}
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := s.alterConfigs(rr, req.ValidateOnly)
		sr.ErrorCode, sr.ErrorMessage = errorCode(err), errMessage(err)
		s.logUnknown("alter configs", err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (s *Server) alterConfigs(rr kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	if err := checkTopicResource(rr.ResourceType); err != nil {
		return err
	}
	configs := make(map[string]string, len(rr.Configs))
	for _, c := range rr.Configs {
		if c.Value == nil {
			return &broker.ConfigError{Name: c.Name, Reason: "null value"}
		}
		if _, dup := configs[c.Name]; dup {
			return fmt.Errorf("%w: config %s listed twice", kerr.InvalidRequest, c.Name)
		}
		configs[c.Name] = *c.Value
	}
	return s.b.AlterConfigs(rr.ResourceName, configs, validateOnly)
}

func checkTopicResource(typ kmsg.ConfigResourceType) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return nil
	case kmsg.ConfigResourceTypeBroker:
		return fmt.Errorf("%w: broker configs are static in Strand; set them at startup", kerr.InvalidRequest)
	}
	return fmt.Errorf("%w: resource type %d", kerr.InvalidRequest, typ)
}
