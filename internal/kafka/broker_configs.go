package kafka

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
)

// configDrained is the one BROKER config Strand changes at run time: a
// drained broker is no target of placement or of the partition balancer
// (strand cluster drain sets it; Redpanda's decommission, Kafka's
// unregister after a drain). Everything else a broker has is static.
const configDrained = "strand.drained"

// alterBrokerConfigs is IncrementalAlterConfigs on a BROKER resource
// (the node id): SET strand.drained to true or false, or DELETE it.
func (s *Server) alterBrokerConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	id, err := strconv.ParseInt(rr.ResourceName, 10, 32)
	if err != nil {
		return fmt.Errorf("%w: broker resource %q: name a node id (cluster-wide broker configs are static in Strand)", kerr.InvalidRequest, rr.ResourceName)
	}
	if len(rr.Configs) != 1 || rr.Configs[0].Name != configDrained {
		return fmt.Errorf("%w: Strand changes only %s at run time; other broker configs are static (set them at startup)", kerr.InvalidConfig, configDrained)
	}
	c := rr.Configs[0]
	drained := false
	switch {
	case kmsg.IncrementalAlterConfigOp(c.Op) == kmsg.IncrementalAlterConfigOpDelete:
	case kmsg.IncrementalAlterConfigOp(c.Op) == kmsg.IncrementalAlterConfigOpSet && c.Value != nil:
		if drained, err = strconv.ParseBool(*c.Value); err != nil {
			return &broker.ConfigError{Name: c.Name, Reason: fmt.Sprintf("%q is not true or false", *c.Value)}
		}
	default:
		return &broker.ConfigError{Name: c.Name, Reason: "only SET (true or false) and DELETE apply"}
	}
	err = s.b.SetDrained(int32(id), drained, validateOnly)
	switch {
	case errors.Is(err, broker.ErrNotClustered):
		return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	case errors.Is(err, cluster.ErrInvalidRequest):
		return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	case errors.Is(err, cluster.ErrUnsupportedFeature):
		return fmt.Errorf("%w: %v", kerr.UnsupportedVersion, err)
	}
	return err
}

// drainedConfig is strand.drained as DescribeConfigs shows it for this
// node.
func (s *Server) drainedConfig() broker.ConfigEntry {
	v := strconv.FormatBool(s.b.Drained(int32(s.b.NodeID())))
	src := broker.SourceDefault
	if v == "true" {
		src = broker.ConfigSource(2) // DYNAMIC_BROKER_CONFIG
	}
	return broker.ConfigEntry{Name: configDrained, Value: v, Source: src, Type: broker.TypeBoolean,
		Doc: "Drained: no target of placement or of the partition balancer (strand cluster drain sets it)."}
}
