package console

import (
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

// TopicRecords is a page of a topic's records over all its partitions:
// each partition read from its own position, merged by timestamp.
type TopicRecords struct {
	Topic string `json:"topic"`
	Limit int    `json:"limit"`
	// SeekTimestamp is set when the page started every partition at a
	// timestamp.
	SeekTimestamp   *Time             `json:"seek_timestamp,omitempty"`
	SeekTimestampMs int64             `json:"seek_timestamp_ms,omitempty"`
	Filter          *Filter           `json:"filter,omitempty"`
	Parts           []PartitionCursor `json:"partitions"`
	// Next is the from= of the following page: partition:offset pairs.
	Next    string      `json:"next"`
	Records []RecordRow `json:"records"`
}

// PartitionCursor is where one partition's part of the page started and
// where the next page starts in it; Scanned is how far it looked (the last
// offset read, From−1: none). Remote partitions (led by another node) are
// listed and skipped.
type PartitionCursor struct {
	Partition int32 `json:"partition"`
	Local     bool  `json:"local"`
	LogStart  int64 `json:"log_start_offset"`
	End       int64 `json:"high_watermark"`
	From      int64 `json:"from"`
	Next      int64 `json:"next"`
	Scanned   int64 `json:"scanned_to"`
}

// topicRecords reads up to limit matching records of each partition from
// its position (from=, else the timestamp's offset, else its log start;
// with a filter at most maxScan offsets over all partitions), then takes
// the limit earliest by timestamp, each partition in offset order, so the
// next page resumes every partition just past what this one showed.
func topicRecords(b *broker.Broker, topic string, rp recordsParams) (TopicRecords, error) {
	t, err := b.Topic(topic)
	if err != nil {
		return TopicRecords{}, fmt.Errorf("%w: topic %q", errNotFound, topic)
	}
	out := TopicRecords{Topic: topic, Limit: rp.limit, Records: []RecordRow{}}
	if rp.filter.active() {
		f := rp.filter
		f.ScanLimit = maxScan
		out.Filter = &f
	}
	if rp.timestamp >= 0 && rp.positions == nil {
		ts := Time(time.UnixMilli(rp.timestamp))
		out.SeekTimestamp, out.SeekTimestampMs = &ts, rp.timestamp
	}
	n := int(t.Partitions())
	heads := make([][]RecordRow, n)
	for i := range n {
		c, rows, err := readCursor(b, t, int32(i), rp, out.Filter, max(maxScan/int64(n), int64(rp.limit)))
		if err != nil {
			return TopicRecords{}, err
		}
		out.Parts, heads[i] = append(out.Parts, c), rows
	}
	// Merge: the earliest head by (timestamp, partition) until the limit.
	taken := make([]int, n)
	for len(out.Records) < rp.limit {
		best := -1
		for i := range n {
			if taken[i] < len(heads[i]) && (best < 0 || heads[i][taken[i]].TimestampMs < heads[best][taken[best]].TimestampMs) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out.Records = append(out.Records, heads[best][taken[best]])
		taken[best]++
	}
	next := make([]string, 0, n)
	for i := range out.Parts {
		c := &out.Parts[i]
		if taken[i] < len(heads[i]) { // resume at the first record not shown; else past the scan
			c.Next = heads[i][taken[i]].Offset
		}
		if c.Local {
			next = append(next, fmt.Sprintf("%d:%d", c.Partition, c.Next))
		}
	}
	out.Next = strings.Join(next, ",")
	return out, nil
}

// readCursor reads partition i's candidates for a topic page.
func readCursor(b *broker.Broker, t *broker.Topic, i int32, rp recordsParams, f *Filter, scan int64) (PartitionCursor, []RecordRow, error) {
	c := PartitionCursor{Partition: i}
	p, err := t.Partition(broker.PartitionID(i))
	if err != nil {
		return c, nil, nil // led elsewhere
	}
	c.Local, c.LogStart, c.End = true, int64(p.LogStartOffset()), int64(p.HighWatermark())
	from := c.LogStart
	if rp.positions != nil {
		from = rp.positions[i] // a partition not named (new since) starts at 0: its log start
	} else if rp.timestamp >= 0 {
		s, err := seek(p, rp.timestamp)
		if err != nil {
			return c, nil, err
		}
		from = s.Offset
	}
	c.From = min(max(from, c.LogStart), c.End)
	stop := c.End
	if f != nil {
		stop = min(c.End, c.From+scan)
	}
	var rows []RecordRow
	c.Next, err = scanPartition(p, c.From, stop, func(r record.Record) bool {
		if f != nil && !f.match(r) {
			return true
		}
		if len(rows) >= rp.limit {
			return false
		}
		row := recordRow(t.Name, i, r, maxValueShown)
		row.decodeValue(b, r.Value)
		rows = append(rows, row)
		return true
	}, nil)
	c.Scanned = c.Next - 1
	return c, rows, err
}

// Href is the link to the topic's records page from positions from (with
// the limit and the filter).
func (tr TopicRecords) Href(from string) template.URL {
	v := urlValues(tr.Limit, tr.Filter)
	v.Set("from", from)
	return template.URL("/topics/" + url.PathEscape(tr.Topic) + "/records?" + v.Encode())
}

// ScannedSummary says how far a filtered topic page looked, per partition.
func (tr TopicRecords) ScannedSummary() string {
	parts := make([]string, 0, len(tr.Parts))
	for _, c := range tr.Parts {
		if c.Local {
			parts = append(parts, fmt.Sprintf("partition %d: offsets %d–%d of %d–%d", c.Partition, c.From, c.Scanned, c.LogStart, c.End))
		}
	}
	return strings.Join(parts, "; ")
}

// urlValues is a records query's limit and filter.
func urlValues(limit int, f *Filter) url.Values {
	v := url.Values{}
	v.Set("limit", strconv.Itoa(limit))
	if f != nil {
		for k, s := range map[string]string{"key": f.Key, "value": f.Value, "header": f.Header} {
			if s != "" {
				v.Set(k, s)
			}
		}
	}
	return v
}
