package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/schemareg"
)

// produceMany writes n records to topic-0: key k<i>, value v<i>, header
// "even" on even offsets, timestamps 1000+i.
func produceMany(t testing.TB, b *broker.Broker, topic string, n int) {
	t.Helper()
	if _, err := b.CreateTopic(broker.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	for base := 0; base < n; base += 1000 {
		var recs []record.Record
		for i := base; i < min(n, base+1000); i++ {
			r := record.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)), Timestamp: 1000 + int64(i)}
			if i%2 == 0 {
				r.Headers = []record.RecordHeader{{Key: "even", Value: []byte(fmt.Sprintf("yes-%d", i))}}
			}
			recs = append(recs, r)
		}
		if _, err := b.ProduceRecords(context.Background(), topic, 0, recs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecordsSeekAndPaging: a timestamp (epoch ms or RFC 3339) leads to the
// first record at or after it through the time index; previous and last
// pages keep the limit.
func TestRecordsSeekAndPaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		ts         string
		from       int64
		found      bool
		firstValue string
	}{
		{"1700000000001", 1, true, "banana"},
		{"2023-11-14T22:13:20.002Z", 2, true, "cherry"},
		{"0", 0, true, "apple"},
		{"2030-01-01T00:00:00Z", 3, false, ""},
	} {
		rs := getJSON[Records](t, f, "/api/v1/topics/orders/partitions/0/records?timestamp="+tc.ts)
		if rs.Seek == nil || rs.Seek.Found != tc.found || rs.From != tc.from ||
			tc.found && (len(rs.Records) == 0 || *rs.Records[0].Value != tc.firstValue) || !tc.found && len(rs.Records) != 0 {
			t.Errorf("timestamp %s: from %d seek %+v records %d; want from %d found %v first %q", tc.ts, rs.From, rs.Seek, len(rs.Records), tc.from, tc.found, tc.firstValue)
		}
	}
	if code, body := f.get(t, "/api/v1/topics/orders/partitions/0/records?timestamp=yesterday"); code != 400 || !strings.Contains(body, "RFC 3339") {
		t.Errorf("a bad timestamp: %d %s", code, body)
	}
	rs := getJSON[Records](t, f, "/api/v1/topics/orders/partitions/0/records?offset=2&limit=1")
	if rs.Prev != 1 || rs.Last != 2 || rs.Next != 3 || rs.Limit != 1 {
		t.Errorf("paging from 2 by 1: prev %d last %d next %d", rs.Prev, rs.Last, rs.Next)
	}
	_, body := f.get(t, "/topics/orders/partitions/0?offset=2&limit=1")
	for _, want := range []string{`id="prev" href="/topics/orders/partitions/0?limit=1&amp;offset=1"`, `id="last" href="/topics/orders/partitions/0?limit=1&amp;offset=2"`} {
		if !strings.Contains(body, want) {
			t.Errorf("records page lacks %s:\n%s", want, body)
		}
	}
	if _, body := f.get(t, "/topics/orders/partitions/0?timestamp=1700000000001"); !strings.Contains(body, `id="seek">2023-11-14 22:13:20.001Z`) {
		t.Errorf("records page does not say where the timestamp led:\n%s", body)
	}
}

