package linearize

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// cand is one possibility for an operation's register: state s at version v, or, when
// open, at some version from v on. A set of them, one per state at most and sorted by
// state, is what the model knows of an operation; most of the time it is one exact cand.
// Open cands are an over-approximation (they may allow a version the operation could not
// have had) and never an under-approximation, so they cost sensitivity, never a false
// alarm.
type cand struct {
	s    uint8
	open bool
	v    int32
}

// created is what a create that made the operation leaves: accepted at version 1.
func created(lc *lifecycle) []cand { return []cand{{s: lc.index[operation.Accepted], v: 1}} }

// merge adds c to the set cs (a new slice): two possibilities for one state become one
// that covers both.
func merge(cs []cand, c cand) []cand {
	i, found := slices.BinarySearchFunc(cs, c.s, func(x cand, s uint8) int { return int(x.s) - int(s) })
	if !found {
		return slices.Insert(slices.Clone(cs), i, c)
	}
	old := cs[i]
	if !old.open && !c.open && old.v == c.v {
		return cs
	}
	out := slices.Clone(cs)
	out[i] = cand{s: c.s, open: true, v: min(old.v, c.v)}
	return out
}

// member reports whether background facts can take the operation from one of cs to state
// t at version v.
func (r *reach) member(cs []cand, t uint8, v int32) bool {
	for _, c := range cs {
		if v < c.v {
			continue
		}
		n := v - c.v
		if c.open {
			if d := r.minN[c.s][t]; d >= 0 && n >= d {
				return true
			}
		} else if r.at(c.s, int(n))&(1<<t) != 0 {
			return true
		}
	}
	return false
}

// closure is every possibility background facts can lead cs to, in the states of want.
func (r *reach) closure(cs []cand, want uint32) []cand {
	var out []cand
	for _, c := range cs {
		for t := range len(r.minN) {
			d := r.minN[c.s][t]
			if want&(1<<t) == 0 || d < 0 {
				continue
			}
			out = merge(out, cand{s: uint8(t), open: c.open || !r.once[c.s][t], v: c.v + d})
		}
	}
	return out
}

// versionIs keeps the possibilities at version v.
func versionIs(cs []cand, v int32) []cand {
	var out []cand
	for _, c := range cs {
		if c.v == v || (c.open && c.v < v) {
			out = append(out, cand{s: c.s, v: v})
		}
	}
	return out
}

// versionIsNot drops the possibilities at exactly version v.
func versionIsNot(cs []cand, v int32) []cand {
	var out []cand
	for _, c := range cs {
		switch {
		case !c.open && c.v == v:
		case c.open && c.v == v:
			out = append(out, cand{s: c.s, open: true, v: v + 1})
		default:
			out = append(out, c)
		}
	}
	return out
}

func has(cs []cand, s uint8) bool {
	return slices.ContainsFunc(cs, func(c cand) bool { return c.s == s })
}

// opModel is what the model knows of one operation: its possibilities, and the key that
// created it (-1 before, or when something unseen did).
type opModel struct {
	creator int32
	cands   []cand
}

// model is the state of one partition: a binding per key (the operation's index, or -1) and
// what is known of each operation. Steps copy it; nothing is changed in place, as porcupine
// requires.
type model struct {
	part *partition
	keys []int32
	ops  []opModel
}

// call is a porcupine input: an entry's input with its key and operation resolved to
// indices in its partition.
type call struct {
	in   Input
	part *partition
	key  int32 // create: the key's index
	op   int32 // the operation's index; a create without an answer: the key's operation, or -1
}

// sized returns m with room for every key and operation of p, each unbound and uncreated.
func (m *model) sized(p *partition) *model {
	if m.part != nil {
		return m
	}
	out := &model{part: p, keys: make([]int32, len(p.keys)), ops: make([]opModel, len(p.ops))}
	for i := range out.keys {
		out.keys[i] = -1
	}
	for i := range out.ops {
		out.ops[i] = opModel{creator: -1, cands: []cand{{s: none}}}
	}
	return out
}

