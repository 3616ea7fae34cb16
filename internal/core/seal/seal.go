// Package seal makes and checks the MACs by which longrun's functions know the state that
// they themselves handed to Step Functions or to Lambda when it comes back to them.
//
// The recorder is invoked by Step Functions (a Run) and by Lambda (a worker's destination),
// and the reconciler reads executions' outputs. Anyone in the account who may invoke the
// recorder or start one of longrun's executions could otherwise hand it a made-up step
// request, decision or report for any operation. So what longrun hands over carries a seal:
// an HMAC-SHA256, keyed from a secret the stack creates, over the document's canonical JSON
// (RFC 8785), its purpose and the operation it belongs to. Step Functions and Lambda may
// re-serialise JSON on the way (spacing, member order, number spelling); the canonical form
// is the same on both sides, so a seal survives that and nothing else.
//
// A seal proves that longrun made the document; it does not hide it. Whoever can read an
// execution's history or a worker's request can replay what they read, which lets them
// report no more than that document's own step (docs/security.md).
package seal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/longrun-dev/longrun/internal/core/jcs"
)

// MinKeyBytes is the shortest key a Sealer takes: an HMAC-SHA256 key shorter than the
// hash's output weakens it.
const MinKeyBytes = 32

// What a seal is for. A seal made for one purpose never passes as another's, so a step
// request cannot be presented as a decision.
const (
	PurposeInput    = "input"    // an execution's input (a continuation's)
	PurposeDecision = "decision" // the recorder's answer to the workflow
	PurposeStep     = "step"     // a step request sent to a worker
)

// ErrBroken is the error of a document whose seal is missing, malformed or wrong.
var ErrBroken = errors.New("seal: not made by this deployment")

// Sealer makes and checks seals with one key. It holds no other state and is safe for
// concurrent use. A nil Sealer seals nothing and takes no seal.
type Sealer struct {
	key []byte
}

// New returns a Sealer keyed by key, which must be at least MinKeyBytes long.
func New(key []byte) (*Sealer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("seal: a key of %d bytes is too short (at least %d)", len(key), MinKeyBytes)
	}
	return &Sealer{key: append([]byte(nil), key...)}, nil
}

// Seal is the seal of doc, a JSON document without its seal, made for purpose on operation
// subject. It fails only when doc is not JSON that RFC 8785 can put in canonical form.
func (s *Sealer) Seal(purpose, subject string, doc []byte) (string, error) {
	sum, err := s.sum(purpose, subject, doc)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// Check reports whether seal is doc's for purpose and subject: nil, or an error wrapping
// ErrBroken.
func (s *Sealer) Check(purpose, subject string, doc []byte, seal string) error {
	got, err := base64.RawURLEncoding.DecodeString(seal)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: the %s seal is malformed", ErrBroken, purpose)
	}
	want, err := s.sum(purpose, subject, doc)
	if err != nil {
		return fmt.Errorf("%w: the %s is not canonical JSON (%v)", ErrBroken, purpose, err)
	}
	if !hmac.Equal(got, want) {
		return fmt.Errorf("%w: the %s seal does not match", ErrBroken, purpose)
	}
	return nil
}

func (s *Sealer) sum(purpose, subject string, doc []byte) ([]byte, error) {
	if s == nil {
		return nil, errors.New("no key")
	}
	canonical, err := jcs.Canonicalize(doc)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, s.key)
	// Purpose and subject are length-prefixed, so that no split of one string into the two
	// gives another pair the same MAC.
	fmt.Fprintf(m, "longrun-seal/1\n%d:%s\n%d:%s\n", len(purpose), purpose, len(subject), subject)
	m.Write(canonical)
	return m.Sum(nil), nil
}
