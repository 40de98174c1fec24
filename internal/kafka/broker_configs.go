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

// Broker configs Strand changes at run time (everything else a broker has
// is static, set at startup):
//
//   - strand.drained, per node: a drained broker is no target of placement
//     or of the partition balancer (strand cluster drain sets it;
//     Redpanda's decommission, Kafka's unregister after a drain).
//   - leader.replication.throttled.rate and
//     follower.replication.throttled.rate, per node or as the cluster
//     default (resource name ""): Kafka's replication throttles
//     (cluster/throttle.go), metadata.version 3.
const configDrained = "strand.drained"

// Config sources of DescribeConfigs v1+.
const (
	sourceDynamicBroker        broker.ConfigSource = 2 // DYNAMIC_BROKER_CONFIG
	sourceDynamicDefaultBroker broker.ConfigSource = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
)

// alterBrokerConfigs is IncrementalAlterConfigs on a BROKER resource: the
// node id, or "" for the cluster default (as kafka-configs --entity-default
// sends it).
func (s *Server) alterBrokerConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	id := int64(cluster.DefaultBrokerConfigNode)
	if rr.ResourceName != "" {
		var err error
		if id, err = strconv.ParseInt(rr.ResourceName, 10, 32); err != nil || id < 0 {
			return fmt.Errorf("%w: broker resource %q: name a node id, or nothing for the cluster default", kerr.InvalidRequest, rr.ResourceName)
		}
	}
	if len(rr.Configs) == 1 && rr.Configs[0].Name == configDrained {
		if id < 0 {
			return fmt.Errorf("%w: %s is set per node, not as a cluster default", kerr.InvalidRequest, configDrained)
		}
		return brokerConfigErr(s.alterDrained(int32(id), rr.Configs[0], validateOnly))
	}
	set, remove := map[string]string{}, []string(nil)
	for _, c := range rr.Configs {
		if !cluster.IsDynamicBrokerConfig(c.Name) {
			return fmt.Errorf("%w: Strand changes only %s (alone), %s and %s at run time; other broker configs are static (set them at startup)",
				kerr.InvalidConfig, configDrained, cluster.LeaderThrottledRate, cluster.FollowerThrottledRate)
		}
		switch op := kmsg.IncrementalAlterConfigOp(c.Op); {
		case op == kmsg.IncrementalAlterConfigOpDelete:
			remove = append(remove, c.Name)
		case op == kmsg.IncrementalAlterConfigOpSet && c.Value != nil:
			if err := cluster.CheckBrokerConfig(c.Name, *c.Value); err != nil {
				return &broker.ConfigError{Name: c.Name, Reason: fmt.Sprintf("%q is not a rate in bytes per second", *c.Value)}
			}
			set[c.Name] = *c.Value
		default:
			return &broker.ConfigError{Name: c.Name, Reason: "only SET and DELETE apply"}
		}
	}
	return brokerConfigErr(s.b.SetBrokerConfigs(int32(id), set, remove, validateOnly))
}

func (s *Server) alterDrained(id int32, c kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	drained := false
	switch {
	case kmsg.IncrementalAlterConfigOp(c.Op) == kmsg.IncrementalAlterConfigOpDelete:
	case kmsg.IncrementalAlterConfigOp(c.Op) == kmsg.IncrementalAlterConfigOpSet && c.Value != nil:
		var err error
		if drained, err = strconv.ParseBool(*c.Value); err != nil {
			return &broker.ConfigError{Name: c.Name, Reason: fmt.Sprintf("%q is not true or false", *c.Value)}
		}
	default:
		return &broker.ConfigError{Name: c.Name, Reason: "only SET (true or false) and DELETE apply"}
	}
	return s.b.SetDrained(id, drained, validateOnly)
}

// brokerConfigErr maps a broker config change's failure to its Kafka
// error.
func brokerConfigErr(err error) error {
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
		src = sourceDynamicBroker
	}
	return broker.ConfigEntry{Name: configDrained, Value: v, Source: src, Type: broker.TypeBoolean,
		Doc: "Drained: no target of placement or of the partition balancer (strand cluster drain sets it)."}
}

// throttleConfigs are the replication throttle rates as DescribeConfigs
// shows them for node (cluster.DefaultBrokerConfigNode: the defaults):
// the node's own value, else the cluster default, else Kafka's default,
// no limit (Long.MAX_VALUE).
func (s *Server) throttleConfigs(node cluster.NodeID) []broker.ConfigEntry {
	if !s.b.Clustered() {
		return nil
	}
	img := s.b.MetadataImage()
	own, def := img.BrokerConfigs(node), img.BrokerConfigs(cluster.DefaultBrokerConfigNode)
	var out []broker.ConfigEntry
	for _, name := range []string{cluster.LeaderThrottledRate, cluster.FollowerThrottledRate} {
		e := broker.ConfigEntry{Name: name, Value: maxLong, Source: broker.SourceDefault, Type: broker.ConfigType(5), // LONG
			Doc: "Bytes per second this broker serves to (leader) or fetches for (follower) the out-of-sync replicas its topics' *.replication.throttled.replicas list."}
		if v, ok := def[name]; ok {
			e.Value, e.Source = v, sourceDynamicDefaultBroker
			e.Synonyms = append(e.Synonyms, broker.ConfigSynonym{Name: name, Value: v, Source: sourceDynamicDefaultBroker})
		}
		if v, ok := own[name]; ok && node != cluster.DefaultBrokerConfigNode {
			e.Value, e.Source = v, sourceDynamicBroker
			e.Synonyms = append([]broker.ConfigSynonym{{Name: name, Value: v, Source: sourceDynamicBroker}}, e.Synonyms...)
		}
		out = append(out, e)
	}
	if node != cluster.DefaultBrokerConfigNode {
		v := strconv.FormatInt(s.b.ReassignmentThrottle(), 10)
		out = append(out, broker.ConfigEntry{Name: configReassignmentThrottle, Value: v, Source: broker.SourceBroker, Type: broker.ConfigType(5),
			Doc: "Bytes per second this node fetches at most for replicas a reassignment is adding (strand serve --reassignment-throttle; 0: no cap)."})
	}
	return out
}

// configReassignmentThrottle is the node's --reassignment-throttle, read
// only.
const configReassignmentThrottle = "strand.reassignment.throttle"

const maxLong = "9223372036854775807"
