package console

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/schemareg"
)

// This file is the records pages: one partition's records from an offset
// or a timestamp, paged both ways, filtered over a bounded scan, with the
// offsets absent from the log shown as gaps (quarantined ones linked to
// their DLQ record); and a topic's records over all its partitions.
// docs/CONSOLE.md gives the bounds and why.

const (
	// maxRecords bounds one page of records.
	maxRecords = 500
	// maxScan bounds the offsets one filtered page looks at (over all
	// partitions in the topic view): a filter that matches nothing costs
	// one bounded read, and the page says how far it looked.
	maxScan = 10_000
	// maxValueShown is how much of a value a page carries; the rest is a
	// link away.
	maxValueShown = 4096
	// tailRefresh is how often a live tail page reloads itself.
	tailRefresh = 2
	// maxDLQScan bounds how many of the newest DLQ records are searched for
	// the quarantined offsets of a page's gaps.
	maxDLQScan = 10_000
)

// Records is a page of one partition's records.
type Records struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	Next      int64  `json:"next"` // where the following page starts
	// Prev is where the previous page starts (limit offsets back; with a
	// filter, one scan back); Last where the last page does.
	Prev     int64 `json:"prev"`
	Last     int64 `json:"last"`
	Limit    int   `json:"limit"`
	LogStart int64 `json:"log_start_offset"`
	End      int64 `json:"high_watermark"`
	// Seek is set when the page starts at a timestamp.
	Seek *Seek `json:"seek,omitempty"`
	// Filter is set when the page is filtered, with how far it looked.
	Filter *Filter `json:"filter,omitempty"`
	// Tail: the page is a live tail (tail=1), the last limit offsets,
	// reloaded every tailRefresh.
	Tail    bool        `json:"tail,omitempty"`
	Records []RecordRow `json:"records"`
	// Gaps are the offsets in the page's range that are not in the log
	// (unfiltered pages only): compacted away, aborted, or quarantined.
	Gaps []GapRow `json:"gaps"`
}

// Seek is where a timestamp led: the first offset whose record's
// timestamp is at or after it (the log's time index, as ListOffsets), or
// the high watermark when no record is that late.
type Seek struct {
	Timestamp   Time  `json:"timestamp"`
	TimestampMs int64 `json:"timestamp_ms"`
	Offset      int64 `json:"offset"`
	Found       bool  `json:"found"`
}

// Filter is a page's filter and the offsets it scanned.
type Filter struct {
	// Key and Value match records whose key or value contains them;
	// Header "name" matches a record with that header, "name=text" one
	// whose value of it contains text.
	Key    string `json:"key,omitempty"`
	Value  string `json:"value,omitempty"`
	Header string `json:"header,omitempty"`
	// ScannedFrom and ScannedTo bound the offsets looked at (inclusive;
	// ScannedTo < ScannedFrom: none); ScanLimit is the most a page looks
	// at; Complete says the scan reached the high watermark.
	ScannedFrom int64 `json:"scanned_from"`
	ScannedTo   int64 `json:"scanned_to"`
	ScanLimit   int   `json:"scan_limit"`
	Complete    bool  `json:"complete"`
}

func (f *Filter) active() bool { return f.Key != "" || f.Value != "" || f.Header != "" }

func (f *Filter) match(r record.Record) bool {
	if f.Key != "" && (r.Key == nil || !bytes.Contains(r.Key, []byte(f.Key))) {
		return false
	}
	if f.Value != "" && (r.Value == nil || !bytes.Contains(r.Value, []byte(f.Value))) {
		return false
	}
	if f.Header == "" {
		return true
	}
	name, want, hasValue := strings.Cut(f.Header, "=")
	for _, h := range r.Headers {
		if h.Key == name && (!hasValue || bytes.Contains(h.Value, []byte(want))) {
			return true
		}
	}
	return false
}

// GapRow is a range of offsets absent from the log, and which of them were
// quarantined (found among the DLQ's newest maxDLQScan records).
type GapRow struct {
	From        int64    `json:"from"`
	To          int64    `json:"to"`
	Quarantined []DLQRef `json:"quarantined"`
}

