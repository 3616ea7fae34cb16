package runes

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     string
		limit int
		want  string
	}{
		{"short enough", "hello", 5, "hello"},
		{"cut", "hello world", 6, "hello…"},
		{"counted in characters, not bytes", "ééééé", 5, "ééééé"},
		{"a two-byte character is never split", "éééééé", 3, "éé…"},
		{"a four-byte character is never split", "😀😀😀", 2, "😀…"},
		{"a limit of one", "abc", 1, "…"},
		{"a limit below one", "abc", 0, ""},
		{"an invalid byte counts as one and becomes U+FFFD", "a\xffbcd", 3, "a\uFFFD…"},
		{"an invalid byte is kept when nothing is cut", "a\xff", 2, "a\xff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Cut(tc.s, tc.limit)
			if got != tc.want {
				t.Fatalf("Cut(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.want)
			}
		})
	}
}

// Whatever is cut, the result is valid UTF-8 of at most limit characters.
func TestCutIsValidAndWithinItsLimit(t *testing.T) {
	s := strings.Repeat("aé😀\xff", 50)
	for limit := 1; limit <= utf8.RuneCountInString(s)+1; limit++ {
		got := Cut(s, limit)
		if n := utf8.RuneCountInString(got); n > limit || (n < limit && got != s) {
			t.Fatalf("limit %d: %d characters", limit, n)
		}
		if got != s && !utf8.ValidString(got) {
			t.Fatalf("limit %d: not UTF-8: %q", limit, got)
		}
	}
}
