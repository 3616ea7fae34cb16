package cost

import (
	"bytes"
	"io"
	"maps"
	"strings"
	"sync"
)

// Logs counts the log bytes the functions write, from the local stack's output (devstack
// Options.Output: each line prefixed with its function's name and " | "), passing the output
// on to a writer of its own. It counts only while on; what CloudWatch Logs would ingest is the
// line without the prefix.
type Logs struct {
	out io.Writer

	mu      sync.Mutex
	on      bool
	partial []byte
	bytes   map[string]int64
	lines   map[string]int64
}

// NewLogs returns a counter passing the output on to out (nil: nowhere), off.
func NewLogs(out io.Writer) *Logs {
	if out == nil {
		out = io.Discard
	}
	return &Logs{out: out, bytes: map[string]int64{}, lines: map[string]int64{}}
}

// Count turns counting on or off.
func (l *Logs) Count(on bool) {
	l.mu.Lock()
	l.on = on
	l.mu.Unlock()
}

// Reset forgets what was counted.
func (l *Logs) Reset() {
	l.mu.Lock()
	l.bytes, l.lines = map[string]int64{}, map[string]int64{}
	l.mu.Unlock()
}

// Bytes and lines by function, counted so far.
func (l *Logs) Counts() (bytes, lines map[string]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.bytes), maps.Clone(l.lines)
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		if !l.on {
			continue
		}
		if name, msg, ok := strings.Cut(line, " | "); ok && name != "" && !strings.ContainsAny(name, " \t") {
			l.bytes[name] += int64(len(msg))
			l.lines[name]++
		}
	}
	l.mu.Unlock()
	return l.out.Write(p)
}
