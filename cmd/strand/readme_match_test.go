package main

import "testing"

// TestReadmeMatchLines: how the README test reads an expected line — a
// whole output line, blanks collapsed, "…" for anything (an empty table
// cell included), in order.
func TestReadmeMatchLines(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want []string
		miss string
	}{
		{out: "0  0   payments-0@1       not json  json: bad", want: []string{"0 0 payments-0@1 … not json json: …"}},
		{out: `time=x level=INFO msg="serving on a, data in /t/strand-data" listen=a`, want: []string{`time=… level=INFO msg="serving on a, data in …/strand-data" …`}},
		{out: "produced 1000 records in 0.31 s (3200 rec/s)", want: []string{"produced 1000 records in … s (…)"}},
		{out: "produced 100 records", want: []string{"produced 1000 records"}, miss: "produced 1000 records"},
		{out: "topic t: 6 partitions, 464 records", want: []string{"topic t: 6 partitions, 600 records"}, miss: "topic t: 6 partitions, 600 records"},
		{out: "b\na", want: []string{"a", "b"}, miss: "b"},
		{out: "x a y", want: []string{"a"}, miss: "a"},
		{out: "… a", want: []string{"… a"}},
		{out: "a", want: []string{"… a", "…"}, miss: "…"},
	} {
		if got := matchLines(tc.out, tc.want); got != tc.miss {
			t.Errorf("matchLines(%q, %q) = %q, want %q", tc.out, tc.want, got, tc.miss)
		}
	}
}
