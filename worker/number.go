package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// decimal is a JSON number read exactly, as JSON Schema compares numbers and as longrun's
// recorder reads a report: the value is ±digits×10^exp, digits without leading or trailing
// zeros ("" for zero, -0 too), so 30, 30.0, 3e1 and 300e-1 are the same decimal, and
// 100.00000000000000001 is more than 100 (a float64 would call it 100). It is longrun's own
// reading (internal/core/step), copied because the worker module imports nothing of
// longrun's; the protocol's test vectors (api/worker/vectors) hold the two to one behaviour.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

var numberSyntax = regexp.MustCompile(`^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?$`)

// maxExp bounds the exponents of a decimal: a JSON number whose exponent is beyond it is
// far out of every range a report has, and is taken as being at this bound.
const maxExp = 1 << 40

// parseNumber reads a member that must be a JSON number (not a string, not null).
func parseNumber(raw json.RawMessage, member string) (decimal, error) {
	g := numberSyntax.FindSubmatch(raw)
	if g == nil {
		return decimal{}, fmt.Errorf("%s must be a number, not %.40s", member, raw)
	}
	var exp int64
	for _, c := range bytes.TrimLeft(g[5], "0") {
		if exp = exp*10 + int64(c-'0'); exp > maxExp {
			exp = maxExp
			break
		}
	}
	if string(g[4]) == "-" {
		exp = -exp
	}
	digits := string(g[2]) + string(g[3])
	exp -= int64(len(g[3]))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	trimmed = strings.TrimLeft(trimmed, "0")
	if trimmed == "" {
		return decimal{}, nil // zero, -0 too
	}
	return decimal{neg: len(g[1]) > 0, digits: trimmed, exp: exp}, nil
}

// integral reports whether d is an integer as JSON Schema counts one: 30.0 and 3e1 are.
func (d decimal) integral() bool { return d.digits == "" || d.exp >= 0 }

// magnitude is the number of digits of d's integer part: 10^(magnitude-1) <= |d| < 10^magnitude.
func (d decimal) magnitude() int64 { return int64(len(d.digits)) + d.exp }

// cmp compares d with n: -1 when d < n, 0 when they are equal, +1 when d > n.
func (d decimal) cmp(n uint64) int {
	switch {
	case d.digits == "" && n == 0:
		return 0
	case d.digits == "":
		return -1
	case d.neg:
		return -1
	case n == 0:
		return 1
	}
	e, _ := parseNumber(json.RawMessage(strconv.FormatUint(n, 10)), "")
	if c := cmpInt64(d.magnitude(), e.magnitude()); c != 0 {
		return c
	}
	// The same magnitude: compare digit by digit; of two that agree as far as the shorter
	// goes, the longer is more (its last digit is not zero).
	l := min(len(d.digits), len(e.digits))
	if c := strings.Compare(d.digits[:l], e.digits[:l]); c != 0 {
		return c
	}
	return cmpInt64(int64(len(d.digits)), int64(len(e.digits)))
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// int is an integral decimal as an int, saturated at math.MaxInt and math.MinInt.
func (d decimal) int() int {
	if d.digits == "" {
		return 0
	}
	if d.magnitude() <= 19 {
		s := d.digits + strings.Repeat("0", int(d.exp))
		if d.neg {
			s = "-" + s
		}
		if n, err := strconv.ParseInt(s, 10, 0); err == nil {
			return int(n)
		}
	}
	if d.neg {
		return math.MinInt
	}
	return math.MaxInt
}

// float is d as the nearest float64: 0 for a value too small for one (never -0), and ±Inf
// for one too big.
func (d decimal) float(raw json.RawMessage) float64 {
	if d.digits == "" {
		return 0
	}
	f, _ := strconv.ParseFloat(string(raw), 64) // ±Inf, or ±0, when out of range
	if f == 0 {
		return 0 // -0 is 0
	}
	return f
}

// unbounded, as an integer's upper bound, is none.
const unbounded = math.MaxUint64

// integer reads a member that must be a JSON integer (as JSON Schema counts one) from lo to
// hi (or of at least lo when hi is unbounded): it is an int, saturated at math.MaxInt.
func integer(raw json.RawMessage, member string, lo, hi uint64) (int, error) {
	d, err := parseNumber(raw, member)
	if err != nil {
		return 0, err
	}
	switch {
	case hi == unbounded && (!d.integral() || d.cmp(lo) < 0):
		return 0, fmt.Errorf("%s %.40s is not an integer of at least %d", member, raw, lo)
	case hi != unbounded && (!d.integral() || d.cmp(lo) < 0 || d.cmp(hi) > 0):
		return 0, fmt.Errorf("%s %.40s is not an integer from %d to %d", member, raw, lo, hi)
	}
	return d.int(), nil
}
