package bench

import (
	"slices"
	"testing"
)

// TestRunOrderBothWays: over two runs every ordered pair of neighbouring
// peers occurs both ways, and each run holds every peer once.
func TestRunOrderBothWays(t *testing.T) {
	peers := []string{"strand", "kfake", "null"}
	follows := map[[2]string]bool{}
	for run := 1; run <= 6; run++ {
		order := runOrder(peers, run)
		sorted := slices.Sorted(slices.Values(order))
		if !slices.Equal(sorted, []string{"kfake", "null", "strand"}) {
			t.Fatalf("run %d: order %v is not every peer once", run, order)
		}
		for i := 1; i < len(order); i++ {
			follows[[2]string{order[i-1], order[i]}] = true
		}
	}
	for _, a := range peers {
		for _, b := range peers {
			if a != b && !follows[[2]string{a, b}] {
				t.Errorf("%s never runs right after %s in six runs", b, a)
			}
		}
	}
	if got := runOrder(peers, 2); !slices.Equal(got, []string{"null", "kfake", "strand"}) {
		t.Errorf("run 2 = %v, want run 1 backwards", got)
	}
}
