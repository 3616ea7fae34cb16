package linearize

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// ErrHistory means a history cannot be checked as recorded: an entry lacks what its kind
// needs, or answers before it was called.
var ErrHistory = errors.New("history cannot be checked")

// partition is a connected group of keys and operations: a key joins the operations its
// answers name. Requests in different partitions share no state, so porcupine checks each
// on its own, which keeps the search small however long the history is. Normally a
// partition is at most one key and one operation; more than that is already a violation.
type partition struct {
	keys   []string
	ops    []string
	orphan []bool // no recorded create named the operation
}

// Violation is a partition no order explains.
type Violation struct {
	Keys       []string
	Operations []string
	Calls      int // the partition's calls that were checked
	// Linearized is the length of the longest prefix of an order porcupine found. Stuck
	// describes, earliest call first, up to three calls that no such prefix holds: the
	// violation is among them and the calls they had to follow.
	Linearized int
	Stuck      []string
}

func (v Violation) String() string {
	return fmt.Sprintf("keys %v, operations %v: %d of %d calls linearized; stuck at %s",
		v.Keys, v.Operations, v.Linearized, v.Calls, strings.Join(v.Stuck, "; "))
}

// Result is what Check found.
type Result struct {
	// Linearizable is true when every partition has an order; false when one has none or
	// the check timed out.
	Linearizable bool
	// TimedOut says the timeout ended the check before it decided. Violations are then
	// empty: porcupine cannot tell a partition that failed from one it had not finished.
	TimedOut bool
	// Calls is how many calls the history has; Checked how many were left for porcupine
	// once those whose answers others imply were dropped (see reduce).
	Calls, Checked int
	Partitions     int
	Violations     []Violation

	model   porcupine.Model
	failing []porcupine.Operation
	all     []porcupine.Operation
	timeout time.Duration
}

// Check looks for an order of history that the model allows (see the package comment),
// within timeout (0: none). The error is for a history it cannot read, never for a
// violation.
func Check(history []Entry, timeout time.Duration) (Result, error) {
	return check(history, timeout, true)
}

// check is Check, with the reduction to switch off for the test that holds it exact.
func check(history []Entry, timeout time.Duration, reduced bool) (Result, error) {
	lc, err := newLifecycle()
	if err != nil {
		return Result{}, err
	}
	ops, parts, err := annotate(history, reduced)
	if err != nil {
		return Result{}, err
	}
	m := newModel(lc)
	verdict, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
	res := Result{Linearizable: verdict == porcupine.Ok, TimedOut: verdict == porcupine.Unknown,
		Calls: len(history), Checked: len(ops), Partitions: len(parts), model: m, all: ops, timeout: timeout}
	if verdict != porcupine.Illegal {
		return res, nil
	}
	// porcupine returns partitions in the order the model's Partition made them, with each
	// call's id its index there; a partition is linearizable when some linearization holds
	// all of its calls.
	byPart := m.Partition(ops)
	for p, partials := range info.PartialLinearizations() {
		calls := byPart[p]
		longest := 0
		for _, l := range partials {
			longest = max(longest, len(l))
		}
		if longest == len(calls) {
			continue
		}
		res.failing = append(res.failing, calls...)
		res.Violations = append(res.Violations, violation(calls, partials, longest))
	}
	return res, nil
}

func violation(calls []porcupine.Operation, partials [][]int, longest int) Violation {
	part := calls[0].Input.(*call).part
	v := Violation{Keys: part.keys, Operations: part.ops, Calls: len(calls), Linearized: longest}
	placed := make([]bool, len(calls))
	for _, l := range partials {
		if len(l) == longest {
			for _, id := range l {
				placed[id] = true
			}
		}
	}
	var stuck []int
	for i := range calls {
		if !placed[i] {
			stuck = append(stuck, i)
		}
	}
	slices.SortFunc(stuck, func(a, b int) int { return cmp.Compare(calls[a].Call, calls[b].Call) })
	origin := calls[0].Call
	for _, c := range calls {
		origin = min(origin, c.Call)
	}
	for _, i := range stuck[:min(len(stuck), 3)] {
		c := calls[i]
		v.Stuck = append(v.Stuck, fmt.Sprintf("%s (at +%s)", describe(c.Input.(*call).in, c.Output.(Output)),
			time.Duration(c.Call-origin)))
	}
	return v
}

// Visualize writes porcupine's HTML view of the partitions that failed, or of the whole
// history when none did, to w.
func (r Result) Visualize(w io.Writer) error {
	ops := r.failing
	if len(ops) == 0 {
		ops = r.all
	}
	_, info := porcupine.CheckOperationsVerbose(r.model, ops, r.timeout)
	if err := porcupine.Visualize(r.model, info, w); err != nil {
		return fmt.Errorf("visualize: %w", err)
	}
	return nil
}

