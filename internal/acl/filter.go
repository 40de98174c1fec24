package acl

import (
	"errors"
	"fmt"
	"strings"
)

// PatternFilter selects resource patterns, as Kafka's ResourcePatternFilter:
//
//   - Type: a resource type, or ResourceAny for all.
//   - Name: nil matches every name.
//   - PatternType Literal or Prefixed: patterns of that type with exactly
//     this name. Any: patterns of either type with exactly this name. Match:
//     every pattern that would cover a resource with this name — the
//     literal name, the literal "*", and each prefix of the name.
type PatternFilter struct {
	Type        ResourceType
	Name        *string
	PatternType PatternType
}

// Matches reports whether f selects p.
func (f PatternFilter) Matches(p Pattern) bool {
	if f.Type != ResourceAny && f.Type != p.Type {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != p.PatternType {
		return false
	}
	if f.Name == nil {
		return true
	}
	if f.PatternType != PatternMatch {
		return *f.Name == p.Name
	}
	return p.Matches(Resource{p.Type, *f.Name})
}

// EntryFilter selects ACL entries, as Kafka's AccessControlEntryFilter: nil
// principal or host matches any; OpAny and PermissionAny match any. A
// principal filter of "User:*" selects only ACLs written for "User:*".
type EntryFilter struct {
	Principal  *Principal
	Host       *string
	Operation  Operation
	Permission Permission
}

// Matches reports whether f selects e.
func (f EntryFilter) Matches(e Entry) bool {
	return (f.Principal == nil || *f.Principal == e.Principal) &&
		(f.Host == nil || CanonicalHost(*f.Host) == e.Host) &&
		(f.Operation == OpAny || f.Operation == e.Operation) &&
		(f.Permission == PermissionAny || f.Permission == e.Permission)
}

// BindingFilter selects ACLs (DescribeAcls, DeleteAcls).
type BindingFilter struct {
	Pattern PatternFilter
	Entry   EntryFilter
}

// AnyBinding selects every ACL.
var AnyBinding = BindingFilter{
	Pattern: PatternFilter{Type: ResourceAny, PatternType: PatternAny},
	Entry:   EntryFilter{Operation: OpAny, Permission: PermissionAny},
}

// Matches reports whether f selects b.
func (f BindingFilter) Matches(b Binding) bool {
	return f.Pattern.Matches(b.Pattern) && f.Entry.Matches(b.Entry)
}

// ErrInvalidFilter is wrapped by Validate's errors (the wire answers
// INVALID_REQUEST).
var ErrInvalidFilter = errors.New("acl: invalid filter")

// Validate rejects a filter with an unknown field, as Kafka does before
// DescribeAcls and DeleteAcls: an unknown (or out-of-range) resource type,
// pattern type, operation or permission.
func (f BindingFilter) Validate() error {
	switch {
	case f.Pattern.Type != ResourceAny && !knownResourceType(f.Pattern.Type):
		return fmt.Errorf("%w: resource type %v", ErrInvalidFilter, f.Pattern.Type)
	case f.Pattern.PatternType < PatternAny || f.Pattern.PatternType > PatternPrefixed:
		return fmt.Errorf("%w: pattern type %v", ErrInvalidFilter, f.Pattern.PatternType)
	case f.Entry.Operation < OpAny || f.Entry.Operation > OpDescribeTokens:
		return fmt.Errorf("%w: operation %v", ErrInvalidFilter, f.Entry.Operation)
	case f.Entry.Permission < PermissionAny || f.Entry.Permission > Allow:
		return fmt.Errorf("%w: permission %v", ErrInvalidFilter, f.Entry.Permission)
	}
	return nil
}

func knownResourceType(t ResourceType) bool {
	switch t {
	case ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID, ResourceUser:
		return true
	}
	return false
}

// IndefiniteField names the first field that keeps f from describing
// exactly one ACL ("" when f names one), as Kafka's
// AclBindingFilter.findIndefiniteField (matchesAtMostOne is
// IndefiniteField() == "").
func (f BindingFilter) IndefiniteField() string {
	var why []string
	switch {
	case f.Pattern.Type == ResourceAny:
		why = append(why, "resource type is Any")
	case !knownResourceType(f.Pattern.Type):
		why = append(why, "resource type is unknown")
	}
	switch {
	case f.Pattern.Name == nil:
		why = append(why, "resource name is null")
	case f.Pattern.PatternType == PatternMatch:
		why = append(why, "pattern type is Match")
	case f.Pattern.PatternType != PatternLiteral && f.Pattern.PatternType != PatternPrefixed:
		why = append(why, "pattern type is "+f.Pattern.PatternType.String())
	}
	switch {
	case f.Entry.Principal == nil:
		why = append(why, "principal is null")
	case f.Entry.Host == nil:
		why = append(why, "host is null")
	case f.Entry.Operation == OpAny || f.Entry.Operation == OpUnknown:
		why = append(why, "operation is "+f.Entry.Operation.String())
	case f.Entry.Permission == PermissionAny || f.Entry.Permission == PermissionUnknown:
		why = append(why, "permission is "+f.Entry.Permission.String())
	}
	if len(why) == 0 {
		return ""
	}
	return why[0]
}

// Filter returns the filter that selects exactly b.
func (b Binding) Filter() BindingFilter {
	name, principal, host := b.Pattern.Name, b.Entry.Principal, b.Entry.Host
	return BindingFilter{
		Pattern: PatternFilter{Type: b.Pattern.Type, Name: &name, PatternType: b.Pattern.PatternType},
		Entry:   EntryFilter{Principal: &principal, Host: &host, Operation: b.Entry.Operation, Permission: b.Entry.Permission},
	}
}

// String renders f for logs.
func (f BindingFilter) String() string {
	str := func(s *string) string {
		if s == nil {
			return "<any>"
		}
		return *s
	}
	var principal *string
	if f.Entry.Principal != nil {
		p := string(*f.Entry.Principal)
		principal = &p
	}
	return strings.Join([]string{
		"(pattern=" + f.Pattern.Type.String() + ":" + f.Pattern.PatternType.String() + ":" + str(f.Pattern.Name),
		"principal=" + str(principal),
		"host=" + str(f.Entry.Host),
		"operation=" + f.Entry.Operation.String(),
		"permission=" + f.Entry.Permission.String() + ")",
	}, ", ")
}
