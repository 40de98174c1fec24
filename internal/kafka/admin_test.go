package kafka

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func TestApiVersions(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	c := dial(t, ts.addr)
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "strand-test", "1.0"
		resp := c.do(req, v).(*kmsg.ApiVersionsResponse)
		wantCode(t, "v"+strconv.Itoa(int(v)), resp.ErrorCode, nil)
		if len(resp.ApiKeys) != len(apis)-len(internalOnly) {
			t.Fatalf("v%d: %d keys, want %d (the table less the internal listener's)", v, len(resp.ApiKeys), len(apis)-len(internalOnly))
		}
		for _, k := range resp.ApiKeys {
			if internalOnly[k.ApiKey] {
				t.Fatalf("a client listener advertises %s", kmsg.NameForKey(k.ApiKey))
			}
			a := apis[k.ApiKey]
			if k.MinVersion != a.min || k.MaxVersion != a.max {
				t.Fatalf("key %d: v%d-v%d advertised, table says v%d-v%d", k.ApiKey, k.MinVersion, k.MaxVersion, a.min, a.max)
			}
		}
		// v3+: group.version 1 is finalized (KIP-848 is served), and only
		// then are its APIs, which clients also check, advertised.
		finalized := map[string]int16{}
		for _, f := range resp.FinalizedFeatures {
			if f.MinVersionLevel != f.MaxVersionLevel {
				t.Fatalf("v%d: %s finalized at %d-%d", v, f.Name, f.MinVersionLevel, f.MaxVersionLevel)
			}
			finalized[f.Name] = f.MaxVersionLevel
		}
		if want := v >= 3; (finalized["group.version"] == 1) != want || (finalized["metadata.version"] == 1) != want ||
			(resp.FinalizedFeaturesEpoch >= 1) != want || (len(resp.SupportedFeatures) == len(features)+1) != want {
			t.Fatalf("v%d: finalized %v epoch %d, supported %+v", v, finalized, resp.FinalizedFeaturesEpoch, resp.SupportedFeatures)
		}
		if a := apis[68]; a.max != 1 {
			t.Fatalf("ConsumerGroupHeartbeat advertised up to v%d: clients use KIP-848 only from v1", a.max)
		}
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "bad name!", "1"
	wantCode(t, "bad software name", c.do(req, 3).(*kmsg.ApiVersionsResponse).ErrorCode, kerr.InvalidRequest)
	req.ClientSoftwareName = "ok"
	other := "other-cluster"
	req.ClusterID, req.NodeID = &other, 0
	wantCode(t, "wrong cluster", c.do(req, 5).(*kmsg.ApiVersionsResponse).ErrorCode, kerr.RebootstrapRequired)
	id := ts.b.ClusterID()
	req.ClusterID = &id
	wantCode(t, "right cluster", c.do(req, 5).(*kmsg.ApiVersionsResponse).ErrorCode, nil)
	req.NodeID = -1
	wantCode(t, "cluster without node", c.do(req, 5).(*kmsg.ApiVersionsResponse).ErrorCode, kerr.InvalidRequest)
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{NodeID: 3, DefaultPartitions: 2}, Config{AdvertisedAddr: "strand.example:9999"})
	tp := createTopic(t, ts.b, "m", 3, nil)
	c := dial(t, ts.addr)
	for v := int16(0); v <= 13; v++ {
		req := kmsg.NewPtrMetadataRequest()
		if v == 0 {
			req.Topics = []kmsg.MetadataRequestTopic{} // v0: empty means all
		}
		resp := c.do(req, v).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 3 || resp.Brokers[0].Host != "strand.example" || resp.Brokers[0].Port != 9999 {
			t.Fatalf("v%d brokers: %+v", v, resp.Brokers)
		}
		// Sorted by name: the internal __consumer_offsets, then m.
		if len(resp.Topics) != 2 || *resp.Topics[0].Topic != broker.ConsumerOffsetsTopic || *resp.Topics[1].Topic != "m" || len(resp.Topics[1].Partitions) != 3 {
			t.Fatalf("v%d topics: %+v", v, resp.Topics)
		}
		if v >= 1 && (!resp.Topics[0].IsInternal || resp.Topics[1].IsInternal) {
			t.Fatalf("v%d: IsInternal %v, %v", v, resp.Topics[0].IsInternal, resp.Topics[1].IsInternal)
		}
		resp.Topics = resp.Topics[1:]
		p := resp.Topics[0].Partitions[2]
		if p.Leader != 3 || !slices.Equal(p.Replicas, []int32{3}) || !slices.Equal(p.ISR, []int32{3}) {
			t.Fatalf("v%d partition: %+v", v, p)
		}
		if v >= 1 && resp.ControllerID != 3 {
			t.Fatalf("v%d controller %d", v, resp.ControllerID)
		}
		if v >= 10 && resp.Topics[0].TopicID != tp.ID {
			t.Fatalf("v%d topic id", v)
		}
	}
	// v1+: an empty list is no topics.
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	if resp := c.do(req, 1).(*kmsg.MetadataResponse); len(resp.Topics) != 0 {
		t.Fatalf("v1 empty list: %d topics", len(resp.Topics))
	}
	ask := func(v int16, name string, auto bool) kmsg.MetadataResponseTopic {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &name
		req.Topics, req.AllowAutoTopicCreation = []kmsg.MetadataRequestTopic{rt}, auto
		return c.do(req, v).(*kmsg.MetadataResponse).Topics[0]
	}
	wantCode(t, "no auto-create", ask(9, "fresh", false).ErrorCode, kerr.UnknownTopicOrPartition)
	if mt := ask(9, "fresh", true); mt.ErrorCode != 0 || len(mt.Partitions) != 2 {
		t.Fatalf("auto-created: %v, %d partitions", kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
	}
	wantCode(t, "v3 always auto-creates", ask(3, "fresh3", false).ErrorCode, nil)
	wantCode(t, "invalid name", ask(9, "bad/name", true).ErrorCode, kerr.InvalidTopicException)
	// By id (v12+: null name).
	req = kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.TopicID = tp.ID
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	if mt := c.do(req, 12).(*kmsg.MetadataResponse).Topics[0]; mt.ErrorCode != 0 || *mt.Topic != "m" {
		t.Fatalf("by id: %v", kerr.ErrorForCode(mt.ErrorCode))
	}
}