// TestRecordsFilter: key, value and header filters over a scan bounded at
// maxScan offsets, which the page reports.
func TestRecordsFilter(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	produceMany(t, f.b, "many", maxScan+2000)
	for _, tc := range []struct {
		query       string
		offsets     []int64
		scannedTo   int64
		complete    bool
		next        int64
		description string
	}{
		{"value=v4242", []int64{4242}, maxScan - 1, false, maxScan, "a value substring: one scan, not the end"},
		{"key=k1100&limit=3&offset=1200", []int64{11000, 11001, 11002}, 11002, false, 11003, "a key substring from 1200, page full"},
		{"header=even=yes-4&limit=2", []int64{4, 40}, 41, false, 42, "a header value substring, page full"},
		{"header=even", nil, 99, false, 100, "a header by name: 50 even offsets"},
		{"value=v11999&offset=5000", []int64{11999}, maxScan + 2000 - 1, true, maxScan + 2000, "the scan reaches the end"},
	} {
		q := tc.query
		rs := getJSON[Records](t, f, "/api/v1/topics/many/partitions/0/records?"+q)
		var got []int64
		for _, r := range rs.Records {
			got = append(got, r.Offset)
		}
		if tc.offsets == nil {
			if len(got) != 50 || got[49] != 98 {
				t.Errorf("%s: %v", tc.query, got)
			}
			got = nil
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.offsets) || rs.Filter == nil || rs.Filter.ScannedTo != tc.scannedTo ||
			rs.Filter.Complete != tc.complete || rs.Next != tc.next {
			t.Errorf("%s (%s): offsets %v filter %+v next %d; want %v scanned to %d complete %v next %d",
				tc.query, tc.description, got, rs.Filter, rs.Next, tc.offsets, tc.scannedTo, tc.complete, tc.next)
		}
	}
	rs := getJSON[Records](t, f, "/api/v1/topics/many/partitions/0/records?value=nothing-matches")
	if len(rs.Records) != 0 || rs.Filter.ScannedFrom != 0 || rs.Filter.ScannedTo != maxScan-1 || rs.Next != maxScan {
		t.Errorf("a filter matching nothing: %+v next %d", rs.Filter, rs.Next)
	}
	_, body := f.get(t, "/topics/many/partitions/0?value=nothing-matches")
	if want := fmt.Sprintf("scanned offsets 0–%d of 0–%d", maxScan-1, maxScan+2000); !strings.Contains(body, want) ||
		!strings.Contains(body, fmt.Sprintf(`id="next" href="/topics/many/partitions/0?limit=50&amp;offset=%d&amp;value=nothing-matches"`, maxScan)) {
		t.Errorf("filtered page lacks %q or a next link that keeps the filter:\n%s", want, body)
	}
}

// TestTopicRecords: all partitions merged by timestamp (orders-1's records
// are from 1970, orders-0's from 2023), and the next page resumes each
// partition past what was shown.
func TestTopicRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tr := getJSON[TopicRecords](t, f, "/api/v1/topics/orders/records?limit=3")
	got := func(tr TopicRecords) string {
		var s []string
		for _, r := range tr.Records {
			s = append(s, fmt.Sprintf("%d@%d", r.Partition, r.Offset))
		}
		return strings.Join(s, " ")
	}
	if got(tr) != "1@0 1@1 0@0" || tr.Next != "0:1,1:2" || len(tr.Parts) != 2 {
		t.Fatalf("first page: %s next %q parts %+v", got(tr), tr.Next, tr.Parts)
	}
	tr = getJSON[TopicRecords](t, f, "/api/v1/topics/orders/records?limit=3&from="+tr.Next)
	if got(tr) != "0@1 0@2" || tr.Next != "0:3,1:2" {
		t.Errorf("second page: %s next %q", got(tr), tr.Next)
	}
	tr = getJSON[TopicRecords](t, f, "/api/v1/topics/orders/records?timestamp=1700000000002")
	if got(tr) != "0@2" || tr.SeekTimestampMs != 1700000000002 {
		t.Errorf("from a timestamp in every partition: %s", got(tr))
	}
	tr = getJSON[TopicRecords](t, f, "/api/v1/topics/orders/records?key=kb")
	if got(tr) != "0@1" || tr.Filter == nil || tr.Parts[0].Scanned != 2 || tr.Parts[1].Scanned != 1 {
		t.Errorf("filtered: %s %+v", got(tr), tr.Parts)
	}
	_, body := f.get(t, "/topics/orders/records?limit=3")
	if !strings.Contains(body, `<tr data-po="1-0">`) || !strings.Contains(body, `id="next" href="/topics/orders/records?from=0%3A1%2C1%3A2&amp;limit=3"`) {
		t.Errorf("topic records page:\n%s", body)
	}
	if code, _ := f.get(t, "/api/v1/topics/orders/records?from=0-1"); code != 400 {
		t.Errorf("a malformed from=: %d", code)
	}
}

