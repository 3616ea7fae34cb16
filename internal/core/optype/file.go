package optype

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
)

// File is a loaded definitions file.
type File struct {
	Path  string
	Types []Type // in file order
	// Local says how the local stack runs each worker, by worker name. Not every worker
	// needs an entry: a file may define types whose workers run elsewhere.
	Local map[string]LocalWorker
}

// LocalWorker is how the local stack runs one worker (exactly one of the four): a Go main
// package to build; a command speaking the Lambda Runtime API; or a Node.js or Python
// handler, which the stack calls as AWS's managed runtime would (internal/local/devstack).
type LocalWorker struct {
	Go      string   // a main package, relative to Dir
	Command []string // argv
	// Node is a Node.js handler as Lambda names one, under a directory: "./dist/index.handler"
	// is the export handler of ./dist/index.js (or .mjs, .cjs), relative to Dir.
	Node string
	// Python is a Python handler as Lambda names one, under a directory: "./src/app.handler"
	// is the function handler of the module app in ./src, relative to Dir.
	Python string
	Env    map[string]string
	Dir    string // the definitions file's directory, for resolving Go, Node and Python
}

// handlerPattern is a handler as Lambda names one, after its directory: a file or module
// (dotted for a Python package), a dot, and a function or export name.
var handlerPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*\.[A-Za-z_$][A-Za-z0-9_$]*$`)

// SplitHandler splits a Node or Python entry, "<dir>/<file or module>.<function>", into the
// directory (relative as given; "." when none) and the handler Lambda would be given
// ("<file or module>.<function>").
func SplitHandler(entry string) (dir, handler string) {
	i := strings.LastIndex(entry, "/")
	if i < 0 {
		return ".", entry
	}
	return entry[:i], entry[i+1:]
}

var (
	typeNamePattern   = regexp.MustCompile(`^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*$`)
	workerNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)
	envNamePattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

const (
	maxTypeNameLen = 64
	// maxDescriptionLen and maxVersion bound what discovery shows (api/openapi.yaml,
	// OperationType: description's maxLength, version's int32).
	maxDescriptionLen = 1000
	maxVersion        = math.MaxInt32
	maxDeadline       = 8760 * time.Hour
	maxStepTimeout    = 15 * time.Minute // a worker is a Lambda function
	minRetention      = time.Hour
	maxRetention      = 8760 * time.Hour
	maxMaxSteps       = 10000
	maxQuotaWeight    = 100
	maxRangeDays      = 100000
)

var (
	fileKeys         = []string{"types", "local"}
	typeKeys         = []string{"name", "version", "description", "demo", "worker", "deadline", "stepTimeout", "maxSteps", "stepDelay", "retention", "quotaWeight", "target", "input", "checks", "signals"}
	requiredTypeKeys = []string{"name", "version", "description", "worker", "deadline", "stepTimeout", "maxSteps", "target", "input"}
	localKeys        = []string{"go", "command", "node", "python", "env"}
	dateRangeKeys    = []string{"from", "to", "maxDays"}
)

// Load reads and parses a definitions file. Each local worker's Dir is made absolute, so
// the file's relative Go paths resolve wherever the caller runs.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if dir, err := filepath.Abs(filepath.Dir(path)); err == nil {
		for name, w := range f.Local {
			w.Dir = dir
			f.Local[name] = w
		}
	}
	return f, nil
}

// Parse reads a definitions file (YAML, or JSON, which is YAML). path names the file in
// messages and gives the local workers' Dir. An invalid file yields one error joining
// every problem found, each "<file>: type \"<name>\": <field>: <what is wrong>", so one
// start-up shows them all.
func Parse(path string, data []byte) (*File, error) {
	p := &parser{file: path}
	var docs []yaml.Node
	if err := yaml.Load(data, &docs, yaml.WithAllDocuments()); err != nil {
		var le *yaml.LoadError
		if errors.As(err, &le) && le.Mark.Line > 0 {
			return nil, fmt.Errorf("%s: line %d: invalid YAML: %s", path, le.Mark.Line, le.Message)
		}
		return nil, fmt.Errorf("%s: invalid YAML: %v", path, err)
	}
	switch {
	case len(docs) == 0:
		return nil, fmt.Errorf("%s: the file is empty; it must define types", path)
	case len(docs) > 1:
		return nil, fmt.Errorf("%s: line %d: a definitions file holds one YAML document, not %d", path, docs[1].Line, len(docs))
	}
	root := &docs[0]
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	f := &File{Path: path, Local: map[string]LocalWorker{}}
	m, ok := p.mapping("", "", root, fileKeys)
	if !ok {
		return nil, p.err()
	}
	if n, ok := m["types"]; !ok {
		p.fail("", "types", root.Line, "missing (a file defines at least one type)")
	} else if n = deref(n); n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.fail("", "types", n.Line, "must be a list of at least one type")
	} else {
		names := map[string]int{}
		for i, tn := range n.Content {
			if t, ok := p.parseType(i, deref(tn), names); ok {
				f.Types = append(f.Types, t)
			}
		}
	}
	if n, ok := m["local"]; ok {
		p.parseLocal(filepath.Dir(path), deref(n), f.Local)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return f, nil
}

type parser struct {
	file string
	errs []error
}

func (p *parser) err() error { return errors.Join(p.errs...) }

// fail records "<file>: <where>: <field>: <msg> (line N)", leaving out empty parts.
func (p *parser) fail(where, field string, line int, format string, args ...any) {
	parts := []string{p.file}
	if where != "" {
		parts = append(parts, where)
	}
	if field != "" {
		parts = append(parts, field)
	}
	msg := strings.Join(append(parts, fmt.Sprintf(format, args...)), ": ")
	if line > 0 {
		msg += fmt.Sprintf(" (line %d)", line)
	}
	p.errs = append(p.errs, errors.New(msg))
}

// mapping returns a mapping's values by key, reporting a non-mapping, duplicate keys and
// keys outside known (each under its own name, prefixed by field).
func (p *parser) mapping(where, field string, n *yaml.Node, known []string) (map[string]*yaml.Node, bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.fail(where, field, n.Line, "must be a mapping")
		return nil, false
	}
	m := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		name := join(field, k.Value)
		switch {
		case k.Kind != yaml.ScalarNode:
			p.fail(where, field, k.Line, "a key must be a string")
		case !slices.Contains(known, k.Value):
			p.fail(where, name, k.Line, "unknown key (known: %s)", strings.Join(known, ", "))
		case m[k.Value] != nil:
			p.fail(where, name, k.Line, "duplicate key")
		default:
			m[k.Value] = n.Content[i+1]
		}
	}
	return m, true
}

// lookup returns the value of a mapping's first key named key, or nil.
func lookup(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func (p *parser) str(where, field string, n *yaml.Node) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		p.fail(where, field, n.Line, "must be a string")
		return "", false
	}
	return n.Value, true
}

// integer reads an integer from lo to hi (hi < lo: no upper bound).
func (p *parser) integer(where, field string, n *yaml.Node, lo, hi int) (int, bool) {
	n = deref(n)
	var v int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		p.fail(where, field, n.Line, "must be an integer")
		return 0, false
	}
	switch {
	case hi < lo && v < lo: // no upper bound
		p.fail(where, field, n.Line, "must be %d or more, not %d", lo, v)
		return 0, false
	case hi >= lo && (v < lo || v > hi):
		p.fail(where, field, n.Line, "must be from %d to %d, not %d", lo, hi, v)
		return 0, false
	}
	return v, true
}

func (p *parser) boolean(where, field string, n *yaml.Node) (bool, bool) {
	n = deref(n)
	var v bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		p.fail(where, field, n.Line, "must be true or false")
		return false, false
	}
	return v, true
}

// duration reads Go duration syntax; wholeSeconds is for values that become Step Functions
// or Lambda settings, which count whole seconds.
func (p *parser) duration(where, field string, n *yaml.Node, wholeSeconds bool) (time.Duration, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		p.fail(where, field, n.Line, "must be a duration such as 90s, 15m or 1h")
		return 0, false
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		p.fail(where, field, n.Line, "%q is not a duration (use Go syntax such as 90s, 15m or 1h)", n.Value)
		return 0, false
	}
	if wholeSeconds && d%time.Second != 0 {
		p.fail(where, field, n.Line, "%s is not a whole number of seconds", d)
		return 0, false
	}
	return d, true
}

func (p *parser) parseType(i int, n *yaml.Node, names map[string]int) (Type, bool) {
	before := len(p.errs)
	t := Type{QuotaWeight: 1}
	// The name comes first: every other message names the type by it when it is usable.
	where := fmt.Sprintf("types[%d]", i)
	if v := lookup(n, "name"); v != nil {
		if name, ok := p.str(where, "name", v); ok {
			switch {
			case len(name) > maxTypeNameLen:
				p.fail(where, "name", v.Line, "%q is longer than %d bytes", name, maxTypeNameLen)
			case !typeNamePattern.MatchString(name):
				p.fail(where, "name", v.Line, "%q must match %s", name, typeNamePattern)
			default:
				t.Name, where = name, fmt.Sprintf("type %q", name)
				if j, dup := names[name]; dup {
					p.fail(where, "name", v.Line, "duplicate of types[%d]", j)
				} else {
					names[name] = i
				}
			}
		}
	}
	m, ok := p.mapping(where, "", n, typeKeys)
	if !ok {
		return Type{}, false
	}
	for _, k := range requiredTypeKeys {
		if m[k] == nil {
			p.fail(where, k, n.Line, "missing (required)")
		}
	}
	if v, ok := m["version"]; ok {
		t.Version, _ = p.integer(where, "version", v, 1, maxVersion)
	}
	if v, ok := m["description"]; ok {
		if s, ok := p.str(where, "description", v); ok {
			if strings.TrimSpace(s) == "" {
				p.fail(where, "description", v.Line, "must not be empty")
			} else if n := utf8.RuneCountInString(strings.TrimSpace(s)); n > maxDescriptionLen {
				p.fail(where, "description", v.Line, "is %d characters; at most %d", n, maxDescriptionLen)
			}
			t.Description = strings.TrimSpace(s)
		}
	}
	if v, ok := m["demo"]; ok {
		t.Demo, _ = p.boolean(where, "demo", v)
	}
	if v, ok := m["worker"]; ok {
		if s, ok := p.str(where, "worker", v); ok {
			if !workerNamePattern.MatchString(s) {
				p.fail(where, "worker", v.Line, "%q must match %s (it becomes function and state-machine names)", s, workerNamePattern)
			}
			t.Worker = s
		}
	}
	p.parseLimits(where, m, &t)
	if v, ok := m["quotaWeight"]; ok {
		t.QuotaWeight, _ = p.integer(where, "quotaWeight", v, 1, maxQuotaWeight)
	}
	var schema compiledSchema
	if v, ok := m["input"]; ok {
		var errs []lineError
		schema, errs = compileSchema(deref(v))
		for _, e := range errs {
			p.fail(where, "input", e.line, "%s", e.msg)
		}
		t.schema, t.rawSchema, t.doc = schema.schema, schema.raw, schema.doc
	}
	if v, ok := m["target"]; ok {
		p.parseTarget(where, deref(v), schema.doc, &t)
	}
	if v, ok := m["checks"]; ok {
		t.checks = p.parseChecks(where, deref(v), schema.doc)
	}
	if v, ok := m["signals"]; ok {
		t.Signals = p.parseSignals(where, v)
	}
	return t, len(p.errs) == before
}

func (p *parser) parseLimits(where string, m map[string]*yaml.Node, t *Type) {
	var deadlineOK bool
	if v, ok := m["deadline"]; ok {
		if t.Deadline, deadlineOK = p.duration(where, "deadline", v, true); deadlineOK && (t.Deadline <= 0 || t.Deadline > maxDeadline) {
			p.fail(where, "deadline", v.Line, "must be more than 0 and at most %s, not %s", maxDeadline, t.Deadline)
			deadlineOK = false
		}
	}
	if v, ok := m["stepTimeout"]; ok {
		d, ok := p.duration(where, "stepTimeout", v, true)
		switch {
		case !ok:
		case d <= 0 || d > maxStepTimeout:
			p.fail(where, "stepTimeout", v.Line, "must be more than 0 and at most %s (a worker is a Lambda function), not %s", maxStepTimeout, d)
		case deadlineOK && d > t.Deadline:
			p.fail(where, "stepTimeout", v.Line, "%s exceeds the deadline %s", d, t.Deadline)
		}
		t.StepTimeout = d
	}
	if v, ok := m["maxSteps"]; ok {
		t.MaxSteps, _ = p.integer(where, "maxSteps", v, 1, maxMaxSteps)
	}
	if v, ok := m["stepDelay"]; ok {
		d, ok := p.duration(where, "stepDelay", v, true)
		switch {
		case !ok:
		case d < 0:
			p.fail(where, "stepDelay", v.Line, "must not be negative, not %s", d)
		case deadlineOK && d >= t.Deadline:
			p.fail(where, "stepDelay", v.Line, "%s must be less than the deadline %s", d, t.Deadline)
		}
		t.StepDelay = d
	}
	if v, ok := m["retention"]; ok {
		d, ok := p.duration(where, "retention", v, true)
		if ok && d != 0 && (d < minRetention || d > maxRetention) {
			p.fail(where, "retention", v.Line, "must be 0 (the deployment default) or from %s to %s, not %s", minRetention, maxRetention, d)
		}
		t.Retention = d
	}
}

func (p *parser) parseTarget(where string, n *yaml.Node, doc map[string]any, t *Type) {
	s, ok := p.str(where, "target", n)
	if !ok {
		return
	}
	if s == mintedTarget {
		t.MintsTarget = true
		return
	}
	tmpl, problems := parseTemplate(s)
	for _, msg := range problems {
		p.fail(where, "target", n.Line, "%s", msg)
	}
	if tmpl == nil || doc == nil {
		return
	}
	for _, ptr := range tmpl.pointers() {
		if err := ptr.resolve(doc, "string", "integer"); err != nil {
			p.fail(where, "target", n.Line, "%v", err)
		}
	}
	t.target = tmpl
}

func (p *parser) parseChecks(where string, n *yaml.Node, doc map[string]any) []check {
	if n.Kind != yaml.SequenceNode {
		p.fail(where, "checks", n.Line, "must be a list")
		return nil
	}
	var checks []check
	for i, cn := range n.Content {
		field := fmt.Sprintf("checks[%d]", i)
		cn = deref(cn)
		if cn.Kind != yaml.MappingNode || len(cn.Content) != 2 {
			p.fail(where, field, cn.Line, "must be a mapping of exactly one check, such as dateRange")
			continue
		}
		switch kindNode := deref(cn.Content[0]); kindNode.Value {
		case "dateRange":
			if c, ok := p.parseDateRange(where, field+".dateRange", deref(cn.Content[1]), doc); ok {
				checks = append(checks, c)
			}
		default:
			p.fail(where, field, kindNode.Line, "unknown check %q (known: dateRange)", kindNode.Value)
		}
	}
	return checks
}

func (p *parser) parseDateRange(where, field string, n *yaml.Node, doc map[string]any) (dateRange, bool) {
	m, ok := p.mapping(where, field, n, dateRangeKeys)
	if !ok {
		return dateRange{}, false
	}
	var c dateRange
	ok = true
	for _, k := range dateRangeKeys {
		if m[k] == nil {
			p.fail(where, join(field, k), n.Line, "missing (required)")
			ok = false
		}
	}
	for _, side := range []struct {
		key string
		ptr *pointer
	}{{"from", &c.from}, {"to", &c.to}} {
		v := m[side.key]
		if v == nil {
			continue
		}
		s, isStr := p.str(where, join(field, side.key), v)
		if !isStr {
			ok = false
			continue
		}
		ptr, err := parsePointer(s)
		if err == nil && doc != nil {
			err = ptr.resolve(doc, "string")
		}
		if err != nil {
			p.fail(where, join(field, side.key), v.Line, "%v", err)
			ok = false
			continue
		}
		*side.ptr = ptr
	}
	if ok && c.from.text == c.to.text {
		p.fail(where, join(field, "to"), m["to"].Line, "must name another member than from")
		ok = false
	}
	if v := m["maxDays"]; v != nil {
		var dok bool
		c.maxDays, dok = p.integer(where, join(field, "maxDays"), v, 1, maxRangeDays)
		ok = ok && dok
	}
	return c, ok
}

func (p *parser) parseLocal(dir string, n *yaml.Node, out map[string]LocalWorker) {
	m, ok := p.mappingAny("", "local", n)
	if !ok {
		return
	}
	for _, name := range sortedKeys(m) {
		where := fmt.Sprintf("local %q", name)
		v := m[name]
		if !workerNamePattern.MatchString(name) {
			p.fail(where, "", v.Line, "worker name must match %s", workerNamePattern)
		}
		fields, ok := p.mapping(where, "", v, localKeys)
		if !ok {
			continue
		}
		w := LocalWorker{Dir: dir}
		before := len(p.errs)
		given := []string{}
		for _, k := range []string{"go", "command", "node", "python"} {
			if fields[k] != nil {
				given = append(given, k)
			}
		}
		switch {
		case len(given) > 1:
			p.fail(where, "", deref(v).Line, "give one of go, command, node or python, not %s", strings.Join(given, " and "))
		case len(given) == 0:
			p.fail(where, "", deref(v).Line, "give go (a main package), command (a Lambda Runtime API program), node or python (a handler, as ./dir/file.function)")
		case given[0] == "go":
			if s, ok := p.str(where, "go", fields["go"]); ok {
				if strings.TrimSpace(s) == "" {
					p.fail(where, "go", fields["go"].Line, "must not be empty")
				}
				w.Go = s
			}
		case given[0] == "command":
			w.Command = p.command(where, deref(fields["command"]))
		default:
			k := given[0]
			if s, ok := p.str(where, k, fields[k]); ok {
				if _, h := SplitHandler(s); !handlerPattern.MatchString(h) {
					p.fail(where, k, fields[k].Line, "must name a handler as Lambda does, after its directory: ./dir/file.function (got %q)", s)
				}
				if k == "node" {
					w.Node = s
				} else {
					w.Python = s
				}
			}
		}
		if envNode := fields["env"]; envNode != nil {
			w.Env = p.env(where, deref(envNode))
		}
		if len(p.errs) == before {
			out[name] = w
		}
	}
}

func (p *parser) command(where string, n *yaml.Node) []string {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.fail(where, "command", n.Line, "must be a non-empty list of strings (program, then arguments)")
		return nil
	}
	var argv []string
	for i, a := range n.Content {
		a = deref(a)
		if a.Kind != yaml.ScalarNode || a.ShortTag() == "!!null" {
			p.fail(where, fmt.Sprintf("command[%d]", i), a.Line, "must be a string")
			continue
		}
		argv = append(argv, a.Value)
	}
	if len(argv) > 0 && strings.TrimSpace(argv[0]) == "" {
		p.fail(where, "command[0]", n.Line, "the program must not be empty")
	}
	return argv
}

func (p *parser) env(where string, n *yaml.Node) map[string]string {
	m, ok := p.mappingAny(where, "env", n)
	if !ok {
		return nil
	}
	env := map[string]string{}
	for _, k := range sortedKeys(m) {
		v := deref(m[k])
		switch {
		case !envNamePattern.MatchString(k):
			p.fail(where, "env."+k, v.Line, "variable name must match %s", envNamePattern)
		case v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null":
			p.fail(where, "env."+k, v.Line, "must be a string")
		default:
			env[k] = v.Value
		}
	}
	return env
}

// mappingAny is mapping for a mapping whose keys are names rather than settings.
func (p *parser) mappingAny(where, field string, n *yaml.Node) (map[string]*yaml.Node, bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.fail(where, field, n.Line, "must be a mapping")
		return nil, false
	}
	m := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		switch {
		case k.Kind != yaml.ScalarNode:
			p.fail(where, field, k.Line, "a key must be a string")
		case m[k.Value] != nil:
			p.fail(where, join(field, k.Value), k.Line, "duplicate key")
		default:
			m[k.Value] = n.Content[i+1]
		}
	}
	return m, true
}
