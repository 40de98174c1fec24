package console

import (
	"context"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/group"
)

// This file is the consumer-group views beyond a group's own page: who
// holds which partitions (decoded from the consumer protocol's
// assignment), the lag history the console samples, its chart, and the
// groups reading a topic.

const (
	// sampleEvery is how often the console samples every group's lag.
	sampleEvery = 10 * time.Second
	// historyLen bounds a group's samples: 15 minutes at sampleEvery.
	historyLen = 90
	// maxGroupsTracked bounds how many groups have a history; groups past
	// it (in listing order) are not sampled.
	maxGroupsTracked = 1000
)

// assignment decodes a member's assignment when the group speaks the
// consumer protocol (Kafka's ConsumerProtocolAssignment, read with kmsg's
// schema); anything else, or bytes that do not decode, is no assignment.
func assignment(protocolType string, b []byte) []TopicPartitions {
	out := []TopicPartitions{}
	if protocolType != "consumer" || len(b) == 0 {
		return out
	}
	var a kmsg.ConsumerMemberAssignment
	if a.ReadFrom(b) != nil {
		return out
	}
	for _, t := range a.Topics {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		out = append(out, TopicPartitions{Topic: t.Topic, Partitions: ps})
	}
	slices.SortFunc(out, func(a, b TopicPartitions) int { return strings.Compare(a.Topic, b.Topic) })
	return out
}

// LagSample is one sample of a group's lag.
type LagSample struct {
	Time              Time    `json:"time"`
	TimeMs            int64   `json:"time_ms"`
	TotalLag          int64   `json:"total_lag"`
	MaxTimeLagSeconds float64 `json:"max_time_lag_seconds"`
}

// lagHistory is the console's in-memory lag samples, per group, the newest
// historyLen of each; a group no longer listed is forgotten. It is the
// console's only state, lost on restart: a chart of the last minutes, not
// a metrics store (Prometheus is that).
type lagHistory struct {
	mu     sync.Mutex
	groups map[string][]LagSample
}

func (h *lagHistory) get(id string) []LagSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.groups[id])
}

// record adds one round of samples and forgets groups not in it.
func (h *lagHistory) record(round map[string]LagSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.groups == nil {
		h.groups = map[string][]LagSample{}
	}
	for id := range h.groups {
		if _, ok := round[id]; !ok {
			delete(h.groups, id)
		}
	}
	for id, s := range round {
		ss := append(h.groups[id], s)
		if len(ss) > historyLen {
			ss = slices.Clone(ss[len(ss)-historyLen:])
		}
		h.groups[id] = ss
	}
}

// sample takes one round: every group this node coordinates, at most
// maxGroupsTracked.
func (c *Console) sample(ctx context.Context) {
	now := time.Now()
	round := map[string]LagSample{}
	for _, l := range listGroups(ctx, c.b) {
		if len(round) == maxGroupsTracked {
			break
		}
		if lag, err := c.b.GroupLag(ctx, l.GroupID); err == nil {
			round[l.GroupID] = LagSample{Time: Time(now), TimeMs: now.UnixMilli(), TotalLag: lag.Total,
				MaxTimeLagSeconds: lag.MaxTimeLag.Seconds()}
		}
	}
	c.history.record(round)
}

// sampleLoop samples every sampleEvery until the broker closes.
func (c *Console) sampleLoop() {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-c.b.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), pageTimeout)
			c.sample(ctx)
			cancel()
		}
	}
}

// listGroups lists the groups this node coordinates.
func listGroups(ctx context.Context, b *broker.Broker) []group.GroupListing {
	var out []group.GroupListing
	for _, g := range b.Coordinators() {
		out = append(out, g.List(ctx, nil)...)
	}
	slices.SortFunc(out, func(a, b group.GroupListing) int { return strings.Compare(a.GroupID, b.GroupID) })
	return out
}

// lagChart draws a group's total lag over its samples as an inline SVG (no
// script, nothing fetched: the page's CSP allows it). Only numbers the
// console computed go into the markup.
func lagChart(samples []LagSample) template.HTML {
	const w, h, pad = 600.0, 120.0, 4.0
	if len(samples) < 2 {
		return template.HTML(fmt.Sprintf(`<p class="muted" id="lag-chart-empty">Collecting: the console samples lag every %s and keeps the last %d samples (%d so far).</p>`,
			sampleEvery, historyLen, len(samples)))
	}
	t0, t1 := samples[0].TimeMs, samples[len(samples)-1].TimeMs
	var top int64 = 1
	for _, s := range samples {
		top = max(top, s.TotalLag)
	}
	var pts strings.Builder
	for i, s := range samples {
		x := pad + (w-2*pad)*float64(s.TimeMs-t0)/float64(max(t1-t0, 1))
		y := h - pad - (h-2*pad)*float64(s.TotalLag)/float64(top)
		if i > 0 {
			pts.WriteByte(' ')
		}
		fmt.Fprintf(&pts, "%.1f,%.1f", x, y)
	}
	span := time.Duration(t1-t0) * time.Millisecond
	return template.HTML(fmt.Sprintf(`<figure id="lag-chart"><svg role="img" aria-label="total lag over the last %s" width="%g" height="%g" viewBox="0 0 %g %g" style="background:#fff;border:1px solid #e3e6ea">`+
		`<polyline fill="none" stroke="#2b6cb0" stroke-width="2" points="%s"/></svg>`+
		`<figcaption class="muted">Total lag, %d samples over %s: max <span id="lag-chart-max">%d</span>, now <span id="lag-chart-now">%d</span>.</figcaption></figure>`,
		span.Round(time.Second), w, h, w, h, pts.String(), len(samples), span.Round(time.Second), top, samples[len(samples)-1].TotalLag))
}

// TopicGroup is a group reading a topic: its committed partitions of the
// topic, or members assigned some.
type TopicGroup struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Partitions is how many of the topic's partitions it has committed
	// offsets for; Lag their total lag (0, and shown "–", with none).
	Partitions int   `json:"partitions"`
	Lag        int64 `json:"lag"`
	// Members is how many of its members are assigned partitions of it.
	Members int `json:"members"`
}

// topicGroups lists the groups this node coordinates that read topic.
func topicGroups(ctx context.Context, b *broker.Broker, topic string) []TopicGroup {
	out := []TopicGroup{}
	for _, l := range listGroups(ctx, b) {
		tg := TopicGroup{ID: l.GroupID, State: l.State.String()}
		if lag, err := b.GroupLag(ctx, l.GroupID); err == nil {
			for _, p := range lag.Partitions {
				if p.Topic == topic {
					tg.Partitions++
					tg.Lag += p.Lag
				}
			}
		}
		if g, err := b.GroupCoordinator(l.GroupID); err == nil {
			for _, d := range g.Describe(ctx, []string{l.GroupID}) {
				for _, m := range d.Members {
					if slices.ContainsFunc(assignment(d.ProtocolType, m.Assignment), func(tp TopicPartitions) bool { return tp.Topic == topic }) {
						tg.Members++
					}
				}
			}
		}
		if tg.Partitions > 0 || tg.Members > 0 {
			out = append(out, tg)
		}
	}
	return out
}
