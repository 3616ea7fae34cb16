package callback

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/seal"
)

func sealer(t testing.TB, key string) *seal.Sealer {
	t.Helper()
	s, err := seal.New([]byte(strings.Repeat(key, 32/len(key)+1)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A token names its operation and signal, and only the key that made it reads it: another
// deployment's token, a token with its operation or signal changed, or its MAC cut, is
// refused, so a third party cannot aim a URL at another operation or signal.
func TestATokenIsBoundToItsOperationAndSignal(t *testing.T) {
	s := sealer(t, "k1/")
	tok, err := Token(s, "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", "approval")
	if err != nil {
		t.Fatal(err)
	}
	if id, name, err := Parse(s, tok); err != nil || id != "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3" || name != "approval" {
		t.Fatalf("Parse = %q %q %v", id, name, err)
	}
	if len(tok) > MaxTokenLen || strings.ContainsAny(tok, "/+=?#") {
		t.Fatalf("token %q is not a path segment of at most %d", tok, MaxTokenLen)
	}
	other, _ := Token(s, "op_01JDY3Q4W5E6R7T8Y9V0A1B2C4", "approval")
	_, mac, _ := strings.Cut(other, ".")
	head, _, _ := strings.Cut(tok, ".")
	for name, bad := range map[string]string{
		"another key":             Must(Token(sealer(t, "k2/"), "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", "approval")),
		"another operation's MAC": head + "." + mac,
		"another signal":          strings.Replace(tok, head, b64("op_01JDY3Q4W5E6R7T8Y9V0A1B2C3/reject"), 1),
		"no MAC":                  head + ".",
		"no dot":                  head,
		"two dots":                tok + ".x",
		"cut":                     tok[:len(tok)-2],
		"empty":                   "",
		"not base64":              "!!!." + mac,
		"no signal":               b64("op_01JDY3Q4W5E6R7T8Y9V0A1B2C3") + "." + mac,
		"too long":                tok + strings.Repeat("A", MaxTokenLen),
	} {
		if _, _, err := Parse(s, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Parse(%q) = %v, want ErrInvalid", name, bad, err)
		}
	}
}

// Must is for tests: the token, or a panic.
func Must(tok string, err error) string {
	if err != nil {
		panic(err)
	}
	return tok
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// The parser faces anyone on the internet: whatever it is given, it answers without
// panicking, and accepts only what Token made.
func FuzzParse(f *testing.F) {
	s := sealer(f, "k1/")
	f.Add(Must(Token(s, "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", "approval")))
	f.Add("")
	f.Add(".")
	f.Add("b3BfMS9h.")
	f.Fuzz(func(t *testing.T, tok string) {
		id, name, err := Parse(s, tok)
		if err != nil {
			return
		}
		if again, _ := Token(s, id, name); again != tok {
			t.Fatalf("Parse accepted %q, which Token makes as %q", tok, again)
		}
	})
}
