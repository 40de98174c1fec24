package kafka

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
)

// authzCustom applies the rule of the APIs whose shapes the generic paths
// of authz.go do not cover. Each reads its checks from the rule it is given
// (the operations), and the shape of its request from the API.
var authzCustom = map[int16]func(a *authzCall, rule acl.Rule) kmsg.Response{
	3:  (*authzCall).metadata,
	9:  (*authzCall).offsetFetch,
	10: (*authzCall).findCoordinator,
	16: (*authzCall).listGroups,
	20: (*authzCall).deleteTopics,
	65: (*authzCall).describeTransactions,
	66: (*authzCall).listTransactions,
	75: (*authzCall).describeTopicPartitions,
	90: (*authzCall).describeShareGroupOffsets,
}

// ops returns the operation each of rule's checks under condition when
// asks of target on (0 when none).
func ops(rule acl.Rule, when acl.Condition, on acl.Target) acl.Operation {
	for _, c := range rule.Checks {
		if c.When != when {
			continue
		}
		for _, n := range c.AnyOf {
			if n.On == on {
				return n.Op
			}
		}
	}
	return 0
}

// metadata: a topic the principal may not Describe is hidden from a
// listing of all topics and answers TOPIC_AUTHORIZATION_FAILED (with a
// zero id, whether or not it exists) when named; a missing topic is
// auto-created only with Create on the cluster or the topic, else it
// answers TOPIC_AUTHORIZATION_FAILED too.
func (a *authzCall) metadata(rule acl.Rule) kmsg.Response {
	req := a.req.(*kmsg.MetadataRequest)
	describe := ops(rule, acl.WhenNamed, acl.OnTopics)
	create := ops(rule, acl.WhenAutoCreate, acl.OnTopics)
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		a.post = append(a.post, func(r kmsg.Response) {
			resp := r.(*kmsg.MetadataResponse)
			resp.Topics = slices.DeleteFunc(resp.Topics, func(t kmsg.MetadataResponseTopic) bool {
				return t.Topic != nil && !a.allowed(describe, acl.Topic(*t.Topic), false)
			})
		})
		return nil
	}
	autoCreate := req.Version < 4 || req.AllowAutoTopicCreation
	var denied []kmsg.MetadataResponseTopic
	keep := req.Topics[:0:0]
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			keep = append(keep, rt) // by id: checked on the answer, which names it
			continue
		}
		name := *rt.Topic
		ok := a.allowed(describe, acl.Topic(name), true)
		if ok && autoCreate {
			if _, err := a.s.b.Topic(name); errors.Is(err, broker.ErrUnknownTopicOrPartition) {
				ok = a.allowed(create, acl.Cluster(), false) || a.allowed(create, acl.Topic(name), true)
			}
		}
		if !ok {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic, t.ErrorCode = kmsg.StringPtr(name), kerr.TopicAuthorizationFailed.Code
			t.IsInternal = broker.IsInternalTopic(name)
			denied = append(denied, t)
			continue
		}
		keep = append(keep, rt)
	}
	emptied := len(keep) == 0 && len(denied) > 0
	req.Topics = keep
	if emptied && req.Version == 0 {
		req.Topics = nil // v0 reads an empty list as "all"; the answer's topics are replaced below
	}
	a.post = append(a.post, func(r kmsg.Response) {
		resp := r.(*kmsg.MetadataResponse)
		if emptied {
			resp.Topics = nil
		}
		for i, t := range resp.Topics {
			if t.Topic != nil && t.ErrorCode == 0 && !a.allowed(describe, acl.Topic(*t.Topic), true) {
				d := kmsg.NewMetadataResponseTopic()
				d.Topic, d.ErrorCode = nil, kerr.TopicAuthorizationFailed.Code
				d.TopicID = t.TopicID // asked by id: the id is the caller's, the name is withheld
				resp.Topics[i] = d
			}
		}
		resp.Topics = append(resp.Topics, denied...)
	})
	return nil
}

// describeTopicPartitions: as metadata, without auto-creation.
func (a *authzCall) describeTopicPartitions(rule acl.Rule) kmsg.Response {
	req := a.req.(*kmsg.DescribeTopicPartitionsRequest)
	describe := ops(rule, acl.WhenNamed, acl.OnTopics)
	if len(req.Topics) == 0 {
		a.post = append(a.post, func(r kmsg.Response) {
			resp := r.(*kmsg.DescribeTopicPartitionsResponse)
			resp.Topics = slices.DeleteFunc(resp.Topics, func(t kmsg.DescribeTopicPartitionsResponseTopic) bool {
				return t.Topic != nil && !a.allowed(describe, acl.Topic(*t.Topic), false)
			})
		})
		return nil
	}
	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	keep := req.Topics[:0:0]
	for _, rt := range req.Topics {
		if a.allowed(describe, acl.Topic(rt.Topic), true) {
			keep = append(keep, rt)
			continue
		}
		denied = append(denied, describeTopicError(rt.Topic, kerr.TopicAuthorizationFailed.Code))
	}
	if len(denied) == 0 {
		return nil
	}
	add := func(resp *kmsg.DescribeTopicPartitionsResponse) {
		resp.Topics = append(resp.Topics, denied...)
		slices.SortStableFunc(resp.Topics, func(x, y kmsg.DescribeTopicPartitionsResponseTopic) int {
			return cmpStrPtr(x.Topic, y.Topic)
		})
	}
	req.Topics = keep
	return answerDenied(a, len(keep) == 0, add)
}