// TestRecordValues: a JSON value is indented on the page (and left as it is
// in the API); a value over maxValueShown is cut with a link to the whole,
// which is served as it is.
func TestRecordValues(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	big := strings.Repeat("é", maxValueShown) // 2 bytes a rune: the cut must not split one
	bin := append([]byte{0xff}, make([]byte, maxValueShown)...)
	recs := []record.Record{{Value: []byte(`{"a":[1,2],"b":"<x>"}`)}, {Value: []byte(big)}, {Value: bin}}
	if _, err := f.b.ProduceRecords(context.Background(), "orders", 0, recs); err != nil {
		t.Fatal(err)
	}
	rs := getJSON[Records](t, f, "/api/v1/topics/orders/partitions/0/records?offset=3")
	if len(rs.Records) != 3 {
		t.Fatalf("records: %+v", rs.Records)
	}
	j, long, b := rs.Records[0], rs.Records[1], rs.Records[2]
	if *j.Value != `{"a":[1,2],"b":"<x>"}` || j.ValueTruncated {
		t.Errorf("JSON value in the API: %+v", j)
	}
	if !long.ValueTruncated || long.ValueBytes != int64(len(big)) || len(*long.Value) != maxValueShown ||
		long.ValueURL != "/topics/orders/partitions/0/records/4/value" {
		t.Errorf("long value: truncated %v, %d of %d bytes, url %q", long.ValueTruncated, len(*long.Value), long.ValueBytes, long.ValueURL)
	}
	if !b.ValueTruncated || b.ValueEncoding != "base64" || b.ValueBytes != int64(len(bin)) {
		t.Errorf("long binary value: %v %q %d", b.ValueTruncated, b.ValueEncoding, b.ValueBytes)
	}
	_, page := f.get(t, "/topics/orders/partitions/0?offset=3")
	if !strings.Contains(page, "<pre class=\"json\">{\n  &#34;a&#34;: [\n    1,\n    2\n  ],\n  &#34;b&#34;: &#34;\\u003cx\\u003e&#34;\n}</pre>") &&
		!strings.Contains(page, "<pre class=\"json\">{\n  &#34;a&#34;: [\n    1,\n    2\n  ],\n  &#34;b&#34;: &#34;&lt;x&gt;&#34;\n}</pre>") {
		t.Errorf("the JSON value is not indented on the page:\n%s", page)
	}
	if !strings.Contains(page, `<a class="whole" href="/topics/orders/partitions/0/records/4/value">whole value (8.0 KiB)</a>`) {
		t.Errorf("no link to the whole value:\n%s", page)
	}
	for o, want := range map[int]string{4: big, 5: string(bin)} {
		resp, err := http.Get(fmt.Sprintf("%s/topics/orders/partitions/0/records/%d/value", f.srv.URL, o))
		if err != nil {
			t.Fatal(err)
		}
		whole, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(whole) != want || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("whole value at %d: %d bytes %q, want %d", o, len(whole), resp.Header.Get("Content-Type"), len(want))
		}
	}
	one := getJSON[RecordRow](t, f, "/api/v1/topics/orders/partitions/0/records/4")
	if one.ValueTruncated || *one.Value != big {
		t.Errorf("the API's single record is not whole: %d bytes", len(*one.Value))
	}
	if code, _ := f.get(t, "/api/v1/topics/events/partitions/0/records/1"); code != 404 {
		t.Errorf("a quarantined offset as a record: %d, want 404", code)
	}
}

// TestRecordsGaps: the quarantined offset of "events" is a gap linked to
// its record in the DLQ, with the reason.
func TestRecordsGaps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rs := getJSON[Records](t, f, "/api/v1/topics/events/partitions/0/records")
	if len(rs.Records) != 1 || len(rs.Gaps) != 1 || rs.Gaps[0].From != 1 || rs.Gaps[0].To != 1 || len(rs.Gaps[0].Quarantined) != 1 {
		t.Fatalf("events: records %+v gaps %+v", rs.Records, rs.Gaps)
	}
	q := rs.Gaps[0].Quarantined[0]
	if q.SourceOffset != 1 || q.Topic != "events.dlq" || q.Partition != 0 || q.Offset != 0 || q.Reason == "" {
		t.Errorf("quarantined: %+v", q)
	}
	_, page := f.get(t, "/topics/events/partitions/0")
	if !strings.Contains(page, `<tr class="gap" data-gap="1-1">`) ||
		!strings.Contains(page, `<a class="dlq-link" data-source="1" href="/topics/events.dlq/partitions/0?offset=0&amp;limit=1">`) {
		t.Errorf("events page lacks the gap and its DLQ link:\n%s", page)
	}
	if rs := getJSON[Records](t, f, "/api/v1/topics/orders/partitions/0/records"); len(rs.Gaps) != 0 {
		t.Errorf("orders has no gaps: %+v", rs.Gaps)
	}
}

