package acl

import (
	"slices"
	"strings"
)

// Set is an immutable set of ACLs with its lookup index. The zero Set is
// empty and usable. Changes return a new Set (With, Without), so a Set can
// be shared freely between goroutines and kept in an immutable metadata
// image.
type Set struct {
	bindings []Binding // canonical, sorted by compareBindings, no duplicates
	types    [resourceTypeSlots]typeIndex
}

// resourceTypeSlots covers the ResourceType numbers up to ResourceUser.
const resourceTypeSlots = int(ResourceUser) + 1

// typeIndex is the index of one resource type's ACLs: literal names
// (including "*") in a map, distinct prefixes sorted for binary search.
type typeIndex struct {
	literal  map[string][]Binding
	prefixes []string             // sorted, distinct
	prefixed map[string][]Binding // by prefix
}

// NewSet validates bindings and returns the set of them (duplicates
// collapse into one).
func NewSet(bindings []Binding) (*Set, error) {
	return (*Set)(nil).With(bindings...)
}

// Len is the number of ACLs in s.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.bindings)
}

// Bindings returns a copy of s's ACLs in their canonical order (resource
// type, pattern type, name, principal, host, operation, permission).
func (s *Set) Bindings() []Binding {
	if s == nil {
		return nil
	}
	return slices.Clone(s.bindings)
}

// Contains reports whether s holds b (after b's host is canonicalized).
func (s *Set) Contains(b Binding) bool {
	if s == nil {
		return false
	}
	_, ok := slices.BinarySearchFunc(s.bindings, b.canonical(), compareBindings)
	return ok
}

// With returns s plus bindings, each validated first: on an error nothing is
// added. Bindings already present are no-ops (CreateAcls treats a duplicate
// as success).
func (s *Set) With(bindings ...Binding) (*Set, error) {
	add := make([]Binding, 0, len(bindings))
	for _, b := range bindings {
		if err := b.Validate(); err != nil {
			return nil, err
		}
		add = append(add, b.canonical())
	}
	all := append(s.Bindings(), add...)
	return build(all), nil
}

// Without returns s minus every ACL that one of filters matches, and per
// filter the ACLs it matched. As in Kafka's AclControlManager every filter is
// matched against s as it was before the call, so an ACL two filters match is
// reported under both. A filter that fails Validate removes nothing and
// reports its error at its index in errs (errs is nil when all are valid).
func (s *Set) Without(filters ...BindingFilter) (next *Set, removed [][]Binding, errs []error) {
	removed = make([][]Binding, len(filters))
	gone := make(map[int]bool)
	for i, f := range filters {
		if err := f.Validate(); err != nil {
			if errs == nil {
				errs = make([]error, len(filters))
			}
			errs[i] = err
			continue
		}
		for j, b := range s.bindingsOrNil() {
			if f.Matches(b) {
				removed[i] = append(removed[i], b)
				gone[j] = true
			}
		}
	}
	if len(gone) == 0 {
		return s, removed, errs
	}
	keep := make([]Binding, 0, len(s.bindings)-len(gone))
	for j, b := range s.bindings {
		if !gone[j] {
			keep = append(keep, b)
		}
	}
	return build(keep), removed, errs
}

// Match returns the ACLs f matches, in canonical order (DescribeAcls). An
// invalid filter matches nothing; the caller validates first to answer
// with an error.
func (s *Set) Match(f BindingFilter) []Binding {
	var out []Binding
	for _, b := range s.bindingsOrNil() {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

func (s *Set) bindingsOrNil() []Binding {
	if s == nil {
		return nil
	}
	return s.bindings
}

// build sorts and deduplicates bindings (already valid and canonical) and
// indexes them.
func build(bindings []Binding) *Set {
	slices.SortFunc(bindings, compareBindings)
	bindings = slices.CompactFunc(bindings, func(a, b Binding) bool { return compareBindings(a, b) == 0 })
	s := &Set{bindings: bindings}
	for _, b := range bindings {
		t := &s.types[b.Pattern.Type]
		name := b.Pattern.Name
		if b.Pattern.PatternType == PatternLiteral {
			if t.literal == nil {
				t.literal = make(map[string][]Binding)
			}
			t.literal[name] = append(t.literal[name], b)
			continue
		}
		if t.prefixed == nil {
			t.prefixed = make(map[string][]Binding)
		}
		if _, ok := t.prefixed[name]; !ok {
			t.prefixes = append(t.prefixes, name)
		}
		t.prefixed[name] = append(t.prefixed[name], b)
	}
	for i := range s.types {
		slices.Sort(s.types[i].prefixes)
	}
	return s
}

// forEachAbout calls visit with each group of ACLs whose pattern covers r
// (the literal name, the literal "*", each prefix of the name), stopping
// when visit returns false.
//
// Prefixes are found without scanning: take the greatest stored prefix p
// that sorts at or before the target (at first the name itself). If p is a
// prefix of the name, it applies, and every shorter applicable prefix is a
// prefix of p minus its last byte, which becomes the target. If not, let c
// be the length p shares with the name: an applicable prefix longer than c
// would sort after p yet at or before the target, contradicting p's choice,
// so the name's first c bytes become the target. The target shrinks every
// step, so a check costs at most len(name) binary searches, and in practice
// one per applicable prefix plus one per divergence.
func (s *Set) forEachAbout(r Resource, visit func([]Binding) bool) {
	if s == nil || r.Type < 0 || int(r.Type) >= resourceTypeSlots {
		return
	}
	t := &s.types[r.Type]
	if bs, ok := t.literal[r.Name]; ok && !visit(bs) {
		return
	}
	if r.Name != Wildcard {
		if bs, ok := t.literal[Wildcard]; ok && !visit(bs) {
			return
		}
	}
	target := r.Name
	for len(target) > 0 && len(t.prefixes) > 0 {
		i, found := slices.BinarySearch(t.prefixes, target)
		if !found {
			i--
		}
		if i < 0 {
			return
		}
		p := t.prefixes[i]
		if strings.HasPrefix(r.Name, p) {
			if !visit(t.prefixed[p]) {
				return
			}
			target = p[:len(p)-1]
			continue
		}
		target = r.Name[:commonPrefixLen(p, r.Name)]
	}
}

func commonPrefixLen(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
