package client

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Clock is the client's time: Now stamps attempts and signatures, Sleep waits between
// attempts and polls. The default is the wall clock; tests inject one that records the
// waits and moves its time forward by them, so nothing waits for real.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d, or until ctx is done, in which case it returns ctx.Err().
	Sleep(ctx context.Context, d time.Duration) error
}

// WallClock is the real clock, the default of ClientOptions.Clock: for callers that wrap it
// (to watch the waits, say) rather than replace it.
func WallClock() Clock { return wallClock{} }

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// jitter draws backoff waits. With no source it uses math/rand/v2's global generator, which
// is safe for concurrent use; a caller's source is guarded by a mutex.
type jitter struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newJitter(src rand.Source) *jitter {
	if src == nil {
		return &jitter{}
	}
	return &jitter{r: rand.New(src)}
}

func (j *jitter) float64() float64 {
	if j.r == nil {
		return rand.Float64()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.r.Float64()
}

// backoff is the n-th (from 1) consecutive wait of an exponential backoff with full jitter:
// drawn uniformly from [lo, min(hi, lo·2ⁿ)], so it never drops below lo, its ceiling
// doubles with every wait until hi, and waits of many clients spread over the whole range
// rather than arriving together.
func (j *jitter) backoff(n int, lo, hi time.Duration) time.Duration {
	if hi < lo {
		hi = lo
	}
	ceiling := lo
	for i := 0; i < n && ceiling < hi; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, hi)
	return lo + time.Duration(j.float64()*float64(ceiling-lo))
}

// retryAfter is the Retry-After header as a wait: delay-seconds (what longrun sends) or an
// HTTP date, relative to now. Zero when absent, malformed or in the past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(365*24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