// VisualizeFile writes Visualize's page to path.
func (r Result) VisualizeFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("visualization: %w", err)
	}
	if err := r.Visualize(f); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("visualization: %w", err)
	}
	return nil
}

func newModel(lc *lifecycle) porcupine.Model {
	k := &checker{lc: lc}
	return porcupine.Model{
		Partition: partitionOf,
		Init:      func() any { return &model{} },
		Step:      k.step,
		Equal:     k.equal,
		Hash:      k.hash,
		DescribeOperation: func(input, output any) string {
			return describe(input.(*call).in, output.(Output))
		},
		DescribeState: k.describeState,
	}
}

// partitionOf groups calls by the partition annotate put them in, in order of first call.
func partitionOf(ops []porcupine.Operation) [][]porcupine.Operation {
	index := map[*partition]int{}
	var out [][]porcupine.Operation
	for _, op := range ops {
		p := op.Input.(*call).part
		i, ok := index[p]
		if !ok {
			i = len(out)
			index[p] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}

// annotate checks each entry, drops those others imply (when reduced), joins keys and
// operations into partitions, and makes the porcupine operations: inputs resolved to indices in their partition, unknown answers
// returning at infinity, and each call on a lane of its own while it overlaps another (the
// visualization's rows).
func annotate(history []Entry, reduced bool) ([]porcupine.Operation, []*partition, error) {
	uf := unionFind{}
	node := func(e Entry) string {
		if e.Input.Kind == Create {
			return "key\x00" + e.Input.Key
		}
		return "op\x00" + e.Input.OperationID
	}
	// names is the operation a create's answer names, "" when it names none.
	names := func(e Entry) string {
		out := e.Output
		if e.Input.Kind == Create && (out.Status == 202 || out.Status == 409 && out.Code == problem.IdempotencyKeyReused) {
			return out.OperationID
		}
		return ""
	}
	for i, e := range history {
		if err := validate(e); err != nil {
			return nil, nil, fmt.Errorf("%w: entry %d (%s): %w", ErrHistory, i, e, err)
		}
	}
	if reduced {
		history = reduce(history, names)
	}
	for _, e := range history {
		uf.add(node(e))
		if id := names(e); id != "" {
			uf.union(node(e), "op\x00"+id)
		}
	}
	parts := map[string]*partition{}
	var order []*partition
	keyIndex := map[string]int32{}
	opIndex := map[string]int32{}
	keyOp := map[string]string{} // the first operation a key's answers name
	named := map[string]bool{}
	partOf := func(n string) *partition {
		root := uf.find(n)
		p, ok := parts[root]
		if !ok {
			p = &partition{}
			parts[root] = p
			order = append(order, p)
		}
		return p
	}
	opAt := func(p *partition, id string) int32 {
		i, ok := opIndex[id]
		if !ok {
			i = int32(len(p.ops))
			opIndex[id] = i
			p.ops = append(p.ops, id)
		}
		return i
	}
	for _, e := range history {
		p := partOf(node(e))
		if e.Input.Kind != Create {
			opAt(p, e.Input.OperationID)
			continue
		}
		if _, ok := keyIndex[e.Input.Key]; !ok {
			keyIndex[e.Input.Key] = int32(len(p.keys))
			p.keys = append(p.keys, e.Input.Key)
		}
		if id := names(e); id != "" {
			opAt(p, id)
			named[id] = true
			if _, ok := keyOp[e.Input.Key]; !ok {
				keyOp[e.Input.Key] = id
			}
		}
	}
	for _, p := range order {
		p.orphan = make([]bool, len(p.ops))
		for i, id := range p.ops {
			p.orphan[i] = !named[id]
		}
	}
	ops := make([]porcupine.Operation, len(history))
	for i, e := range history {
		c := &call{in: e.Input, part: partOf(node(e)), key: -1, op: -1}
		switch {
		case e.Input.Kind != Create:
			c.op = opIndex[e.Input.OperationID]
		case names(e) != "":
			c.key, c.op = keyIndex[e.Input.Key], opIndex[names(e)]
		default:
			c.key = keyIndex[e.Input.Key]
			if id, ok := keyOp[e.Input.Key]; ok {
				c.op = opIndex[id]
			}
		}
		ret := e.Return
		if e.Output.Unknown() {
			ret = math.MaxInt64
		}
		ops[i] = porcupine.Operation{Input: c, Call: e.Call, Output: e.Output, Return: ret}
	}
	assignLanes(ops)
	return ops, order, nil
}

// reduce drops the calls whose answers are implied by others', which keeps porcupine's
// search small however densely clients poll (without it, a dozen overlapping reads of one
// operation make the search exponential):
//
//   - calls that change nothing and assert nothing: reads without an answer, and requests
//     refused outright (401, 429, a create's 400 or target_busy, a cancel whose If-Match was
//     not one of ours), and a create without an answer whose key no answer names;
//   - of the reads that saw the same answer (an operation's state and version, or its
//     absence), all but the one that returned first and the one that was called last; and
//     likewise of the replays and 409s that name the same operation for a key.
//
// The second is exact for the contract: the operation's version only rises, so it holds
// that answer throughout the time between the two kept reads' instants; every dropped read
// was called no later than the last call and returned no earlier than the first return,
// so its interval meets that time, and it can take effect there. A key's binding never
// changes either, so the same holds for it.
func reduce(history []Entry, names func(Entry) string) []Entry {
	keyNamed := map[string]bool{}
	for _, e := range history {
		if names(e) != "" {
			keyNamed[e.Input.Key] = true
		}
	}
	type span struct{ first, last int } // the earliest return, the latest call
	spans := map[string]*span{}
	class := make([]string, len(history))
	keep := make([]bool, len(history))
	for i, e := range history {
		out := e.Output
		switch e.Input.Kind {
		case Get:
			switch {
			case out.Unknown() || out.Status != 200 && out.Status != 404:
				continue
			case out.Status == 404:
				class[i] = "absent"
			case wellFormed(e.Input, out):
				class[i] = fmt.Sprintf("%s v%d", out.State, out.Version)
			}
			class[i] = "op\x00" + e.Input.OperationID + "\x00" + class[i]
		case Create:
			switch {
			case out.Unknown() && !keyNamed[e.Input.Key]:
				continue
			case out.Unknown(), out.Status == 202 && !out.Replayed:
			case names(e) != "":
				class[i] = "key\x00" + e.Input.Key + "\x00" + names(e)
			default:
				continue
			}
		case Cancel:
			switch out.Status {
			case 404, 409, 200, 202:
			case 412:
				if e.Input.IfMatch == 0 {
					continue
				}
			default:
				if !out.Unknown() {
					continue
				}
			}
		}
		keep[i] = true
		if class[i] == "" || strings.HasSuffix(class[i], "\x00") {
			class[i] = "" // a malformed answer stays, to be refused
			continue
		}
		sp, ok := spans[class[i]]
		if !ok {
			spans[class[i]] = &span{first: i, last: i}
			continue
		}
		if e.Return < history[sp.first].Return {
			sp.first = i
		}
		if e.Call > history[sp.last].Call {
			sp.last = i
		}
	}
	var out []Entry
	for i, e := range history {
		if sp := spans[class[i]]; keep[i] && (class[i] == "" || i == sp.first || i == sp.last) {
			out = append(out, e)
		}
	}
	return out
}

func validate(e Entry) error {
	switch e.Input.Kind {
	case Create:
		if e.Input.Key == "" {
			return errors.New("a create without a key")
		}
		if e.Output.Status == 202 && e.Output.OperationID == "" {
			return errors.New("a 202 without an operation id")
		}
		if e.Output.Status == 409 && e.Output.Code == problem.IdempotencyKeyReused && e.Output.OperationID == "" {
			return errors.New("a 409 idempotency_key_reused without an operation id")
		}
	case Get, Cancel:
		if e.Input.OperationID == "" {
			return errors.New("no operation id")
		}
	default:
		return errors.New("unknown kind")
	}
	if !e.Output.Unknown() && e.Return < e.Call {
		return errors.New("answered before it was called")
	}
	return nil
}

// assignLanes gives each call the lowest lane of its partition free at its call, so that
// overlapping calls are drawn on separate rows.
func assignLanes(ops []porcupine.Operation) {
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
	busy := map[*partition][]int64{} // per lane, when its last call returned
	for _, i := range order {
		p := ops[i].Input.(*call).part
		lanes := busy[p]
		lane := slices.IndexFunc(lanes, func(end int64) bool { return end < ops[i].Call })
		if lane < 0 {
			lane = len(lanes)
			lanes = append(lanes, 0)
		}
		lanes[lane] = ops[i].Return
		busy[p] = lanes
		ops[i].ClientId = lane
	}
}

// unionFind joins names into groups.
type unionFind map[string]string

func (u unionFind) add(n string) {
	if _, ok := u[n]; !ok {
		u[n] = n
	}
}

func (u unionFind) find(n string) string {
	u.add(n)
	for u[n] != n {
		u[n] = u[u[n]] // halve the path
		n = u[n]
	}
	return n
}

func (u unionFind) union(a, b string) {
	ra, rb := u.find(a), u.find(b)
	if ra != rb {
		u[ra] = rb
	}
}
