package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
)

// Authorization: every request a client-facing server handles passes
// through authorize before its handler, which asks the one Authorizer the
// checks acl.RuleFor(key) names, with Kafka's per-API semantics:
//
//   - a check that fails the whole request answers the API's error
//     response, built from the request (each topic, partition, group or
//     resource it names answers the error code), without running the
//     handler;
//   - a check per resource takes the denied resources out of the request,
//     runs the handler on the rest (not at all when none is left), and adds
//     an entry answering the error code for each denied one;
//   - a check that hides resources (listing every topic, ListGroups)
//     removes them from the handler's response.
//
// The generic paths read the kmsg structs by field name (Topics/Topic,
// Partitions/Partition, Group, Resources, TransactionalID), which every
// request with topics, groups or config resources shares; the few APIs
// whose shapes differ (Metadata, DescribeTopicPartitions, OffsetFetch,
// FindCoordinator, DeleteTopics, ListGroups) have their own function in
// authzCustom. Either way the checks come from the rule table, so a rule
// and its enforcement cannot drift apart.
//
// Handlers never ask the authorizer themselves.
//
// On a cluster node's internal listener the peers are nodes (node.go): a
// node holds ClusterAction implicitly, as Kafka's inter-broker principal in
// super.users does, so its own requests (replica fetches, transaction
// markers, Envelope) are not checked. The request inside an Envelope is a
// client's, forwarded: the controller authorizes it here, through the same
// rules, as the principal and host the Envelope carries (58_envelope.go),
// so a forwarded request gets exactly the answer the client listener would
// give that principal.

// authzCall is one request being authorized.
type authzCall struct {
	s         *Server
	key       int16
	version   int16
	req       kmsg.Request
	principal acl.Principal
	host      string
	post      []func(kmsg.Response) // applied to the handler's response, in order
}

// errNoPrincipal: a verified client certificate no ssl.principal.mapping
// rule applies to; Kafka fails the connection.
var errNoPrincipal = errors.New("kafka: no ssl.principal.mapping.rules rule applies to the client certificate's subject; closing the connection")

// principal is who the connection authenticated as: the SASL user, else
// the subject of a verified TLS client certificate mapped by
// ssl.principal.mapping.rules, else User:ANONYMOUS (Kafka's rules).
func (c *conn) principal() (acl.Principal, error) {
	if c.auth.done {
		return acl.User(c.auth.user), nil
	}
	if c.tlsPrincipal != "" {
		return c.tlsPrincipal, nil
	}
	if tc, ok := c.nc.(*tls.Conn); ok {
		st := tc.ConnectionState()
		if len(st.VerifiedChains) > 0 && len(st.PeerCertificates) > 0 {
			p, ok := c.s.cfg.PrincipalRules.Map(st.PeerCertificates[0].Subject.String())
			if !ok {
				return "", errNoPrincipal
			}
			c.tlsPrincipal = p
			return p, nil
		}
	}
	return acl.Anonymous, nil
}

// authorize runs the rule of req's API key. It returns the response to send
// instead of running the handler (early), or post-processing for the
// handler's response (post, nil when none).
func (c *conn) authorize(req *request) (early kmsg.Response, post func(kmsg.Response), err error) {
	p, err := c.principal()
	if err != nil {
		return nil, nil, err
	}
	return c.s.authorizeAs(p, c.ip, req)
}

// authorizeAs is authorize for principal p connecting from host: the
// connection's own, or those an Envelope carries.
func (s *Server) authorizeAs(p acl.Principal, host string, req *request) (early kmsg.Response, post func(kmsg.Response), err error) {
	a := &authzCall{s: s, key: req.key, version: req.version, req: req.kreq, principal: p, host: host}
	rule, ok := acl.RuleFor(req.key)
	if !ok { // TestACLTable keeps this from happening
		return nil, nil, fmt.Errorf("kafka: %s has no authorization rule", kmsg.NameForKey(req.key))
	}
	if custom, ok := authzCustom[req.key]; ok {
		early = custom(a, rule)
	} else {
		early = a.generic(rule)
	}
	if early != nil || len(a.post) == 0 {
		return early, nil, nil
	}
	return nil, func(resp kmsg.Response) {
		for _, fn := range a.post {
			fn(resp)
		}
	}, nil
}

