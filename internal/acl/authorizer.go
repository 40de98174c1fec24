package acl

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Config is an authorizer's fixed settings.
type Config struct {
	// SuperUsers may do everything (Kafka's super.users).
	SuperUsers []Principal
	// AllowIfNoACL allows a request on a resource no ACL is about (Kafka's
	// allow.everyone.if.no.acl.found, false by default). It does not apply
	// when some ACL is about the resource but none grants the request.
	AllowIfNoACL bool
}

// ParseSuperUsers reads Kafka's super.users value: principals separated by
// semicolons ("User:admin;User:broker"), blanks ignored.
func ParseSuperUsers(s string) []Principal {
	var out []Principal
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, Principal(p))
		}
	}
	return out
}

// Request is one question to the authorizer.
type Request struct {
	Principal Principal
	Host      string // the client's IP address
	Operation Operation
	Resource  Resource
}

// Reason says why a Decision came out as it did, for the denial log.
type Reason uint8

// Reasons.
const (
	// ReasonSuperUser: the principal is a super user.
	ReasonSuperUser Reason = iota + 1
	// ReasonAllowACL: an Allow ACL applies and no Deny does.
	ReasonAllowACL
	// ReasonDenyACL: a Deny ACL applies.
	ReasonDenyACL
	// ReasonNoAllowACL: ACLs are about the resource but none applies.
	ReasonNoAllowACL
	// ReasonNoACL: no ACL is about the resource; Config.AllowIfNoACL decided.
	ReasonNoACL
	// ReasonInvalid: the request's operation or resource type cannot be
	// authorized (Any, Unknown); always denied.
	ReasonInvalid
)

func (r Reason) String() string {
	switch r {
	case ReasonSuperUser:
		return "super user"
	case ReasonAllowACL:
		return "allowed by ACL"
	case ReasonDenyACL:
		return "denied by ACL"
	case ReasonNoAllowACL:
		return "no ACL allows"
	case ReasonNoACL:
		return "no ACL for the resource"
	case ReasonInvalid:
		return "invalid request"
	}
	return "unknown"
}

// Decision is the authorizer's answer.
type Decision struct {
	Allowed bool
	Reason  Reason
	// ACL is the deciding ACL when Reason is ReasonAllowACL or ReasonDenyACL.
	ACL Binding
}

// Authorizer decides requests against a Set of ACLs under a Config. Its
// methods are safe for concurrent use: checks read the current Set through
// an atomic pointer, without locks; Create, Delete and Replace are
// serialized by a mutex and publish a new Set.
type Authorizer struct {
	superUsers   map[Principal]bool
	allowIfNoACL bool
	set          atomic.Pointer[Set]
	writeMu      sync.Mutex // serializes read-modify-publish of set
}

// New returns an authorizer with cfg and no ACLs.
func New(cfg Config) *Authorizer {
	a := &Authorizer{superUsers: make(map[Principal]bool, len(cfg.SuperUsers)), allowIfNoACL: cfg.AllowIfNoACL}
	for _, p := range cfg.SuperUsers {
		a.superUsers[p] = true
	}
	a.set.Store(&Set{})
	return a
}

// Set returns the current ACLs.
func (a *Authorizer) Set() *Set { return a.set.Load() }

// Replace makes s the current ACLs (as loaded from the cluster metadata).
func (a *Authorizer) Replace(s *Set) {
	if s == nil {
		s = &Set{}
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	a.set.Store(s)
}

// Create adds bindings (all or none; see Set.With).
func (a *Authorizer) Create(bindings ...Binding) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	next, err := a.set.Load().With(bindings...)
	if err != nil {
		return err
	}
	a.set.Store(next)
	return nil
}

// Delete removes what filters match and reports it per filter (see
// Set.Without).
func (a *Authorizer) Delete(filters ...BindingFilter) (removed [][]Binding, errs []error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	next, removed, errs := a.set.Load().Without(filters...)
	a.set.Store(next)
	return removed, errs
}

// IsSuperUser reports whether p is one of Config.SuperUsers.
func (a *Authorizer) IsSuperUser(p Principal) bool { return a.superUsers[p] }

