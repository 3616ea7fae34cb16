// Command clientspec writes the client generator's view of api/openapi.yaml (`make generate`
// runs it, then oapi-codegen on what it wrote).
//
// The view is the contract, still OpenAPI 3.1, less the JSON Schema that only validates and
// that oapi-codegen v2 misreads:
//
//   - `if`/`then`/`else` in every schema (the rules tying `terminal` to `state`, a problem's
//     `status` to its `code`, …), and an `allOf` member left with nothing else;
//   - an `allOf` member that only narrows, with `const` or `enum`, properties another member
//     (a `$ref`) declares: the per-response problems' `code`;
//   - an integer's `format` (`int32`, `int64`): the contract's statement of its range, beside
//     its `minimum` and `maximum`, which oapi-codegen would turn into int32 and int64 fields.
//     The client's integers stay Go's int (64 bits on every platform it builds for; the
//     bounds fit), as they were before the contract stated the formats.
//
// oapi-codegen merges an `allOf` by replacing a member that has an `allOf` of its own with
// that `allOf`'s merge, dropping the member's own properties, so every per-response problem
// (`allOf: [Problem, {code: …}]`, where Problem has the `allOf` of its if/then rules) came
// out as `struct{ Code interface{} }`. Without those constructs every problem type is
// Problem. Nothing is added or renamed: paths, operations, statuses, headers, properties
// and required lists stay as they are (cmd/clientspec's tests prove it against the
// contract), so the generated types are the contract's; only validation is left to the
// server.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"

	"go.yaml.in/yaml/v4"

	"github.com/longrun-dev/longrun/api"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "clientspec:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	flags := flag.NewFlagSet("clientspec", flag.ContinueOnError)
	out := flags.String("o", "", "where to write the generator's view (required)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *out == "" || flags.NArg() != 0 {
		return errors.New("usage: clientspec -o FILE")
	}
	view, err := render(api.OpenAPI())
	if err != nil {
		return err
	}
	return os.WriteFile(*out, view, 0o644)
}

const header = "# The client generator's view of api/openapi.yaml, written by cmd/clientspec: the\n" +
	"# contract less its validation-only if/then/else and per-response narrowings. Do not edit.\n"