// DLQRef is a quarantined offset and its record in the DLQ.
type DLQRef struct {
	SourceOffset int64  `json:"source_offset"`
	Topic        string `json:"dlq_topic"`
	Partition    int32  `json:"dlq_partition"`
	Offset       int64  `json:"dlq_offset"`
	Reason       string `json:"reason"`
}

// RecordRow is one record, its key, value and header values as text when
// they are UTF-8, else as base64 (the encoding fields say so). A value
// longer than maxValueShown bytes is cut there (ValueTruncated) and
// ValueBytes gives its whole length.
type RecordRow struct {
	Partition      int32   `json:"partition"`
	Offset         int64   `json:"offset"`
	Timestamp      Time    `json:"timestamp"`
	TimestampMs    int64   `json:"timestamp_ms"`
	Key            *string `json:"key"` // nil: no key
	KeyEncoding    string  `json:"key_encoding,omitempty"`
	Value          *string `json:"value"` // nil: a tombstone
	ValueEncoding  string  `json:"value_encoding,omitempty"`
	ValueBytes     int64   `json:"value_bytes"`
	ValueTruncated bool    `json:"value_truncated,omitempty"`
	// ValueURL serves the whole value of a truncated one, as it is.
	ValueURL string      `json:"value_url,omitempty"`
	Headers  []HeaderRow `json:"headers"`
	// Pretty is the value indented, when it is a whole JSON object or
	// array (the page shows it; the API keeps the value as it is).
	Pretty string `json:"-"`
	// SchemaID and Decoded: a value in Confluent's wire format whose
	// schema the registry has, decoded to JSON (Avro, Protobuf, JSON
	// Schema); the page shows it instead of the bytes.
	SchemaID int             `json:"schema_id,omitempty"`
	Decoded  json.RawMessage `json:"decoded,omitempty"`
}

// decodeValue fills SchemaID and Decoded when value carries a registered
// schema id and decodes against it (nothing otherwise: the bytes are shown).
func (row *RecordRow) decodeValue(b *broker.Broker, value []byte) {
	id, rest, err := schemareg.SplitWire(value)
	if err != nil {
		return
	}
	c, err := b.Schemas().Compiled(id)
	if err != nil {
		return
	}
	out, err := c.Decode(rest)
	if err != nil {
		return
	}
	row.SchemaID, row.Decoded = id, out
	row.Pretty = prettyJSON(out)
	if row.Pretty == "" {
		row.Pretty = string(out) // a scalar
	}
}

// HeaderRow is one record header.
type HeaderRow struct {
	Key      string  `json:"key"`
	Value    *string `json:"value"`
	Encoding string  `json:"encoding,omitempty"`
}

func recordRow(topic string, partition int32, r record.Record, cut int) RecordRow {
	row := RecordRow{Partition: partition, Offset: int64(r.Offset), Timestamp: Time(time.UnixMilli(r.Timestamp)),
		TimestampMs: r.Timestamp, Headers: []HeaderRow{}, ValueBytes: int64(len(r.Value))}
	row.Key, row.KeyEncoding = text(r.Key)
	value := r.Value
	if cut > 0 && len(value) > cut {
		value, row.ValueTruncated = value[:cut], true
		for len(value) > cut-utf8.UTFMax && !utf8.Valid(value) && utf8.Valid(r.Value) {
			value = value[:len(value)-1] // not mid-rune in a UTF-8 value
		}
	}
	row.Value, row.ValueEncoding = text(value)
	if row.ValueTruncated {
		row.ValueURL = fmt.Sprintf("/topics/%s/partitions/%d/records/%d/value", url.PathEscape(topic), partition, r.Offset)
	}
	if !row.ValueTruncated && row.ValueEncoding == "" {
		row.Pretty = prettyJSON(r.Value)
	}
	for _, h := range r.Headers {
		v, enc := text(h.Value)
		row.Headers = append(row.Headers, HeaderRow{Key: h.Key, Value: v, Encoding: enc})
	}
	return row
}

