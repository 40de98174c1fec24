package kafka

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
)

// KIP-430 authorized operations: a response field answering, for the
// client's principal and host, which operations it may perform on a
// resource — a bitfield with bit n set for operation code n (kmsg
// ACLOperation: Read 3, Write 4, Create 5, Delete 6, Alter 7, Describe 8,
// ClusterAction 9, DescribeConfigs 10, AlterConfigs 11, IdempotentWrite
// 12). As Kafka:
//
//   - only when the request asks (Metadata v8+ IncludeTopicAuthorizedOperations,
//     Metadata v8–v10 IncludeClusterAuthorizedOperations, DescribeCluster
//     IncludeClusterAuthorizedOperations, DescribeGroups v3+ and
//     ConsumerGroupDescribe IncludeAuthorizedOperations); otherwise the
//     field is math.MinInt32, Kafka's "omitted". DescribeTopicPartitions
//     has no such flag: its topics always carry them, as Kafka's handler;
//   - the cluster's operations are 0 for a principal that may not
//     Describe the cluster (KafkaApis does the same);
//   - each operation the resource type supports (Kafka's
//     AclEntry.supportedOperations) is asked of the authorizer, implied
//     operations included (Read implies Describe); without an authorizer
//     every supported operation is reported;
//   - a topic the principal may not describe (answered 29), or a group
//     answered with an error, keeps the omitted value.
//
// It runs after the handler and the authorization layer (authz.go) on the
// response, so handlers never ask the authorizer themselves.

// omittedOps is Kafka's AUTHORIZED_OPERATIONS_OMITTED.
const omittedOps = math.MinInt32

// supportedOps are the operations each resource type has, as Kafka's
// AclEntry.supportedOperations (Kafka 4.0: groups also have the config
// operations of KIP-848's group configs).
var supportedOps = map[acl.ResourceType][]acl.Operation{
	acl.ResourceTopic: {acl.OpRead, acl.OpWrite, acl.OpCreate, acl.OpDescribe, acl.OpDelete, acl.OpAlter,
		acl.OpDescribeConfigs, acl.OpAlterConfigs},
	acl.ResourceGroup: {acl.OpRead, acl.OpDescribe, acl.OpDelete, acl.OpDescribeConfigs, acl.OpAlterConfigs},
	acl.ResourceCluster: {acl.OpCreate, acl.OpClusterAction, acl.OpDescribeConfigs, acl.OpAlterConfigs,
		acl.OpIdempotentWrite, acl.OpAlter, acl.OpDescribe},
}

// authorizedOps is the bitfield of the operations on r the connection's
// principal may perform.
func (c *conn) authorizedOps(r acl.Resource) int32 {
	a := c.s.cfg.Authorizer
	p, err := c.principal()
	if err != nil {
		return omittedOps
	}
	var bits int32
	for _, op := range supportedOps[r.Type] {
		if a == nil || a.Allowed(p, c.ip, op, r) {
			bits |= 1 << op
		}
	}
	return bits
}

// fillAuthorizedOps sets the authorized-operations fields of resp, the
// answer to kreq.
func (c *conn) fillAuthorizedOps(kreq kmsg.Request, resp kmsg.Response) {
	if c.s.cfg.Internal {
		return // its peers are nodes; no forwardable response has the fields
	}
	ops := func(asked bool, r acl.Resource) int32 {
		if !asked {
			return omittedOps
		}
		bits := c.authorizedOps(r)
		if r.Type == acl.ResourceCluster && bits != omittedOps && bits&(1<<acl.OpDescribe) == 0 {
			return 0
		}
		return bits
	}
	switch resp := resp.(type) {
	case *kmsg.MetadataResponse:
		req := kreq.(*kmsg.MetadataRequest)
		resp.AuthorizedOperations = ops(req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations, acl.Cluster())
		for i := range resp.Topics {
			t := &resp.Topics[i]
			t.AuthorizedOperations = omittedOps
			if t.Topic != nil && t.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.AuthorizedOperations = ops(req.Version >= 8 && req.IncludeTopicAuthorizedOperations, acl.Topic(*t.Topic))
			}
		}
	case *kmsg.DescribeTopicPartitionsResponse:
		for i := range resp.Topics {
			t := &resp.Topics[i]
			t.AuthorizedOperations = omittedOps
			if t.Topic != nil && t.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.AuthorizedOperations = ops(true, acl.Topic(*t.Topic))
			}
		}
	case *kmsg.DescribeClusterResponse:
		req := kreq.(*kmsg.DescribeClusterRequest)
		resp.ClusterAuthorizedOperations = ops(req.IncludeClusterAuthorizedOperations, acl.Cluster())
	case *kmsg.DescribeGroupsResponse:
		req := kreq.(*kmsg.DescribeGroupsRequest)
		for i := range resp.Groups {
			g := &resp.Groups[i]
			g.AuthorizedOperations = ops(req.Version >= 3 && req.IncludeAuthorizedOperations && g.ErrorCode == 0, acl.Group(g.Group))
		}
	case *kmsg.ConsumerGroupDescribeResponse:
		req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
		for i := range resp.Groups {
			g := &resp.Groups[i]
			g.AuthorizedOperations = ops(req.IncludeAuthorizedOperations && g.ErrorCode == 0, acl.Group(g.Group))
		}
	}
}
