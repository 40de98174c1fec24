package consumer

import (
	"maps"
	"slices"
	"time"
)

// Expire is the timer step: it removes every member whose session ended
// without a heartbeat (a static member at StaticLeaveEpoch included) and
// fences every member that did not revoke within its rebalance timeout. Each
// removal bumps the group epoch, as a leave does; the target is recomputed at
// the next heartbeat. It returns the new group, the records, and the removed
// member ids in order; g is not modified. Deadlines equal to now have passed.
func (e *Engine) Expire(g *Group, now time.Time) (*Group, []Record, []string) {
	var gone []string
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		m := g.Members[id]
		session := !m.SessionDeadline.IsZero() && !now.Before(m.SessionDeadline)
		revoke := m.State == UnrevokedPartitions && !m.RebalanceDeadline.IsZero() && !now.Before(m.RebalanceDeadline)
		if session || revoke {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return g, nil, nil
	}
	g = g.Clone()
	var recs []Record
	for _, id := range gone {
		recs = append(recs, remove(g, id)...)
	}
	return g, recs, gone
}

// NextDeadline is the earliest session or rebalance deadline in g, the time
// the caller should next call Expire; zero if there is none.
func (g *Group) NextDeadline() time.Time {
	var next time.Time
	for _, m := range g.Members {
		for _, d := range []time.Time{m.SessionDeadline, m.RebalanceDeadline} {
			if !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next = d
			}
		}
	}
	return next
}

// Restore gives the members of a replayed group (which has no deadlines) a
// fresh session from now, and an unrevoked member a fresh rebalance timeout:
// the "restore members with remaining session time" choice on load, erring
// towards keeping members. The alternative, fencing them all, is Expire at a
// time past every deadline. g is not modified.
func (e *Engine) Restore(g *Group, now time.Time) *Group {
	g = g.Clone()
	for _, m := range g.Members {
		m.SessionDeadline = now.Add(e.sessionTimeout(m))
		m.RebalanceDeadline = time.Time{}
		if m.State == UnrevokedPartitions {
			m.RebalanceDeadline = now.Add(m.RebalanceTimeout)
		}
	}
	return g
}
