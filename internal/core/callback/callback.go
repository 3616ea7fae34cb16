// Package callback makes and reads the tokens of callback URLs: the URL a worker hands a
// third party, which sends one signal to one operation by POSTing to it with no
// credentials of its own (docs/operation-types.md, "Signals"). The token is the operation's
// id and the signal's name with a MAC over both (internal/core/seal, purpose "callback"), so
// nothing needs storing to recognise it: no token, nor any hash of one, is kept anywhere,
// and one that the deployment's key did not make is refused without a read.
package callback

import (
	"encoding/base64"
	"errors"
	"strings"

	"github.com/longrun-dev/longrun/internal/core/seal"
)

// MaxTokenLen bounds a token a caller may present: longer input is refused before it is
// decoded. A real one is about 110 characters.
const MaxTokenLen = 256

// purpose keeps a callback's MAC from passing for any other seal of the deployment.
const purpose = "callback"

// ErrInvalid is the error of a token that is malformed or not made by this deployment.
var ErrInvalid = errors.New("callback: not a callback token of this deployment")

// Token is the token of signal name on operation id: base64url("<id>/<name>") "." the MAC,
// so at least 256 bits that only the key's holder can make.
func Token(s *seal.Sealer, id, name string) (string, error) {
	mac, err := s.Seal(purpose, id, doc(name))
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString([]byte(id+"/"+name)) + "." + mac, nil
}

// Parse reads a token: the operation and the signal it was made for, or ErrInvalid.
func Parse(s *seal.Sealer, token string) (id, name string, err error) {
	if len(token) > MaxTokenLen {
		return "", "", ErrInvalid
	}
	head, mac, ok := strings.Cut(token, ".")
	if !ok || head == "" || strings.Contains(mac, ".") {
		return "", "", ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return "", "", ErrInvalid
	}
	id, name, ok = strings.Cut(string(raw), "/")
	if !ok || id == "" || name == "" || strings.Contains(name, "/") {
		return "", "", ErrInvalid
	}
	if err := s.Check(purpose, id, doc(name), mac); err != nil {
		return "", "", ErrInvalid
	}
	// base64 decoding forgives stray low bits: only the token's one spelling is taken, so
	// that no two URLs send the same signal.
	if again, err := Token(s, id, name); err != nil || again != token {
		return "", "", ErrInvalid
	}
	return id, name, nil
}

// doc is what the MAC covers besides the operation: the signal's name, as a JSON document
// (the seal takes canonical JSON). Names match optype.SignalNamePattern, so no escaping is
// needed.
func doc(name string) []byte { return []byte(`{"signal":"` + name + `"}`) }
