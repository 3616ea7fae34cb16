package ids

import (
	"encoding/binary"
	"time"
)

// maxMillis is the latest time a ULID can hold: 48 bits of milliseconds (year 10889).
const maxMillis = 1<<48 - 1

// TimePrefix is the first 10 characters of every ULID minted at t: its 48-bit millisecond
// time in Crockford base32. Ids sort by it, so with a prefix ("op_" + TimePrefix(t)) it
// bounds a range of ids by creation time: every id minted before t sorts below it, every
// one minted at t or later above it. A time before 1970 is clamped to 1970, one past the
// ULID's range to its end.
func TimePrefix(t time.Time) string {
	ms := min(max(t.UnixMilli(), 0), maxMillis)
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(ms)<<16)
	return encode(b)[:10]
}

// Minted is when an id (prefix + ULID, as Valid accepts it) was minted, to the millisecond:
// its ULID's time. ok is false for anything Valid refuses.
func Minted(prefix, id string) (t time.Time, ok bool) {
	if !Valid(prefix, id) {
		return time.Time{}, false
	}
	var ms int64
	for i := len(prefix); i < len(prefix)+10; i++ {
		ms = ms<<5 | int64(indexOf(id[i]))
	}
	return time.UnixMilli(ms).UTC(), true
}