// allowed asks the authorizer one question; log says whether a denial is
// logged (not for resources a listing merely hides, as Kafka).
func (a *authzCall) allowed(op acl.Operation, r acl.Resource, log bool) bool {
	d := a.s.cfg.Authorizer.Authorize(acl.Request{Principal: a.principal, Host: a.host, Operation: op, Resource: r})
	if !d.Allowed && log {
		a.s.logDenied(a, op, r, d.Reason)
	}
	return d.Allowed
}

// logDenied logs a denial, at most once per 10 s per (principal, host,
// operation, resource), like the server's other error lines.
func (s *Server) logDenied(a *authzCall, op acl.Operation, r acl.Resource, why acl.Reason) {
	key := fmt.Sprintf("%s|%s|%v|%v|%s", a.principal, a.host, op, r.Type, r.Name)
	if ok, suppressed := s.denials.allow(key, 10*time.Second); ok {
		s.logger.Warn("kafka: authorization denied", "principal", string(a.principal), "host", a.host,
			"operation", op.String(), "resource_type", r.Type.String(), "resource", r.Name,
			"api", kmsg.NameForKey(a.key), "reason", why.String(), "repeats_not_logged", suppressed)
	}
}

// anyOf answers a check's alternatives for one named resource of the
// check's per-resource target (name is ignored for cluster needs). A
// denial is logged once, for the last alternative.
func (a *authzCall) anyOf(needs []acl.Need, r acl.Resource, log bool) bool {
	for i, n := range needs {
		last := i == len(needs)-1
		var ok bool
		switch n.On {
		case acl.OnCluster:
			ok = a.allowed(n.Op, acl.Cluster(), log && last)
		case acl.OnAnyTopic:
			ok = a.s.cfg.Authorizer.AuthorizeByResourceType(a.principal, a.host, n.Op, acl.ResourceTopic)
			if !ok && log && last {
				a.s.logDenied(a, n.Op, acl.Resource{Type: acl.ResourceTopic, Name: "<any>"}, acl.ReasonNoAllowACL)
			}
		default:
			ok = a.allowed(n.Op, r, log && last)
		}
		if ok {
			return true
		}
	}
	return false
}

// applies evaluates a check's condition on the request.
func (a *authzCall) applies(when acl.Condition) bool {
	switch when {
	case acl.Always, acl.WhenNamed:
		return true
	case acl.WhenTransactional:
		return transactionalID(a.req) != nil
	case acl.WhenIdempotent:
		return transactionalID(a.req) == nil
	case acl.WhenFollower, acl.WhenConsumer:
		follower := false
		if f, ok := a.req.(*kmsg.FetchRequest); ok {
			follower = f.ReplicaID >= 0 || (f.Version >= 15 && f.ReplicaState.ID >= 0)
		}
		return follower == (when == acl.WhenFollower)
	case acl.WhenClientVersion:
		return a.version < 4
	case acl.WhenBrokerVersion:
		return a.version >= 4
	}
	return false // WhenListingAll, WhenAutoCreate: the custom functions' business
}

// target is the per-resource target of a check: its first alternative
// that is not the cluster (acl.OnCluster when all are).
func target(c acl.Check) acl.Target {
	for _, n := range c.AnyOf {
		if n.On != acl.OnCluster {
			return n.On
		}
	}
	return acl.OnCluster
}

// generic applies rule to a request of the common shapes.
func (a *authzCall) generic(rule acl.Rule) kmsg.Response {
	for _, chk := range rule.Checks {
		if !a.applies(chk.When) {
			continue
		}
		switch t := target(chk); t {
		case acl.OnCluster, acl.OnAnyTopic:
			if a.anyOf(chk.AnyOf, acl.Cluster(), true) {
				continue
			}
			if chk.Denied == acl.FailResource { // a follower fetch: every topic denied
				if resp := a.filterTopics(func(string) bool { return false }, chk.Code); resp != nil {
					return resp
				}
				continue
			}
			return failAll(a.req, chk.Code)
		case acl.OnGroups, acl.OnTransactionalIDs, acl.OnTopics:
			typ := map[acl.Target]acl.ResourceType{acl.OnGroups: acl.ResourceGroup, acl.OnTransactionalIDs: acl.ResourceTransactionalID, acl.OnTopics: acl.ResourceTopic}[t]
			ok := func(name string) bool { return a.anyOf(chk.AnyOf, acl.Resource{Type: typ, Name: name}, true) }
			switch {
			case chk.Denied == acl.FailRequest:
				for _, name := range a.names(t) {
					if !ok(name) {
						return failAll(a.req, chk.Code)
					}
				}
			case t == acl.OnTopics:
				if resp := a.filterTopics(ok, chk.Code); resp != nil {
					return resp
				}
			case t == acl.OnGroups:
				if resp := a.filterGroupList(ok, chk.Code); resp != nil {
					return resp
				}
			}
		case acl.OnConfigResources:
			if resp := a.filterConfigResources(chk); resp != nil {
				return resp
			}
		}
	}
	return nil
}

