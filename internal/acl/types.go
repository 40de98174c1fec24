package acl

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// The enumerations below carry Kafka's wire numbers (kmsg.ACLResourceType,
// ACLResourcePatternType, ACLOperation, ACLPermissionType), so the wire
// handlers convert with a plain type conversion and the persisted form
// stays readable against Kafka's documentation.

// ResourceType is the kind of thing an ACL protects.
type ResourceType int8

// Resource types. Any is for filters only; DelegationToken (6) is not
// supported.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceUser            ResourceType = 7 // CreateTokens / DescribeTokens on behalf of a user
)

// ClusterName is the one name a Cluster resource has.
const ClusterName = "kafka-cluster"

// Wildcard is the literal resource name matching every resource of its
// type, the host matching every host, and (as "User:*") every principal.
const Wildcard = "*"

// WildcardPrincipal matches every principal.
const WildcardPrincipal Principal = "User:*"

// PatternType says how an ACL's resource name matches resources.
type PatternType int8

// Pattern types. Any and Match are for filters only (see BindingFilter).
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3 // the name itself, or every name when it is "*"
	PatternPrefixed PatternType = 4 // every name starting with it
)

// Operation is what a request does to a resource.
type Operation int8

// Operations. Any is for filters only.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

// Permission says whether an ACL allows or denies.
type Permission int8

// Permissions. Any is for filters only.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	Deny              Permission = 2
	Allow             Permission = 3
)

// Principal is an authenticated identity as Kafka writes it, "Type:name"
// ("User:alice", "User:CN=client,O=acme"); "User:*" in an ACL matches every
// principal.
type Principal string

// User returns the principal "User:name".
func User(name string) Principal { return Principal("User:" + name) }

// valid reports whether p has Kafka's "Type:name" shape with both parts
// non-empty (SecurityUtils.parseKafkaPrincipal).
func (p Principal) valid() bool {
	typ, name, ok := strings.Cut(string(p), ":")
	return ok && typ != "" && name != ""
}

// Resource is one named resource a request acts on.
type Resource struct {
	Type ResourceType
	Name string
}

// Topic, Group, TransactionalID and Cluster name the resources handlers ask
// about.
func Topic(name string) Resource           { return Resource{ResourceTopic, name} }
func Group(name string) Resource           { return Resource{ResourceGroup, name} }
func TransactionalID(name string) Resource { return Resource{ResourceTransactionalID, name} }
func Cluster() Resource                    { return Resource{ResourceCluster, ClusterName} }

// Pattern is the resource side of an ACL: a type, a name and how the name
// matches.
type Pattern struct {
	Type        ResourceType
	Name        string
	PatternType PatternType
}

// Matches reports whether the pattern covers resource r.
func (p Pattern) Matches(r Resource) bool {
	if p.Type != r.Type {
		return false
	}
	switch p.PatternType {
	case PatternLiteral:
		return p.Name == r.Name || p.Name == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(r.Name, p.Name)
	}
	return false
}

// Entry is the access side of an ACL: who, from where, doing what, allowed
// or denied.
type Entry struct {
	Principal  Principal
	Host       string // an IP address or "*"
	Operation  Operation
	Permission Permission
}

// Binding is one ACL.
type Binding struct {
	Pattern Pattern
	Entry   Entry
}

// ErrInvalidBinding is wrapped by Validate's errors (the wire answers
// INVALID_REQUEST).
var ErrInvalidBinding = errors.New("acl: invalid binding")

// Validate checks that b can be stored, with Kafka's rules for CreateAcls
// (AclControlManager.validateNewAcl and AclApis): a concrete resource type,
// a Literal or Prefixed pattern, a non-empty name ("kafka-cluster" for the
// cluster), a concrete operation and permission, a "Type:name" principal and
// a non-empty host.
func (b Binding) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidBinding}, args...)...)
	}
	switch b.Pattern.Type {
	case ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID, ResourceUser:
	default:
		return bad("resource type %v", b.Pattern.Type)
	}
	switch b.Pattern.PatternType {
	case PatternLiteral, PatternPrefixed:
	default:
		return bad("pattern type %v", b.Pattern.PatternType)
	}
	switch {
	case b.Pattern.Name == "":
		return bad("empty resource name")
	case b.Pattern.Type == ResourceCluster && b.Pattern.Name != ClusterName:
		return bad("the only valid name for the cluster resource is %s", ClusterName)
	case b.Entry.Operation < OpAll || b.Entry.Operation > OpDescribeTokens:
		return bad("operation %v", b.Entry.Operation)
	case b.Entry.Permission != Allow && b.Entry.Permission != Deny:
		return bad("permission %v", b.Entry.Permission)
	case !b.Entry.Principal.valid():
		return bad("principal %q is not Type:name", string(b.Entry.Principal))
	case b.Entry.Host == "":
		return bad("empty host")
	}
	return nil
}

// canonical returns b with its host in canonical form (see CanonicalHost).
func (b Binding) canonical() Binding {
	b.Entry.Host = CanonicalHost(b.Entry.Host)
	return b
}

// CanonicalHost returns an IP address in netip's text form with IPv4-mapped
// IPv6 addresses unmapped, so that hosts compare as strings; anything else
// ("*", a name) is returned as is.
func CanonicalHost(h string) string {
	if h == Wildcard || !strings.Contains(h, ":") {
		return h // "*", a name, or IPv4, whose only form netip accepts is canonical
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return h
	}
	return a.Unmap().String()
}

