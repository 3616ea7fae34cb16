package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"

	"github.com/longrun-dev/longrun/api"
)

func load(t *testing.T, what string, doc []byte) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	d, err := loader.LoadFromData(doc)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := d.Validate(context.Background()); err != nil {
		t.Fatalf("%s is not a valid OpenAPI document: %v", what, err)
	}
	return d
}

func view(t *testing.T) []byte {
	t.Helper()
	v, err := render(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestViewAgreesWithTheContract: what the generator reads has every path, operation,
// parameter, request body, status, header, media type and schema of the contract, each
// schema with the same properties (merged over allOf), required list, closedness, enum,
// oneOf and discriminator.
func TestViewAgreesWithTheContract(t *testing.T) {
	contract := surface(load(t, "api/openapi.yaml", api.OpenAPI()))
	generator := surface(load(t, "the view", view(t)))
	for _, line := range contract {
		if !slices.Contains(generator, line) {
			t.Errorf("the view lacks: %s", line)
		}
	}
	for _, line := range generator {
		if !slices.Contains(contract, line) {
			t.Errorf("the view adds: %s", line)
		}
	}
	// The comparison sees the contract: a few lines it must have produced.
	for _, want := range []string{
		"POST /v1/operations admitOperation: response 202 application/json #/components/schemas/Accepted",
		"POST /v1/operations admitOperation: response 202 header Location required",
		"schema AdmissionBadRequestProblem: properties code, detail, errors, operationId, requestId, status, title, type",
		"schema AdmissionBadRequestProblem: required code, detail, requestId, status, title, type",
		"schema Operation: property observedAt: string|null date-time",
		"schema Accepted: property state: string const accepted",
	} {
		if !slices.Contains(contract, want) {
			t.Errorf("the contract's surface has no line %q", want)
		}
	}
	if len(contract) < 200 {
		t.Errorf("the contract's surface has only %d lines", len(contract))
	}
}

// surface lists, one line each, what a generator makes code from.
func surface(d *openapi3.T) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, path := range d.Paths.Keys() {
		item := d.Paths.Value(path)
		ops := item.Operations()
		for _, method := range slices.Sorted(maps.Keys(ops)) {
			op := ops[method]
			where := fmt.Sprintf("%s %s %s", method, path, op.OperationID)
			add("%s", where)
			for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
				add("%s: parameter %s %s required=%t schema %s", where, p.Value.In, p.Value.Name, p.Value.Required, describe(p.Value.Schema))
			}
			if b := op.RequestBody; b != nil {
				for _, mt := range slices.Sorted(maps.Keys(b.Value.Content)) {
					add("%s: body required=%t %s %s", where, b.Value.Required, mt, describe(b.Value.Content[mt].Schema))
				}
			}
			for _, status := range op.Responses.Keys() {
				r := op.Responses.Value(status).Value
				add("%s: response %s", where, status)
				for _, mt := range slices.Sorted(maps.Keys(r.Content)) {
					add("%s: response %s %s %s", where, status, mt, describe(r.Content[mt].Schema))
				}
				for _, h := range slices.Sorted(maps.Keys(r.Headers)) {
					hv := r.Headers[h].Value
					req := ""
					if hv.Required {
						req = " required"
					}
					add("%s: response %s header %s%s schema %s", where, status, h, req, describe(hv.Schema))
					add("%s: response %s header %s%s", where, status, h, req)
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.Components.Schemas)) {
		s := d.Components.Schemas[name].Value
		where := "schema " + name
		add("%s: %s", where, describe(openapi3.NewSchemaRef("", s)))
		props, required := merged(s)
		add("%s: properties %s", where, strings.Join(props, ", "))
		add("%s: required %s", where, strings.Join(required, ", "))
		for _, p := range slices.Sorted(maps.Keys(s.Properties)) {
			add("%s: property %s: %s", where, p, describe(s.Properties[p]))
		}
		for _, m := range s.OneOf {
			add("%s: oneOf %s", where, describe(m))
		}
		for _, m := range s.AnyOf {
			add("%s: anyOf %s", where, describe(m))
		}
		if s.Discriminator != nil {
			add("%s: discriminator %s %v", where, s.Discriminator.PropertyName, s.Discriminator.Mapping)
		}
	}
	return out
}

// merged is a schema's properties and required list over its allOf members, transitively.
func merged(s *openapi3.Schema) (props, required []string) {
	var walk func(s *openapi3.Schema)
	walk = func(s *openapi3.Schema) {
		props = append(props, slices.Collect(maps.Keys(s.Properties))...)
		required = append(required, s.Required...)
		for _, m := range s.AllOf {
			walk(m.Value)
		}
	}
	walk(s)
	slices.Sort(props)
	slices.Sort(required)
	return slices.Compact(props), slices.Compact(required)
}

// describe is a schema's reference, or what a generator makes a type of: its types,
// format, enum or const, closedness and the element type of an array.
func describe(r *openapi3.SchemaRef) string {
	if r == nil {
		return "none"
	}
	if r.Ref != "" {
		return r.Ref
	}
	s := r.Value
	if s.Always != nil {
		return fmt.Sprintf("always %t", *s.Always)
	}
	var b strings.Builder
	if s.Type != nil {
		b.WriteString(strings.Join(s.Type.Slice(), "|"))
	}
	if s.Format != "" && !s.Type.Is("integer") { // an integer's format is dropped (render)
		b.WriteString(" " + s.Format)
	}
	if len(s.Enum) > 0 {
		fmt.Fprintf(&b, " enum %v", s.Enum)
	}
	if s.Const != nil {
		fmt.Fprintf(&b, " const %v", s.Const)
	}
	if ap := s.AdditionalProperties; ap.Has != nil {
		fmt.Fprintf(&b, " additionalProperties=%t", *ap.Has)
	} else if ap.Schema != nil {
		b.WriteString(" additionalProperties " + describe(ap.Schema))
	}
	if s.Items != nil {
		b.WriteString(" items " + describe(s.Items))
	}
	return strings.TrimSpace(b.String())
}

// TestViewOnlyDrops: the view is the contract with keys and allOf members taken out, never
// anything added or changed; what it takes out is if/then/else, an integer's format, an
// allOf member with nothing left, or one that only restates (const/enum) properties its
// schema has anyway.
func TestViewOnlyDrops(t *testing.T) {
	var contract, generator yaml.Node
	if err := yaml.Unmarshal(api.OpenAPI(), &contract); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(view(t), &generator); err != nil {
		t.Fatal(err)
	}
	var dropped []string
	onlyDrops(t, "", contract.Content[0], generator.Content[0], &dropped)
	// The walk saw the contract's if/then rules and its per-response narrowings.
	for _, want := range []string{"allOf", "allOf member"} {
		if !slices.Contains(dropped, want) {
			t.Errorf("dropped no %s: %v", want, dropped)
		}
	}
}

func onlyDrops(t *testing.T, at string, c, g *yaml.Node, dropped *[]string) {
	t.Helper()
	if c.Kind != g.Kind || c.Tag != g.Tag || c.Value != g.Value {
		t.Errorf("%s: %s %q in the contract, %s %q in the view", at, c.Tag, c.Value, g.Tag, g.Value)
		return
	}
	switch c.Kind {
	case yaml.MappingNode:
		for i := 0; i < len(g.Content); i += 2 {
			k := g.Content[i].Value
			cv := get(c, k)
			if cv == nil {
				t.Errorf("%s: the view adds %q", at, k)
				continue
			}
			onlyDrops(t, at+"/"+k, cv, g.Content[i+1], dropped)
		}
		for i := 0; i < len(c.Content); i += 2 {
			if k := c.Content[i].Value; get(g, k) == nil {
				switch k {
				case "if", "then", "else":
				case "format":
					// An integer's format states its range; the client keeps Go's int.
					if ty := get(c, "type"); ty == nil || ty.Value != "integer" {
						t.Errorf("%s: the view drops %q of a %v", at, k, ty)
					}
				case "allOf":
					*dropped = append(*dropped, "allOf")
					for _, m := range c.Content[i+1].Content {
						droppedMember(t, at+"/allOf", m, dropped)
					}
				default:
					t.Errorf("%s: the view drops %q", at, k)
				}
			}
		}
	case yaml.SequenceNode:
		if !strings.HasSuffix(at, "/allOf") {
			if len(c.Content) != len(g.Content) {
				t.Errorf("%s: %d items in the contract, %d in the view", at, len(c.Content), len(g.Content))
				return
			}
			for i := range c.Content {
				onlyDrops(t, fmt.Sprintf("%s/%d", at, i), c.Content[i], g.Content[i], dropped)
			}
			return
		}
		// allOf: the view's members are the contract's, in order, some left out.
		j := 0
		for i, m := range c.Content {
			if j < len(g.Content) && sameRef(m, g.Content[j]) {
				onlyDrops(t, fmt.Sprintf("%s/%d", at, i), m, g.Content[j], dropped)
				j++
				continue
			}
			droppedMember(t, fmt.Sprintf("%s/%d", at, i), m, dropped)
		}
		if j != len(g.Content) {
			t.Errorf("%s: the view's members are not the contract's", at)
		}
	}
}

// sameRef pairs allOf members: the same $ref, or both inline.
func sameRef(a, b *yaml.Node) bool {
	ra, rb := get(a, "$ref"), get(b, "$ref")
	return (ra == nil) == (rb == nil) && (ra == nil || ra.Value == rb.Value)
}

// droppedMember checks an allOf member the view left out says nothing a type is made of.
func droppedMember(t *testing.T, at string, m *yaml.Node, dropped *[]string) {
	t.Helper()
	*dropped = append(*dropped, "allOf member")
	for i := 0; i < len(m.Content); i += 2 {
		switch k := m.Content[i].Value; k {
		case "if", "then", "else", "description":
		case "properties":
			for j := 1; j < len(m.Content[i+1].Content); j += 2 {
				p := m.Content[i+1].Content[j]
				for l := 0; l < len(p.Content); l += 2 {
					if k := p.Content[l].Value; k != "const" && k != "enum" && k != "description" {
						t.Errorf("%s: a dropped member's property has %q", at, k)
					}
				}
			}
		default:
			t.Errorf("%s: a dropped member has %q", at, k)
		}
	}
}

// TestRender on a document made for it: only schemas lose if/then/else, a property or an
// example named "if" stays, and an allOf member stays when it adds something.
func TestRender(t *testing.T) {
	const doc = `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /x:
    get:
      operationId: getX
      parameters:
        - name: q
          in: query
          schema: {type: string, if: {const: a}, then: {minLength: 1}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/B'}
              example: {if: 1, then: 2}
components:
  schemas:
    A:
      type: object
      properties:
        if: {type: string}
        code: {type: string}
      allOf:
        - if: {properties: {code: {const: x}}}
          then: {properties: {if: false}}
    B:
      allOf:
        - $ref: '#/components/schemas/A'
        - properties: {code: {const: x}}
        - properties: {other: {const: y}}
        - properties: {code: {const: x, minLength: 1}}
        - description: nothing
`
	out, err := render([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	const want = `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /x:
    get:
      operationId: getX
      parameters:
        - name: q
          in: query
          schema: {type: string}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/B'}
              example: {if: 1, then: 2}
components:
  schemas:
    A:
      type: object
      properties:
        if: {type: string}
        code: {type: string}
    B:
      allOf:
        - $ref: '#/components/schemas/A'
        - properties: {other: {const: y}}
        - properties: {code: {const: x, minLength: 1}}
`
	if got := strings.TrimPrefix(string(out), header); got != want {
		t.Errorf("render:\n%s\nwant:\n%s", got, want)
	}
	if _, err := render([]byte("openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\n")); err == nil {
		t.Error("render took a 3.0 document")
	}
}

// TestCommand writes the view where -o says, the way `make generate` runs the command.
func TestCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "view.yaml")
	if err := run([]string{"-o", out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(view(t)) {
		t.Error("the command wrote something else than render")
	}
	if err := run(nil); err == nil {
		t.Error("run without -o succeeded")
	}
}