func (m *model) withOp(i int32, o opModel) *model {
	out := &model{part: m.part, keys: m.keys, ops: slices.Clone(m.ops)}
	out.ops[i] = o
	return out
}

func (m *model) bind(key, op int32, lc *lifecycle) *model {
	out := m.withOp(op, opModel{creator: key, cands: created(lc)})
	out.keys = slices.Clone(m.keys)
	out.keys[key] = op
	return out
}

// checker holds the model's functions over one lifecycle.
type checker struct{ lc *lifecycle }

func (k *checker) reachOf(c *call) *reach {
	if c.part.orphan[c.op] {
		return &k.lc.orphan
	}
	return &k.lc.bg
}

func (k *checker) step(state, input, output any) (bool, any) {
	c := input.(*call)
	out := output.(Output)
	m := state.(*model).sized(c.part)
	switch c.in.Kind {
	case Create:
		return k.create(m, c, out)
	case Get:
		return k.get(m, c, out)
	case Cancel:
		return k.cancel(m, c, out)
	}
	return false, m
}

// create is rule 1: a key is bound once, to one operation, which it creates.
func (k *checker) create(m *model, c *call, out Output) (bool, any) {
	fresh := func() bool {
		op := m.ops[c.op]
		return m.keys[c.key] == -1 && op.creator == -1 && has(op.cands, none)
	}
	switch {
	case out.Unknown():
		// It may have made the operation the key's other answers name, or nothing; the
		// second is porcupine placing it last.
		if c.op >= 0 && fresh() {
			return true, m.bind(c.key, c.op, k.lc)
		}
		return true, m
	case out.Status == 202 && !out.Replayed:
		if !fresh() {
			return false, m
		}
		return true, m.bind(c.key, c.op, k.lc)
	case out.Status == 202, out.Status == 409 && out.Code == problem.IdempotencyKeyReused:
		return m.keys[c.key] == c.op, m
	}
	return true, m // refused (400, 409 target_busy, 429, …): nothing was written
}

// wellFormed checks an answer's representation on its own.
func wellFormed(in Input, out Output) bool {
	return out.State.Valid() && out.Version >= 1 && out.Terminal == out.State.Terminal() &&
		(out.OperationID == "" || out.OperationID == in.OperationID)
}

// represented checks an answer's representation and returns its state's index.
func (k *checker) represented(c *call, out Output) (uint8, bool) {
	t, ok := k.lc.index[out.State]
	return t, ok && wellFormed(c.in, out)
}

// get is rules 2 and 3: a read shows a state the background can reach from everything
// linearized before it, and that state is then what later reads go on from.
func (k *checker) get(m *model, c *call, out Output) (bool, any) {
	op := m.ops[c.op]
	switch {
	case out.Unknown():
		return true, m
	case out.Status == 404:
		if !has(op.cands, none) {
			return false, m
		}
		return true, m.withOp(c.op, opModel{creator: op.creator, cands: []cand{{s: none}}})
	case out.Status == 200:
		t, ok := k.represented(c, out)
		v := int32(out.Version)
		if !ok || !k.reachOf(c).member(op.cands, t, v) {
			return false, m
		}
		return true, m.withOp(c.op, opModel{creator: op.creator, cands: []cand{{s: t, v: v}}})
	}
	return true, m
}

