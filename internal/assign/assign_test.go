package assign

import (
	"reflect"
	"testing"
)

// p is shorthand for a partition in tests.
func p(topic string, partition int32) Partition { return Partition{topic, partition} }

// TestKafkaDocumentedExamples pins the examples in the Javadoc of Kafka's
// RangeAssignor, RoundRobinAssignor and StickyAssignor.
func TestKafkaDocumentedExamples(t *testing.T) {
	t.Parallel()
	two := map[string]int32{"t0": 3, "t1": 3}
	both := []Member{
		{ID: "C0", Topics: []string{"t0", "t1"}},
		{ID: "C1", Topics: []string{"t0", "t1"}},
	}
	threeTopics := map[string]int32{"t0": 1, "t1": 2, "t2": 3}
	uneven := []Member{
		{ID: "C0", Topics: []string{"t0"}},
		{ID: "C1", Topics: []string{"t0", "t1"}},
		{ID: "C2", Topics: []string{"t0", "t1", "t2"}},
	}
	tests := []struct {
		name     string
		assignor Assignor
		members  []Member
		parts    map[string]int32
		want     Assignment
	}{
		{"range", Range{}, both, two, Assignment{
			"C0": {p("t0", 0), p("t0", 1), p("t1", 0), p("t1", 1)},
			"C1": {p("t0", 2), p("t1", 2)},
		}},
		{"roundrobin", RoundRobin{}, both, two, Assignment{
			"C0": {p("t0", 0), p("t0", 2), p("t1", 1)},
			"C1": {p("t0", 1), p("t1", 0), p("t1", 2)},
		}},
		{"roundrobin uneven subscriptions", RoundRobin{}, uneven, threeTopics, Assignment{
			"C0": {p("t0", 0)},
			"C1": {p("t1", 0)},
			"C2": {p("t1", 1), p("t2", 0), p("t2", 1), p("t2", 2)},
		}},
		{"sticky uneven subscriptions", Sticky{}, uneven, threeTopics, Assignment{
			"C0": {p("t0", 0)},
			"C1": {p("t1", 0), p("t1", 1)},
			"C2": {p("t2", 0), p("t2", 1), p("t2", 2)},
		}},
		{"sticky uneven subscriptions, C0 leaves", Sticky{}, []Member{
			{ID: "C1", Topics: []string{"t0", "t1"}, Owned: []Partition{p("t1", 0), p("t1", 1)}, Generation: 1},
			{ID: "C2", Topics: []string{"t0", "t1", "t2"}, Owned: []Partition{p("t2", 0), p("t2", 1), p("t2", 2)}, Generation: 1},
		}, threeTopics, Assignment{
			"C1": {p("t0", 0), p("t1", 0), p("t1", 1)},
			"C2": {p("t2", 0), p("t2", 1), p("t2", 2)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.assignor.Assign(tt.members, tt.parts); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestStickyKafkaExampleMemberLeaves follows the StickyAssignor Javadoc:
// three members, four topics of two partitions; when C1 leaves, C0 and C2
// keep everything they had and split C1's partitions.
func TestStickyKafkaExampleMemberLeaves(t *testing.T) {
	t.Parallel()
	parts := map[string]int32{"t0": 2, "t1": 2, "t2": 2, "t3": 2}
	topics := []string{"t0", "t1", "t2", "t3"}
	var members []Member
	for _, id := range []string{"C0", "C1", "C2"} {
		members = append(members, Member{ID: id, Topics: topics})
	}
	first := Sticky{}.Assign(members, parts)
	for _, id := range []string{"C0", "C1", "C2"} {
		if n := len(first[id]); n < 2 || n > 3 {
			t.Fatalf("%s got %d partitions, want 2 or 3: %v", id, n, first)
		}
	}
	left := []Member{
		{ID: "C0", Topics: topics, Owned: first["C0"], Generation: 1},
		{ID: "C2", Topics: topics, Owned: first["C2"], Generation: 1},
	}
	second := Sticky{}.Assign(left, parts)
	for _, id := range []string{"C0", "C2"} {
		if len(second[id]) != 4 || !subset(first[id], second[id]) {
			t.Errorf("%s: %v → %v, want a superset of 4", id, first[id], second[id])
		}
	}
	if got, want := Moves(first, second), len(first["C1"]); got != want {
		t.Errorf("Moves = %d, want %d (only C1's partitions)", got, want)
	}
}

func subset(small, big []Partition) bool {
	set := make(map[Partition]bool, len(big))
	for _, q := range big {
		set[q] = true
	}
	for _, q := range small {
		if !set[q] {
			return false
		}
	}
	return true
}

func TestByName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"range", "roundrobin", "sticky", "cooperative-sticky"} {
		a, ok := ByName(name)
		if !ok || a.Name() != name {
			t.Errorf("ByName(%q) = %v, %v", name, a, ok)
		}
	}
	for _, name := range []string{"", "Range", "cooperative_sticky", "uniform"} {
		if a, ok := ByName(name); ok {
			t.Errorf("ByName(%q) = %v, want none", name, a)
		}
	}
}

func TestMovesAndOwners(t *testing.T) {
	t.Parallel()
	before := Assignment{
		"a": {p("t", 0), p("t", 1)},
		"b": {p("t", 2)},
		"c": {p("t", 3)}, // c leaves
	}
	after := Assignment{
		"a": {p("t", 0)},
		"b": {p("t", 1), p("t", 2), p("t", 3)},
		"d": {p("t", 4)}, // a new partition: not a move
	}
	if got := Moves(before, after); got != 2 { // t/1 from a, t/3 from the departed c
		t.Errorf("Moves = %d, want 2", got)
	}
	// Withheld (present only in before) is not a move either.
	if got := Moves(before, Assignment{"a": {p("t", 0)}}); got != 0 {
		t.Errorf("Moves to a shrunken assignment = %d, want 0", got)
	}
	if got := Moves(before, before); got != 0 {
		t.Errorf("Moves(x, x) = %d", got)
	}
	// A partition listed twice (invalid) resolves to the smallest id.
	owners := Owners(Assignment{"z": {p("t", 0)}, "y": {p("t", 0), p("t", 1)}})
	if want := (map[Partition]string{p("t", 0): "y", p("t", 1): "y"}); !reflect.DeepEqual(owners, want) {
		t.Errorf("Owners = %v, want %v", owners, want)
	}
}

// TestStaticMembersSortFirst pins Kafka's MemberInfo order: members with a
// group.instance.id come first, by instance id, whatever their member id.
func TestStaticMembersSortFirst(t *testing.T) {
	t.Parallel()
	members := []Member{
		{ID: "a-dynamic", Topics: []string{"t"}},
		{ID: "z-restarted", InstanceID: "host-1", Topics: []string{"t"}},
		{ID: "m", InstanceID: "host-2", Topics: []string{"t"}},
	}
	got := Range{}.Assign(members, map[string]int32{"t": 3})
	want := Assignment{"z-restarted": {p("t", 0)}, "m": {p("t", 1)}, "a-dynamic": {p("t", 2)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestEdgeCases(t *testing.T) {
	t.Parallel()
	for _, a := range allAssignors {
		t.Run(a.Name(), func(t *testing.T) {
			t.Parallel()
			if got := a.Assign(nil, map[string]int32{"t": 3}); len(got) != 0 {
				t.Errorf("no members: %v", got)
			}
			members := []Member{
				{ID: "x", Topics: []string{"missing", "empty", "t", "t"}, Owned: []Partition{p("t", 9), p("t", -1), p("missing", 0)}},
				{ID: "y"},
			}
			got := a.Assign(members, map[string]int32{"t": 2, "empty": 0, "other": 5})
			want := Assignment{"x": {p("t", 0), p("t", 1)}, "y": {}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestDuplicateMemberIDPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("duplicate member ids did not panic")
		}
	}()
	Sticky{}.Assign([]Member{{ID: "x"}, {ID: "x", InstanceID: "i"}}, nil)
}

// TestStickyGenerationConflicts pins how two claims to one partition resolve.
func TestStickyGenerationConflicts(t *testing.T) {
	t.Parallel()
	parts := map[string]int32{"t": 2}
	topics := []string{"t"}
	// b's claim to t/0 is newer; a keeps t/1.
	got := Sticky{}.Assign([]Member{
		{ID: "a", Topics: topics, Owned: []Partition{p("t", 0), p("t", 1)}, Generation: 3},
		{ID: "b", Topics: topics, Owned: []Partition{p("t", 0)}, Generation: 4},
	}, parts)
	if want := (Assignment{"a": {p("t", 1)}, "b": {p("t", 0)}}); !reflect.DeepEqual(got, want) {
		t.Errorf("higher generation: got %v, want %v", got, want)
	}
	// Cooperative: b's claim wins, but a still reports t/0, so it is withheld
	// from b until a has revoked it.
	got = CooperativeSticky{}.Assign([]Member{
		{ID: "a", Topics: topics, Owned: []Partition{p("t", 0), p("t", 1)}, Generation: 3},
		{ID: "b", Topics: topics, Owned: []Partition{p("t", 0)}, Generation: 4},
	}, parts)
	if want := (Assignment{"a": {p("t", 1)}, "b": {}}); !reflect.DeepEqual(got, want) {
		t.Errorf("cooperative higher generation: got %v, want %v", got, want)
	}
}

var allAssignors = []Assignor{Range{}, RoundRobin{}, Sticky{}, CooperativeSticky{}}
