package ingest

import "encoding/binary"

// validJSON reports whether b is exactly one JSON value (RFC 8259) with
// optional surrounding whitespace: what encoding/json.Valid accepts,
// including its nesting limit, and like it without checking UTF-8.
//
// It exists for speed: validation at ingress looks at every byte a
// producer sends, and encoding/json's scanner (a function call per byte)
// took three quarters of a validated produce's time. Strings, most of a
// typical document, are scanned eight bytes at a time. FuzzValidJSON checks
// it against encoding/json.Valid.
func validJSON(b []byte) bool {
	var stackBuf [64]byte
	stack := stackBuf[:0] // '{' or '[' per open container
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			if len(stack) >= maxNesting {
				return false
			}
			if i = skipSpace(b, i+1); i < len(b) && b[i] == end {
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i = objectKey(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			i = scanString(b, i+1)
		case c == 't':
			i = literal(b, i, "true")
		case c == 'f':
			i = literal(b, i, "false")
		case c == 'n':
			i = literal(b, i, "null")
		case c == '-' || c >= '0' && c <= '9':
			i = scanNumber(b, i)
		default:
			return false
		}
		// After a value: commas and closing brackets.
	after:
		if i < 0 {
			return false
		}
		i = skipSpace(b, i)
		if len(stack) == 0 {
			return i == len(b)
		}
		if i >= len(b) {
			return false
		}
		top := stack[len(stack)-1]
		switch c := b[i]; {
		case c == ',':
			i = skipSpace(b, i+1)
			if top == '{' {
				i = objectKey(b, i)
				if i < 0 {
					return false
				}
			}
		case c == '}' && top == '{', c == ']' && top == '[':
			stack = stack[:len(stack)-1]
			i++
			goto after
		default:
			return false
		}
	}
}

// maxNesting is encoding/json's limit on nested containers.
const maxNesting = 10000

// objectKey scans `"key" :` and the space after it, from i; -1 if absent.
func objectKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = scanString(b, i+1); i < 0 {
		return -1
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func scanNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special reports whether any byte of w is '"', '\\' or a control
// character (< 0x20): the bytes a string scan must stop at. These are the
// classic exact "has zero byte" and "has byte less than n" bit tricks.
func special(w uint64) bool {
	quote := w ^ (ones * '"')
	slash := w ^ (ones * '\\')
	return ((quote-ones)&^quote|(slash-ones)&^slash|(w-ones*0x20)&^w)&highs != 0
}

// scanString scans a string's contents from i (after the opening quote) and
// returns the index after the closing quote, or -1.
func scanString(b []byte, i int) int {
	for {
		for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
}