// cancel is docs/lifecycle.md's cancellation table applied to a state the background can
// reach, with rules 2 and 3 for the representation it answers.
func (k *checker) cancel(m *model, c *call, out Output) (bool, any) {
	op := m.ops[c.op]
	r := k.reachOf(c)
	ifMatch := int32(c.in.IfMatch)
	with := func(cs []cand) *model { return m.withOp(c.op, opModel{creator: op.creator, cands: cs}) }
	// states is the set of states in which the cancel answers status without If-Match.
	states := func(pred func(a answer) bool) uint32 {
		var set uint32
		for i, a := range k.lc.cancel {
			if pred(a) {
				set |= 1 << i
			}
		}
		return set
	}
	if out.OperationID != "" && out.OperationID != c.in.OperationID {
		return false, m
	}
	switch {
	case out.Unknown():
		// It may have taken effect from any state the background reaches, or not at all.
		pre := r.closure(op.cands, states(func(a answer) bool { return a.facts > 0 }))
		if ifMatch != 0 {
			pre = versionIs(pre, ifMatch)
		}
		cs := op.cands
		for _, p := range pre {
			a := k.lc.cancel[p.s]
			cs = merge(cs, cand{s: a.post, open: p.open, v: p.v + int32(a.facts)})
		}
		return true, with(cs)
	case out.Status == 404:
		if !has(op.cands, none) {
			return false, m
		}
		return true, with([]cand{{s: none}})
	case out.Status == 412:
		if ifMatch == 0 {
			return true, m // an If-Match that is not one of ours: refused, nothing written
		}
		post := versionIsNot(r.closure(op.cands, ^uint32(1<<none)), ifMatch)
		if len(post) == 0 {
			return false, m
		}
		// The answer says the operation exists and is not at ifMatch; that rules something
		// out only when the model has it as a possibility now. Otherwise the exact set the
		// model has is sharper than the closure.
		informative := has(op.cands, none) || slices.ContainsFunc(op.cands, func(x cand) bool { return x.v == ifMatch })
		if !informative {
			return true, m
		}
		return true, with(post)
	case out.Status == 409:
		pre := r.closure(op.cands, states(func(a answer) bool { return a.status == 409 }))
		if ifMatch != 0 {
			pre = versionIs(pre, ifMatch)
		}
		if len(pre) == 0 {
			return false, m
		}
		return true, with(pre)
	case out.Status == 200 || out.Status == 202:
		t, ok := k.represented(c, out)
		if !ok {
			return false, m
		}
		v := int32(out.Version)
		for s, a := range k.lc.cancel {
			from := v - int32(a.facts)
			if a.status != out.Status || a.post != t || (ifMatch != 0 && from != ifMatch) {
				continue
			}
			if r.member(op.cands, uint8(s), from) {
				return true, with([]cand{{s: t, v: v}})
			}
		}
		return false, m
	}
	return true, m // refused (401, 429, …): nothing was written
}

func (k *checker) equal(a, b any) bool {
	x, y := a.(*model), b.(*model)
	if !slices.Equal(x.keys, y.keys) || len(x.ops) != len(y.ops) {
		return false
	}
	for i := range x.ops {
		if x.ops[i].creator != y.ops[i].creator || !slices.Equal(x.ops[i].cands, y.ops[i].cands) {
			return false
		}
	}
	return true
}

func (k *checker) hash(a any) uint64 {
	m := a.(*model)
	h := fnv.New64a()
	var buf []byte
	for _, key := range m.keys {
		buf = append(buf, byte(key), byte(key>>8))
	}
	for _, op := range m.ops {
		buf = append(buf, byte(op.creator), 0xff)
		for _, c := range op.cands {
			open := byte(0)
			if c.open {
				open = 1
			}
			buf = append(buf, c.s, open, byte(c.v), byte(c.v>>8), byte(c.v>>16))
		}
	}
	_, _ = h.Write(buf)
	return h.Sum64()
}

// describeState writes a partition's state for porcupine's visualization.
func (k *checker) describeState(a any) string {
	m := a.(*model)
	if m.part == nil {
		return "nothing yet"
	}
	var parts []string
	for i, op := range m.keys {
		if op >= 0 {
			parts = append(parts, m.part.keys[i]+" → "+m.part.ops[op])
		}
	}
	for i, op := range m.ops {
		var cs []string
		for _, c := range op.cands {
			switch {
			case c.s == none:
				cs = append(cs, "not created")
			case c.open:
				cs = append(cs, fmt.Sprintf("%s v≥%d", k.lc.states[c.s], c.v))
			default:
				cs = append(cs, fmt.Sprintf("%s v%d", k.lc.states[c.s], c.v))
			}
		}
		parts = append(parts, m.part.ops[i]+": "+strings.Join(cs, " | "))
	}
	return strings.Join(parts, "; ")
}
