package acl

import "slices"

// The per-API table: for each Kafka API key, the checks its handler asks
// the Authorizer, with Kafka's rules (core KafkaApis, ControllerApis,
// ConfigHelper, AuthHelper and the DescribeTopicPartitions handler, Kafka
// 3.9/4.0). It is data, not enforcement: the handlers read their Rule and
// apply it, and a test in internal/kafka keeps it covering every key the
// dispatch table serves.
//
// A Rule holds Checks that all apply. A Check names alternatives (AnyOf: any
// one allowed suffices, asked in order, so a cluster-wide grant short-cuts a
// per-resource one), when it applies (Condition) and what a denial does
// (Denied, Code).

// Target is which resource of a request a check is about.
type Target uint8

// Targets.
const (
	// OnCluster: the cluster ("kafka-cluster").
	OnCluster Target = iota + 1
	// OnTopics: each topic the request names (or, listing all, each topic).
	OnTopics
	// OnAnyTopic: at least one topic (Authorizer.AuthorizeByResourceType).
	OnAnyTopic
	// OnGroups: the request's group, or each group of a batch request.
	OnGroups
	// OnTransactionalIDs: the request's transactional id, or each of a batch.
	OnTransactionalIDs
	// OnConfigResources: each config resource: a topic is the Topic, a group
	// the Group, a broker, broker logger or client-metrics resource the
	// Cluster.
	OnConfigResources
	// OnCoordinatorKeys: each FindCoordinator key: key type 0 a Group, key
	// type 1 a TransactionalId.
	OnCoordinatorKeys
)

// Condition says when a check applies.
type Condition uint8

// Conditions.
const (
	// Always: every request of the API.
	Always Condition = iota
	// WhenTransactional: the request carries a transactional id
	// (Produce: transactional records; InitProducerId: a non-null id).
	WhenTransactional
	// WhenIdempotent: InitProducerId without a transactional id.
	WhenIdempotent
	// WhenFollower: a replica's fetch (replica id ≥ 0 or ReplicaState).
	WhenFollower
	// WhenConsumer: any other fetch.
	WhenConsumer
	// WhenNamed: the request names its topics (or groups).
	WhenNamed
	// WhenListingAll: the request asks for all topics (Metadata with null
	// topics, OffsetFetch with null topics, DescribeTopicPartitions without
	// a list).
	WhenListingAll
	// WhenAutoCreate: Metadata is about to auto-create a missing topic.
	WhenAutoCreate
	// WhenClientVersion: AddPartitionsToTxn v0–3, sent by a producer.
	WhenClientVersion
	// WhenBrokerVersion: AddPartitionsToTxn v4+, a broker's verification.
	WhenBrokerVersion
)

// Denial says what a failed check does to the response.
type Denial uint8

// Denials.
const (
	// FailRequest: the whole request answers Code (or, where Kafka throws,
	// the API's error response with it).
	FailRequest Denial = iota + 1
	// FailResource: that resource's entry answers Code; the others proceed.
	FailResource
	// HideResource: that resource is left out of the response as if it did
	// not exist (listing all topics, ListGroups, ListTransactions).
	HideResource
)

// Need is one alternative of a check: an operation on a target.
type Need struct {
	On Target
	Op Operation
}

// Check is one question a handler asks.
type Check struct {
	When   Condition
	AnyOf  []Need // one allowed suffices, asked in order
	Denied Denial
	// Code is the Kafka error code a denial answers; 0 when it follows the
	// resource's type (ErrorCode), for OnConfigResources and
	// OnCoordinatorKeys.
	Code int16
}

// Rule is everything one API asks.
type Rule struct {
	Name   string  // Kafka's name for the API
	Checks []Check // all apply; none: the API needs no authorization
	Note   string  // what the handler must also know
}

func need(on Target, op Operation) Need { return Need{on, op} }

// check builds a Check whose Code follows its last alternative's target.
func check(when Condition, denied Denial, anyOf ...Need) Check {
	c := Check{When: when, AnyOf: anyOf, Denied: denied}
	switch anyOf[len(anyOf)-1].On {
	case OnCluster:
		c.Code = ErrorCode(ResourceCluster)
	case OnTopics, OnAnyTopic:
		c.Code = ErrorCode(ResourceTopic)
	case OnGroups:
		c.Code = ErrorCode(ResourceGroup)
	case OnTransactionalIDs:
		c.Code = ErrorCode(ResourceTransactionalID)
	}
	return c
}

// clusterRule is an API that needs op on the cluster, whole request.
func clusterRule(name string, op Operation, note string) Rule {
	return Rule{Name: name, Checks: []Check{check(Always, FailRequest, need(OnCluster, op))}, Note: note}
}