// Authorize decides req (the package comment gives the rules).
func (a *Authorizer) Authorize(req Request) Decision {
	if a.superUsers[req.Principal] {
		return Decision{Allowed: true, Reason: ReasonSuperUser}
	}
	if !authorizable(req.Operation, req.Resource.Type) {
		return Decision{Reason: ReasonInvalid}
	}
	m := matcher{principal: req.Principal, host: CanonicalHost(req.Host), op: req.Operation}
	a.set.Load().forEachAbout(req.Resource, m.visit)
	switch {
	case m.denied:
		return Decision{Reason: ReasonDenyACL, ACL: m.deny}
	case m.allowed:
		return Decision{Allowed: true, Reason: ReasonAllowACL, ACL: m.allow}
	case m.about:
		return Decision{Reason: ReasonNoAllowACL}
	}
	return Decision{Allowed: a.allowIfNoACL, Reason: ReasonNoACL}
}

// Allowed is Authorize's verdict alone.
func (a *Authorizer) Allowed(p Principal, host string, op Operation, r Resource) bool {
	return a.Authorize(Request{Principal: p, Host: host, Operation: op, Resource: r}).Allowed
}

func authorizable(op Operation, t ResourceType) bool {
	return op >= OpAll && op <= OpDescribeTokens && t != ResourceAny && t != ResourceUnknown
}

// matcher accumulates one check over the groups of ACLs about a resource.
type matcher struct {
	principal Principal
	host      string
	op        Operation

	about, allowed, denied bool
	allow, deny            Binding
}

// visit scans ACLs about the resource; it returns false (stop) on the first
// applicable Deny, since nothing can overturn it.
func (m *matcher) visit(bs []Binding) bool {
	m.about = m.about || len(bs) > 0
	for _, b := range bs {
		e := &b.Entry
		if e.Principal != m.principal && e.Principal != WildcardPrincipal {
			continue
		}
		if e.Host != Wildcard && e.Host != m.host {
			continue
		}
		if e.Permission == Deny {
			if e.Operation == m.op || e.Operation == OpAll {
				m.denied, m.deny = true, b
				return false
			}
			continue
		}
		if !m.allowed && implies(e.Operation, m.op) {
			m.allowed, m.allow = true, b
		}
	}
	return true
}

// AuthorizeByResourceType answers whether p may perform op on at least one
// resource of type t, as Kafka's Authorizer.authorizeByResourceType does
// (InitProducerId lets an idempotent producer in with Write on any topic,
// KIP-679). It is allowed when:
//
//   - Authorize allows op on a resource of type t named "hardcode" (Kafka's
//     own probe: this admits super users, literal "*" Allow ACLs and
//     AllowIfNoACL when no ACL covers that name); or
//   - some Allow ACL for p (or User:*), the host (or *) and op (or All; no
//     implication) is not dominated by a Deny: a literal "*" Deny dominates
//     everything, a literal Deny its own name, a prefixed Deny every
//     literal or prefix starting with it.
func (a *Authorizer) AuthorizeByResourceType(p Principal, host string, op Operation, t ResourceType) bool {
	if !authorizable(op, t) {
		return false
	}
	if a.Allowed(p, host, op, Resource{t, "hardcode"}) {
		return true
	}
	host = CanonicalHost(host)
	s := a.set.Load()
	idx := &s.types[t]
	applies := func(b Binding) bool {
		e := b.Entry
		return (e.Principal == p || e.Principal == WildcardPrincipal) &&
			(e.Host == host || e.Host == Wildcard) &&
			(e.Operation == op || e.Operation == OpAll)
	}
	denyLiteral := make(map[string]bool)
	var denyPrefixes, allowLiteral, allowPrefixes []string
	collect := func(bs []Binding, literal bool) bool {
		for _, b := range bs {
			if !applies(b) {
				continue
			}
			name := b.Pattern.Name
			switch {
			case b.Entry.Permission == Deny && literal && name == Wildcard:
				return false
			case b.Entry.Permission == Deny && literal:
				denyLiteral[name] = true
			case b.Entry.Permission == Deny:
				denyPrefixes = append(denyPrefixes, name)
			case literal:
				allowLiteral = append(allowLiteral, name)
			default:
				allowPrefixes = append(allowPrefixes, name)
			}
		}
		return true
	}
	for _, bs := range idx.literal {
		if !collect(bs, true) {
			return false
		}
	}
	for _, bs := range idx.prefixed {
		if !collect(bs, false) {
			return false
		}
	}
	dominated := func(name string) bool {
		for _, d := range denyPrefixes {
			if strings.HasPrefix(name, d) {
				return true
			}
		}
		return false
	}
	for _, name := range allowLiteral {
		if name == Wildcard || (!denyLiteral[name] && !dominated(name)) {
			return true
		}
	}
	for _, name := range allowPrefixes {
		if !dominated(name) {
			return true
		}
	}
	return false
}
