package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseBytes reads a size flag: a whole number and a unit (B, KiB, MiB,
// GiB), e.g. "1GiB".
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(num, 10, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("%q: want a whole number and a unit (B, KiB, MiB, GiB)", s)
			}
			return v * u.mult, nil
		}
	}
	return 0, fmt.Errorf("%q: want a unit (B, KiB, MiB, GiB)", s)
}
