package compact

import (
	"fmt"

	"github.com/strandmq/strand/internal/record"
)

// View is the compacted view of records in log order: the latest value of
// every key. A record with a null value (a tombstone) deletes its key; a
// record without a key is ignored, as a compacted topic never keeps one.
// Values alias the records'.
func View(records []record.Record) map[string][]byte {
	m := make(map[string][]byte)
	Fold(m, records...)
	return m
}

// Fold applies records, in log order, to the view m.
func Fold(m map[string][]byte, records ...record.Record) {
	for i := range records {
		r := &records[i]
		switch {
		case r.Key == nil:
		case r.Value == nil:
			delete(m, string(r.Key))
		default:
			m[string(r.Key)] = r.Value
		}
	}
}

// FoldBatches decodes the record batches back to back in b and folds their
// records into m, skipping control batches (transaction markers). Values are
// copied, so b may be reused.
func FoldBatches(m map[string][]byte, b []byte) error {
	sc := record.Batches(b)
	for sc.Next() {
		h := sc.Header()
		if h.IsControl() {
			continue
		}
		batch, err := record.Decode(sc.Batch())
		if err != nil {
			return fmt.Errorf("compact: batch at offset %d: %w", h.BaseOffset, err)
		}
		for i := range batch.Records {
			if v := batch.Records[i].Value; v != nil {
				batch.Records[i].Value = append([]byte{}, v...)
			}
		}
		Fold(m, batch.Records...)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}
