package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordFormat renders records like kcat's -f: %t topic, %p partition,
// %o offset, %k key, %s value, %K key length, %S value length, %h headers
// (k=v,k=v), %T timestamp (ms since the epoch), %% a percent sign; \n, \t,
// \r and \\ are escapes. It is compiled once into parts.
type recordFormat struct {
	parts []formatPart
	enc   encoding // how %k, %s and header values are written
}

// encoding is consume's --encoding: how key, value and header bytes are
// printed.
type encoding string

const (
	encRaw    encoding = "raw" // as they are (JSON: UTF-8 text, base64 when they are not)
	encHex    encoding = "hex"
	encBase64 encoding = "base64"
)

func parseEncoding(s string) (encoding, error) {
	switch e := encoding(s); e {
	case encRaw, encHex, encBase64:
		return e, nil
	}
	return "", usageErr("--encoding %q: want raw, hex or base64", s)
}

// append writes bs in e.
func (e encoding) append(b, bs []byte) []byte {
	switch e {
	case encHex:
		return hex.AppendEncode(b, bs)
	case encBase64:
		return base64.StdEncoding.AppendEncode(b, bs)
	}
	return append(b, bs...)
}

// text is bs for JSON in e, and the encoding it is in: raw bytes that are
// not UTF-8 go out as base64, never with replacement characters.
func (e encoding) text(bs []byte) (string, encoding) {
	if e == encRaw && !utf8.Valid(bs) {
		e = encBase64
	}
	if e == encRaw {
		return string(bs), ""
	}
	return string(e.append(nil, bs)), e
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
			b = f.enc.append(b, r.Key)
		case 's':
			b = f.enc.append(b, r.Value)
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
				b = f.enc.append(b, h.Value)
			}
		}
	}
	return b
}

// The one JSON shape of the CLI and the console's /api/v1: snake_case
// names; times as RFC 3339 in UTC with milliseconds, with the epoch
// milliseconds beside them (timestamp, timestamp_ms); headers as a list of
// {key, value}; a missing key or value as null; bytes that are not UTF-8
// as base64 with an encoding field saying so, never replaced.

// jsonTimeLayout is the one time format of JSON output.
const jsonTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// jsonTime is t in jsonTimeLayout.
func jsonTime(t time.Time) string { return t.UTC().Format(jsonTimeLayout) }

// jsonRecord is one line of "strand consume --output json".
type jsonRecord struct {
	Topic       string  `json:"topic"`
	Partition   int32   `json:"partition"`
	Offset      int64   `json:"offset"`
	Timestamp   string  `json:"timestamp"`
	TimestampMs int64   `json:"timestamp_ms"`
	Key         *string `json:"key"`
	// KeyEncoding and ValueEncoding name the encoding of a key or value
	// that is not raw text (hex or base64); absent for UTF-8 text.
	KeyEncoding   encoding     `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding encoding     `json:"value_encoding,omitempty"`
	Headers       []jsonHeader `json:"headers"`
}

// jsonHeader is one record header; a key may repeat.
type jsonHeader struct {
	Key      string   `json:"key"`
	Value    *string  `json:"value"`
	Encoding encoding `json:"encoding,omitempty"`
}

func appendJSONRecord(b []byte, r *kgo.Record, enc encoding) []byte {
	j := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Timestamp: jsonTime(r.Timestamp), TimestampMs: r.Timestamp.UnixMilli(), Headers: []jsonHeader{}}
	j.Key, j.KeyEncoding = enc.nullable(r.Key)
	j.Value, j.ValueEncoding = enc.nullable(r.Value)
	for _, h := range r.Headers {
		v, e := enc.nullable(h.Value)
		j.Headers = append(j.Headers, jsonHeader{Key: h.Key, Value: v, Encoding: e})
	}
	out, _ := json.Marshal(j) // cannot fail: strings and numbers only
	return append(append(b, out...), '\n')
}

// nullable is text for bytes that may be absent: nil is JSON null.
func (e encoding) nullable(bs []byte) (*string, encoding) {
	if bs == nil {
		return nil, ""
	}
	s, enc := e.text(bs)
	return &s, enc
}
