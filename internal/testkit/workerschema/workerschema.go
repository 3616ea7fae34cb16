// Package workerschema compiles the worker protocol's JSON Schemas (api/worker) for the tests
// that hold Go code to them: the recorder's reading of reports (internal/core/step) and the
// Go worker SDK's writing of them (api's tests).
package workerschema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compile compiles dir/<name>.schema.json (JSON Schema 2020-12) under its $id, asserting
// formats; it fails the test when the file is not the protocol's schema of that name.
func Compile(t testing.TB, dir, name string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name+".schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	id := "https://longrun.dev/schemas/worker/" + name + ".json"
	if m, _ := doc.(map[string]any); m["$id"] != id || m["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("%s: $id %v, $schema %v", name, m["$id"], m["$schema"])
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return s
}

// Validate reports why the schema refuses doc, or nil; a doc that is not one JSON value is
// refused too.
func Validate(s *jsonschema.Schema, doc []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// SameJSON reports whether a and b are the same JSON value, member order and spacing aside;
// it fails the test when either is not JSON.
func SameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}