func TestMetadataAutoCreateDisabled(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{DisableAutoCreateTopics: true}, Config{})
	c := dial(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	name := "x"
	rt.Topic = &name
	req.Topics, req.AllowAutoTopicCreation = []kmsg.MetadataRequestTopic{rt}, true
	wantCode(t, "disabled", c.do(req, 9).(*kmsg.MetadataResponse).Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

func TestListOffsets(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "lo", 1, nil)
	c := dial(t, ts.addr)
	// Timestamps 1_700_000_000_000 + i, three batches of 4.
	for range 3 {
		producePartition(t, c.do(produceReq("lo", 0, batch(t, 4, -1, -1, -1)), 7))
	}
	p, _ := ts.b.Partition("lo", 0)
	if _, err := p.DeleteRecordsBefore(2); err != nil {
		t.Fatal(err)
	}
	list := func(v int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.MaxNumOffsets = ts, 1
		rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
		req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
		return c.do(req, v).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	if got := list(0, -1); !slices.Equal(got.OldStyleOffsets, []int64{12}) {
		t.Fatalf("v0 latest: %v", got.OldStyleOffsets)
	}
	if got := list(0, -2); !slices.Equal(got.OldStyleOffsets, []int64{2}) {
		t.Fatalf("v0 earliest: %v", got.OldStyleOffsets)
	}
	for v := int16(1); v <= 11; v++ {
		if got := list(v, -1); got.Offset != 12 {
			t.Fatalf("v%d latest %d", v, got.Offset)
		}
		if got := list(v, -2); got.Offset != 2 {
			t.Fatalf("v%d earliest %d", v, got.Offset)
		}
		if got := list(v, 1_700_000_000_002); got.Offset != 2 || got.Timestamp != 1_700_000_000_002 {
			t.Fatalf("v%d by timestamp: %d at %d", v, got.Offset, got.Timestamp)
		}
		if got := list(v, 1_900_000_000_000); got.Offset != -1 || got.Timestamp != -1 {
			t.Fatalf("v%d future timestamp: %d at %d", v, got.Offset, got.Timestamp)
		}
	}
	// Each batch's timestamps restart at 1_700_000_000_000: the max is 3, held first by offset 3.
	if got := list(7, -3); got.Timestamp != 1_700_000_000_003 || got.Offset != 3 {
		t.Fatalf("max timestamp: offset %d at %d", got.Offset, got.Timestamp)
	}
}

func TestCreateTopics(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	c := dial(t, ts.addr)
	createTopic(t, ts.b, "exists", 1, nil)
	retention := "3600000"
	bad := "soon"
	topic := func(name string, parts int32, rf int16, configs map[string]*string) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		for k, v := range configs {
			rc := kmsg.NewCreateTopicsRequestTopicConfig()
			rc.Name, rc.Value = k, v
			rt.Configs = append(rt.Configs, rc)
		}
		return rt
	}
	assigned := topic("assigned", -1, -1, nil)
	assigned.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 1, Replicas: []int32{0}}, {Partition: 0, Replicas: []int32{0}}}
	badAssign := topic("badassign", -1, -1, nil)
	badAssign.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{0, 1}}}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = []kmsg.CreateTopicsRequestTopic{
		topic("good", 4, 1, map[string]*string{"retention.ms": &retention}),
		topic("defaults", -1, -1, nil),
		topic("exists", 1, 1, nil),
		topic("rf3", 1, 3, nil),
		topic("zero", 0, 1, nil),
		topic("badconfig", 1, 1, map[string]*string{"retention.ms": &bad}),
		topic("unknownconfig", 1, 1, map[string]*string{"no.such.config": &retention}),
		topic("nullconfig", 1, 1, map[string]*string{"retention.ms": nil}),
		topic("dup", 1, 1, nil),
		topic("dup", 1, 1, nil),
		topic("bad name", 1, 1, nil),
		assigned,
		badAssign,
	}
	resp := c.do(req, 7).(*kmsg.CreateTopicsResponse)
	want := map[string]*kerr.Error{
		"good": nil, "defaults": nil, "exists": kerr.TopicAlreadyExists, "rf3": kerr.InvalidReplicationFactor,
		"zero": kerr.InvalidPartitions, "badconfig": kerr.InvalidConfig, "unknownconfig": kerr.InvalidConfig,
		"nullconfig": kerr.InvalidConfig, "dup": kerr.InvalidRequest, "bad name": kerr.InvalidTopicException,
		"assigned": nil, "badassign": kerr.InvalidReplicaAssignment,
	}
	for _, st := range resp.Topics {
		wantCode(t, st.Topic, st.ErrorCode, want[st.Topic])
		if st.ErrorCode != 0 && (st.ErrorMessage == nil || *st.ErrorMessage == "") {
			t.Errorf("%s: no error message", st.Topic)
		}
		if st.Topic == "good" {
			if st.NumPartitions != 4 || st.ReplicationFactor != 1 || st.TopicID == [16]byte{} {
				t.Errorf("good: %d partitions rf %d id %x", st.NumPartitions, st.ReplicationFactor, st.TopicID)
			}
			found := false
			for _, cfg := range st.Configs {
				if cfg.Name == "retention.ms" {
					found = *cfg.Value == retention && cfg.Source == int8(kmsg.ConfigSourceDynamicTopicConfig)
				}
			}
			if !found {
				t.Errorf("good: retention.ms not reported as set")
			}
		}
	}
	if tp, err := ts.b.Topic("assigned"); err != nil || tp.Partitions() != 2 {
		t.Fatalf("assigned: %v", err)
	}
	// Validate only.
	req.Topics = []kmsg.CreateTopicsRequestTopic{topic("dry", 2, 1, nil)}
	req.ValidateOnly = true
	wantCode(t, "validate only", c.do(req, 4).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, nil)
	if _, err := ts.b.Topic("dry"); err == nil {
		t.Fatal("validate only created the topic")
	}
}

