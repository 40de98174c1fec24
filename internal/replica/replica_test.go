package replica

import (
	"testing"
	"time"

	"github.com/strandmq/strand/internal/record"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// TestFetchedCaughtUpTime: Kafka's rule for when a follower was last
// caught up, fetch by fetch.
func TestFetchedCaughtUpTime(t *testing.T) {
	var f Follower
	steps := []struct {
		offset, leaderLEO record.Offset
		now               int
		want              int // LastCaughtUp, ms after t0; -1: never
	}{
		{0, 10, 100, -1},   // behind, no earlier fetch: never caught up
		{10, 20, 200, 100}, // reached what the leader had at the last fetch (10): caught up as of it
		{15, 30, 300, 100}, // short of what the leader had at the last fetch (20): unchanged
		{30, 30, 400, 400}, // at the leader's end: caught up now
		{35, 60, 500, 400}, // reached the last fetch's end (30): as of 400, no later than known
		{60, 60, 350, 400}, // at the end, but stamped before a known catch-up: never moves back
	}
	for i, s := range steps {
		f.Fetched(s.offset, s.leaderLEO, at(s.now))
		want := time.Time{}
		if s.want >= 0 {
			want = at(s.want)
		}
		if !f.LastCaughtUp.Equal(want) || f.LEO != s.offset {
			t.Fatalf("step %d (fetch at %d, leader end %d, %d ms): LEO %d, last caught up %v; want %d, %v",
				i, s.offset, s.leaderLEO, s.now, f.LEO, f.LastCaughtUp.Sub(t0), s.offset, want.Sub(t0))
		}
	}
}

// TestHighWatermark: the least end offset of the leader and the followers
// that count, never backwards, frozen below min.insync.replicas.
func TestHighWatermark(t *testing.T) {
	lag := 30 * time.Second
	now := at(100_000)
	fresh, stale := at(90_000), at(10_000) // within and beyond lag
	cases := []struct {
		name string
		in   HighWatermarkInput
		want record.Offset
	}{
		{"alone", HighWatermarkInput{Current: 3, LeaderLEO: 10, CommittedISR: 1, Replicas: 1, MinISR: 1}, 10},
		{"the slowest ISR member bounds it",
			HighWatermarkInput{Current: 0, LeaderLEO: 10, CommittedISR: 3, Replicas: 3, MinISR: 2, Followers: []Follower{
				{ID: 2, LEO: 7, InISR: true, Eligible: true, LastCaughtUp: fresh},
				{ID: 3, LEO: 9, InISR: true, Eligible: true, LastCaughtUp: fresh}}}, 7},
		{"never backwards",
			HighWatermarkInput{Current: 8, LeaderLEO: 10, CommittedISR: 2, Replicas: 2, MinISR: 1, Followers: []Follower{
				{ID: 2, LEO: 5, InISR: true, Eligible: true}}}, 8},
		{"a lagging non-member does not hold it back",
			HighWatermarkInput{Current: 0, LeaderLEO: 10, CommittedISR: 2, Replicas: 3, MinISR: 1, Followers: []Follower{
				{ID: 2, LEO: 10, InISR: true, Eligible: true},
				{ID: 3, LEO: 2, Eligible: true, LastCaughtUp: stale}}}, 10},
		{"a caught-up eligible non-member counts (it is rejoining)",
			HighWatermarkInput{Current: 0, LeaderLEO: 10, CommittedISR: 2, Replicas: 3, MinISR: 1, Now: now, Lag: lag, Followers: []Follower{
				{ID: 2, LEO: 10, InISR: true, Eligible: true},
				{ID: 3, LEO: 6, Eligible: true, LastCaughtUp: fresh}}}, 6},
		{"a caught-up but fenced non-member does not",
			HighWatermarkInput{Current: 0, LeaderLEO: 10, CommittedISR: 2, Replicas: 3, MinISR: 1, Now: now, Lag: lag, Followers: []Follower{
				{ID: 2, LEO: 10, InISR: true, Eligible: true},
				{ID: 3, LEO: 6, LastCaughtUp: fresh}}}, 10},
		{"a pending join counts at once",
			HighWatermarkInput{Current: 0, LeaderLEO: 10, CommittedISR: 1, Replicas: 2, MinISR: 1, Followers: []Follower{
				{ID: 2, LEO: 4, PendingJoin: true, Eligible: true}}}, 4},
		{"a pending leave still counts",
			HighWatermarkInput{Current: 0, LeaderLEO: 10, CommittedISR: 2, Replicas: 2, MinISR: 1, Followers: []Follower{
				{ID: 2, LEO: 4, InISR: true, PendingLeave: true}}}, 4},
		{"frozen below min.insync.replicas",
			HighWatermarkInput{Current: 5, LeaderLEO: 10, CommittedISR: 1, Replicas: 3, MinISR: 2}, 5},
		{"min.insync.replicas above the replica count is capped",
			HighWatermarkInput{Current: 5, LeaderLEO: 10, CommittedISR: 1, Replicas: 1, MinISR: 2}, 10},
	}
	for _, c := range cases {
		if c.in.Now.IsZero() {
			c.in.Now, c.in.Lag = now, lag
		}
		if got := HighWatermark(c.in); got != c.want {
			t.Errorf("%s: high watermark %d, want %d", c.name, got, c.want)
		}
	}
}

// TestISRChanges: Kafka's conditions to remove a member and add one.
func TestISRChanges(t *testing.T) {
	lag := 30 * time.Second
	now := at(100_000)
	fresh, stale := at(90_000), at(10_000)
	leave := []struct {
		name string
		f    Follower
		want bool
	}{
		{"a lagging member leaves", Follower{InISR: true, LEO: 5, LastCaughtUp: stale}, true},
		{"a member caught up within lag stays", Follower{InISR: true, LEO: 5, LastCaughtUp: fresh}, false},
		{"a member at the end stays (however long since)", Follower{InISR: true, LEO: 10, LastCaughtUp: stale}, false},
		{"not while a change is in flight", Follower{InISR: true, PendingLeave: true, LEO: 5, LastCaughtUp: stale}, false},
		{"a non-member cannot leave", Follower{LEO: 5, LastCaughtUp: stale}, false},
	}
	for _, c := range leave {
		if got := ShouldLeave(c.f, 10, now, lag); got != c.want {
			t.Errorf("%s: ShouldLeave = %v", c.name, got)
		}
	}
	join := []struct {
		name string
		f    Follower
		want bool
	}{
		{"caught up to the high watermark and into the epoch", Follower{LEO: 8, Eligible: true}, true},
		{"short of the high watermark", Follower{LEO: 6, Eligible: true}, false},
		{"at the high watermark but before the leader epoch's start", Follower{LEO: 7, Eligible: true}, false},
		{"not eligible (fenced, shutting down)", Follower{LEO: 9}, false},
		{"already joining", Follower{LEO: 9, Eligible: true, PendingJoin: true}, false},
		{"already a member", Follower{LEO: 9, Eligible: true, InISR: true}, false},
	}
	for _, c := range join {
		if got := ShouldJoin(c.f, 7, 8); got != c.want {
			t.Errorf("%s: ShouldJoin = %v", c.name, got)
		}
	}
}
