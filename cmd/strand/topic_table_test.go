package main

import (
	"strings"
	"testing"
)

// TestCLITopicTable: "strand topic table" prints the latest value of every
// key over both partitions, without tombstoned keys, as a table and as JSON.
func TestCLITopicTable(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	addr := b.Addr()
	if err := b.CreateTopic("users", 2, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	offsets := map[string]int64{}
	parts := map[string]int32{}
	for _, kv := range [][2]string{{"alice", "1"}, {"bob", "2"}, {"alice", "3"}, {"carol", "4"}, {"bob", ""}, {"dave", "x\ty"}} {
		var v []byte
		if kv[1] != "" {
			v = []byte(kv[1])
		}
		p, o, err := b.Produce("users", []byte(kv[0]), v)
		if err != nil {
			t.Fatal(err)
		}
		offsets[kv[0]], parts[kv[0]] = o, p
	}
	if _, _, err := b.Produce("users", nil, []byte("keyless")); err == nil || !strings.Contains(err.Error(), "without a key") {
		t.Fatalf("a keyless record on a compacted topic: %v, want refused", err)
	}

	var rows []tableRow
	decodeJSON(t, ok(t, addr, "", "topic", "table", "users", "--output", "json").stdout, &rows)
	want := []tableRow{
		{Key: "alice", Value: "3", Partition: parts["alice"], Offset: offsets["alice"]},
		{Key: "carol", Value: "4", Partition: parts["carol"], Offset: offsets["carol"]},
		{Key: "dave", Value: "x\ty", Partition: parts["dave"], Offset: offsets["dave"]},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Fatalf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}

	out := ok(t, addr, "", "topic", "table", "users").stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "KEY") ||
		!strings.HasPrefix(lines[1], "alice  ") || !strings.Contains(lines[3], `"x\ty"`) {
		t.Fatalf("table:\n%s", out)
	}
	if col := strings.Index(lines[0], "VALUE"); strings.Index(lines[1], "3") != col {
		t.Fatalf("columns not aligned:\n%s", out)
	}

	if r := runCLI(t, addr, "", "topic", "table", "nope"); r.code != exitError {
		t.Fatalf("unknown topic: exit %d\n%s", r.code, r.stderr)
	}
}
