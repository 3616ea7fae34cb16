package optype

import (
	"bytes"
	"cmp"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// Sender is who may send a signal (a type's signals: senders).
type Sender string

const (
	// SenderCaller is the principal that created the operation.
	SenderCaller Sender = "caller"
	// SenderTenant is any principal of the operation's tenant.
	SenderTenant Sender = "tenant"
	// SenderOperator is an operator of the deployment, whatever the tenant.
	SenderOperator Sender = "operator"
)

// Signal is a message a type's running operations accept from the world
// (docs/operation-types.md, "Signals"): its data is checked against Schema, and only the
// Senders may send it. NotCreator is the four-eyes rule: the principal that created the
// operation may not send it, whatever else allows it. Callback lets a third party send it
// without credentials, through the callback URL a step request carries.
type Signal struct {
	Name       string
	Senders    []Sender
	NotCreator bool
	Callback   bool

	schema    *jsonschema.Schema
	rawSchema json.RawMessage
}

// Schema is the data's JSON Schema as compact JSON (nil: any JSON object).
func (s Signal) Schema() json.RawMessage { return bytes.Clone(s.rawSchema) }

// Validate checks a signal's data against its schema. Field errors point into the body
// (the data is the whole body of the request that sends it) and come back as one
// problem.Invalid.
func (s Signal) Validate(data any) error {
	if s.schema == nil {
		if _, ok := data.(map[string]any); !ok {
			return problem.Invalid(problem.FieldError{Pointer: "", Detail: "The signal's data must be a JSON object."})
		}
		return nil
	}
	if err := s.schema.Validate(data); err != nil {
		return problem.Invalid(fieldErrorsUnder(err, "The signal's data", "")...)
	}
	return nil
}

// Allows reports whether a sender in role may send s. creator says whether the sender is
// the principal that created the operation.
func (s Signal) Allows(role Sender, creator bool) bool {
	if s.NotCreator && creator {
		return false
	}
	return slices.Contains(s.Senders, role) || role == SenderCaller && creator && slices.Contains(s.Senders, SenderTenant)
}

// Signal is the type's signal called name.
func (t Type) Signal(name string) (Signal, bool) {
	i := slices.IndexFunc(t.Signals, func(s Signal) bool { return s.Name == name })
	if i < 0 {
		return Signal{}, false
	}
	return t.Signals[i], true
}

// SignalNamePattern is what a signal's name must match: it is a path segment of the API.
var SignalNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

var signalKeys = []string{"schema", "senders", "notCreator", "callback"}

// parseSignals reads a type's signals: a mapping from name to declaration.
func (p *parser) parseSignals(where string, n *yaml.Node) []Signal {
	m, ok := p.mappingAny(where, "signals", n)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { // file order, on one line too
		return cmp.Or(m[a].Line-m[b].Line, m[a].Column-m[b].Column)
	})
	var out []Signal
	for _, name := range names {
		field := join("signals", name)
		v := m[name]
		if !SignalNamePattern.MatchString(name) {
			p.fail(where, field, v.Line, "the name must match %s (it is a path segment)", SignalNamePattern)
			continue
		}
		decl, ok := p.mapping(where, field, v, signalKeys)
		if !ok {
			continue
		}
		s := Signal{Name: name}
		if d := decl["senders"]; d == nil {
			p.fail(where, join(field, "senders"), v.Line, "missing (required): a list of caller, tenant, operator")
		} else if d = deref(d); d.Kind != yaml.SequenceNode || len(d.Content) == 0 {
			p.fail(where, join(field, "senders"), d.Line, "must be a non-empty list of caller, tenant, operator")
		} else {
			for _, e := range d.Content {
				who, ok := p.str(where, join(field, "senders"), e)
				switch r := Sender(who); {
				case !ok:
				case r != SenderCaller && r != SenderTenant && r != SenderOperator:
					p.fail(where, join(field, "senders"), e.Line, "%q is not one of caller, tenant, operator", who)
				case slices.Contains(s.Senders, r):
					p.fail(where, join(field, "senders"), e.Line, "%q is listed twice", who)
				default:
					s.Senders = append(s.Senders, r)
				}
			}
		}
		if d, ok := decl["notCreator"]; ok {
			s.NotCreator, _ = p.boolean(where, join(field, "notCreator"), d)
			if s.NotCreator && len(s.Senders) == 1 && s.Senders[0] == SenderCaller {
				p.fail(where, join(field, "notCreator"), d.Line, "no sender is left: the caller is the creator")
			}
		}
		if d, ok := decl["callback"]; ok {
			s.Callback, _ = p.boolean(where, join(field, "callback"), d)
		}
		if d, ok := decl["schema"]; ok {
			schema, errs := compileSchema(deref(d))
			for _, e := range errs {
				p.fail(where, join(field, "schema"), e.line, "%s", strings.Replace(e.msg, "(an input is a JSON object)", "(a signal's data is a JSON object)", 1))
			}
			s.schema, s.rawSchema = schema.schema, schema.raw
		} else {
			p.fail(where, join(field, "schema"), v.Line, "missing (required): the data's JSON Schema")
		}
		out = append(out, s)
	}
	return out
}
