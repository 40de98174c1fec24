package kafka

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
)

// matrixNeed is one permission a request needs: an operation on a resource.
type matrixNeed struct {
	res acl.Resource
	op  acl.Operation
}

// matrixRow is one API of the D-T1 matrix: a request, what it needs, and
// how a denial shows (the error code anywhere in the response, or — for a
// listing — the resource missing from it).
type matrixRow struct {
	name   string
	key    int16
	req    func() kmsg.Request
	needs  []matrixNeed
	code   int16
	hidden func(kmsg.Response) bool // nil: denied ⇔ code appears
}

const (
	mxTopic  = "mx.t"
	mxDelete = "mx.d" // DeleteTopics names a topic that is not there, so the matrix never loses mxTopic
	mxGroup  = "mx.g"
	// mxConsumerGroup is the KIP-848 rows' group, apart from the classic
	// rows' one.
	mxConsumerGroup = "mx.c"
	mxCreated       = "mx.new"
	mxShareGroup    = "mx.s" // the share-group rows' group
	mxTxn           = "mx.x" // the transactional id of the transaction rows
)

func txnNeed(op acl.Operation) matrixNeed { return matrixNeed{acl.TransactionalID(mxTxn), op} }

func topicNeed(name string, op acl.Operation) matrixNeed { return matrixNeed{acl.Topic(name), op} }
func groupNeed(op acl.Operation) matrixNeed              { return matrixNeed{acl.Group(mxGroup), op} }
func clusterNeed(op acl.Operation) matrixNeed            { return matrixNeed{acl.Cluster(), op} }

var (
	codeTopic   = kerr.TopicAuthorizationFailed.Code
	codeGroup   = kerr.GroupAuthorizationFailed.Code
	codeCluster = kerr.ClusterAuthorizationFailed.Code
	codeTxn     = kerr.TransactionalIDAuthorizationFailed.Code
)

