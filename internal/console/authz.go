package console

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/httpauth"
)

// Authorization. With an authorizer (strand serve --authorizer), every
// page and API answer is for the request's principal (httpauth.Guard put
// it in the request; User:ANONYMOUS when it did not authenticate), by the
// Kafka rules of the API a client would use for the same data:
//
//   - lists (overview, /api/v1/topics, /api/v1/groups, a topic's groups)
//     keep only the topics and groups the principal may Describe, as
//     Metadata and ListGroups hide them;
//   - a topic's page needs Topic:Describe, its records and dead letters
//     Topic:Read, a group's page Group:Describe; a denied one answers 404
//     exactly as a missing one does, so the console never tells a
//     principal what exists that it may not see (Kafka's rule for
//     Metadata);
//   - an action needs what the Kafka API doing it needs (actionNeeds), and
//     a denial answers 403.
//
// Without an authorizer everyone sees everything, as on the Kafka listener.

// SetAuthorizer makes the console answer each request for its principal;
// nil (the default): no authorization. Call it before serving.
func (c *Console) SetAuthorizer(a *acl.Authorizer) { c.authz = a }

// may reports whether the request's principal may do op on res.
func (c *Console) may(r *http.Request, op acl.Operation, res acl.Resource) bool {
	if c.authz == nil {
		return true
	}
	p, ok := httpauth.Principal(r)
	if !ok {
		p = acl.Anonymous
	}
	return c.authz.Allowed(p, httpauth.Host(r), op, res)
}

// seeTopic answers a topic the principal may not op as not found.
func (c *Console) seeTopic(r *http.Request, op acl.Operation, topic string) error {
	if !c.may(r, op, acl.Topic(topic)) {
		return fmt.Errorf("%w: topic %q", errNotFound, topic)
	}
	return nil
}

// seeGroup answers a group the principal may not describe as not found.
func (c *Console) seeGroup(r *http.Request, group string) error {
	if !c.may(r, acl.OpDescribe, acl.Group(group)) {
		return fmt.Errorf("%w: group %q", errNotFound, group)
	}
	return nil
}

// filterOverview drops the topics and groups the principal may not
// describe, and sums the totals over what is left.
func (c *Console) filterOverview(r *http.Request, o *Overview) {
	if c.authz == nil {
		return
	}
	topics := o.Topics[:0]
	o.Totals = OverviewTotal{}
	for _, t := range o.Topics {
		if !c.may(r, acl.OpDescribe, acl.Topic(t.Name)) {
			continue
		}
		topics = append(topics, t)
		o.Totals.Topics++
		o.Totals.Partitions += t.Partitions
		o.Totals.Records += t.Records
		o.Totals.Bytes += t.Bytes
	}
	o.Topics = topics
	groups := o.Groups[:0]
	for _, g := range o.Groups {
		if c.may(r, acl.OpDescribe, acl.Group(g.ID)) {
			groups = append(groups, g)
		}
	}
	o.Groups = groups
	if !c.may(r, acl.OpDescribe, acl.Cluster()) {
		// Failed partitions name topics; the data directory is the host's.
		o.FailedPartitions, o.Offline, o.DataDir = nil, nil, ""
	}
}

// filterTopicGroups keeps the groups reading a topic that the principal
// may describe.
func (c *Console) filterTopicGroups(r *http.Request, d *TopicDetail) {
	if c.authz == nil {
		return
	}
	groups := d.Groups[:0]
	for _, g := range d.Groups {
		if c.may(r, acl.OpDescribe, acl.Group(g.ID)) {
			groups = append(groups, g)
		}
	}
	d.Groups = groups
}

// actionNeed is one authorization an action needs: any of ops on res.
type actionNeed struct {
	res acl.Resource
	ops []acl.Operation
}

// actionNeeds lists what the action at the request's pattern needs, after
// the Kafka API doing the same: CreateTopics (Create on the cluster or the
// topic), DeleteTopics, IncrementalAlterConfigs, Produce, OffsetCommit
// (Group:Read and Topic:Read) and DeleteGroups; a redrive produces into
// the topic and reads its dead-letter topic (Topic:Read on the source
// topic stands for it: the DLQ page needs it too).
func actionNeeds(r *http.Request) []actionNeed {
	topic, group := r.PathValue("topic"), r.PathValue("group")
	switch {
	case strings.HasSuffix(r.Pattern, "/actions/topics"):
		name := strings.TrimSpace(r.PostForm.Get("name"))
		return []actionNeed{{acl.Topic(name), []acl.Operation{acl.OpCreate}}}
	case strings.HasSuffix(r.Pattern, "/delete") && topic != "":
		return []actionNeed{{acl.Topic(topic), []acl.Operation{acl.OpDelete}}}
	case strings.HasSuffix(r.Pattern, "/config"):
		return []actionNeed{{acl.Topic(topic), []acl.Operation{acl.OpAlterConfigs}}}
	case strings.HasSuffix(r.Pattern, "/produce"):
		return []actionNeed{{acl.Topic(topic), []acl.Operation{acl.OpWrite}}}
	case strings.HasSuffix(r.Pattern, "/redrive"):
		return []actionNeed{{acl.Topic(topic), []acl.Operation{acl.OpWrite}}, {acl.Topic(topic), []acl.Operation{acl.OpRead}}}
	case strings.HasSuffix(r.Pattern, "/reset"):
		need := []actionNeed{{acl.Group(group), []acl.Operation{acl.OpRead}}}
		if t := r.PostForm.Get("topic"); t != "" {
			need = append(need, actionNeed{acl.Topic(t), []acl.Operation{acl.OpRead}})
		}
		return need
	case strings.HasSuffix(r.Pattern, "/delete") && group != "":
		return []actionNeed{{acl.Group(group), []acl.Operation{acl.OpDelete}}}
	}
	return nil
}

// authorizeAction refuses an action the principal may not do (403).
func (c *Console) authorizeAction(r *http.Request) error {
	if c.authz == nil {
		return nil
	}
	for _, n := range actionNeeds(r) {
		ok := false
		for _, op := range n.ops {
			// Creating a topic is allowed by Create on the cluster too.
			if c.may(r, op, n.res) || op == acl.OpCreate && c.may(r, op, acl.Cluster()) {
				ok = true
				break
			}
		}
		if !ok {
			p, _ := httpauth.Principal(r)
			return fmt.Errorf("%w: %s may not %s %s %q", errForbidden, p, n.ops[0], n.res.Type, n.res.Name)
		}
	}
	return nil
}