func cmpStrPtr(x, y *string) int {
	switch {
	case x == nil && y == nil:
		return 0
	case x == nil:
		return -1
	case y == nil:
		return 1
	case *x < *y:
		return -1
	case *x > *y:
		return 1
	}
	return 0
}

// offsetFetch: the group needs Describe (GROUP_AUTHORIZATION_FAILED for
// the request, or per group from v8); a topic without Describe answers
// TOPIC_AUTHORIZATION_FAILED when named and is left out when the group's
// topics are listed whole.
func (a *authzCall) offsetFetch(rule acl.Rule) kmsg.Response {
	req := a.req.(*kmsg.OffsetFetchRequest)
	groupOp := ops(rule, acl.Always, acl.OnGroups)
	topicOp := ops(rule, acl.WhenNamed, acl.OnTopics)
	code := kerr.GroupAuthorizationFailed.Code
	if req.Version < 8 {
		if !a.allowed(groupOp, acl.Group(req.Group), true) {
			return failAll(req, code)
		}
		named := req.Topics != nil
		a.post = append(a.post, func(r kmsg.Response) {
			resp := r.(*kmsg.OffsetFetchResponse)
			resp.Topics = slices.DeleteFunc(resp.Topics, func(t kmsg.OffsetFetchResponseTopic) bool {
				if a.allowed(topicOp, acl.Topic(t.Topic), named) {
					return false
				}
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
				}
				return !named
			})
		})
		return nil
	}
	var denied []string
	keep := req.Groups[:0:0]
	for _, g := range req.Groups {
		if a.allowed(groupOp, acl.Group(g.Group), true) {
			keep = append(keep, g)
		} else {
			denied = append(denied, g.Group)
		}
	}
	named := map[string]bool{}
	for _, g := range keep {
		named[g.Group] = g.Topics != nil
	}
	add := func(resp *kmsg.OffsetFetchResponse) {
		for i := range resp.Groups {
			g := &resp.Groups[i]
			g.Topics = slices.DeleteFunc(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool {
				if a.allowed(topicOp, acl.Topic(t.Topic), named[g.Group]) {
					return false
				}
				for j := range t.Partitions {
					p := &t.Partitions[j]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
				}
				return !named[g.Group]
			})
		}
		for _, name := range denied {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group, g.ErrorCode = name, code
			resp.Groups = append(resp.Groups, g)
		}
	}
	if len(keep) == 0 && len(denied) > 0 {
		resp := emptyResponse(req).(*kmsg.OffsetFetchResponse)
		add(resp)
		return resp
	}
	req.Groups = keep
	a.post = append(a.post, func(r kmsg.Response) { add(r.(*kmsg.OffsetFetchResponse)) })
	return nil
}

// findCoordinator: a group key needs Group:Describe, a transactional key
// TransactionalId:Describe; v4+ batches keys, each failing alone.
func (a *authzCall) findCoordinator(rule acl.Rule) kmsg.Response {
	req := a.req.(*kmsg.FindCoordinatorRequest)
	op := ops(rule, acl.Always, acl.OnCoordinatorKeys)
	res := acl.Group
	if req.CoordinatorType == coordinatorTransaction {
		res = acl.TransactionalID
	} else if req.CoordinatorType != coordinatorGroup {
		return nil // the handler answers INVALID_REQUEST
	}
	code := acl.ErrorCode(res("").Type)
	if req.Version < 4 {
		if a.allowed(op, res(req.CoordinatorKey), true) {
			return nil
		}
		resp := emptyResponse(req).(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
		return resp
	}
	var denied []string
	keep := req.CoordinatorKeys[:0:0]
	for _, k := range req.CoordinatorKeys {
		if a.allowed(op, res(k), true) {
			keep = append(keep, k)
		} else {
			denied = append(denied, k)
		}
	}
	if len(denied) == 0 {
		return nil
	}
	add := func(resp *kmsg.FindCoordinatorResponse) {
		for _, k := range denied {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode, c.NodeID, c.Port = k, code, -1, -1
			resp.Coordinators = append(resp.Coordinators, c)
		}
	}
	req.CoordinatorKeys = keep
	return answerDenied(a, len(keep) == 0, add)
}

// listGroups: Cluster:Describe lists every group; otherwise each group is
// listed only with Group:Describe.
func (a *authzCall) listGroups(rule acl.Rule) kmsg.Response {
	op := ops(rule, acl.Always, acl.OnCluster)
	if a.allowed(op, acl.Cluster(), false) {
		return nil
	}
	groupOp := ops(rule, acl.Always, acl.OnGroups)
	a.post = append(a.post, func(r kmsg.Response) {
		resp := r.(*kmsg.ListGroupsResponse)
		resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return !a.allowed(groupOp, acl.Group(g.Group), false)
		})
	})
	return nil
}

