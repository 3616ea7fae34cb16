// Package ids mints longrun's public identifiers: a prefix and a ULID (48-bit millisecond
// time, 80 random bits, Crockford base32), so ids sort by creation time and spread evenly
// over DynamoDB partitions.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"io"
	"time"
)

const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Generator mints ids from an injected clock and entropy source.
type Generator struct {
	Now     func() time.Time
	Entropy io.Reader
}

// New returns a Generator on the system clock and crypto/rand.
func New() *Generator { return &Generator{Now: time.Now, Entropy: rand.Reader} }

// Operation mints an operation id: "op_" + ULID.
func (g *Generator) Operation() string { return "op_" + g.ulid() }

// Request mints a request id: "req_" + ULID.
func (g *Generator) Request() string { return "req_" + g.ulid() }

func (g *Generator) ulid() string {
	var b [16]byte
	ms := uint64(g.Now().UnixMilli())
	binary.BigEndian.PutUint64(b[0:8], ms<<16)
	if _, err := io.ReadFull(g.Entropy, b[6:]); err != nil {
		// crypto/rand does not fail on supported platforms; a broken entropy source must not
		// mint colliding ids silently.
		panic("ids: entropy source failed: " + err.Error())
	}
	return encode(b)
}

// encode writes 128 bits as 26 base32 characters, most significant first (the first
// character carries only 3 bits).
func encode(b [16]byte) string {
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// Valid reports whether s looks like an id with the given prefix, so malformed path
// parameters are rejected before any lookup.
func Valid(prefix, s string) bool {
	if len(s) != len(prefix)+26 || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if indexOf(s[i]) < 0 {
			return false
		}
	}
	return s[len(prefix)] <= '7'
}

func indexOf(c byte) int {
	for i := 0; i < len(alphabet); i++ {
		if alphabet[i] == c {
			return i
		}
	}
	return -1
}