func matrixRows(b *broker.Broker) []matrixRow {
	topicID := func() [16]byte {
		t, _ := b.Topic(mxTopic)
		return t.ID
	}
	return []matrixRow{
		{"Produce", 0, func() kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis = 1, 1000
			t := kmsg.NewProduceRequestTopic()
			t.Topic, t.TopicID = mxTopic, topicID()
			p := kmsg.NewProduceRequestTopicPartition()
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpWrite)}, codeTopic, nil},
		{"Fetch", 1, func() kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.MaxWaitMillis, r.MaxBytes = 1, 1<<20
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = mxTopic, topicID()
			p := kmsg.NewFetchRequestTopicPartition()
			p.PartitionMaxBytes = 1 << 20
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpRead)}, codeTopic, nil},
		{"ListOffsets", 2, func() kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = mxTopic
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Timestamp = -1
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpDescribe)}, codeTopic, nil},
		{"Metadata named", 3, func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(mxTopic)
			r.Topics = append(r.Topics, t)
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpDescribe)}, codeTopic, nil},
		{"Metadata all", 3, func() kmsg.Request { return kmsg.NewPtrMetadataRequest() },
			[]matrixNeed{topicNeed(mxTopic, acl.OpDescribe)}, 0, func(r kmsg.Response) bool {
				return !slices.ContainsFunc(r.(*kmsg.MetadataResponse).Topics, func(t kmsg.MetadataResponseTopic) bool {
					return t.Topic != nil && *t.Topic == mxTopic
				})
			}},
		{"OffsetCommit", 8, func() kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = mxGroup, -1
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = mxTopic
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			t.Partitions = append(t.Partitions, p)
			r.Topics = append(r.Topics, t)
			return r
		}, []matrixNeed{groupNeed(acl.OpRead), topicNeed(mxTopic, acl.OpRead)}, -1, nil},
		{"OffsetFetch", 9, func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = mxGroup
			t := kmsg.NewOffsetFetchRequestGroupTopic()
			t.Topic, t.Partitions = mxTopic, []int32{0}
			g.Topics = append(g.Topics, t)
			r.Groups = append(r.Groups, g)
			r.Group, r.Topics = mxGroup, []kmsg.OffsetFetchRequestTopic{{Topic: mxTopic, Partitions: []int32{0}}}
			return r
		}, []matrixNeed{groupNeed(acl.OpDescribe), topicNeed(mxTopic, acl.OpDescribe)}, -1, nil},
		{"FindCoordinator", 10, func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKey, r.CoordinatorKeys = mxGroup, []string{mxGroup}
			return r
		}, []matrixNeed{groupNeed(acl.OpDescribe)}, codeGroup, nil},
		{"JoinGroup", 11, func() kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.ProtocolType, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = mxGroup, "consumer", 10000, 10000
			r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
			return r
		}, []matrixNeed{groupNeed(acl.OpRead)}, codeGroup, nil},
		{"Heartbeat", 12, func() kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID = mxGroup, "nobody"
			return r
		}, []matrixNeed{groupNeed(acl.OpRead)}, codeGroup, nil},
		{"LeaveGroup", 13, func() kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group, r.MemberID = mxGroup, "nobody"
			r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "nobody"}}
			return r
		}, []matrixNeed{groupNeed(acl.OpRead)}, codeGroup, nil},
		{"SyncGroup", 14, func() kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID = mxGroup, "nobody"
			return r
		}, []matrixNeed{groupNeed(acl.OpRead)}, codeGroup, nil},
		{"DescribeGroups", 15, func() kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{mxGroup}
			return r
		}, []matrixNeed{groupNeed(acl.OpDescribe)}, codeGroup, nil},
		{"ListGroups", 16, func() kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
			[]matrixNeed{groupNeed(acl.OpDescribe)}, 0, func(r kmsg.Response) bool {
				return !slices.ContainsFunc(r.(*kmsg.ListGroupsResponse).Groups, func(g kmsg.ListGroupsResponseGroup) bool { return g.Group == mxGroup })
			}},
		{"CreateTopics", 19, func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.ValidateOnly, r.TimeoutMillis = true, 5000
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = mxCreated, 1, 1
			r.Topics = append(r.Topics, t)
			return r
		}, []matrixNeed{topicNeed(mxCreated, acl.OpCreate)}, codeTopic, nil},
		{"DeleteTopics", 20, func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TopicNames = []string{mxDelete}
			r.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(mxDelete)}}
			r.TimeoutMillis = 5000
			return r
		}, []matrixNeed{topicNeed(mxDelete, acl.OpDelete)}, codeTopic, nil},
		{"DeleteRecords", 21, func() kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			r.TimeoutMillis = 5000
			r.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: mxTopic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}}}
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpDelete)}, codeTopic, nil},
		{"InitProducerId idempotent", 22, func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionTimeoutMillis = 60000
			return r
		}, []matrixNeed{clusterNeed(acl.OpIdempotentWrite)}, codeCluster, nil},
		{"InitProducerId transactional", 22, func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr(mxTxn), 60000
			return r
		}, []matrixNeed{txnNeed(acl.OpWrite)}, codeTxn, nil},
		// v4+ is the broker-to-broker form (KIP-890): ClusterAction.
		{"AddPartitionsToTxn v4+", 24, func() kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: mxTxn, ProducerID: 1, ProducerEpoch: 0, VerifyOnly: true,
				Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: mxTopic, Partitions: []int32{0}}}}}
			return r
		}, []matrixNeed{clusterNeed(acl.OpClusterAction)}, codeCluster, nil},
		{"AddOffsetsToTxn", 25, func() kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.Group = mxTxn, 1, mxGroup
			return r
		}, []matrixNeed{txnNeed(acl.OpWrite), groupNeed(acl.OpRead)}, -2, nil},
		{"EndTxn", 26, func() kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID = mxTxn, 1
			return r
		}, []matrixNeed{txnNeed(acl.OpWrite)}, codeTxn, nil},
		{"WriteTxnMarkers", 27, func() kmsg.Request {
			r := kmsg.NewPtrWriteTxnMarkersRequest()
			r.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 999, ProducerEpoch: 0,
				Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: mxTopic, Partitions: []int32{0}}}}}
			return r
		}, []matrixNeed{clusterNeed(acl.OpClusterAction)}, codeCluster, nil},
		{"TxnOffsetCommit", 28, func() kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID, r.Generation = mxTxn, mxGroup, 1, -1
			r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: mxTopic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0}}}}
			return r
		}, []matrixNeed{txnNeed(acl.OpWrite), groupNeed(acl.OpRead), topicNeed(mxTopic, acl.OpRead)}, -2, nil},
		{"DescribeTransactions", 65, func() kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{mxTxn}
			return r
		}, []matrixNeed{txnNeed(acl.OpDescribe)}, codeTxn, nil},
		{"ListTransactions", 66, func() kmsg.Request {
			return kmsg.NewPtrListTransactionsRequest()
		}, []matrixNeed{txnNeed(acl.OpDescribe)}, 0, func(resp kmsg.Response) bool {
			for _, s := range resp.(*kmsg.ListTransactionsResponse).TransactionStates {
				if s.TransactionalID == mxTxn {
					return false
				}
			}
			return true
		}},
		{"OffsetForLeaderEpoch", 23, func() kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			r.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: mxTopic, Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpDescribe)}, codeTopic, nil},
		// A replica's OffsetForLeaderEpoch: ClusterAction alone answers
		// every topic (Kafka's alternative to Topic:Describe).
		{"OffsetForLeaderEpoch as a replica", 23, func() kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = 7
			r.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: mxTopic, Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}
			return r
		}, []matrixNeed{clusterNeed(acl.OpClusterAction)}, codeTopic, nil},
		{"DescribeAcls", 29, func() kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}, []matrixNeed{clusterNeed(acl.OpDescribe)}, codeCluster, nil},
		{"CreateAcls", 30, func() kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			r.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "mx.unused",
				ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: "User:nobody", Host: "*",
				Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}
			return r
		}, []matrixNeed{clusterNeed(acl.OpAlter)}, codeCluster, nil},
		{"DeleteAcls", 31, func() kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			r.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: kmsg.StringPtr("mx.unused"),
				ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}}
			return r
		}, []matrixNeed{clusterNeed(acl.OpAlter)}, codeCluster, nil},
		{"DescribeConfigs topic", 32, func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: mxTopic}}
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpDescribeConfigs)}, codeTopic, nil},
		{"DescribeConfigs broker", 32, func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "0"}}
			return r
		}, []matrixNeed{clusterNeed(acl.OpDescribeConfigs)}, codeCluster, nil},
		{"AlterConfigs", 33, func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.ValidateOnly = true
			r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: mxTopic,
				Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}}}
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpAlterConfigs)}, codeTopic, nil},
		{"DescribeLogDirs", 35, func() kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() },
			[]matrixNeed{clusterNeed(acl.OpDescribe)}, codeCluster, nil},
		{"CreatePartitions", 37, func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.ValidateOnly, r.TimeoutMillis = true, 5000
			r.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: mxTopic, Count: 4}}
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpAlter)}, codeTopic, nil},
		{"DeleteGroups", 42, func() kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"mx.gone"}
			return r
		}, []matrixNeed{{acl.Group("mx.gone"), acl.OpDelete}}, codeGroup, nil},
		{"ElectLeaders", 43, func() kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			r.TimeoutMillis = 1000
			r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: mxTopic, Partitions: []int32{0}}}
			return r
		}, []matrixNeed{clusterNeed(acl.OpAlter)}, codeCluster, nil},
		{"IncrementalAlterConfigs", 44, func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.ValidateOnly = true
			r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: mxTopic,
				Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}}}
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpAlterConfigs)}, codeTopic, nil},
		{"AlterPartitionReassignments", 45, func() kmsg.Request { return kmsg.NewPtrAlterPartitionAssignmentsRequest() },
			[]matrixNeed{clusterNeed(acl.OpAlter)}, codeCluster, nil},
		{"ListPartitionReassignments", 46, func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() },
			[]matrixNeed{clusterNeed(acl.OpDescribe)}, codeCluster, nil},
		{"OffsetDelete", 47, func() kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = mxGroup
			r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: mxTopic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			return r
		}, []matrixNeed{groupNeed(acl.OpDelete), topicNeed(mxTopic, acl.OpRead)}, -1, nil},
		{"DescribeClientQuotas", 48, func() kmsg.Request { return kmsg.NewPtrDescribeClientQuotasRequest() },
			[]matrixNeed{clusterNeed(acl.OpDescribeConfigs)}, codeCluster, nil},
		{"AlterClientQuotas", 49, func() kmsg.Request {
			r := kmsg.NewPtrAlterClientQuotasRequest()
			r.ValidateOnly = true
			r.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("mx.nobody")}},
				Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1 << 20}}}}
			return r
		}, []matrixNeed{clusterNeed(acl.OpAlterConfigs)}, codeCluster, nil},
		{"DescribeUserScramCredentials", 50, func() kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() },
			[]matrixNeed{clusterNeed(acl.OpDescribe)}, codeCluster, nil},
		{"AlterUserScramCredentials", 51, func() kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			r.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "mx.nobody", Mechanism: 1}}
			return r
		}, []matrixNeed{clusterNeed(acl.OpAlter)}, codeCluster, nil},
		{"DescribeQuorum", 55, func() kmsg.Request { return kmsg.NewPtrDescribeQuorumRequest() },
			[]matrixNeed{clusterNeed(acl.OpDescribe)}, codeCluster, nil},
		{"UpdateFeatures", 57, func() kmsg.Request {
			r := kmsg.NewPtrUpdateFeaturesRequest()
			r.ValidateOnly = true
			r.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "metadata.version", MaxVersionLevel: 1, UpgradeType: 1}}
			return r
		}, []matrixNeed{clusterNeed(acl.OpAlter)}, codeCluster, nil},
		{"DescribeProducers", 61, func() kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			r.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: mxTopic, Partitions: []int32{0}}}
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpRead)}, codeTopic, nil},
		{"DescribeTopicPartitions named", 75, func() kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			r.ResponsePartitionLimit = 100
			r.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: mxTopic}}
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpDescribe)}, codeTopic, nil},
		{"DescribeTopicPartitions all", 75, func() kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			r.ResponsePartitionLimit = 100
			return r
		}, []matrixNeed{topicNeed(mxTopic, acl.OpDescribe)}, 0, func(r kmsg.Response) bool {
			return !slices.ContainsFunc(r.(*kmsg.DescribeTopicPartitionsResponse).Topics, func(t kmsg.DescribeTopicPartitionsResponseTopic) bool {
				return t.Topic != nil && *t.Topic == mxTopic
			})
		}},
		{"ConsumerGroupHeartbeat", 68, func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.RebalanceTimeoutMillis = mxConsumerGroup, "mx-member", 10000
			r.SubscribedTopicNames, r.Topics = []string{mxTopic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		}, []matrixNeed{{acl.Group(mxConsumerGroup), acl.OpRead}, topicNeed(mxTopic, acl.OpDescribe)}, -1, nil},
		{"ConsumerGroupDescribe", 69, func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups = []string{mxConsumerGroup}
			return r
		}, []matrixNeed{{acl.Group(mxConsumerGroup), acl.OpDescribe}}, codeGroup, nil},
		{"ShareGroupHeartbeat", 76, func() kmsg.Request {
			r := kmsg.NewPtrShareGroupHeartbeatRequest()
			r.GroupID, r.MemberID, r.SubscribedTopicNames = mxShareGroup, "mx-share-member", []string{mxTopic}
			return r
		}, []matrixNeed{{acl.Group(mxShareGroup), acl.OpRead}, topicNeed(mxTopic, acl.OpDescribe)}, -1, nil},
		{"ShareGroupDescribe", 77, func() kmsg.Request {
			r := kmsg.NewPtrShareGroupDescribeRequest()
			r.GroupIDs = []string{mxShareGroup}
			return r
		}, []matrixNeed{{acl.Group(mxShareGroup), acl.OpDescribe}}, codeGroup, nil},
		{"ShareFetch", 78, func() kmsg.Request {
			r := kmsg.NewPtrShareFetchRequest()
			r.GroupID, r.MemberID, r.MaxRecords = kmsg.StringPtr(mxShareGroup), kmsg.StringPtr("mx-share-member"), 10
			r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: topicID(), Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
			return r
		}, []matrixNeed{{acl.Group(mxShareGroup), acl.OpRead}, topicNeed(mxTopic, acl.OpRead)}, -1, nil},
		{"ShareAcknowledge", 79, func() kmsg.Request {
			r := kmsg.NewPtrShareAcknowledgeRequest()
			r.GroupID, r.MemberID, r.ShareSessionEpoch = kmsg.StringPtr(mxShareGroup), kmsg.StringPtr("mx-share-member"), -1
			r.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: topicID(), Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0}}}}
			return r
		}, []matrixNeed{{acl.Group(mxShareGroup), acl.OpRead}, topicNeed(mxTopic, acl.OpRead)}, -1, nil},
		{"DescribeShareGroupOffsets", 90, func() kmsg.Request {
			r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			r.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: mxShareGroup, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: mxTopic, Partitions: []int32{0}}}}}
			return r
		}, []matrixNeed{{acl.Group(mxShareGroup), acl.OpDescribe}, topicNeed(mxTopic, acl.OpDescribe)}, -1, nil},
		{"AlterShareGroupOffsets", 91, func() kmsg.Request {
			r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
			r.GroupID = mxShareGroup
			r.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: mxTopic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
			return r
		}, []matrixNeed{{acl.Group(mxShareGroup), acl.OpRead}, topicNeed(mxTopic, acl.OpRead)}, -1, nil},
		{"DeleteShareGroupOffsets", 92, func() kmsg.Request {
			r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
			r.GroupID = mxShareGroup
			r.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: mxTopic}}
			return r
		}, []matrixNeed{{acl.Group(mxShareGroup), acl.OpDelete}, topicNeed(mxTopic, acl.OpRead)}, -1, nil},
		{"AddRaftVoter", 80, func() kmsg.Request {
			r := kmsg.NewPtrAddRaftVoterRequest()
			r.VoterID, r.TimeoutMillis = 9, 1000
			return r
		}, []matrixNeed{clusterNeed(acl.OpAlter)}, codeCluster, nil},
		{"RemoveRaftVoter", 81, func() kmsg.Request {
			r := kmsg.NewPtrRemoveRaftVoterRequest()
			r.VoterID = 9
			return r
		}, []matrixNeed{clusterNeed(acl.OpAlter)}, codeCluster, nil},
	}
}

