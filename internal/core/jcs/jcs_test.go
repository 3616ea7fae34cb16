package jcs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// RFC 8785 §3.2.2 sample.
const (
	rfcInput  = `{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}`
	rfcOutput = `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`

	// RFC 8785 §3.2.3 sorting sample.
	rfcSortInput = `{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}`
)

func TestRFC8785Examples(t *testing.T) {
	sortOutput := "{" +
		`"\r":"Carriage Return",` +
		`"1":"One",` +
		"\"\u0080\":\"Control\"," +
		"\"\u00f6\":\"Latin Small Letter O With Diaeresis\"," +
		"\"\u20ac\":\"Euro Sign\"," +
		"\"\U0001F600\":\"Emoji: Grinning Face\"," +
		"\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"" +
		"}"
	tests := []struct{ name, in, want string }{
		{"values", rfcInput, rfcOutput},
		{"sorting", rfcSortInput, sortOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// RFC 8785 Appendix B.
func TestNumberFormatting(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
		// Layout boundaries of ECMA-262 Number::toString.
		{math.Float64bits(1e-7), "1e-7"},
		{math.Float64bits(1.5e-7), "1.5e-7"},
		{math.Float64bits(1e20), "100000000000000000000"},
		{math.Float64bits(1.2345678901234568e20), "123456789012345680000"},
		{math.Float64bits(-1.5), "-1.5"},
		{math.Float64bits(123.456), "123.456"},
	}
	for _, tt := range tests {
		f := math.Float64frombits(tt.bits)
		got, err := Marshal(f)
		if err != nil {
			t.Errorf("%#016x: Marshal: %v", tt.bits, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%#016x: got %s, want %s", tt.bits, got, tt.want)
		}
		// The canonical form must be stable through the parsing path too.
		again, err := Canonicalize(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Errorf("%#016x: Canonicalize(%s) = %s, %v", tt.bits, got, again, err)
		}
	}
}

// Every formatted double must parse back to the same bits (modulo -0).
func TestNumberRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := string(appendNumber(nil, f))
		g, err := strconv.ParseFloat(s, 64)
		if err != nil || g != f {
			t.Fatalf("%v (%#016x) formatted as %q, parsed back as %v, %v", f, math.Float64bits(f), s, g, err)
		}
		if end, msg := scanNumber(s, 0); msg != "" || end != len(s) {
			t.Fatalf("%q is not a JSON number: %s", s, msg)
		}
	}
}

func TestMarshalNonFinite(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := Marshal(f); !errors.Is(err, ErrNumber) {
			t.Errorf("Marshal(%v) error = %v, want ErrNumber", f, err)
		}
		if _, err := Marshal([]any{f}); !errors.Is(err, ErrNumber) {
			t.Errorf("Marshal([%v]) error = %v, want ErrNumber", f, err)
		}
	}
}