func TestDeleteTopicsAndRecreate(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	c := dial(t, ts.addr)
	createTopic(t, ts.b, "old", 1, nil)
	byID := createTopic(t, ts.b, "byid", 1, nil)
	if _, _, err := ts.b.Produce("old", []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{"old", "missing"}
	resp := c.do(req, 4).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "old", resp.Topics[0].ErrorCode, nil)
	wantCode(t, "missing", resp.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
	req = kmsg.NewPtrDeleteTopicsRequest()
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.TopicID = byID.ID
	req.Topics = []kmsg.DeleteTopicsRequestTopic{rt}
	resp = c.do(req, 6).(*kmsg.DeleteTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "byid" {
		t.Fatalf("delete by id: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	// Recreating starts empty.
	createTopic(t, ts.b, "old", 1, nil)
	if off, _ := ts.b.ListOffsets("old", 0, broker.TimestampLatest); off != 0 {
		t.Fatalf("recreated topic has end offset %d", off)
	}
}

func TestCreatePartitionsAndDeleteRecords(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	c := dial(t, ts.addr)
	createTopic(t, ts.b, "grow", 2, nil)
	req := kmsg.NewPtrCreatePartitionsRequest()
	for _, n := range []int32{5, 3} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "grow", n
		req.Topics = append(req.Topics, rt)
	}
	resp := c.do(req, 3).(*kmsg.CreatePartitionsResponse)
	wantCode(t, "named twice", resp.Topics[0].ErrorCode, kerr.InvalidRequest)
	req.Topics = req.Topics[:1]
	wantCode(t, "grow to 5", c.do(req, 3).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, nil)
	wantCode(t, "shrink", c.do(req, 1).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, kerr.InvalidPartitions)
	if tp, _ := ts.b.Topic("grow"); tp.Partitions() != 5 {
		t.Fatalf("%d partitions", tp.Partitions())
	}

	for range 10 {
		if _, err := ts.b.ProduceRecords(t.Context(), "grow", 4, nil); err == nil {
			t.Fatal("an empty batch must be refused")
		}
	}
	producePartition(t, c.do(produceReq("grow", 4, batch(t, 10, -1, -1, -1)), 7))
	dr := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "grow"
	for _, o := range []struct {
		p   int32
		off int64
	}{{4, 6}, {3, 5}, {9, 0}} {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = o.p, o.off
		rt.Partitions = append(rt.Partitions, rp)
	}
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{rt}
	got := c.do(dr, 2).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions
	if got[0].ErrorCode != 0 || got[0].LowWatermark != 6 {
		t.Fatalf("delete records: %v low %d", kerr.ErrorForCode(got[0].ErrorCode), got[0].LowWatermark)
	}
	wantCode(t, "past high watermark", got[1].ErrorCode, kerr.OffsetOutOfRange)
	wantCode(t, "unknown partition", got[2].ErrorCode, kerr.UnknownTopicOrPartition)
}

func TestConfigs(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{TopicDefaults: map[string]string{"retention.ms": "1000"}}, Config{})
	c := dial(t, ts.addr)
	createTopic(t, ts.b, "cfg", 1, map[string]string{"segment.bytes": "1048576"})
	describe := func(names ...string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, "cfg", names
		req.Resources, req.IncludeSynonyms, req.IncludeDocumentation = []kmsg.DescribeConfigsRequestResource{rr}, true, true
		resp := c.do(req, 4).(*kmsg.DescribeConfigsResponse)
		wantCode(t, "describe", resp.Resources[0].ErrorCode, nil)
		out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, e := range resp.Resources[0].Configs {
			out[e.Name] = e
		}
		return out
	}
	got := describe()
	if e := got["segment.bytes"]; *e.Value != "1048576" || e.Source != kmsg.ConfigSourceDynamicTopicConfig || len(e.ConfigSynonyms) != 2 {
		t.Fatalf("segment.bytes: %+v", e)
	}
	if e := got["retention.ms"]; *e.Value != "1000" || e.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("retention.ms: %+v", e)
	}
	if e := got["max.message.bytes"]; *e.Value != "1048588" || e.Source != kmsg.ConfigSourceDefaultConfig || e.Documentation == nil {
		t.Fatalf("max.message.bytes: %+v", e)
	}
	if len(describe("cleanup.policy")) != 1 {
		t.Fatal("ConfigNames filter")
	}

	alter := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
	v := "LogAppendTime"
	ar.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "message.timestamp.type", Value: &v}}
	alter.Resources = []kmsg.AlterConfigsRequestResource{ar}
	wantCode(t, "alter", c.do(alter, 2).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode, nil)
	got = describe()
	if *got["message.timestamp.type"].Value != "LogAppendTime" || got["segment.bytes"].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatal("AlterConfigs must replace the topic's settings")
	}
	bad := "maybe"
	alter.Resources[0].Configs[0].Value = &bad
	wantCode(t, "alter bad value", c.do(alter, 1).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode, kerr.InvalidConfig)
	alter.Resources[0].ResourceType = kmsg.ConfigResourceTypeBroker
	wantCode(t, "alter broker", c.do(alter, 1).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode, kerr.InvalidRequest)

	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
	compact, ret := "compact", "5000"
	ir.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpAppend, Value: &compact},
		{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: &ret},
		{Name: "message.timestamp.type", Op: kmsg.IncrementalAlterConfigOpDelete},
	}
	inc.Resources = []kmsg.IncrementalAlterConfigsRequestResource{ir}
	wantCode(t, "incremental", c.do(inc, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, nil)
	got = describe()
	if *got["cleanup.policy"].Value != "delete,compact" || *got["retention.ms"].Value != "5000" || *got["message.timestamp.type"].Value != "CreateTime" {
		t.Fatalf("after incremental: %s %s %s", *got["cleanup.policy"].Value, *got["retention.ms"].Value, *got["message.timestamp.type"].Value)
	}
	inc.Resources[0].Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpAppend, Value: &ret}}
	wantCode(t, "append to a non-list", c.do(inc, 0).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, kerr.InvalidConfig)

	// Broker resource.
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	req.Resources = []kmsg.DescribeConfigsRequestResource{rr}
	resp := c.do(req, 0).(*kmsg.DescribeConfigsResponse)
	if resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) == 0 {
		t.Fatalf("broker configs: %v", kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	req.Resources[0].ResourceType, req.Resources[0].ResourceName = kmsg.ConfigResourceTypeTopic, "missing"
	wantCode(t, "unknown topic", c.do(req, 0).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

func TestDescribeClusterAndLeaderEpochs(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{NodeID: 7}, Config{})
	c := dial(t, ts.addr)
	for v := int16(0); v <= 2; v++ {
		resp := c.do(kmsg.NewPtrDescribeClusterRequest(), v).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || resp.ClusterID != ts.b.ClusterID() || resp.ControllerID != 7 || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 7 {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2 // KIP-919's controllers: a single node is its own
	if resp := c.do(req, 1).(*kmsg.DescribeClusterResponse); resp.ErrorCode != 0 || resp.EndpointType != 2 || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 7 {
		t.Fatalf("controllers: %+v", resp)
	}
	req.EndpointType = 3
	wantCode(t, "an unknown endpoint type", c.do(req, 1).(*kmsg.DescribeClusterResponse).ErrorCode, kerr.MismatchedEndpointType)

	createTopic(t, ts.b, "ep", 1, nil)
	producePartition(t, c.do(produceReq("ep", 0, batch(t, 3, -1, -1, -1)), 7))
	ol := kmsg.NewPtrOffsetForLeaderEpochRequest()
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "ep"
	for _, e := range [][2]int32{{0, -1}, {0, 0}, {5, -1}, {0, 3}} {
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.LeaderEpoch, rp.CurrentLeaderEpoch = e[0], e[1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	ol.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{rt}
	got := c.do(ol, 4).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions
	if got[0].ErrorCode != 0 || got[0].LeaderEpoch != 0 || got[0].EndOffset != 3 {
		t.Fatalf("epoch 0: %+v", got[0])
	}
	wantCode(t, "current epoch 0", got[1].ErrorCode, nil)
	if got[2].LeaderEpoch != -1 || got[2].EndOffset != -1 {
		t.Fatalf("future epoch: %+v", got[2])
	}
	wantCode(t, "unknown current epoch", got[3].ErrorCode, kerr.UnknownLeaderEpoch)

	ip := kmsg.NewPtrInitProducerIDRequest()
	txn := "txn"
	ip.TransactionalID = &txn
	wantCode(t, "transactional without a timeout", c.do(ip, 4).(*kmsg.InitProducerIDResponse).ErrorCode, kerr.InvalidTransactionTimeout)
	a, _ := initProducerID(t, c)
	b, _ := initProducerID(t, c)
	if a == b {
		t.Fatal("producer ids must not repeat")
	}
}

// TestReassignAndElectOnOneNode: a single node has nowhere to move a
// partition and leads every one already — each request answers per
// partition in Kafka's codes, v1's AllowReplicationFactorChange=false
// first (KIP-860), and nothing is listed in progress.
func TestReassignAndElectOnOneNode(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	c := dial(t, ts.addr)
	createTopic(t, ts.b, "one", 1, nil)

	ar := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "one"
	for _, target := range [][]int32{{0}, {0, 1}} {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Replicas = target
		rt.Partitions = append(rt.Partitions, rp)
	}
	ar.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{rt, {Topic: "nope", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Replicas: []int32{0}}}}}
	ar.AllowReplicationFactorChange = false
	resp := c.do(ar, 1).(*kmsg.AlterPartitionAssignmentsResponse)
	codes := map[string][]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes[t.Topic] = append(codes[t.Topic], p.ErrorCode)
		}
	}
	if !slices.Equal(codes["one"], []int16{kerr.InvalidReplicationFactor.Code, kerr.InvalidReplicaAssignment.Code}) ||
		!slices.Equal(codes["nope"], []int16{kerr.UnknownTopicOrPartition.Code}) {
		t.Fatalf("reassign on one node: %v", codes)
	}
	if l := c.do(kmsg.NewPtrListPartitionReassignmentsRequest(), 0).(*kmsg.ListPartitionReassignmentsResponse); l.ErrorCode != 0 || len(l.Topics) != 0 {
		t.Fatalf("list: %+v", l)
	}
	el := kmsg.NewPtrElectLeadersRequest()
	el.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "one", Partitions: []int32{0}}}
	for v := int16(0); v <= 2; v++ {
		er := c.do(el, v).(*kmsg.ElectLeadersResponse)
		wantCode(t, fmt.Sprintf("elect v%d", v), er.Topics[0].Partitions[0].ErrorCode, kerr.ElectionNotNeeded)
	}
	el.ElectionType = 7
	wantCode(t, "election type 7", c.do(el, 1).(*kmsg.ElectLeadersResponse).ErrorCode, kerr.InvalidRequest)
}
