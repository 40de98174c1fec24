package main

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordFormat renders records like kcat's -f: %t topic, %p partition,
// %o offset, %k key, %s value, %K key length, %S value length, %h headers
// (k=v,k=v), %T timestamp (ms since the epoch), %% a percent sign; \n, \t,
// \r and \\ are escapes. It is compiled once into parts.
type recordFormat struct {
	parts []formatPart
}

type formatPart struct {
	lit  string
	verb byte // 0: lit only
}

func parseRecordFormat(s string) (*recordFormat, error) {
	s = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r", `\\`, `\`).Replace(s)
	f := &recordFormat{}
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			lit.WriteByte(c)
			continue
		}
		if i+1 == len(s) {
			return nil, usageErr("--format %q: ends in a lone %%", s)
		}
		i++
		switch v := s[i]; v {
		case '%':
			lit.WriteByte('%')
		case 't', 'p', 'o', 'k', 's', 'K', 'S', 'h', 'T':
			f.parts = append(f.parts, formatPart{lit: lit.String(), verb: v})
			lit.Reset()
		default:
			return nil, usageErr("--format: unknown %%%c (want %%t %%p %%o %%k %%s %%K %%S %%h %%T %%%%)", v)
		}
	}
	if lit.Len() > 0 {
		f.parts = append(f.parts, formatPart{lit: lit.String()})
	}
	return f, nil
}

func (f *recordFormat) append(b []byte, r *kgo.Record) []byte {
	for _, p := range f.parts {
		b = append(b, p.lit...)
		switch p.verb {
		case 't':
			b = append(b, r.Topic...)
		case 'p':
			b = strconv.AppendInt(b, int64(r.Partition), 10)
		case 'o':
			b = strconv.AppendInt(b, r.Offset, 10)
		case 'k':
			b = append(b, r.Key...)
		case 's':
			b = append(b, r.Value...)
		case 'K':
			b = strconv.AppendInt(b, int64(len(r.Key)), 10)
		case 'S':
			b = strconv.AppendInt(b, int64(len(r.Value)), 10)
		case 'T':
			b = strconv.AppendInt(b, r.Timestamp.UnixMilli(), 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, h.Key...)
				b = append(b, '=')
				b = append(b, h.Value...)
			}
		}
	}
	return b
}

// jsonRecord is one line of "strand consume --output json".
type jsonRecord struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp int64             `json:"timestamp"`
	Key       *string           `json:"key"`
	Value     *string           `json:"value"`
	Headers   map[string]string `json:"headers,omitempty"`
}

func appendJSONRecord(b []byte, r *kgo.Record) []byte {
	j := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Timestamp: r.Timestamp.UnixMilli()}
	if r.Key != nil {
		k := string(r.Key)
		j.Key = &k
	}
	if r.Value != nil {
		v := string(r.Value)
		j.Value = &v
	}
	if len(r.Headers) > 0 {
		j.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			j.Headers[h.Key] = string(h.Value)
		}
	}
	out, _ := json.Marshal(j) // cannot fail: strings and numbers only
	return append(append(b, out...), '\n')
}
