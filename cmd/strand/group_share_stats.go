package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sharePartitionStats is one share-partition of a share group as the
// console's /api/v1/groups/{group} reports it: no Kafka API carries the
// in-flight window, the delivery counts or the locks.
type sharePartitionStats struct {
	Topic             string         `json:"topic"`
	Partition         int32          `json:"partition"`
	Start             int64          `json:"start_offset"`
	End               int64          `json:"end_offset"`
	InFlight          int            `json:"in_flight"`
	Available         int            `json:"available"`
	Acquired          int            `json:"acquired"`
	Deliveries        map[string]int `json:"delivery_counts"`
	OldestLockSeconds float64        `json:"oldest_lock_seconds"`
	ByMember          map[string]int `json:"acquired_by_member"`
}

// shareStats reads a share group's share-partitions from the console.
func shareStats(ctx context.Context, console, group string) ([]sharePartitionStats, error) {
	u := "http://" + console + "/api/v1/groups/" + url.PathEscape(group)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("share-partitions of %q: %w (is --console the broker's --console-listen?)", group, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("share-partitions of %q: %s from %s", group, resp.Status, u)
	}
	var body struct {
		Type            string                `json:"type"`
		SharePartitions []sharePartitionStats `json:"share_partitions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("share-partitions of %q: %w", group, err)
	}
	if body.Type != "share" {
		return nil, fmt.Errorf("share-partitions of %q: the console at %s describes a %s group of that name", group, console, body.Type)
	}
	if body.SharePartitions == nil {
		body.SharePartitions = []sharePartitionStats{}
	}
	return body.SharePartitions, nil
}

// addShareStats fills in the share groups' share-partitions; a console it
// cannot reach is noted in the description, not an error (the rest of the
// description came from the Kafka APIs).
func addShareStats(ctx context.Context, console string, out []groupDescription) {
	for i := range out {
		if out[i].Type != "share" {
			continue
		}
		sp, err := shareStats(ctx, console, out[i].Group)
		if err != nil {
			out[i].ShareStatsNote = err.Error()
			continue
		}
		out[i].SharePartitions = sp
	}
}

// printShareStats prints a share group's share-partitions: the window,
// what is acquired, the delivery-count histogram and the oldest lock.
func printShareStats(w io.Writer, d groupDescription) error {
	fmt.Fprintln(w)
	if d.ShareStatsNote != "" {
		_, err := fmt.Fprintf(w, "share-partitions: not shown: %s\n", d.ShareStatsNote)
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTART\tEND\tIN FLIGHT\tACQUIRED\tDELIVERIES\tOLDEST LOCK")
	for _, p := range d.SharePartitions {
		lock := "-"
		if p.Acquired > 0 {
			lock = (time.Duration(p.OldestLockSeconds * float64(time.Second))).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", p.Topic, p.Partition, p.Start, p.End, p.InFlight, p.Acquired, formatDeliveries(p.Deliveries), lock)
	}
	return tw.Flush()
}

// formatDeliveries renders {"1": 40, "2": 3} as "1×40 2×3" (delivery
// count × offsets), by count.
func formatDeliveries(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"×"+strconv.Itoa(m[k]))
	}
	return strings.Join(parts, " ")
}