// interBroker is an API only brokers and controllers send.
func interBroker(name string) Rule {
	return clusterRule(name, OpClusterAction, "inter-broker: served on the internal listener only")
}

var rules = map[int16]Rule{
	0: {Name: "Produce", Checks: []Check{
		check(WhenTransactional, FailRequest, need(OnTransactionalIDs, OpWrite)),
		check(Always, FailResource, need(OnTopics, OpWrite)),
	}, Note: "Kafka checks no IdempotentWrite here since KIP-679 (Kafka 3.0): InitProducerId gates idempotence, and Write on the topic is asked anyway; writes to internal topics are refused regardless of ACLs"},
	1: {Name: "Fetch", Checks: []Check{
		{When: WhenFollower, AnyOf: []Need{need(OnCluster, OpClusterAction)}, Denied: FailResource, Code: ErrorCode(ResourceTopic)},
		check(WhenConsumer, FailResource, need(OnTopics, OpRead)),
	}, Note: "a follower fetch without ClusterAction answers every partition TOPIC_AUTHORIZATION_FAILED (CVE-2018-1288: follower fetches also only on the internal listener)"},
	2: {Name: "ListOffsets", Checks: []Check{
		check(Always, FailResource, need(OnTopics, OpDescribe)),
	}},
	3: {Name: "Metadata", Checks: []Check{
		check(WhenNamed, FailResource, need(OnTopics, OpDescribe)),
		check(WhenListingAll, HideResource, need(OnTopics, OpDescribe)),
		check(WhenAutoCreate, FailResource, need(OnCluster, OpCreate), need(OnTopics, OpCreate)),
	}, Note: "a named topic denied Describe answers 29 with a zero topic id whether or not it exists; authorized-operations bitfields (KIP-430) for the cluster only with Cluster:Describe"},
	8: {Name: "OffsetCommit", Checks: []Check{
		check(Always, FailRequest, need(OnGroups, OpRead)),
		check(Always, FailResource, need(OnTopics, OpRead)),
	}},
	9: {Name: "OffsetFetch", Checks: []Check{
		check(Always, FailRequest, need(OnGroups, OpDescribe)),
		check(WhenNamed, FailResource, need(OnTopics, OpDescribe)),
		check(WhenListingAll, HideResource, need(OnTopics, OpDescribe)),
	}, Note: "Kafka asks Describe (not Read) on the group and topics; v8+ batches groups, each group failing alone"},
	10: {Name: "FindCoordinator", Checks: []Check{
		check(Always, FailResource, need(OnCoordinatorKeys, OpDescribe)),
	}, Note: "key type 0: Group:Describe (30); key type 1: TransactionalId:Describe (53); v4+ batches keys, each failing alone"},
	11: groupRead("JoinGroup"),
	12: groupRead("Heartbeat"),
	13: groupRead("LeaveGroup"),
	14: groupRead("SyncGroup"),
	15: {Name: "DescribeGroups", Checks: []Check{
		check(Always, FailResource, need(OnGroups, OpDescribe)),
	}},
	16: {Name: "ListGroups", Checks: []Check{
		check(Always, HideResource, need(OnCluster, OpDescribe), need(OnGroups, OpDescribe)),
	}, Note: "Cluster:Describe lists every group; otherwise each group is listed only with Group:Describe"},
	17: {Name: "SaslHandshake", Note: "no authorization: part of authentication"},
	18: {Name: "ApiVersions", Note: "no authorization: answered before authentication too"},
	19: {Name: "CreateTopics", Checks: []Check{
		check(Always, FailResource, need(OnCluster, OpCreate), need(OnTopics, OpCreate)),
	}, Note: "v5+ returns a created topic's configs only with Topic:DescribeConfigs (else the config part answers 29)"},
	20: {Name: "DeleteTopics", Checks: []Check{
		check(Always, FailResource, need(OnTopics, OpDelete)),
	}, Note: "a topic named by id and denied Describe answers 29 with its name withheld (the id is not secret)"},
	21: {Name: "DeleteRecords", Checks: []Check{
		check(Always, FailResource, need(OnTopics, OpDelete)),
	}},
	22: {Name: "InitProducerId", Checks: []Check{
		check(WhenTransactional, FailRequest, need(OnTransactionalIDs, OpWrite)),
		{When: WhenIdempotent, AnyOf: []Need{need(OnCluster, OpIdempotentWrite), need(OnAnyTopic, OpWrite)}, Denied: FailRequest, Code: ErrorCode(ResourceCluster)},
	}, Note: "idempotent: Cluster:IdempotentWrite or Write on any topic (KIP-679), denied with CLUSTER_AUTHORIZATION_FAILED"},
	23: {Name: "OffsetForLeaderEpoch", Checks: []Check{
		check(Always, FailResource, need(OnCluster, OpClusterAction), need(OnTopics, OpDescribe)),
	}, Note: "ClusterAction covers every topic (replicas); consumers need Topic:Describe (KIP-320)"},
	24: {Name: "AddPartitionsToTxn", Checks: []Check{
		check(WhenBrokerVersion, FailRequest, need(OnCluster, OpClusterAction)),
		check(WhenClientVersion, FailRequest, need(OnTransactionalIDs, OpWrite)),
		check(WhenClientVersion, FailResource, need(OnTopics, OpWrite)),
	}, Note: "if any topic fails, the others answer OPERATION_NOT_ATTEMPTED"},
	25: {Name: "AddOffsetsToTxn", Checks: []Check{
		check(Always, FailRequest, need(OnTransactionalIDs, OpWrite)),
		check(Always, FailRequest, need(OnGroups, OpRead)),
	}},
	26: {Name: "EndTxn", Checks: []Check{
		check(Always, FailRequest, need(OnTransactionalIDs, OpWrite)),
	}},
	27: {Name: "WriteTxnMarkers", Checks: []Check{
		check(Always, FailRequest, need(OnCluster, OpAlter), need(OnCluster, OpClusterAction)),
	}, Note: "inter-broker; Kafka accepts Cluster:Alter as well as ClusterAction"},
	28: {Name: "TxnOffsetCommit", Checks: []Check{
		check(Always, FailRequest, need(OnTransactionalIDs, OpWrite)),
		check(Always, FailRequest, need(OnGroups, OpRead)),
		check(Always, FailResource, need(OnTopics, OpRead)),
	}},
	29: clusterRule("DescribeAcls", OpDescribe, "SECURITY_DISABLED (54) when no authorizer is configured"),
	30: clusterRule("CreateAcls", OpAlter, "SECURITY_DISABLED (54) when no authorizer is configured"),
	31: clusterRule("DeleteAcls", OpAlter, "SECURITY_DISABLED (54) when no authorizer is configured"),
	32: {Name: "DescribeConfigs", Checks: []Check{
		check(Always, FailResource, need(OnConfigResources, OpDescribeConfigs)),
	}},
	33: {Name: "AlterConfigs", Checks: []Check{
		check(Always, FailResource, need(OnConfigResources, OpAlterConfigs)),
	}},
	34: clusterRule("AlterReplicaLogDirs", OpAlter, ""),
	35: clusterRule("DescribeLogDirs", OpDescribe, "a denial answers 31 at the top (v3+) with no results, not per directory"),
	36: {Name: "SaslAuthenticate", Note: "no authorization: part of authentication"},
	37: {Name: "CreatePartitions", Checks: []Check{
		check(Always, FailResource, need(OnTopics, OpAlter)),
	}},
	42: {Name: "DeleteGroups", Checks: []Check{
		check(Always, FailResource, need(OnGroups, OpDelete)),
	}},
	43: clusterRule("ElectLeaders", OpAlter, ""),
	44: {Name: "IncrementalAlterConfigs", Checks: []Check{
		check(Always, FailResource, need(OnConfigResources, OpAlterConfigs)),
	}},
	45: clusterRule("AlterPartitionReassignments", OpAlter, ""),
	46: clusterRule("ListPartitionReassignments", OpDescribe, ""),
	47: {Name: "OffsetDelete", Checks: []Check{
		check(Always, FailRequest, need(OnGroups, OpDelete)),
		check(Always, FailResource, need(OnTopics, OpRead)),
	}},
	48: clusterRule("DescribeClientQuotas", OpDescribeConfigs, ""),
	49: clusterRule("AlterClientQuotas", OpAlterConfigs, ""),
	50: clusterRule("DescribeUserScramCredentials", OpDescribe, ""),
	51: clusterRule("AlterUserScramCredentials", OpAlter, "close live sessions of a deleted user"),
	52: interBroker("Vote"),
	53: interBroker("BeginQuorumEpoch"),
	54: interBroker("EndQuorumEpoch"),
	55: clusterRule("DescribeQuorum", OpDescribe, ""),
	56: interBroker("AlterPartition"),
	57: clusterRule("UpdateFeatures", OpAlter, ""),
	58: clusterRule("Envelope", OpClusterAction, "internal listener only (else close the connection); the wrapped request is then authorized as the principal the envelope carries"),
	59: interBroker("FetchSnapshot"),
	60: {Name: "DescribeCluster", Note: "no check in Kafka; the cluster authorized-operations bitfield (KIP-430) only with Cluster:Describe"},
	61: {Name: "DescribeProducers", Checks: []Check{
		check(Always, FailResource, need(OnTopics, OpRead)),
	}},
	62: interBroker("BrokerRegistration"),
	63: interBroker("BrokerHeartbeat"),
	64: clusterRule("UnregisterBroker", OpAlter, ""),
	65: {Name: "DescribeTransactions", Checks: []Check{
		check(Always, FailResource, need(OnTransactionalIDs, OpDescribe)),
		check(Always, HideResource, need(OnTopics, OpDescribe)),
	}, Note: "a described transaction lists only the partitions of topics the principal may Describe"},
	66: {Name: "ListTransactions", Checks: []Check{
		check(Always, HideResource, need(OnTransactionalIDs, OpDescribe)),
	}},
	67: interBroker("AllocateProducerIds"),
	68: {Name: "ConsumerGroupHeartbeat", Checks: []Check{
		check(Always, FailRequest, need(OnGroups, OpRead)),
		check(Always, FailRequest, need(OnTopics, OpDescribe)),
	}, Note: "the topic check covers the subscribed topic names (a regex subscription resolves to topics the principal may Describe)"},
	69: {Name: "ConsumerGroupDescribe", Checks: []Check{
		check(Always, FailResource, need(OnGroups, OpDescribe)),
	}},
	70: interBroker("ControllerRegistration"),
	71: {Name: "GetTelemetrySubscriptions", Note: "no authorization (KIP-714)"},
	72: {Name: "PushTelemetry", Note: "no authorization (KIP-714)"},
	73: interBroker("AssignReplicasToDirs"),
	74: clusterRule("ListConfigResources", OpDescribeConfigs, "ListClientMetricsResources before Kafka 4.1 (KIP-1142)"),
	75: {Name: "DescribeTopicPartitions", Checks: []Check{
		check(WhenNamed, FailResource, need(OnTopics, OpDescribe)),
		check(WhenListingAll, HideResource, need(OnTopics, OpDescribe)),
	}, Note: "a named topic denied Describe answers 29 with a zero topic id whether or not it exists"},
	76: {Name: "ShareGroupHeartbeat", Checks: []Check{
		check(Always, FailRequest, need(OnGroups, OpRead)),
		check(Always, FailRequest, need(OnTopics, OpDescribe)),
	}, Note: "the topic check covers the subscribed topic names"},
	77: {Name: "ShareGroupDescribe", Checks: []Check{
		check(Always, FailResource, need(OnGroups, OpDescribe)),
	}},
	78: {Name: "ShareFetch", Checks: []Check{
		check(Always, FailRequest, need(OnGroups, OpRead)),
		check(Always, FailResource, need(OnTopics, OpRead)),
	}},
	79: {Name: "ShareAcknowledge", Checks: []Check{
		check(Always, FailRequest, need(OnGroups, OpRead)),
		check(Always, FailResource, need(OnTopics, OpRead)),
	}},
	90: {Name: "DescribeShareGroupOffsets", Checks: []Check{
		check(Always, FailResource, need(OnGroups, OpDescribe)),
		check(Always, FailResource, need(OnTopics, OpDescribe)),
	}, Note: "groups nest in the request (a custom path): a denied group answers GROUP_AUTHORIZATION_FAILED, a denied topic TOPIC_AUTHORIZATION_FAILED on each partition"},
	91: {Name: "AlterShareGroupOffsets", Checks: []Check{
		check(Always, FailRequest, need(OnGroups, OpRead)),
		check(Always, FailResource, need(OnTopics, OpRead)),
	}},
	92: {Name: "DeleteShareGroupOffsets", Checks: []Check{
		check(Always, FailRequest, need(OnGroups, OpDelete)),
		check(Always, FailResource, need(OnTopics, OpRead)),
	}},
	80: clusterRule("AddRaftVoter", OpAlter, ""),
	81: clusterRule("RemoveRaftVoter", OpAlter, ""),
	82: interBroker("UpdateRaftVoter"),
	83: interBroker("InitializeShareGroupState"),
	84: interBroker("ReadShareGroupState"),
	85: interBroker("WriteShareGroupState"),
	86: interBroker("DeleteShareGroupState"),
	87: interBroker("ReadShareGroupStateSummary"),
}

func groupRead(name string) Rule {
	return Rule{Name: name, Checks: []Check{check(Always, FailRequest, need(OnGroups, OpRead))}}
}

// RuleFor returns the rule for API key (false: the key has none; a handler
// for it must not be served).
func RuleFor(key int16) (Rule, bool) {
	r, ok := rules[key]
	return r, ok
}

// RuleKeys returns the API keys the table covers, ascending.
func RuleKeys() []int16 {
	keys := make([]int16, 0, len(rules))
	for k := range rules {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
