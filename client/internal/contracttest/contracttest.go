// Package contracttest holds a Go type to a schema of the contract, api/openapi.yaml: the
// tests of package client (its hand-written types) and of package client/api (the generated
// ones) share it, so both are held to the same reading of the contract.
package contracttest

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// OpenAPI is the contract's text, api/openapi.yaml, read from the checkout the tests run in:
// the client is a module of its own, which imports nothing of longrun's module (where the
// contract is embedded), so its tests read the file, from the nearest folder above the
// working directory that holds it.
func OpenAPI(t testing.TB) []byte {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "api", "openapi.yaml"))
		if err == nil {
			return b
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no api/openapi.yaml above the working directory: the client's tests run in a longrun checkout")
		}
		dir = parent
	}
}

// Contract is api/openapi.yaml, loaded and validated by kin-openapi.
func Contract(t testing.TB) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromData(OpenAPI(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return doc
}

// Property is one property of a schema with every definition of it: the schema's own and
// its allOf members' (transitively), in that order.
type Property struct {
	Defs     []*openapi3.SchemaRef
	Required bool
}

// Properties are a schema's properties by name, allOf members' included.
func Properties(s *openapi3.Schema) map[string]*Property {
	out := map[string]*Property{}
	var walk func(s *openapi3.Schema)
	walk = func(s *openapi3.Schema) {
		for name, def := range s.Properties {
			if out[name] == nil {
				out[name] = &Property{}
			}
			out[name].Defs = append(out[name].Defs, def)
		}
		for _, m := range s.AllOf {
			walk(m.Value)
		}
	}
	walk(s)
	var req func(s *openapi3.Schema)
	req = func(s *openapi3.Schema) {
		for _, name := range s.Required {
			if p := out[name]; p != nil {
				p.Required = true
			}
		}
		for _, m := range s.AllOf {
			req(m.Value)
		}
	}
	req(s)
	return out
}

// JSONFields are a struct's fields by their JSON name, promoted ones included.
func JSONFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(t) {
		tag, ok := f.Tag.Lookup("json")
		if !f.IsExported() || f.Anonymous || !ok {
			continue
		}
		if name, _, _ := strings.Cut(tag, ","); name != "-" {
			out[name] = f
		}
	}
	return out
}

// CheckStruct fails t unless goType has a field for every property of s (by JSON name, not
// omitted when empty if required), accepts every enum or const value s gives a property
// (an enum type is a string type with a Valid method), and has no JSON field s does not
// have. Properties that are objects defined in place are checked the same way.
func CheckStruct(t testing.TB, where string, goType reflect.Type, s *openapi3.Schema) {
	t.Helper()
	if goType.Kind() != reflect.Struct {
		t.Errorf("%s: its type %s is not a struct", where, goType)
		return
	}
	fields := JSONFields(goType)
	props := Properties(s)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p := props[name]
		f, ok := fields[name]
		if !ok {
			t.Errorf("%s: %s has no field for property %q", where, goType, name)
			continue
		}
		if p.Required && strings.Contains(f.Tag.Get("json"), ",omitempty") {
			t.Errorf("%s: property %q is required, but %s.%s is omitted when empty", where, name, goType, f.Name)
		}
		for _, def := range p.Defs {
			checkValues(t, where+"."+name, f.Type, def.Value)
			if def.Ref != "" {
				continue // a schema of its own, checked as such
			}
			if elem := Deref(f.Type); len(def.Value.Properties) > 0 {
				CheckStruct(t, where+"."+name, elem, def.Value)
			} else if items := def.Value.Items; items != nil && items.Ref == "" && len(items.Value.Properties) > 0 {
				CheckStruct(t, where+"."+name+"[]", Deref(elem.Elem()), items.Value)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if props[name] == nil {
			t.Errorf("%s: %s has a field %s (%q) the contract does not have", where, goType, fields[name].Name, name)
		}
	}
}

// Deref is t less its pointers.
func Deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// checkValues: a field whose type is an enum type accepts (Valid) every value the
// property's enum or const allows.
func checkValues(t testing.TB, where string, field reflect.Type, s *openapi3.Schema) {
	t.Helper()
	values := slices.Clone(s.Enum)
	if s.Const != nil {
		values = append(values, s.Const)
	}
	if len(values) == 0 {
		return
	}
	typ := Deref(field)
	valid, ok := typ.MethodByName("Valid")
	if !ok {
		if typ.Kind() == reflect.String {
			t.Errorf("%s: values %v, but its type %s is not an enum type (no Valid method)", where, values, typ)
		}
		return
	}
	for _, v := range values {
		sv, ok := v.(string)
		if !ok || typ.Kind() != reflect.String {
			t.Errorf("%s: enum value %v (%T) in a field of type %s", where, v, v, typ)
			continue
		}
		x := reflect.New(typ).Elem()
		x.SetString(sv)
		if !valid.Func.Call([]reflect.Value{x})[0].Bool() {
			t.Errorf("%s: the contract allows %q, but %s does not know it", where, sv, typ)
		}
	}
}

// RoundTrip fails t unless value (a decoded JSON value) decodes into goType with no member
// left over and encodes back to the same JSON.
func RoundTrip(t testing.TB, where string, goType reflect.Type, value any) {
	t.Helper()
	in, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	v := reflect.New(goType)
	if err := dec.Decode(v.Interface()); err != nil {
		t.Errorf("%s does not decode into %s: %v", where, goType, err)
		return
	}
	out, err := json.Marshal(v.Interface())
	if err != nil {
		t.Errorf("%s: %s does not encode: %v", where, goType, err)
		return
	}
	var want, got any
	if err := json.Unmarshal(in, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: through %s\n%s\nbecomes\n%s", where, goType, in, out)
	}
}
