package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// IncrementalAlterConfigs: v0-v1.
//
// Behavior:
//   - TOPIC resources: SET, DELETE (revert to default), APPEND and SUBTRACT
//     (list configs only, e.g. cleanup.policy; INVALID_CONFIG otherwise)
//     applied to the topic's own settings; the result is validated as a
//     whole (INVALID_CONFIG), applied to the live partitions and persisted.
//   - GROUP resources: the share-group configs (share.go), SET and DELETE;
//     persisted in __share_group_state on a single node, and on a cluster
//     in its metadata (AlterGroupConfig records, as Kafka's ConfigRecord
//     of a GROUP resource), which needs metadata.version 4: below it,
//     UNSUPPORTED_VERSION with the upgrade step in the message.
//   - The same config twice in one resource: INVALID_REQUEST.
//   - ValidateOnly checks and changes nothing.
//
//   - BROKER resources (a node id): only strand.drained, SET true/false or
//     DELETE (broker_configs.go); on a cluster at metadata.version 2.
//
// Deviations:
//   - Every other BROKER config is static in Strand: INVALID_CONFIG.

func (s *Server) handleIncrementalAlterConfigs(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	if fwd, ok, err := s.forward(ctx, kreq, 0); ok { // a cluster member: the controller decides
		return fwd, err
	}
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeGroupConfig:
			err = s.alterShareGroupConfigs(ctx, rr, req.ValidateOnly)
		case kmsg.ConfigResourceTypeBroker:
			err = s.alterBrokerConfigs(rr, req.ValidateOnly)
		default:
			err = s.incrementalAlterConfigs(rr, req.ValidateOnly)
		}
		sr.ErrorCode, sr.ErrorMessage = errorCode(err), errMessage(err)
		s.logUnknown("incremental alter configs", err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (s *Server) incrementalAlterConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if err := checkTopicResource(rr.ResourceType); err != nil {
		return err
	}
	seen := make(map[string]bool, len(rr.Configs))
	changes := make([]broker.ConfigChange, 0, len(rr.Configs))
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return fmt.Errorf("%w: config %s listed twice", kerr.InvalidRequest, c.Name)
		}
		seen[c.Name] = true
		ch := broker.ConfigChange{Name: c.Name, Op: broker.AlterOp(c.Op)}
		if c.Value != nil {
			ch.Value = *c.Value
		} else if ch.Op != broker.OpDelete {
			return &broker.ConfigError{Name: c.Name, Reason: "null value"}
		}
		changes = append(changes, ch)
	}
	return s.b.IncrementalAlterConfigs(rr.ResourceName, changes, validateOnly)
}