// prettyJSON indents a value that is a JSON object or array, else "".
func prettyJSON(v []byte) string {
	t := bytes.TrimSpace(v)
	if len(t) < 2 || (t[0] != '{' && t[0] != '[') || !json.Valid(t) {
		return ""
	}
	var out bytes.Buffer
	if json.Indent(&out, t, "", "  ") != nil {
		return ""
	}
	return out.String()
}

// recordsParams is a records query: where to start, how many, and the
// filter.
type recordsParams struct {
	offset    int64 // -1: the log start
	timestamp int64 // -1: none; else seek there
	limit     int
	filter    Filter
	positions map[int32]int64 // the topic view's from=p:o,...
	tail      bool
}

func parseRecordsParams(r *http.Request) (recordsParams, error) {
	q := r.URL.Query()
	rp := recordsParams{offset: -1, timestamp: -1, limit: 50,
		filter: Filter{Key: q.Get("key"), Value: q.Get("value"), Header: q.Get("header")}}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return rp, fmt.Errorf("%w: offset %q: want an offset >= 0", errBadRequest, s)
		}
		rp.offset = n
	}
	if s := strings.TrimSpace(q.Get("timestamp")); s != "" {
		ts, err := parseTimestamp(s)
		if err != nil {
			return rp, err
		}
		rp.timestamp = ts
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxRecords {
			return rp, fmt.Errorf("%w: limit %q: want 1 to %d", errBadRequest, s, maxRecords)
		}
		rp.limit = n
	}
	rp.tail = q.Get("tail") == "1"
	if s := q.Get("from"); s != "" {
		rp.positions = map[int32]int64{}
		for _, part := range strings.Split(s, ",") {
			ps, os, ok := strings.Cut(part, ":")
			p, perr := strconv.ParseInt(ps, 10, 32)
			o, oerr := strconv.ParseInt(os, 10, 64)
			if !ok || perr != nil || oerr != nil || p < 0 || o < 0 {
				return rp, fmt.Errorf("%w: from %q: want partition:offset pairs, comma-separated", errBadRequest, s)
			}
			rp.positions[int32(p)] = o
		}
	}
	return rp, nil
}

// parseTimestamp reads RFC 3339 (a date-time-local from a form, without
// zone, is UTC) or epoch milliseconds.
func parseTimestamp(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("%w: timestamp %q: want RFC 3339 (2024-05-01T12:00:00Z) or epoch milliseconds", errBadRequest, s)
}

func partitionParam(r *http.Request) (int32, error) {
	p, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil || p < 0 {
		return 0, fmt.Errorf("%w: partition %q is not a partition number", errBadRequest, r.PathValue("partition"))
	}
	return int32(p), nil
}

// scanPartition visits p's records in offset order from from up to (not
// including) stop, and reports each range of absent offsets to gap (nil:
// not wanted); control batches (transaction markers) are skipped. visit
// returns false to refuse a record and stop there. It returns where a
// following scan starts: the refused record's offset, or past everything
// visited.
func scanPartition(p *broker.Partition, from, stop int64, visit func(record.Record) bool, gap func(from, to int64)) (int64, error) {
	pos := from
	for pos < stop {
		res, err := p.Read(record.Offset(pos), 1<<20)
		if errors.Is(err, broker.ErrOffsetOutOfRange) {
			return pos, nil // retention moved the start under us
		}
		if err != nil {
			return pos, err
		}
		before := pos
		s := record.Batches(res.Batches)
		for s.Next() && pos < stop {
			batch, err := record.Decode(s.Batch())
			if err != nil {
				return pos, fmt.Errorf("decode batch in %s-%d: %w", p.Topic(), p.ID(), err)
			}
			if batch.IsControl() {
				pos = max(pos, int64(batch.NextOffset()))
				continue
			}
			for _, r := range batch.Records {
				o := int64(r.Offset)
				if o < pos {
					continue
				}
				if o >= stop {
					break
				}
				if o > pos && gap != nil {
					gap(pos, o-1)
				}
				if pos = o; !visit(r) {
					return pos, nil
				}
				pos = o + 1
			}
			if tail := min(int64(batch.NextOffset()), stop); tail > pos {
				if gap != nil {
					gap(pos, tail-1)
				}
				pos = tail
			}
		}
		if err := s.Err(); err != nil {
			return pos, err
		}
		if pos == before {
			break
		}
	}
	return pos, nil
}

