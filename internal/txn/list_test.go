package txn

import (
	"slices"
	"testing"

	"github.com/strandmq/strand/internal/producer"
)

func TestList(t *testing.T) {
	t.Parallel()
	w := newWorld(t, TV2)
	on := base(Ongoing) // pid 100, started at 10
	w.seed(on)
	em := base(Empty)
	em.TransactionalID, em.ProducerID = "e", 200
	w.seed(em)
	ids := func(ms []Metadata) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.TransactionalID)
		}
		return out
	}
	cases := []struct {
		name string
		f    ListFilter
		want []string
	}{
		{"all", ListFilter{DurationMs: -1}, []string{"e", "t"}},
		{"by pid", ListFilter{ProducerIDs: []producer.ID{200}, DurationMs: -1}, []string{"e"}},
		{"by state", ListFilter{States: []string{"Ongoing"}, DurationMs: -1}, []string{"t"}},
		{"only an unknown state matches nothing", ListFilter{States: []string{"Running"}, DurationMs: -1}, nil},
		// now 1010: t started 1000 ms ago; Empty's start -1 is 1011 ms ago
		{"duration: strictly longer", ListFilter{DurationMs: 1000}, []string{"e"}},
		{"duration: shorter", ListFilter{DurationMs: 999}, []string{"e", "t"}},
	}
	for _, c := range cases {
		got, _ := w.c.List(c.f, 1010)
		if !slices.Equal(ids(got), c.want) {
			t.Errorf("%s: %v, want %v", c.name, ids(got), c.want)
		}
	}
	if _, unknown := w.c.List(ListFilter{States: []string{"Ongoing", "Running"}, DurationMs: -1}, 0); !slices.Equal(unknown, []string{"Running"}) {
		t.Errorf("unknown filters %v", unknown)
	}
	if s, ok := StateByName("PrepareEpochFence"); !ok || s != PrepareEpochFence {
		t.Errorf("StateByName: %v %v", s, ok)
	}
}