// names returns the groups, transactional ids or (for a request that fails
// whole) topics a request names.
func (a *authzCall) names(t acl.Target) []string {
	v := reflect.ValueOf(a.req).Elem()
	var fields []string
	switch t {
	case acl.OnGroups:
		fields = []string{"Group", "GroupID", "Groups", "GroupIDs"}
	case acl.OnTransactionalIDs:
		fields = []string{"TransactionalID"}
	case acl.OnTopics:
		fields = []string{"SubscribedTopicNames"}
	}
	var out []string
	for _, f := range fields {
		fv := v.FieldByName(f)
		if !fv.IsValid() {
			continue
		}
		switch {
		case fv.Kind() == reflect.String:
			out = append(out, fv.String())
		case fv.Kind() == reflect.Pointer && !fv.IsNil() && fv.Elem().Kind() == reflect.String:
			out = append(out, fv.Elem().String())
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
			for i := range fv.Len() {
				out = append(out, fv.Index(i).String())
			}
		}
	}
	return out
}

// transactionalID is the request's transactional id, nil when it has none.
func transactionalID(req kmsg.Request) *string {
	fv := reflect.ValueOf(req).Elem().FieldByName("TransactionalID")
	switch {
	case !fv.IsValid():
		return nil
	case fv.Kind() == reflect.Pointer:
		if fv.IsNil() {
			return nil
		}
		s := fv.Elem().String()
		return &s
	case fv.Kind() == reflect.String && fv.String() != "":
		s := fv.String()
		return &s
	}
	return nil
}

// topicName is the name a request's topic entry names: its Topic, or the
// topic its TopicID identifies ("" for an unknown id, which the handler
// answers).
func (a *authzCall) topicName(entry reflect.Value) string {
	if f := entry.FieldByName("Topic"); f.IsValid() {
		switch {
		case f.Kind() == reflect.String && f.String() != "":
			return f.String()
		case f.Kind() == reflect.Pointer && !f.IsNil():
			return f.Elem().String()
		}
	}
	if f := entry.FieldByName("TopicID"); f.IsValid() {
		var id [16]byte
		reflect.Copy(reflect.ValueOf(id[:]), f.Slice(0, 16))
		if t, err := a.s.b.TopicByID(broker.TopicID(id)); err == nil {
			return t.Name
		}
	}
	return ""
}

// filterTopics takes the topics ok refuses out of the request's Topics and
// arranges for their entries, answering code, to be added to the response.
// It returns the early response when nothing is left to handle.
func (a *authzCall) filterTopics(ok func(string) bool, code int16) kmsg.Response {
	v := reflect.ValueOf(a.req).Elem()
	topics := v.FieldByName("Topics")
	if !topics.IsValid() || topics.Kind() != reflect.Slice || topics.Type().Elem().Kind() != reflect.Struct || topics.Len() == 0 {
		return nil
	}
	keep := reflect.MakeSlice(topics.Type(), 0, topics.Len())
	var denied []reflect.Value
	for i := range topics.Len() {
		e := topics.Index(i)
		if name := a.topicName(e); name != "" && !ok(name) {
			denied = append(denied, e)
			continue
		}
		keep = reflect.Append(keep, e)
	}
	if len(denied) == 0 {
		return nil
	}
	topics.Set(keep)
	add := func(resp kmsg.Response) {
		rt := reflect.ValueOf(resp).Elem().FieldByName("Topics")
		if !rt.IsValid() {
			return
		}
		for _, e := range denied {
			rt.Set(reflect.Append(rt, mirror(rt.Type().Elem(), e, code)))
		}
	}
	if keep.Len() == 0 {
		if r, isProduce := a.req.(*kmsg.ProduceRequest); isProduce && r.Acks == 0 {
			return noResponse{}
		}
		resp := emptyResponse(a.req)
		add(resp)
		return resp
	}
	a.post = append(a.post, add)
	return nil
}