// TestRecordsTail: tail=1 shows the last limit offsets and reloads itself.
func TestRecordsTail(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rs := getJSON[Records](t, f, "/api/v1/topics/orders/partitions/0/records?tail=1&limit=2")
	if !rs.Tail || rs.From != 1 || len(rs.Records) != 2 {
		t.Errorf("tail of 2: %+v", rs)
	}
	_, page := f.get(t, "/topics/orders/partitions/0?tail=1&limit=2")
	if !strings.Contains(page, `<meta http-equiv="refresh" content="2">`) || !strings.Contains(page, `id="stop-tail" href="/topics/orders/partitions/0?limit=2&amp;offset=1"`) {
		t.Errorf("tail page:\n%s", page)
	}
	if _, page := f.get(t, "/topics/orders/partitions/0"); strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, `id="tail" href="/topics/orders/partitions/0?limit=50&amp;tail=1"`) {
		t.Errorf("a plain page reloads or lacks the tail link:\n%s", page)
	}
}

// TestRecordsDecoded: a value in Confluent's wire format whose schema the
// registry has is shown decoded (API: schema_id and decoded; page: the
// JSON, tagged with the id), and the topic page lists its subject's
// versions.
func TestRecordsDecoded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h := schemareg.NewHandler(f.b.Schemas())
	body := `{"schema":"{\"type\":\"record\",\"name\":\"Order\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"item\",\"type\":\"string\"}]}"}`
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/subjects/shop-value/versions", strings.NewReader(body)))
	if w.Code != 200 {
		t.Fatalf("register: %d %s", w.Code, w.Body)
	}
	if _, err := f.b.CreateTopic(broker.TopicSpec{Name: "shop", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	recs := []record.Record{{Value: []byte{0, 0, 0, 0, 1, 0x0e, 0x08, 'b', 'o', 'o', 'k'}}, {Value: []byte{0, 0, 0, 0, 9, 0x0e}}}
	if _, err := f.b.ProduceRecords(context.Background(), "shop", 0, recs); err != nil {
		t.Fatal(err)
	}
	rs := getJSON[Records](t, f, "/api/v1/topics/shop/partitions/0/records?offset=0")
	if len(rs.Records) != 2 {
		t.Fatalf("records: %+v", rs.Records)
	}
	var compact bytes.Buffer
	if r := rs.Records[0]; r.SchemaID != 1 || json.Compact(&compact, r.Decoded) != nil || compact.String() != `{"id":7,"item":"book"}` {
		t.Errorf("decoded record: id %d, %s", r.SchemaID, r.Decoded)
	}
	if r := rs.Records[1]; r.SchemaID != 0 || r.Decoded != nil {
		t.Errorf("a record with an unknown id is decoded: %d %s", r.SchemaID, r.Decoded)
	}
	_, page := f.get(t, "/topics/shop/partitions/0?offset=0")
	if !strings.Contains(page, `schema 1</span> <pre class="json">{`) || !strings.Contains(page, "&#34;item&#34;: &#34;book&#34;") {
		t.Errorf("the page does not show the decoded value:\n%s", page)
	}
	d := getJSON[TopicDetail](t, f, "/api/v1/topics/shop")
	if len(d.Schemas) != 1 || d.Schemas[0] != (SchemaRow{Subject: "shop-value", Version: 1, ID: 1, Type: "AVRO"}) {
		t.Errorf("topic schemas: %+v", d.Schemas)
	}
	if _, page := f.get(t, "/topics/shop"); !strings.Contains(page, "shop-value v1 (id 1, AVRO)") {
		t.Errorf("the topic page does not list its schemas:\n%s", page)
	}
}
