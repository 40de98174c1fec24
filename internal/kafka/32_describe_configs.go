package kafka

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
)

// DescribeConfigs: v0-v4.
//
// Behavior:
//   - TOPIC resources: every topic config Strand knows (Kafka's names, plus
//     strand.* ones) with its effective value and source:
//     DYNAMIC_TOPIC_CONFIG for the topic's own settings,
//     STATIC_BROKER_CONFIG for broker-wide defaults, DEFAULT_CONFIG
//     otherwise. ConfigNames filters (null: all).
//   - IncludeSynonyms (v1+): the values each one overrides, most specific
//     first, ending with Kafka's default, as Kafka reports them.
//   - IncludeDocumentation (v3+) and ConfigType (v3+) are filled.
//   - BROKER resources (name "" or this node's id): the broker's static
//     settings, strand.drained, and the replication throttle rates (for
//     "", the cluster defaults), which IncrementalAlterConfigs changes.
//   - GROUP resources: the share-group configs (share.go) with their
//     effective values, GROUP_CONFIG for those set on the group.
//   - Unknown topic: UNKNOWN_TOPIC_OR_PARTITION; another broker id or
//     resource type: INVALID_REQUEST.
//
// Deviations:
//   - Only configs Strand honours are listed; Kafka lists its full set.

func (s *Server) handleDescribeConfigs(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		entries, readOnly, err := s.configEntries(rr.ResourceType, rr.ResourceName)
		if err != nil {
			sr.ErrorCode = errorCode(err)
			sr.ErrorMessage = errMessage(err)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !contains(rr.ConfigNames, e.Name) {
				continue
			}
			sr.Configs = append(sr.Configs, describeEntry(req, e, readOnly))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func describeEntry(req *kmsg.DescribeConfigsRequest, e broker.ConfigEntry, readOnly bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	v := e.Value
	c.Name, c.Value, c.ReadOnly = e.Name, &v, readOnly
	c.IsDefault = e.Source == broker.SourceDefault
	c.Source = kmsg.ConfigSource(e.Source)
	c.ConfigType = kmsg.ConfigType(e.Type)
	if req.IncludeSynonyms {
		for _, syn := range e.Synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			sv := syn.Value
			cs.Name, cs.Value, cs.Source = syn.Name, &sv, kmsg.ConfigSource(syn.Source)
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	if req.IncludeDocumentation && e.Doc != "" {
		doc := e.Doc
		c.Documentation = &doc
	}
	return c
}

// configEntries returns the configs of a resource and whether they are
// read-only.
func (s *Server) configEntries(typ kmsg.ConfigResourceType, name string) ([]broker.ConfigEntry, bool, error) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		entries, err := s.b.DescribeConfigs(name)
		return entries, false, err
	case kmsg.ConfigResourceTypeGroupConfig:
		return s.shareGroupConfigs(name)
	case kmsg.ConfigResourceTypeBroker:
		if name != "" && name != strconv.Itoa(int(s.b.NodeID())) {
			return nil, true, kerr.InvalidRequest
		}
		node := cluster.NodeID(s.b.NodeID())
		if name == "" { // kafka-configs --entity-default: the cluster defaults
			node = cluster.DefaultBrokerConfigNode
		}
		return append(s.brokerConfigs(), s.throttleConfigs(node)...), false, nil
	}
	return nil, true, fmt.Errorf("%w: resource type %d", kerr.InvalidRequest, typ)
}

// brokerConfigs are this node's static settings, as Kafka names them.
func (s *Server) brokerConfigs() []broker.ConfigEntry {
	ep := s.advertisedEndpoint()
	static := func(name, value, doc string, typ broker.ConfigType) broker.ConfigEntry {
		return broker.ConfigEntry{Name: name, Value: value, Source: broker.SourceBroker, Type: typ, Doc: doc,
			Synonyms: []broker.ConfigSynonym{{Name: name, Value: value, Source: broker.SourceBroker}}}
	}
	node := strconv.Itoa(int(s.b.NodeID()))
	return []broker.ConfigEntry{
		static("advertised.listeners", "PLAINTEXT://"+ep.host+":"+strconv.Itoa(int(ep.port)), "Where clients are told to connect.", broker.TypeList),
		static("auto.create.topics.enable", strconv.FormatBool(s.b.AutoCreateTopics()), "Create unknown topics on produce and metadata requests.", broker.TypeBoolean),
		static("broker.id", node, "This node's id.", broker.TypeInt),
		static("default.replication.factor", "1", "Replication factor of auto-created topics.", broker.TypeInt),
		static("log.dirs", s.b.Dir(), "The data directory.", broker.TypeString),
		static("node.id", node, "This node's id.", broker.TypeInt),
		static("num.partitions", strconv.Itoa(int(s.b.DefaultPartitions())), "Partitions of auto-created topics.", broker.TypeInt),
		static("socket.request.max.bytes", strconv.Itoa(int(s.cfg.MaxRequestBytes)), "Largest request accepted.", broker.TypeInt),
		s.drainedConfig(),
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
