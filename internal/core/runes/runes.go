// Package runes cuts text to a length counted in characters (Unicode code points, as JSON
// Schema and the step protocol count them), never through a character: the one way longrun
// shortens text it echoes in a problem, a log line or a terminal.
package runes

import (
	"strings"
	"unicode/utf8"
)

// Cut returns s when it has at most limit characters, and otherwise its first limit-1
// characters followed by "…" (limit characters in all). A byte of s that is not UTF-8
// counts as one character and, in a cut result, becomes U+FFFD, as encoding/json writes
// it, so a cut result is always valid UTF-8. A limit below 1 gives "".
func Cut(s string, limit int) string {
	if limit < 1 {
		return ""
	}
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s { // an invalid byte is one utf8.RuneError
		if n == limit-1 {
			break
		}
		b.WriteRune(r)
		n++
	}
	b.WriteString("…")
	return b.String()
}