// seek is where a timestamp leads in p.
func seek(p *broker.Partition, ts int64) (*Seek, error) {
	off, _, err := p.ListOffset(ts)
	if err != nil {
		return nil, err
	}
	s := &Seek{Timestamp: Time(time.UnixMilli(ts)), TimestampMs: ts, Offset: int64(off), Found: off >= 0}
	if !s.Found {
		s.Offset = int64(p.HighWatermark())
	}
	return s, nil
}

// records reads a page of one partition's records.
func records(b *broker.Broker, topic string, partition int32, rp recordsParams) (Records, error) {
	t, err := b.Topic(topic)
	if err != nil {
		return Records{}, fmt.Errorf("%w: topic %q", errNotFound, topic)
	}
	p, err := b.Partition(topic, broker.PartitionID(partition))
	if err != nil {
		return Records{}, fmt.Errorf("%w: %s-%d", errNotFound, topic, partition)
	}
	start, end := int64(p.LogStartOffset()), int64(p.HighWatermark())
	out := Records{Topic: topic, Partition: partition, Limit: rp.limit, LogStart: start, End: end,
		Records: []RecordRow{}, Gaps: []GapRow{}, Last: max(start, end-int64(rp.limit))}
	from := rp.offset
	if rp.timestamp >= 0 {
		if out.Seek, err = seek(p, rp.timestamp); err != nil {
			return Records{}, err
		}
		from = out.Seek.Offset
	}
	if rp.tail {
		from, out.Tail = end-int64(rp.limit), true
	}
	from = min(max(from, start), end)
	out.From, out.Prev = from, max(start, from-int64(rp.limit))
	stop := end
	var gap func(from, to int64)
	if rp.filter.active() {
		f := rp.filter
		f.ScanLimit = maxScan
		out.Filter, stop, out.Prev = &f, min(end, from+maxScan), max(start, from-maxScan)
	} else {
		gap = func(from, to int64) { out.Gaps = append(out.Gaps, GapRow{From: from, To: to, Quarantined: []DLQRef{}}) }
	}
	out.Next, err = scanPartition(p, from, stop, func(r record.Record) bool {
		if out.Filter != nil && !out.Filter.match(r) {
			return true
		}
		if len(out.Records) >= rp.limit {
			return false
		}
		row := recordRow(topic, partition, r, maxValueShown)
		row.decodeValue(b, r.Value)
		out.Records = append(out.Records, row)
		return true
	}, gap)
	if err != nil {
		return Records{}, err
	}
	if out.Filter != nil {
		out.Filter.ScannedFrom, out.Filter.ScannedTo, out.Filter.Complete = from, out.Next-1, out.Next >= end
	}
	if len(out.Gaps) > 0 {
		if err := markQuarantined(b, t, partition, out.Gaps); err != nil {
			return Records{}, err
		}
	}
	return out, nil
}

// markQuarantined finds which of a partition's gaps were quarantined: it
// reads the newest maxDLQScan records of the DLQ partition the source
// partition quarantines to (a bound: an older quarantine shows as a plain
// gap) and matches their strand.dlq.source.* headers.
func markQuarantined(b *broker.Broker, t *broker.Topic, partition int32, gaps []GapRow) error {
	name, exists := dlqOf(b, t)
	if !exists {
		return nil
	}
	dt, err := b.Topic(name)
	if err != nil || dt.Partitions() == 0 {
		return nil
	}
	dp, err := dt.Partition(broker.PartitionID(partition % dt.Partitions()))
	if err != nil {
		return nil // not on this node
	}
	lo, hi := gaps[0].From, gaps[len(gaps)-1].To
	end := int64(dp.HighWatermark())
	from := max(int64(dp.LogStartOffset()), end-maxDLQScan)
	_, err = scanPartition(dp, from, end, func(r record.Record) bool {
		q := ingest.Inspect(r.Headers)
		so := int64(q.Source.Offset)
		if !q.OK || q.Source.Topic != t.Name || q.Source.Partition != partition || so < lo || so > hi {
			return true
		}
		i, _ := slices.BinarySearchFunc(gaps, so, func(g GapRow, o int64) int { // the first gap ending at or after so
			if g.To < o {
				return -1
			}
			return 0
		})
		if i < len(gaps) && gaps[i].From <= so && so <= gaps[i].To {
			gaps[i].Quarantined = append(gaps[i].Quarantined, DLQRef{SourceOffset: so, Topic: name,
				Partition: int32(dp.ID()), Offset: int64(r.Offset), Reason: q.Reason})
		}
		return true
	}, nil)
	return err
}

