package partition

import "github.com/strandmq/strand/internal/record"

// CountOut counts record batches sent to a consumer (the wire layer calls it
// with what a fetch response carries). It walks the batch headers only.
func (p *Partition) CountOut(batches []byte) {
	var n int64
	for rest := batches; len(rest) > 0; {
		h, err := record.ParseHeader(rest)
		if err != nil || h.Size() > len(rest) {
			break // a partial batch at the end of a fetch: not a record sent
		}
		n += int64(h.NumRecords)
		rest = rest[h.Size():]
	}
	p.traffic.BytesOut.Add(int64(len(batches)))
	p.traffic.RecordsOut.Add(n)
}

// CountOutSpan is CountOut for batches sent from a segment file unread
// (ReadSpan): records are counted as the offsets the batches cover, which
// is exact but for offsets compaction removed and transaction markers.
func (p *Partition) CountOutSpan(sp SpanResult) {
	p.traffic.BytesOut.Add(int64(sp.Len))
	p.traffic.RecordsOut.Add(int64(sp.Last - sp.First + 1))
}