// render returns the generator's view of an OpenAPI 3.1 document (YAML).
func render(doc []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("reading the document: %w", err)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the document is not a YAML mapping")
	}
	top := root.Content[0]
	if v := get(top, "openapi"); v == nil || len(v.Value) < 3 || v.Value[:3] != "3.1" {
		return nil, errors.New("not an OpenAPI 3.1 document")
	}
	r := &renderer{schemas: get(get(top, "components"), "schemas")}
	r.document(top)
	root.HeadComment = ""
	var b bytes.Buffer
	b.WriteString(header)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type renderer struct {
	schemas *yaml.Node // components.schemas, to resolve an allOf member's $ref
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// document visits every place of an OpenAPI 3.1 document that holds a schema.
func (r *renderer) document(top *yaml.Node) {
	for _, item := range values(get(top, "paths")) {
		r.pathItem(item)
	}
	for _, item := range values(get(top, "webhooks")) {
		r.pathItem(item)
	}
	c := get(top, "components")
	for _, s := range values(get(c, "schemas")) {
		r.schema(s)
	}
	for _, p := range values(get(c, "parameters")) {
		r.parameter(p)
	}
	for _, h := range values(get(c, "headers")) {
		r.parameter(h) // a header is a parameter without name and in
	}
	for _, resp := range values(get(c, "responses")) {
		r.response(resp)
	}
	for _, body := range values(get(c, "requestBodies")) {
		r.content(get(body, "content"))
	}
	for _, item := range values(get(c, "pathItems")) {
		r.pathItem(item)
	}
}

func (r *renderer) pathItem(item *yaml.Node) {
	for _, p := range elems(get(item, "parameters")) {
		r.parameter(p)
	}
	for _, m := range methods {
		op := get(item, m)
		if op == nil {
			continue
		}
		for _, p := range elems(get(op, "parameters")) {
			r.parameter(p)
		}
		r.content(get(get(op, "requestBody"), "content"))
		for _, resp := range values(get(op, "responses")) {
			r.response(resp)
		}
	}
}

func (r *renderer) parameter(p *yaml.Node) {
	r.schema(get(p, "schema"))
	r.content(get(p, "content"))
}

func (r *renderer) response(resp *yaml.Node) {
	for _, h := range values(get(resp, "headers")) {
		r.parameter(h)
	}
	r.content(get(resp, "content"))
}

func (r *renderer) content(c *yaml.Node) {
	for _, media := range values(c) {
		r.schema(get(media, "schema"))
	}
}

// Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
var (
	subschema    = []string{"items", "additionalProperties", "not", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "if", "then", "else"}
	subschemas   = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	namedSchemas = []string{"properties", "patternProperties", "$defs", "dependentSchemas"}
)

// schema rewrites one schema (a mapping; a boolean schema has nothing to drop) and every
// schema inside it.
func (r *renderer) schema(s *yaml.Node) {
	if s == nil || s.Kind != yaml.MappingNode {
		return
	}
	del(s, "if")
	del(s, "then")
	del(s, "else")
	if t := get(s, "type"); t != nil && t.Value == "integer" {
		del(s, "format")
	}
	for _, k := range subschema {
		r.schema(get(s, k))
	}
	for _, k := range subschemas {
		for _, m := range elems(get(s, k)) {
			r.schema(m)
		}
	}
	for _, k := range namedSchemas {
		for _, m := range values(get(s, k)) {
			r.schema(m)
		}
	}
	allOf := get(s, "allOf")
	if allOf == nil || allOf.Kind != yaml.SequenceNode {
		return
	}
	allOf.Content = slices.DeleteFunc(allOf.Content, func(m *yaml.Node) bool {
		return isEmpty(m) || r.isNarrowing(m, allOf.Content)
	})
	if len(allOf.Content) == 0 {
		del(s, "allOf")
	}
}

// isEmpty: a mapping with nothing in it, or nothing but a description.
func isEmpty(m *yaml.Node) bool {
	if m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i < len(m.Content); i += 2 {
		if m.Content[i].Value != "description" {
			return false
		}
	}
	return true
}

// isNarrowing: an inline member with only `properties`, each of them only `const` or `enum`
// (and a description), every one declared by a sibling `$ref` member's own properties.
func (r *renderer) isNarrowing(m *yaml.Node, siblings []*yaml.Node) bool {
	if m.Kind != yaml.MappingNode || get(m, "$ref") != nil {
		return false
	}
	for i := 0; i < len(m.Content); i += 2 {
		if k := m.Content[i].Value; k != "properties" && k != "description" {
			return false
		}
	}
	props := get(m, "properties")
	if props == nil || props.Kind != yaml.MappingNode || len(props.Content) == 0 {
		return false
	}
	for i := 0; i < len(props.Content); i += 2 {
		name, p := props.Content[i].Value, props.Content[i+1]
		if p.Kind != yaml.MappingNode || len(p.Content) == 0 {
			return false
		}
		for j := 0; j < len(p.Content); j += 2 {
			if k := p.Content[j].Value; k != "const" && k != "enum" && k != "description" {
				return false
			}
		}
		if !r.declaredBySibling(name, m, siblings) {
			return false
		}
	}
	return true
}

func (r *renderer) declaredBySibling(name string, m *yaml.Node, siblings []*yaml.Node) bool {
	for _, s := range siblings {
		if s == m {
			continue
		}
		ref := get(s, "$ref")
		if ref == nil {
			continue
		}
		const prefix = "#/components/schemas/"
		if len(ref.Value) <= len(prefix) || ref.Value[:len(prefix)] != prefix {
			continue
		}
		if get(get(get(r.schemas, ref.Value[len(prefix):]), "properties"), name) != nil {
			return true
		}
	}
	return false
}

// get is a mapping's value for key, or nil (also for a nil or non-mapping node).
func get(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// del removes key from a mapping.
func del(n *yaml.Node, key string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content = slices.Delete(n.Content, i, i+2)
			return
		}
	}
}

// values are a mapping's values, in order.
func values(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []*yaml.Node
	for i := 1; i < len(n.Content); i += 2 {
		out = append(out, n.Content[i])
	}
	return out
}

// elems are a sequence's items.
func elems(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}
