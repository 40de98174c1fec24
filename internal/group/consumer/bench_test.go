package consumer

import (
	"fmt"
	"testing"
)

// BenchmarkHeartbeat measures a keep-alive heartbeat of one member of a
// settled group of 100 members on 10 topics × 100 partitions: the cost every
// member pays every heartbeat interval.
func BenchmarkHeartbeat(b *testing.B) {
	topics := map[string]int32{}
	var names []string
	for i := range 10 {
		name := fmt.Sprintf("t%d", i)
		topics[name] = 100
		names = append(names, name)
	}
	h := newHarness(b, Config{}, topics)
	for i := range 100 {
		h.ok(joinReq(fmt.Sprintf("m%03d", i), names...))
	}
	settle(b, h)
	m := h.g.Members["m050"]
	req := beatReq(m.ID, m.Epoch, nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, _, _ := h.e.Heartbeat(h.g, req, h.now, topics)
		if resp.Code != None {
			b.Fatal(resp)
		}
	}
}