// matrixExempt are served keys outside the matrix, with the reason.
var matrixExempt = map[int16]string{
	17: "SaslHandshake: no authorization",
	18: "ApiVersions: no authorization",
	36: "SaslAuthenticate: no authorization",
	58: "Envelope: a client listener closes the connection (TestEnvelopeNotServedOnClientListener); on the internal listener its inner request is authorized (TestClusterEnvelopeAuthorizesItsPrincipal)",
	60: "DescribeCluster: no check in Kafka",
	83: shareStateExempt,
	84: shareStateExempt,
	85: shareStateExempt,
	86: shareStateExempt,
	87: shareStateExempt,
}

const shareStateExempt = "share-coordinator RPC: a client listener closes the connection (TestShareStateRPCsNotServedOnClientListener); the internal listener admits only nodes, which hold ClusterAction"

// errorCodes collects every ErrorCode field in a response.
func errorCodesIn(v reflect.Value, out map[int16]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			errorCodesIn(v.Elem(), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).Name == "ErrorCode" && v.Field(i).Kind() == reflect.Int16 {
				out[int16(v.Field(i).Int())] = true
				continue
			}
			errorCodesIn(v.Field(i), out)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			errorCodesIn(v.Index(i), out)
		}
	}
}

// TestACLMatrix is D-T1 over the wire: every API the server advertises that
// asks the authorizer × the ACLs of its resources written as {literal,
// prefixed, wildcard} patterns × {allow, deny, none} × {the principal the
// ACLs name (alice), another (bob), a super user (admin)}, each cell one
// request from a franz-go client authenticated with SASL/SCRAM, checking
// Kafka's answer: allowed only for admin, and for alice under an Allow;
// under a Deny (beside an Allow for User:*) alice alone is refused. A row
// whose checks span two resources (OffsetCommit: group and topic) is
// granted both, and asserts the first denial code it meets.
func TestACLMatrix(t *testing.T) {
	t.Parallel()
	ts := secureServer(t, broker.Config{DisableAutoCreateTopics: true}, nil)
	createTopic(t, ts.b, mxTopic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clients := map[string]*kgo.Client{}
	for _, u := range []string{"alice", "bob", "admin"} {
		clients[u] = scramClient(t, ts.addr, u)
	}
	// A group exists for ListGroups to list: a simple commit by admin.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = mxGroup, -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: mxTopic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0}}}}
	if _, err := clients["admin"].Request(ctx, commit); err != nil {
		t.Fatal(err)
	}
	// A transactional id exists for ListTransactions to list.
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(mxTxn), 60000
	if r, err := clients["admin"].Request(ctx, init); err != nil || r.(*kmsg.InitProducerIDResponse).ErrorCode != 0 {
		t.Fatalf("init %s: %v %+v", mxTxn, err, r)
	}

	rows := matrixRows(ts.b)
	covered := map[int16]bool{}
	for _, r := range rows {
		covered[r.key] = true
	}
	for key := range apis {
		rule, _ := acl.RuleFor(key)
		if !covered[key] && matrixExempt[key] == "" {
			t.Errorf("%s (key %d, %d checks) is advertised but not in the ACL matrix", kmsg.NameForKey(key), key, len(rule.Checks))
		}
	}

	az := ts.s.cfg.Authorizer
	type permission int
	const (
		allow permission = iota
		deny
		none
	)
	patternOf := func(n matrixNeed, kind string) acl.Pattern {
		if n.res.Type == acl.ResourceCluster {
			return acl.Pattern{Type: acl.ResourceCluster, Name: acl.ClusterName, PatternType: acl.PatternLiteral}
		}
		switch kind {
		case "prefixed":
			return acl.Pattern{Type: n.res.Type, Name: "mx.", PatternType: acl.PatternPrefixed}
		case "wildcard":
			return acl.Pattern{Type: n.res.Type, Name: acl.Wildcard, PatternType: acl.PatternLiteral}
		}
		return acl.Pattern{Type: n.res.Type, Name: n.res.Name, PatternType: acl.PatternLiteral}
	}
	cells, failed := 0, 0
	for _, row := range rows {
		for _, kind := range []string{"literal", "prefixed", "wildcard"} {
			for _, perm := range []permission{allow, deny, none} {
				var bindings []acl.Binding
				for _, n := range row.needs {
					entry := acl.Entry{Principal: "User:alice", Host: "*", Operation: n.op, Permission: acl.Allow}
					switch perm {
					case allow:
						bindings = append(bindings, acl.Binding{Pattern: patternOf(n, kind), Entry: entry})
					case deny:
						everyone := entry
						everyone.Principal = acl.WildcardPrincipal
						bindings = append(bindings, acl.Binding{Pattern: patternOf(n, "wildcard"), Entry: everyone})
						if n.res.Type == acl.ResourceCluster {
							bindings[len(bindings)-1].Pattern = patternOf(n, "literal")
						}
						entry.Permission = acl.Deny
						bindings = append(bindings, acl.Binding{Pattern: patternOf(n, kind), Entry: entry})
					}
				}
				set, err := acl.NewSet(bindings)
				if err != nil {
					t.Fatalf("%s %s: %v", row.name, kind, err)
				}
				az.Replace(set)
				for _, who := range []string{"alice", "bob", "admin"} {
					want := who == "admin" || (perm == allow && who == "alice") || (perm == deny && who == "bob")
					resp, err := clients[who].Broker(0).Request(ctx, row.req())
					if err != nil {
						t.Fatalf("%s as %s: %v", row.name, who, err)
					}
					var denied bool
					if row.hidden != nil {
						denied = row.hidden(resp)
					} else {
						codes := map[int16]bool{}
						errorCodesIn(reflect.ValueOf(resp), codes)
						denied = codes[row.code] || (row.code == -1 && (codes[codeTopic] || codes[codeGroup])) ||
							(row.code == -2 && (codes[codeTopic] || codes[codeGroup] || codes[codeTxn]))
					}
					cells++
					if denied == want {
						failed++
						t.Errorf("%s, %s %v ACLs, as %s: denied=%v, want %v (%+v)", row.name, kind, []string{"allow", "deny", "none"}[perm], who, denied, !want, resp)
					}
				}
			}
		}
	}
	t.Logf("ACL matrix: %d rows (%d API keys) × 3 patterns × 3 permissions × 3 principals = %d cells, %d as Kafka answers", len(rows), len(covered), cells, cells-failed)
}
