package console

import (
	"encoding/base64"
	"time"
	"unicode/utf8"
)

// The JSON API's one shape (issue 18), the CLI's `-o json` too:
// snake_case names; a time as RFC 3339 with milliseconds in UTC, with its
// epoch milliseconds beside it where a tool would compute with it
// (timestamp + timestamp_ms); headers as a list of {key, value}; a null
// key or value as JSON null; bytes that are not valid UTF-8 as base64,
// named by an encoding field ("base64"), never with replacement
// characters. `strand consume -o json` prints records in this shape.

// rfc3339Millis is the one time format of the API.
const rfc3339Millis = "2006-01-02T15:04:05.000Z07:00"

// Time is a time in the API's format: RFC 3339, milliseconds, UTC.
type Time time.Time

// MarshalJSON writes t as "2023-11-14T22:13:20.000Z".
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(rfc3339Millis) + `"`), nil
}

// UnmarshalJSON reads what MarshalJSON writes (for tests and Go clients).
func (t *Time) UnmarshalJSON(b []byte) error {
	v, err := time.Parse(`"`+time.RFC3339Nano+`"`, string(b))
	*t = Time(v)
	return err
}

// encBase64 names bytes carried as base64.
const encBase64 = "base64"

// text renders bytes for the API and the pages: nil stays nil (JSON
// null), valid UTF-8 is itself, anything else is base64 and the returned
// encoding says so.
func text(b []byte) (s *string, encoding string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		v := string(b)
		return &v, ""
	}
	v := base64.StdEncoding.EncodeToString(b)
	return &v, encBase64
}
