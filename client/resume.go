package client

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidResumeToken is what NewPollerFromResumeToken's refusals are (errors.Is): the
// token is not one ResumeToken wrote, was damaged on the way, is of a version this client
// does not read, or was minted by a client of another base URL.
var ErrInvalidResumeToken = errors.New("longrun: invalid resume token")

// resumePrefix starts every token: the format and its version, so a token of a later format
// is refused by name rather than misread, and a string that is not a token at all is told
// apart at once.
const resumePrefix = "lrpoll1."

// resumeState is what a token carries: only what a Poller needs to go on, never a
// credential, a header or a representation's contents.
type resumeState struct {
	// Base is the base URL of the client that minted the token: a token is only good for a
	// client of the same API.
	Base string `json:"base"`
	// OperationID names the operation, for the Poller's Operation until the first poll.
	OperationID string `json:"operationId"`
	// URL is where the next poll reads: the last statusUrl the poller followed, as a
	// path (and query) on the base URL's origin.
	URL string `json:"url"`
	// Version and State are the newest version the poller had seen and its state, so a
	// lagging read after the resume does not take the poller back.
	Version int   `json:"version"`
	State   State `json:"state"`
}

// ResumeToken returns an opaque token from which NewPollerFromResumeToken makes a Poller
// that goes on where this one is: the status URL it would read next and the newest version
// it has seen (and that version's state), bound to this client's base URL. It carries no credentials (the resumed
// Poller authenticates with its own client's), so it may be stored with the job that waits,
// or handed to another process. A Poller that is Done has nothing to resume: its Result is
// the answer, and ResumeToken refuses.
//
// The token is versioned and checksummed against damage; it is not signed, and need not
// be: a token only ever sends a client to its own API's origin, as NewPoller would.
func (p *Poller) ResumeToken() (string, error) {
	if p.done {
		return "", errors.New("longrun: ResumeToken: the poller is done; its Result is the answer")
	}
	payload, err := json.Marshal(resumeState{
		Base:        p.c.base.String(),
		OperationID: p.op.OperationID,
		URL:         p.next.RequestURI(),
		Version:     p.op.Version,
		State:       p.op.State,
	})
	if err != nil {
		return "", fmt.Errorf("longrun: ResumeToken: %w", err)
	}
	sum := sha256.Sum256(payload)
	enc := base64.RawURLEncoding
	return resumePrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(sum[:8]), nil
}

// NewPollerFromResumeToken returns a Poller that goes on where the one that wrote token
// (Poller.ResumeToken) stopped: it reads the same status URL next and follows it to the
// operation's end as that one would have. Its Operation, until the first poll, has only the
// operation's id, status URL, and the version and state last seen.
//
// A token that is malformed, damaged, of an unknown version, or minted by a client of
// another base URL is refused with an error that is ErrInvalidResumeToken (errors.Is), and
// nothing is sent.
func (c *Client) NewPollerFromResumeToken(token string) (*Poller, error) {
	st, err := parseResumeToken(token)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidResumeToken, err)
	}
	if st.Base != c.base.String() {
		return nil, fmt.Errorf("%w: it was minted for the API at %s, and this client's is %s", ErrInvalidResumeToken, st.Base, c.base)
	}
	if st.OperationID == "" || st.URL == "" || !strings.HasPrefix(st.URL, "/") || st.Version < 0 {
		return nil, fmt.Errorf("%w: it names no operation or status path", ErrInvalidResumeToken)
	}
	if st.State != "" && (!st.State.Valid() || st.State.IsDone()) {
		return nil, fmt.Errorf("%w: state %q is not one a poller goes on from", ErrInvalidResumeToken, st.State)
	}
	next, err := c.resolve(st.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidResumeToken, err)
	}
	op := &Operation{OperationID: st.OperationID, StatusURL: st.URL, Version: st.Version, State: st.State}
	return &Poller{c: c, next: next, op: op}, nil
}

// parseResumeToken reads a token's state: prefix, payload, checksum, and a payload that is
// exactly a resumeState.
func parseResumeToken(token string) (resumeState, error) {
	var st resumeState
	rest, ok := strings.CutPrefix(token, resumePrefix)
	if !ok {
		if strings.HasPrefix(token, "lrpoll") {
			return st, errors.New("a token of another format version than this client reads (lrpoll1)")
		}
		return st, errors.New("not a resume token (it does not start with lrpoll1.)")
	}
	body, check, ok := strings.Cut(rest, ".")
	if !ok {
		return st, errors.New("the token is cut short")
	}
	enc := base64.RawURLEncoding
	payload, err := enc.DecodeString(body)
	if err != nil {
		return st, fmt.Errorf("the token's payload is damaged: %w", err)
	}
	want, err := enc.DecodeString(check)
	if err != nil {
		return st, fmt.Errorf("the token's checksum is damaged: %w", err)
	}
	sum := sha256.Sum256(payload)
	if !bytes.Equal(want, sum[:8]) {
		return st, errors.New("the token was changed or damaged (its checksum does not match)")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return st, fmt.Errorf("the token's payload is not a poller's state: %w", err)
	}
	if dec.More() {
		return st, errors.New("the token's payload has more than a poller's state")
	}
	return st, nil
}