// String renders b as Kafka's tools do, for logs and errors.
func (b Binding) String() string {
	return fmt.Sprintf("(pattern=%v:%v:%s, principal=%s, host=%s, operation=%v, permission=%v)",
		b.Pattern.Type, b.Pattern.PatternType, b.Pattern.Name,
		b.Entry.Principal, b.Entry.Host, b.Entry.Operation, b.Entry.Permission)
}

// compareBindings orders bindings by resource type, pattern type, name,
// principal, host, operation, permission: the persisted order and the
// order DescribeAcls answers in.
func compareBindings(a, b Binding) int {
	switch {
	case a.Pattern.Type != b.Pattern.Type:
		return cmpInt(int(a.Pattern.Type), int(b.Pattern.Type))
	case a.Pattern.PatternType != b.Pattern.PatternType:
		return cmpInt(int(a.Pattern.PatternType), int(b.Pattern.PatternType))
	case a.Pattern.Name != b.Pattern.Name:
		return strings.Compare(a.Pattern.Name, b.Pattern.Name)
	case a.Entry.Principal != b.Entry.Principal:
		return strings.Compare(string(a.Entry.Principal), string(b.Entry.Principal))
	case a.Entry.Host != b.Entry.Host:
		return strings.Compare(a.Entry.Host, b.Entry.Host)
	case a.Entry.Operation != b.Entry.Operation:
		return cmpInt(int(a.Entry.Operation), int(b.Entry.Operation))
	default:
		return cmpInt(int(a.Entry.Permission), int(b.Entry.Permission))
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var resourceTypeNames = map[ResourceType]string{
	ResourceUnknown: "Unknown", ResourceAny: "Any", ResourceTopic: "Topic", ResourceGroup: "Group",
	ResourceCluster: "Cluster", ResourceTransactionalID: "TransactionalId", ResourceUser: "User",
}

var patternTypeNames = map[PatternType]string{
	PatternUnknown: "Unknown", PatternAny: "Any", PatternMatch: "Match",
	PatternLiteral: "Literal", PatternPrefixed: "Prefixed",
}

var operationNames = map[Operation]string{
	OpUnknown: "Unknown", OpAny: "Any", OpAll: "All", OpRead: "Read", OpWrite: "Write",
	OpCreate: "Create", OpDelete: "Delete", OpAlter: "Alter", OpDescribe: "Describe",
	OpClusterAction: "ClusterAction", OpDescribeConfigs: "DescribeConfigs",
	OpAlterConfigs: "AlterConfigs", OpIdempotentWrite: "IdempotentWrite",
	OpCreateTokens: "CreateTokens", OpDescribeTokens: "DescribeTokens",
}

var permissionNames = map[Permission]string{
	PermissionUnknown: "Unknown", PermissionAny: "Any", Deny: "Deny", Allow: "Allow",
}

func enumString[T ~int8](names map[T]string, v T) string {
	if s, ok := names[v]; ok {
		return s
	}
	return fmt.Sprintf("Unknown(%d)", int8(v))
}

// parseEnum finds a name case-insensitively, ignoring '-' and '_' (so the
// CLI accepts "transactional-id", "TRANSACTIONAL_ID" and "TransactionalId").
func parseEnum[T ~int8](names map[T]string, what, s string) (T, error) {
	fold := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s))
	}
	for v, name := range names {
		if fold(name) == fold(s) && name != "Unknown" {
			return v, nil
		}
	}
	return 0, fmt.Errorf("acl: unknown %s %q", what, s)
}

func (t ResourceType) String() string { return enumString(resourceTypeNames, t) }
func (t PatternType) String() string  { return enumString(patternTypeNames, t) }
func (o Operation) String() string    { return enumString(operationNames, o) }
func (p Permission) String() string   { return enumString(permissionNames, p) }

// ParseResourceType, ParsePatternType, ParseOperation and ParsePermission
// read the names String writes, case-insensitively.
func ParseResourceType(s string) (ResourceType, error) {
	return parseEnum(resourceTypeNames, "resource type", s)
}
func ParsePatternType(s string) (PatternType, error) {
	return parseEnum(patternTypeNames, "pattern type", s)
}
func ParseOperation(s string) (Operation, error) {
	return parseEnum(operationNames, "operation", s)
}
func ParsePermission(s string) (Permission, error) {
	return parseEnum(permissionNames, "permission", s)
}

// implies reports whether an Allow ACL for operation granted covers a
// request for operation wanted: equal, All, or Kafka's implications
// (Describe ⇐ Read, Write, Delete, Alter; DescribeConfigs ⇐ AlterConfigs).
func implies(granted, wanted Operation) bool {
	if granted == wanted || granted == OpAll {
		return true
	}
	switch wanted {
	case OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

// errorCodes are Kafka's error codes for a denial, by resource type.
var errorCodes = map[ResourceType]int16{
	ResourceTopic:           29, // TOPIC_AUTHORIZATION_FAILED
	ResourceGroup:           30, // GROUP_AUTHORIZATION_FAILED
	ResourceCluster:         31, // CLUSTER_AUTHORIZATION_FAILED
	ResourceTransactionalID: 53, // TRANSACTIONAL_ID_AUTHORIZATION_FAILED
}

// ErrorCode is the Kafka error code a denial on a resource of type t
// answers: 29 topic, 30 group, 31 cluster (and anything else), 53
// transactional id.
func ErrorCode(t ResourceType) int16 {
	if c, ok := errorCodes[t]; ok {
		return c
	}
	return 31
}