func TestMarshal(t *testing.T) {
	cyclic := []any{nil}
	cyclic[0] = cyclic
	tests := []struct {
		name    string
		in      any
		want    string
		wantErr error // nil means success; errUnsupported for that case
	}{
		{"nil", nil, "null", nil},
		{"int", 42, "42", nil},
		{"int64 beyond 2^53", int64(1) << 60, "1152921504606847000", nil}, // as ECMAScript prints 2**60
		{"negative zero", math.Copysign(0, -1), "0", nil},
		{"json.Number", json.Number("1.50"), "1.5", nil},
		{"nested", map[string]any{"b": []any{1, "x", true, nil}, "a": map[string]any{}}, `{"a":{},"b":[1,"x",true,null]}`, nil},
		{"nil map and slice", map[string]any{"m": map[string]any(nil), "s": []any(nil)}, `{"m":null,"s":null}`, nil},
		{"escapes", "\x00\x1f\x7f\u2028/<>&\t", `"\u0000\u001f` + "\x7f\u2028/<>&" + `\t"`, nil},
		{"bad json.Number", json.Number("0x10"), "", ErrNumber},
		{"huge json.Number", json.Number("1e400"), "", ErrNumber},
		{"invalid utf8 string", "a\xffb", "", ErrInvalidUTF8},
		{"invalid utf8 key", map[string]any{"\xff": 1}, "", ErrInvalidUTF8},
		{"unsupported", struct{}{}, "", errUnsupported},
		{"unsupported map", map[string]int{"a": 1}, "", errUnsupported},
		{"cyclic", cyclic, "", ErrTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseTypes(t *testing.T) {
	got, err := Parse([]byte(` {"a": [1.50, "x", true, false, null, {}, []]} `))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": []any{json.Number("1.50"), "x", true, false, nil, map[string]any{}, []any{}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestEquivalence(t *testing.T) {
	same := [][]string{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, " {\n\t\"a\" : 1 ,\r\n \"b\":2 } "},
		{`1`, `1.0`, `1e0`, `10e-1`, `0.1E1`},
		{`0`, `-0`, `0.0`, `-0e5`, `0e-400`},
		{`"\u0041"`, `"A"`},
		{`"\u20ac"`, `"€"`, `"\u20AC"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`"\/"`, `"/"`},
		{`[1,{"x":"y"}]`, `[ 1 , { "x" : "y" } ]`},
	}
	for _, group := range same {
		first, err := Canonicalize([]byte(group[0]))
		if err != nil {
			t.Fatalf("Canonicalize(%s): %v", group[0], err)
		}
		for _, in := range group[1:] {
			got, err := Canonicalize([]byte(in))
			if err != nil {
				t.Fatalf("Canonicalize(%s): %v", in, err)
			}
			if !bytes.Equal(got, first) {
				t.Errorf("Canonicalize(%s) = %s, but Canonicalize(%s) = %s", in, got, group[0], first)
			}
		}
	}

	different := [][2]string{
		{`1`, `2`},
		{`"a"`, `"b"`},
		{`[1,2]`, `[2,1]`},
		{`{"a":1}`, `{"A":1}`},
		{`null`, `false`},
		{`"1"`, `1`},
		{`0.1`, `0.10000000000000002`},
	}
	for _, pair := range different {
		a, errA := Canonicalize([]byte(pair[0]))
		b, errB := Canonicalize([]byte(pair[1]))
		if errA != nil || errB != nil {
			t.Fatalf("Canonicalize(%s, %s): %v, %v", pair[0], pair[1], errA, errB)
		}
		if bytes.Equal(a, b) {
			t.Errorf("%s and %s both canonicalize to %s", pair[0], pair[1], a)
		}
	}
}

func TestDepth(t *testing.T) {
	nestArrays := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	nestObjects := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	nestMixed := func(n int) string { // [{"a":[{"a":...}]}] with n levels
		open, closing := "", ""
		for i := range n {
			if i%2 == 0 {
				open, closing = open+"[", "]"+closing
			} else {
				open, closing = open+`{"a":`, "}"+closing
			}
		}
		return open + "0" + closing
	}
	for _, nest := range []func(int) string{nestArrays, nestObjects, nestMixed} {
		ok := nest(MaxDepth)
		if _, err := Canonicalize([]byte(ok)); err != nil {
			t.Errorf("depth %d %s: %v", MaxDepth, ok, err)
		}
		deep := nest(MaxDepth + 1)
		if _, err := Canonicalize([]byte(deep)); !errors.Is(err, ErrTooDeep) {
			t.Errorf("depth %d %s: error = %v, want ErrTooDeep", MaxDepth+1, deep, err)
		}
	}
	// Marshal enforces the same limit, so its output always parses.
	var v any = []any{}
	for range MaxDepth - 1 {
		v = []any{v}
	}
	if _, err := Marshal(v); err != nil {
		t.Errorf("Marshal depth %d: %v", MaxDepth, err)
	}
	if _, err := Marshal([]any{v}); !errors.Is(err, ErrTooDeep) {
		t.Errorf("Marshal depth %d: error = %v, want ErrTooDeep", MaxDepth+1, err)
	}
}

func TestRejections(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"duplicate", `{"a":1,"a":2}`, ErrDuplicateMember},
		{"duplicate after unescape", `{"a":1,"\u0061":2}`, ErrDuplicateMember},
		{"duplicate non-ASCII", `{"€":1,"\u20ac":2}`, ErrDuplicateMember},
		{"nested duplicate", `{"x":[{"b":1,"c":2,"b":3}]}`, ErrDuplicateMember},
		{"raw 0xff in string", "\"a\xffb\"", ErrInvalidUTF8},
		{"raw 0xff outside string", "[1,\xff]", ErrInvalidUTF8},
		{"raw 0xff trailing", "{}\xff", ErrInvalidUTF8},
		{"encoded surrogate", "\"\xed\xa0\x80\"", ErrInvalidUTF8},
		{"overlong encoding", "\"\xc0\xaf\"", ErrInvalidUTF8},
		{"truncated sequence", "\"\xe2\x82\"", ErrInvalidUTF8},
		{"lone high surrogate", `"\ud800"`, ErrInvalidUTF8},
		{"lone high surrogate then text", `"\ud800abcdef"`, ErrInvalidUTF8},
		{"high surrogate then non-low", `"\ud800\u0041"`, ErrInvalidUTF8},
		{"two high surrogates", `"\ud800\ud800"`, ErrInvalidUTF8},
		{"lone low surrogate", `"\udc00"`, ErrInvalidUTF8},
		{"reversed pair", `"\ude00\ud83d"`, ErrInvalidUTF8},
		{"trailing garbage", `{"a":1} x`, ErrSyntax},
		{"two values", `1 2`, ErrSyntax},
		{"trailing comma object", `{"a":1,}`, ErrSyntax},
		{"trailing comma array", `[1,]`, ErrSyntax},
		{"leading zero", `01`, ErrSyntax},
		{"leading zero negative", `-01`, ErrSyntax},
		{"leading zero in array", `[00]`, ErrSyntax},
		{"plus sign", `+1`, ErrSyntax},
		{"bare fraction", `.5`, ErrSyntax},
		{"trailing point", `1.`, ErrSyntax},
		{"empty exponent", `1e`, ErrSyntax},
		{"signed empty exponent", `1e+`, ErrSyntax},
		{"bare minus", `-`, ErrSyntax},
		{"hex", `0x10`, ErrSyntax},
		{"NaN", `NaN`, ErrSyntax},
		{"Infinity", `Infinity`, ErrSyntax},
		{"-Infinity", `-Infinity`, ErrSyntax},
		{"raw newline in string", "\"a\nb\"", ErrSyntax},
		{"raw tab in string", "\"a\tb\"", ErrSyntax},
		{"raw NUL in string", "\"a\x00b\"", ErrSyntax},
		{"single quotes", `'a'`, ErrSyntax},
		{"single-quoted name", `{'a':1}`, ErrSyntax},
		{"unquoted name", `{a:1}`, ErrSyntax},
		{"bad escape", `"\x41"`, ErrSyntax},
		{"short unicode escape", `"\u41"`, ErrSyntax},
		{"unterminated string", `"abc`, ErrSyntax},
		{"unterminated escape", `"abc\`, ErrSyntax},
		{"unterminated object", `{"a":1`, ErrSyntax},
		{"unterminated array", `[1`, ErrSyntax},
		{"missing colon", `{"a" 1}`, ErrSyntax},
		{"missing value", `{"a":}`, ErrSyntax},
		{"bad literal", `tru`, ErrSyntax},
		{"capital literal", `True`, ErrSyntax},
		{"empty", ``, ErrSyntax},
		{"only whitespace", " \n\t", ErrSyntax},
		{"BOM", "\ufeff{}", ErrSyntax},
		{"vertical tab whitespace", "\v1", ErrSyntax},
		{"comment", `[1 /* x */]`, ErrSyntax},
		{"overflow", `1e400`, ErrNumber},
		{"negative overflow", `-1e400`, ErrNumber},
		{"overflow by digits", "1" + strings.Repeat("0", 400), ErrNumber},
		{"just above max double", `1.7976931348623159e308`, ErrNumber},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Canonicalize(%q) = %q, %v; want error %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// A number literal is bounded before anything reads its value, and a nonzero one must not
// read as 0 (issue #20: 1e-999999 was read as 0, and the schema library then spent 35–190 ms
// turning the literal into an exact fraction). Parse and Marshal refuse the same literals.
func TestNumbersAreBounded(t *testing.T) {
	refused := map[string]string{
		"a nonzero number that reads as 0":       `1e-999999`,
		"a negative one":                         `-1e-400`,
		"below half the smallest subnormal":      `2e-324`,
		"zeros before the digit that makes it 0": `0.` + strings.Repeat("0", 330) + `1`,
		"over 64 characters":                     `1.` + strings.Repeat("0", 63),
		"an exponent beyond 999":                 `0e1000`,
		"a negative exponent beyond 999":         `0e-1000`,
		"an exponent of many digits":             `1e-99999999999999999999999999`,
	}
	for name, lit := range refused {
		if _, err := Parse([]byte(lit)); !errors.Is(err, ErrNumber) {
			t.Errorf("%s: Parse(%.40s) error %v; want ErrNumber", name, lit, err)
		}
		if _, err := Marshal(json.Number(lit)); !errors.Is(err, ErrNumber) {
			t.Errorf("%s: Marshal(json.Number(%.40s)) error %v; want ErrNumber", name, lit, err)
		}
	}
	accepted := map[string]string{
		`5e-324`:                         "5e-324", // the smallest subnormal
		`-3e-324`:                        "-5e-324",
		`0e-999`:                         "0",
		`1e0000000000000000000000000001`: "10",
		strings.Repeat("9", 64):          "1e+64",
		`0.` + strings.Repeat("0", 62):   "0",
	}
	for lit, want := range accepted {
		got, err := Canonicalize([]byte(lit))
		if err != nil || string(got) != want {
			t.Errorf("Canonicalize(%.40s) = %s, %v; want %s", lit, got, err, want)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1,"a":2}`, `duplicate member name "a" at offset 7`},
		{`[1,}`, `invalid JSON: unexpected character '}' at offset 3`},
		{`[1`, `invalid JSON: unexpected end of input, expected ',' or ']' at offset 2`},
		{"[\"\xff\"]", `invalid UTF-8 at offset 2`},
		{`[1e400]`, `number out of range: beyond the largest double at offset 1`},
		{`[1e-400]`, `number out of range: nonzero but would read as 0 at offset 1`},
		{`[0e1000]`, `number out of range: exponent beyond ±999 at offset 1`},
		{`[` + strings.Repeat("1", 65) + `]`, `number out of range: longer than 64 characters at offset 1`},
		{`"\ud800"`, `invalid UTF-8: unpaired surrogate escape at offset 1`},
		{`01`, `invalid JSON: leading zero in number at offset 1`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) error = %v, want %q", tt.in, err, tt.want)
		}
	}

	// Long duplicate names are truncated on a character boundary.
	long := strings.Repeat("é", 100) // 200 bytes
	_, err := Parse([]byte(`{"` + long + `":1,"` + long + `":2}`))
	if !errors.Is(err, ErrDuplicateMember) {
		t.Fatalf("error = %v, want ErrDuplicateMember", err)
	}
	want := `duplicate member name "` + strings.Repeat("é", 63) + `…" at offset 206`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestCompareUTF16(t *testing.T) {
	// Ascending in UTF-16 code unit order.
	ordered := []string{"", "\r", "1", "A", "AB", "a", "\u0080", "\u00f6", "\u20ac", "\ud7ff", "\U00010000", "\U0001F600", "\U0010FFFF", "\ue000", "\ufb33", "\uffff"}
	for i := range ordered {
		for j := range ordered {
			got := compareUTF16(ordered[i], ordered[j])
			if (i < j && got >= 0) || (i == j && got != 0) || (i > j && got <= 0) {
				t.Errorf("compareUTF16(%q, %q) = %d", ordered[i], ordered[j], got)
			}
		}
	}
}

// Canonicalize uses its own object representation internally; it must agree
// with the documented definition Marshal(Parse(data)).
func TestCanonicalizeMatchesMarshal(t *testing.T) {
	inputs := append([]string{string(benchBody), `{"a":{"c":1,"b":[{"e":2,"d":3}]}}`,
		// Larger than linearDupLimit, with and without a duplicate.
		`{"a":0,"b":1,"c":2,"d":3,"e":4,"f":5,"g":6,"h":7,"i":8,"j":9,"k":10,"l":11,"m":12,"n":13,"o":14,"p":15,"q":16,"r":17,"s":18}`,
		`{"a":0,"b":1,"c":2,"d":3,"e":4,"f":5,"g":6,"h":7,"i":8,"j":9,"k":10,"l":11,"m":12,"n":13,"o":14,"p":15,"q":16,"r":17,"s":18,"b":19}`,
		`{"a":0,"b":1,"c":2,"d":3,"e":4,"f":5,"g":6,"h":7,"i":8,"j":9,"k":10,"l":11,"m":12,"n":13,"o":14,"p":15,"a":16}`,
	}, fuzzSeeds...)
	for _, in := range inputs {
		got, err := Canonicalize([]byte(in))
		v, perr := Parse([]byte(in))
		if fmt.Sprint(err) != fmt.Sprint(perr) {
			t.Errorf("%q: Canonicalize error %v, Parse error %v", in, err, perr)
			continue
		}
		if perr != nil {
			continue
		}
		want, err := Marshal(v)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%q: Canonicalize = %s, Marshal(Parse) = %s, %v", in, got, want, err)
		}
	}
}

var fuzzSeeds = []string{
	rfcInput,
	rfcSortInput,
	`{"a":1,"b":2}`, `{"b":2,"a":1}`,
	`1`, `1.0`, `1e0`, `10e-1`, `-0`, `1e21`, `1e-7`, `0.000001`, `123456789012345678901234567890`,
	`"\u0041"`, `"A"`, `"\u20ac"`, `"€"`, `"\ud83d\ude00"`, `"\u001f\/"`,
	`[1,2]`, `[2,1]`, `[]`, `{}`, `null`, `true`, `false`,
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"x":{"b":1,"b":2}}`,
	"\"\xff\"", "\xff", `"\ud800"`, `"\udc00x"`,
	strings.Repeat("[", 32) + strings.Repeat("]", 32),
	strings.Repeat("[", 33) + strings.Repeat("]", 33),
	strings.Repeat(`{"a":`, 33) + "1" + strings.Repeat("}", 33),
	`{"a":1} x`, `01`, `+1`, `.5`, `1.`, `NaN`, `Infinity`, "\"\t\"", `'a'`, `1e400`, `1e-400`,
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in)
		// Canonicalize parses with its own object representation; it must
		// accept and reject exactly what Parse does, with the same error.
		// (Marshal(Parse(in)) is compared in TestCanonicalizeMatchesMarshal,
		// not here: Marshal's map iteration makes coverage nondeterministic,
		// which stalls the fuzzer in minimization.)
		if _, perr := Parse(in); fmt.Sprint(perr) != fmt.Sprint(err) {
			t.Fatalf("Parse(%q) error = %v, Canonicalize error = %v", in, perr, err)
		}
		if err != nil {
			if acceptable(in) {
				t.Fatalf("Canonicalize(%q) failed on acceptable input: %v", in, err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("Canonicalize accepted %q, which encoding/json rejects", in)
		}
		if !json.Valid(out) {
			t.Fatalf("Canonicalize(%q) = %q, which is not valid JSON", in, out)
		}
		if !utf8.Valid(out) {
			t.Fatalf("Canonicalize(%q) = %q, which is not valid UTF-8", in, out)
		}
		again, err := Canonicalize(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, out, again, err)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("Parse(%q): %v", out, err)
		}
		// Canonicalization must preserve meaning. encoding/json decodes
		// numbers to float64, so this also checks number formatting
		// round-trips. (Strict input means encoding/json's lenient handling
		// of bad UTF-8, surrogates and duplicates cannot make this differ.)
		var vin, vout any
		if json.Unmarshal(in, &vin) != nil || json.Unmarshal(out, &vout) != nil {
			t.Fatalf("encoding/json cannot decode %q or %q", in, out)
		}
		if !reflect.DeepEqual(vin, vout) {
			t.Fatalf("meaning changed: %q (%#v) -> %q (%#v)", in, vin, out, vout)
		}
	})
}

// acceptable reports whether in should be accepted by Parse, judged with
// encoding/json plus independent checks for the extra strictness rules.
func acceptable(in []byte) bool {
	if !utf8.Valid(in) || !json.Valid(in) || hasLoneSurrogate(in) {
		return false
	}
	// With valid UTF-8 and no lone surrogates, encoding/json unescapes names
	// exactly, so its tokens are a sound basis for the remaining checks.
	type frame struct {
		names   map[string]bool // nil for arrays
		wantKey bool
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		isKey := top != nil && top.names != nil && top.wantKey
		if top != nil && top.names != nil {
			top.wantKey = !top.wantKey
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				fr := &frame{}
				if tok == '{' {
					fr.names, fr.wantKey = map[string]bool{}, true
				}
				stack = append(stack, fr)
				if len(stack) > MaxDepth {
					return false
				}
			case '}', ']':
				// The parent's key/value toggle already happened when this
				// container opened.
				stack = stack[:len(stack)-1]
			}
		case string:
			if isKey {
				if top.names[tok] {
					return false
				}
				top.names[tok] = true
			}
		case json.Number:
			lit := strings.ToLower(string(tok))
			f, err := strconv.ParseFloat(lit, 64)
			if err != nil || math.IsInf(f, 0) || len(lit) > MaxNumberLen {
				return false
			}
			mantissa, exp, hasExp := strings.Cut(lit, "e")
			if e, err := strconv.Atoi(exp); hasExp && (err != nil || e > MaxExponent || e < -MaxExponent) {
				return false
			}
			if f == 0 && strings.Trim(mantissa, "-0.") != "" {
				return false // a nonzero number that reads as 0
			}
		}
	}
}

// hasLoneSurrogate scans the string literals of valid JSON for \u escapes of
// unpaired surrogates.
func hasLoneSurrogate(in []byte) bool {
	inString := false
	for i := 0; i < len(in); i++ {
		c := in[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			i++
			if in[i] != 'u' {
				continue
			}
			r, _ := strconv.ParseUint(string(in[i+1:i+5]), 16, 16)
			i += 4
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return true
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 >= len(in) || in[i+1] != '\\' || in[i+2] != 'u' {
					return true
				}
				lo, _ := strconv.ParseUint(string(in[i+3:i+7]), 16, 16)
				if lo < 0xDC00 || lo > 0xDFFF {
					return true
				}
				i += 6
			}
		}
	}
	return false
}

// benchBody is a ~2 KiB request body of the kind the service fingerprints.
var benchBody = []byte(`{
  "operation": "create_order",
  "customer": {"id": "cus_01HZX3K9V7QJ2M4N6P8R0T", "email": "ada@example.com", "name": "Ada Lovelace",
    "address": {"line1": "12 Analytical Engine Way", "line2": null, "city": "London", "postcode": "N1 9GU", "country": "GB"}},
  "currency": "EUR",
  "items": [
    {"sku": "BK-0001", "title": "Notes on the Analytical Engine", "quantity": 2, "unit_price": 19.99, "tax_rate": 0.2, "tags": ["book", "history"]},
    {"sku": "BK-0002", "title": "Sketch of the Analytical Engine — Menabrea", "quantity": 1, "unit_price": 24.50, "tax_rate": 0.2, "tags": ["book"]},
    {"sku": "PN-7781", "title": "Fountain pen, \"Difference\" edition", "quantity": 3, "unit_price": 7.25, "tax_rate": 0.2, "tags": []},
    {"sku": "GF-0100", "title": "Gift card €50", "quantity": 1, "unit_price": 50, "tax_rate": 0, "tags": ["gift", "digital"]},
    {"sku": "MP-4410", "title": "Map of 19th-century London", "quantity": 1, "unit_price": 12.0, "tax_rate": 0.2, "tags": ["map"]}
  ],
  "shipping": {"method": "express", "price": 4.95, "instructions": "Leave with neighbour at no. 14\nRing twice", "insured": true},
  "discounts": [{"code": "WELCOME10", "percent": 10}, {"code": "LOYALTY", "amount": 2.5e0}],
  "metadata": {"source": "web", "campaign": "spring-2025", "ab_bucket": 7, "user_agent": "Mozilla/5.0 (X11; Linux x86_64)",
    "referrer": "https:\/\/example.com\/landing?utm_source=newsletter&utm_medium=email", "consents": {"marketing": false, "terms": true}},
  "requested_delivery": "2025-04-01",
  "notes": "Please wrap the books separately. Merci beaucoup! \u00e7a va \ud83d\ude00",
  "payment": {"method": "card", "token": "tok_9f8e7d6c5b4a39281706f5e4d3c2b1a0", "save_for_later": false, "installments": 1,
    "billing_address_same_as_shipping": true},
  "client_reference": "PO-2025-000123",
  "priority": 1e2,
  "weights_kg": [0.45, 0.38, 0.012, 0.005, 0.2],
  "dimensions_cm": {"length": 32.5, "width": 24, "height": 8.75}
}`)

func BenchmarkCanonicalize(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonicalize(benchBody); err != nil {
			b.Fatal(err)
		}
	}
}