// filterGroupList is filterTopics for a request listing group ids as
// strings (DescribeGroups, DeleteGroups, ConsumerGroupDescribe), whose
// response lists Groups with a Group and an ErrorCode.
func (a *authzCall) filterGroupList(ok func(string) bool, code int16) kmsg.Response {
	v := reflect.ValueOf(a.req).Elem()
	var groups reflect.Value
	for _, f := range []string{"Groups", "GroupIDs"} {
		if g := v.FieldByName(f); g.IsValid() && g.Kind() == reflect.Slice && g.Type().Elem().Kind() == reflect.String {
			groups = g
		}
	}
	if !groups.IsValid() {
		return nil
	}
	var keep, denied []string
	for i := range groups.Len() {
		if g := groups.Index(i).String(); ok(g) {
			keep = append(keep, g)
		} else {
			denied = append(denied, g)
		}
	}
	if len(denied) == 0 {
		return nil
	}
	groups.Set(reflect.ValueOf(keep))
	add := func(resp kmsg.Response) {
		rg := reflect.ValueOf(resp).Elem().FieldByName("Groups")
		if !rg.IsValid() {
			return
		}
		for _, g := range denied {
			e := newElem(rg.Type().Elem())
			setField(e, "Group", reflect.ValueOf(g))
			setField(e, "GroupID", reflect.ValueOf(g)) // ShareGroupDescribe's name for it
			setErrorCodes(e, code)
			rg.Set(reflect.Append(rg, e))
		}
	}
	return answerDenied(a, len(keep) == 0, add)
}

// answerDenied adds the items a request lost to authorization to its
// answer: to an otherwise empty response returned at once when none is left
// to serve, else to the response the handler gives.
func answerDenied[R kmsg.Response](a *authzCall, noneLeft bool, add func(R)) kmsg.Response {
	if noneLeft {
		resp := emptyResponse(a.req).(R)
		add(resp)
		return resp
	}
	a.post = append(a.post, func(r kmsg.Response) { add(r.(R)) })
	return nil
}

// configResource is the ACL resource a config resource is guarded by:
// a topic its Topic, a group its Group, anything else (broker, broker
// logger, client metrics) the cluster (Kafka's ConfigHelper/AuthHelper).
func configResource(typ int8, name string) acl.Resource {
	switch kmsg.ConfigResourceType(typ) {
	case kmsg.ConfigResourceTypeTopic:
		return acl.Topic(name)
	case kmsg.ConfigResourceTypeGroupConfig:
		return acl.Group(name)
	}
	return acl.Cluster()
}

// filterConfigResources is filterTopics for DescribeConfigs, AlterConfigs
// and IncrementalAlterConfigs (Resources with ResourceType and
// ResourceName in request and response).
func (a *authzCall) filterConfigResources(chk acl.Check) kmsg.Response {
	v := reflect.ValueOf(a.req).Elem().FieldByName("Resources")
	if !v.IsValid() || v.Len() == 0 {
		return nil
	}
	keep := reflect.MakeSlice(v.Type(), 0, v.Len())
	type deniedRes struct {
		e    reflect.Value
		code int16
	}
	var denied []deniedRes
	for i := range v.Len() {
		e := v.Index(i)
		r := configResource(int8(e.FieldByName("ResourceType").Int()), e.FieldByName("ResourceName").String())
		if a.allowed(chk.AnyOf[0].Op, r, true) {
			keep = reflect.Append(keep, e)
			continue
		}
		denied = append(denied, deniedRes{e, acl.ErrorCode(r.Type)})
	}
	if len(denied) == 0 {
		return nil
	}
	v.Set(keep)
	add := func(resp kmsg.Response) {
		rr := reflect.ValueOf(resp).Elem().FieldByName("Resources")
		for _, d := range denied {
			rr.Set(reflect.Append(rr, mirror(rr.Type().Elem(), d.e, d.code)))
		}
	}
	if keep.Len() == 0 {
		resp := emptyResponse(a.req)
		add(resp)
		return resp
	}
	a.post = append(a.post, add)
	return nil
}

// noResponse marks a request answered with nothing (acks=0).
type noResponse struct{ kmsg.Response }

