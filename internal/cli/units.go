package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Flags of sizes and durations, as a person types them: 512m, 1G, 2GiB;
// 90s, 5m.

// sizeUnits are the binary multiples a size may end with: k, m, g or t,
// in any case, alone or followed by "b", "i" or "ib" (1g, 1G, 1gb, 1GiB).
var sizeUnits = map[string]int64{"b": 1}

func init() {
	for i, u := range []string{"k", "m", "g", "t"} {
		for _, tail := range []string{"", "b", "i", "ib"} {
			sizeUnits[u+tail] = 1 << (10 * (i + 1))
		}
	}
}

// parseSize reads a size in bytes: a whole number with a unit, or a bare
// number counted in bare (bytes or MiB, as the flag says).
func parseSize(s string, bare int64) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	digits := strings.TrimRight(t, "bgikmt")
	unit, ok := sizeUnits[t[len(digits):]]
	if t == digits {
		unit, ok = bare, true
	}
	n, err := strconv.ParseUint(digits, 10, 63)
	if !ok || err != nil || n > uint64(math.MaxInt64/unit) {
		return 0, fmt.Errorf("%q is not a size: a whole number with k, m, g or t (512m, 1g, 2GiB)", s)
	}
	return int64(n) * unit, nil
}

// sizeString writes a size in bytes as parseSize reads it, in its largest
// whole unit.
func sizeString(b int64) string {
	for i, u := range []string{"t", "g", "m", "k"} {
		if m := int64(1) << (10 * (4 - i)); b != 0 && b%m == 0 {
			return strconv.FormatInt(b/m, 10) + u
		}
	}
	return strconv.FormatInt(b, 10)
}

// mibFlag is a flag of a size in whole MiB (a bare number is MiB).
type mibFlag[T uint32 | uint64] struct{ p *T }

func (f mibFlag[T]) Set(s string) error {
	b, err := parseSize(s, 1<<20)
	if err != nil {
		return err
	}
	if b%(1<<20) != 0 {
		return fmt.Errorf("%q is not a whole number of MiB", s)
	}
	mib := uint64(b >> 20)
	if uint64(T(mib)) != mib {
		return fmt.Errorf("%q is too large", s)
	}
	*f.p = T(mib)
	return nil
}

func (f mibFlag[T]) String() string { return sizeString(int64(*f.p) << 20) }

func (f mibFlag[T]) Type() string { return "size" }

// byteFlag is a flag of a size in bytes (a bare number is bytes).
type byteFlag struct{ p *int64 }

func (f byteFlag) Set(s string) error {
	b, err := parseSize(s, 1)
	if err != nil {
		return err
	}
	*f.p = b
	return nil
}

func (f byteFlag) String() string { return sizeString(*f.p) }
func (f byteFlag) Type() string   { return "size" }

// secondsFlag is a flag of a duration (90s, 5m, 2h) that also takes a
// bare number of seconds, as it once did, and keeps whole seconds (rounded
// up).
type secondsFlag struct{ p *uint64 }

func (f secondsFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		n, nerr := strconv.ParseUint(s, 10, 64)
		if nerr != nil {
			return fmt.Errorf("%q is not a duration (90s, 5m, 2h)", s)
		}
		*f.p = n
		return nil
	}
	if d < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	*f.p = uint64((d + time.Second - 1) / time.Second)
	return nil
}

func (f secondsFlag) String() string {
	if *f.p == 0 {
		return "0"
	}
	return (time.Duration(*f.p) * time.Second).String()
}
func (f secondsFlag) Type() string { return "duration" }