// deleteTopics: before v6 topics come as names (TopicNames); from v6 the
// generic path filters Topics (by name or id; a topic denied by id keeps
// its name to itself).
func (a *authzCall) deleteTopics(rule acl.Rule) kmsg.Response {
	req := a.req.(*kmsg.DeleteTopicsRequest)
	op := ops(rule, acl.Always, acl.OnTopics)
	if req.Version >= 6 {
		return a.generic(rule)
	}
	var denied []string
	keep := req.TopicNames[:0:0]
	for _, name := range req.TopicNames {
		if a.allowed(op, acl.Topic(name), true) {
			keep = append(keep, name)
		} else {
			denied = append(denied, name)
		}
	}
	if len(denied) == 0 {
		return nil
	}
	add := func(resp *kmsg.DeleteTopicsResponse) {
		for _, name := range denied {
			t := kmsg.NewDeleteTopicsResponseTopic()
			t.Topic, t.ErrorCode = kmsg.StringPtr(name), kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, t)
		}
	}
	req.TopicNames = keep
	return answerDenied(a, len(keep) == 0, add)
}

// describeTransactions: each transactional id needs its Describe (denied
// ids answer TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the rest are
// described), and a described transaction lists only the partitions of
// topics the principal may Describe.
func (a *authzCall) describeTransactions(rule acl.Rule) kmsg.Response {
	req := a.req.(*kmsg.DescribeTransactionsRequest)
	idOp := ops(rule, acl.Always, acl.OnTransactionalIDs)
	topicOp := ops(rule, acl.Always, acl.OnTopics)
	var denied []string
	keep := req.TransactionalIDs[:0]
	for _, id := range req.TransactionalIDs {
		if a.allowed(idOp, acl.TransactionalID(id), true) {
			keep = append(keep, id)
		} else {
			denied = append(denied, id)
		}
	}
	req.TransactionalIDs = keep
	add := func(resp *kmsg.DescribeTransactionsResponse) {
		for i := range resp.TransactionStates {
			st := &resp.TransactionStates[i]
			st.Topics = slices.DeleteFunc(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
				return !a.allowed(topicOp, acl.Topic(t.Topic), false)
			})
		}
		for _, id := range denied {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
			st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
	}
	return answerDenied(a, len(keep) == 0, add)
}

// listTransactions lists only the transactional ids the principal may
// Describe.
func (a *authzCall) listTransactions(rule acl.Rule) kmsg.Response {
	op := ops(rule, acl.Always, acl.OnTransactionalIDs)
	a.post = append(a.post, func(r kmsg.Response) {
		resp := r.(*kmsg.ListTransactionsResponse)
		resp.TransactionStates = slices.DeleteFunc(resp.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
			return !a.allowed(op, acl.TransactionalID(s.TransactionalID), false)
		})
	})
	return nil
}

// describeShareGroupOffsets: each group (nested in the request, with its
// topics) needs its Describe — a denied one answers
// GROUP_AUTHORIZATION_FAILED — and each topic of a described group its
// Describe, else its partitions answer TOPIC_AUTHORIZATION_FAILED.
func (a *authzCall) describeShareGroupOffsets(rule acl.Rule) kmsg.Response {
	req := a.req.(*kmsg.DescribeShareGroupOffsetsRequest)
	groupOp := ops(rule, acl.Always, acl.OnGroups)
	topicOp := ops(rule, acl.Always, acl.OnTopics)
	var denied []string
	keep := req.Groups[:0:0]
	for _, g := range req.Groups {
		if a.allowed(groupOp, acl.Group(g.GroupID), true) {
			keep = append(keep, g)
		} else {
			denied = append(denied, g.GroupID)
		}
	}
	req.Groups = keep
	a.post = append(a.post, func(r kmsg.Response) {
		resp := r.(*kmsg.DescribeShareGroupOffsetsResponse)
		for gi := range resp.Groups {
			for ti := range resp.Groups[gi].Topics {
				t := &resp.Groups[gi].Topics[ti]
				if a.allowed(topicOp, acl.Topic(t.Topic), true) {
					continue
				}
				t.TopicID = [16]byte{}
				for pi := range t.Partitions {
					p := &t.Partitions[pi]
					p.StartOffset, p.Lag, p.ErrorCode, p.ErrorMessage = -1, -1, kerr.TopicAuthorizationFailed.Code, nil
				}
			}
		}
	})
	add := func(resp *kmsg.DescribeShareGroupOffsetsResponse) {
		for _, id := range denied {
			g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			g.GroupID, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
		}
	}
	return answerDenied(a, len(keep) == 0, add)
}