// PageRow is a records page's row: a record or a gap, in offset order.
type PageRow struct {
	Record *RecordRow
	Gap    *GapRow
}

// Rows interleaves the page's records and gaps by offset.
func (r Records) Rows() []PageRow {
	out := make([]PageRow, 0, len(r.Records)+len(r.Gaps))
	i, j := 0, 0
	for i < len(r.Records) || j < len(r.Gaps) {
		if j == len(r.Gaps) || i < len(r.Records) && r.Records[i].Offset < r.Gaps[j].From {
			out = append(out, PageRow{Record: &r.Records[i]})
			i++
		} else {
			out = append(out, PageRow{Gap: &r.Gaps[j]})
			j++
		}
	}
	return out
}

// TailHref is the link to this page's live tail.
func (r Records) TailHref() template.URL {
	v := urlValues(r.Limit, r.Filter)
	v.Set("tail", "1")
	return template.URL(fmt.Sprintf("/topics/%s/partitions/%d?%s", url.PathEscape(r.Topic), r.Partition, v.Encode()))
}

// Href is the link to this page's records from offset o (no timestamp):
// the pager's links keep the limit and the filter.
func (r Records) Href(o int64) template.URL {
	v := urlValues(r.Limit, r.Filter)
	v.Set("offset", strconv.FormatInt(o, 10))
	return template.URL(fmt.Sprintf("/topics/%s/partitions/%d?%s", url.PathEscape(r.Topic), r.Partition, v.Encode()))
}

// oneRecord is the whole record at the request's {offset} (404 when the
// offset is not in the log).
func oneRecord(b *broker.Broker, r *http.Request) (RecordRow, error) {
	topic := r.PathValue("topic")
	partition, err := partitionParam(r)
	if err != nil {
		return RecordRow{}, err
	}
	o, err := strconv.ParseInt(r.PathValue("offset"), 10, 64)
	if err != nil || o < 0 {
		return RecordRow{}, fmt.Errorf("%w: offset %q: want an offset >= 0", errBadRequest, r.PathValue("offset"))
	}
	p, err := b.Partition(topic, broker.PartitionID(partition))
	if err != nil {
		return RecordRow{}, fmt.Errorf("%w: %s-%d", errNotFound, topic, partition)
	}
	var found *record.Record
	if o >= int64(p.LogStartOffset()) {
		_, err = scanPartition(p, o, o+1, func(r record.Record) bool { found = &r; return true }, nil)
		if err != nil {
			return RecordRow{}, err
		}
	}
	if found == nil {
		return RecordRow{}, fmt.Errorf("%w: no record at offset %d of %s-%d", errNotFound, o, topic, partition)
	}
	row := recordRow(topic, partition, *found, 0)
	row.decodeValue(b, found.Value)
	return row, nil
}

// serveValue serves one record's whole value as it is: text/plain when it
// is UTF-8, else application/octet-stream, never sniffed or rendered as
// markup (a value is data).
func (c *Console) serveValue(w http.ResponseWriter, r *http.Request) {
	err := c.seeTopic(r, acl.OpRead, r.PathValue("topic"))
	var row RecordRow
	if err == nil {
		row, err = oneRecord(c.b, r)
	}
	if err == nil && row.Value == nil {
		err = fmt.Errorf("%w: the record at offset %d is a tombstone (no value)", errNotFound, row.Offset)
	}
	if err != nil {
		c.fail(w, r, err, false)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	body := []byte(*row.Value)
	if row.ValueEncoding == encBase64 {
		h.Set("Content-Type", "application/octet-stream")
		body, _ = base64.StdEncoding.DecodeString(*row.Value)
	} else {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	_, _ = w.Write(body)
}
