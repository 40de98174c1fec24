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

// epochLog is a log as truncation sees it: its epoch entries (epoch,
// start offset) and end offset.
type epochLog struct {
	epochs [][2]int64
	leo    record.Offset
	hw     record.Offset
}

// endFor is Kafka's LeaderEpochFileCache.endOffsetFor, over l.
func (l *epochLog) endFor(e record.Epoch) EpochEnd {
	if len(l.epochs) == 0 || int64(e) > l.epochs[len(l.epochs)-1][0] {
		return EpochEnd{record.NoEpoch, record.NoOffset}
	}
	if int64(e) == l.epochs[len(l.epochs)-1][0] {
		return EpochEnd{e, l.leo}
	}
	if int64(e) < l.epochs[0][0] {
		return EpochEnd{e, record.Offset(l.epochs[0][1])}
	}
	for i := len(l.epochs) - 1; i >= 0; i-- {
		if l.epochs[i][0] <= int64(e) {
			return EpochEnd{record.Epoch(l.epochs[i][0]), record.Offset(l.epochs[i+1][1])}
		}
	}
	panic("unreachable")
}

// truncate cuts l at o, as partlog's TruncateTo does to its epoch cache.
func (l *epochLog) truncate(o record.Offset) {
	l.leo = min(l.leo, o)
	for len(l.epochs) > 0 && l.epochs[len(l.epochs)-1][1] >= int64(l.leo) {
		l.epochs = l.epochs[:len(l.epochs)-1]
	}
}

// converge runs a follower's truncation loop against leader and returns
// where the follower's log ends.
func converge(t *testing.T, follower, leader *epochLog) record.Offset {
	t.Helper()
	for range 10 {
		latest := record.Epoch(follower.epochs[len(follower.epochs)-1][0])
		ans := leader.endFor(latest)
		to, again := Truncation(ans, follower.endFor(ans.Epoch), follower.leo, follower.hw)
		follower.truncate(to)
		if !again {
			return follower.leo
		}
	}
	t.Fatal("the truncation loop did not end")
	return 0
}

// TestTruncationKafkaVectors pins the follower's truncation against
// REPLICATION.md §2.8's double failover and KIP-101's two scenarios.
func TestTruncationKafkaVectors(t *testing.T) {
	t.Run("double failover", func(t *testing.T) {
		// C leads epoch 3 with the election-time entry (3,2), holding m0 m1 y z.
		c := &epochLog{epochs: [][2]int64{{1, 0}, {3, 2}}, leo: 4}
		a := &epochLog{epochs: [][2]int64{{1, 0}}, leo: 3, hw: 2}         // m0 m1 m2, all epoch 1
		b := &epochLog{epochs: [][2]int64{{1, 0}, {2, 2}}, leo: 3, hw: 2} // m0 m1 x(epoch 2)
		if got := converge(t, a, c); got != 2 {
			t.Fatalf("A truncated to %d, want 2 (drops only the uncommitted m2)", got)
		}
		if got := converge(t, b, c); got != 2 {
			t.Fatalf("B truncated to %d, want 2 (drops only the uncommitted x)", got)
		}
		// C before its first append in epoch 3, but with the election-time
		// entry: B's question about epoch 2 is answered from epoch 1's end.
		c = &epochLog{epochs: [][2]int64{{1, 0}, {3, 2}}, leo: 2}
		b = &epochLog{epochs: [][2]int64{{1, 0}, {2, 2}}, leo: 3, hw: 1}
		if got := converge(t, b, c); got != 2 {
			t.Fatalf("B truncated to %d against a leader with nothing in its epoch yet, want 2", got)
		}
	})
	t.Run("KIP-101 scenario 1: restart keeps an acknowledged record", func(t *testing.T) {
		// A leads epoch 0 with m0 m1, HW 2; B holds both but learned HW 1
		// only. Truncating B to its HW would lose m1 if B then led.
		a := &epochLog{epochs: [][2]int64{{0, 0}}, leo: 2, hw: 2}
		b := &epochLog{epochs: [][2]int64{{0, 0}}, leo: 2, hw: 1}
		if got := converge(t, b, a); got != 2 {
			t.Fatalf("B truncated to %d, want 2", got)
		}
	})
	t.Run("KIP-101 scenario 2: two hard failures do not leave two values at one offset", func(t *testing.T) {
		// Both hold m0 (epoch 0); A also m1, never replicated. Both crash; B
		// comes back first, leads epoch 1 and writes m2 at offset 1.
		b := &epochLog{epochs: [][2]int64{{0, 0}, {1, 1}}, leo: 2, hw: 1}
		a := &epochLog{epochs: [][2]int64{{0, 0}}, leo: 2, hw: 1}
		if got := converge(t, a, b); got != 1 {
			t.Fatalf("A truncated to %d, want 1 (m1 goes; m2 is fetched in its place)", got)
		}
	})
	t.Run("leader that knows no such epoch: fall back to the high watermark", func(t *testing.T) {
		to, again := Truncation(EpochEnd{record.NoEpoch, record.NoOffset}, EpochEnd{3, 10}, 10, 7)
		if to != 7 || again {
			t.Fatalf("got %d %v, want 7", to, again)
		}
	})
	t.Run("several epochs behind: ask again", func(t *testing.T) {
		// Follower wrote epochs 2 and 4 the leader never saw; the leader
		// answers epoch 4 with its epoch 3 ending at 30.
		f := &epochLog{epochs: [][2]int64{{1, 0}, {2, 20}, {4, 40}}, leo: 50, hw: 15}
		l := &epochLog{epochs: [][2]int64{{1, 0}, {3, 30}, {5, 45}}, leo: 60}
		if got := converge(t, f, l); got != 20 {
			t.Fatalf("truncated to %d, want 20 (epoch 1's end on the leader is 30, but the follower's epoch 2 starts at 20)", got)
		}
	})
}