// emptyResponse is req's response kind at req's version, with defaults.
func emptyResponse(req kmsg.Request) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if d, ok := resp.(interface{ Default() }); ok {
		d.Default()
	}
	return resp
}

// failAll is the response to a request denied as a whole: every topic,
// partition, group, resource and member the request names answers code,
// as does the response's top-level error.
func failAll(req kmsg.Request, code int16) kmsg.Response {
	if r, ok := req.(*kmsg.ProduceRequest); ok && r.Acks == 0 {
		return noResponse{}
	}
	resp := emptyResponse(req)
	rv := reflect.ValueOf(resp).Elem()
	mirrorSlices(rv, reflect.ValueOf(req).Elem(), code)
	setErrorCodes(rv, code)
	return resp
}

// identity are the fields that name what an entry is about; mirror copies
// only these from a request entry to its response entry.
var identity = map[string]bool{"Topic": true, "TopicID": true, "Partition": true, "Group": true, "Name": true,
	"ResourceType": true, "ResourceName": true, "MemberID": true, "GroupInstanceID": true, "TransactionalID": true, "Key": true}

// mirror builds a response entry of type typ for request entry src: its
// identity fields copied, its nested lists mirrored, every ErrorCode code.
func mirror(typ reflect.Type, src reflect.Value, code int16) reflect.Value {
	dst := newElem(typ)
	for i := range typ.NumField() {
		f := typ.Field(i)
		sv := src.FieldByName(f.Name)
		if alias, ok := fieldAliases[f.Name]; ok && !sv.IsValid() {
			sv = src.FieldByName(alias)
		}
		if !sv.IsValid() || !(identity[f.Name] || fieldAliases[f.Name] != "") {
			continue
		}
		setField(dst, f.Name, sv)
	}
	mirrorSlices(dst, src, code)
	setErrorCodes(dst, code)
	return dst
}

// mirrorSlices mirrors each list of src into dst's list of the same name:
// struct entries by mirror, a list of partition numbers into entries with
// a Partition.
func mirrorSlices(dst, src reflect.Value, code int16) {
	for i := range dst.NumField() {
		f := dst.Type().Field(i)
		if f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		out := reflect.MakeSlice(f.Type, 0, 0)
		for _, name := range append([]string{f.Name}, sliceAliases[f.Name]...) {
			sv := src.FieldByName(name)
			if !sv.IsValid() || sv.Kind() != reflect.Slice {
				continue
			}
			for j := range sv.Len() {
				se := sv.Index(j)
				switch {
				case se.Kind() == reflect.Struct:
					out = reflect.Append(out, mirror(f.Type.Elem(), se, code))
				case se.Kind() == reflect.Int32 && f.Name == "Partitions":
					e := newElem(f.Type.Elem())
					setField(e, "Partition", se)
					setErrorCodes(e, code)
					out = reflect.Append(out, e)
				}
			}
		}
		dst.Field(i).Set(out)
	}
}

// sliceAliases name the request list a response list answers entry by
// entry when their names differ (CreateAcls' Creations and DeleteAcls'
// Filters are answered by Results).
var sliceAliases = map[string][]string{"Results": {"Creations", "Filters", "Deletions", "Upsertions"}}

// fieldAliases name the request field a response entry's identity field
// copies when their names differ (AlterUserScramCredentials' Name is its
// results' User).
var fieldAliases = map[string]string{"User": "Name"}

// newElem is a new value of the kmsg struct type typ with its defaults.
func newElem(typ reflect.Type) reflect.Value {
	p := reflect.New(typ)
	if d, ok := p.Interface().(interface{ Default() }); ok {
		d.Default()
	}
	return p.Elem()
}

// setField sets dst's field name to v where the types allow: equal types,
// a string into a *string, a *string into a string.
func setField(dst reflect.Value, name string, v reflect.Value) {
	f := dst.FieldByName(name)
	if !f.IsValid() || !f.CanSet() {
		return
	}
	switch {
	case v.Type().AssignableTo(f.Type()):
		f.Set(v)
	case v.Kind() == reflect.String && f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
		s := v.String()
		f.Set(reflect.ValueOf(&s))
	case v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.String && f.Kind() == reflect.String:
		f.SetString(v.Elem().String())
	}
}

// setErrorCodes sets v's own ErrorCode field (not its entries').
func setErrorCodes(v reflect.Value, code int16) {
	if f := v.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
}
