package optype

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The embedded definitions parse (Builtin would panic otherwise) and hold exactly the two
// built-in types with their settings.
func TestBuiltinDefinitions(t *testing.T) {
	if _, err := Parse(builtinPath, builtinYAML); err != nil {
		t.Fatalf("embedded definitions: %v", err)
	}
	types := Builtin().Types()
	if len(types) != 2 {
		t.Fatalf("%d built-in types", len(types))
	}
	type settings struct {
		Name, Worker                      string
		Version, MaxSteps, QuotaWeight    int
		Deadline, StepTimeout, StepDelay  time.Duration
		Retention                         time.Duration
		MintsTarget, Demo, HasDescription bool
	}
	want := []settings{
		{"demo.task", "demo-task", 1, 21, 1, time.Hour, 60 * time.Second, time.Second, 0, false, true, true},
		{"export.orders", "export-orders", 1, 1, 1, time.Hour, 60 * time.Second, 0, 0, false, false, true},
	}
	for i, typ := range types {
		got := settings{typ.Name, typ.Worker, typ.Version, typ.MaxSteps, typ.QuotaWeight, typ.Deadline,
			typ.StepTimeout, typ.StepDelay, typ.Retention, typ.MintsTarget, typ.Demo, typ.Description != ""}
		if got != want[i] {
			t.Errorf("type %d: %+v, want %+v", i, got, want[i])
		}
	}
	if got := strings.Join(Builtin().Workers(), ","); got != "demo-task,export-orders" {
		t.Errorf("workers %s", got)
	}
	demo, _ := Builtin().Lookup("demo.task")
	if demo.Description != "A configurable task for tests, the demo and benchmarks." {
		t.Errorf("demo.task description %q", demo.Description)
	}
}

// The schemas a discovery API shows: compact JSON, properties in the order written, each
// with a title and a description.
func TestBuiltinInputSchemas(t *testing.T) {
	for name, props := range map[string][]string{
		"demo.task":     {"target", "steps", "sleepMs", "outcome", "await", "awaitSeconds"},
		"export.orders": {"from", "to"},
	} {
		typ, _ := Builtin().Lookup(name)
		raw := typ.InputSchema()
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil || !bytes.Equal(compact.Bytes(), raw) {
			t.Errorf("%s: schema not compact JSON (%v): %s", name, err, raw)
		}
		var schema struct {
			Type                 string
			AdditionalProperties *bool
			Properties           map[string]struct{ Title, Description string }
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: %s", name, raw)
		}
		last := -1
		for _, p := range props {
			at := strings.Index(string(raw), `"`+p+`":{`)
			if at <= last {
				t.Errorf("%s: property %s out of order in %s", name, p, raw)
			}
			last = at
			if s := schema.Properties[p]; s.Title == "" || s.Description == "" {
				t.Errorf("%s: property %s lacks title or description", name, p)
			}
		}
		if len(schema.Properties) != len(props) {
			t.Errorf("%s: %d properties", name, len(schema.Properties))
		}
		// A copy: changing it changes nothing.
		raw[0] = 'X'
		if typ.InputSchema()[0] != '{' {
			t.Errorf("%s: InputSchema shares its bytes", name)
		}
	}
}

// The local section names the two workers' main packages, relative to the definitions
// file, and they exist there.
func TestBuiltinLocalWorkers(t *testing.T) {
	f := BuiltinFile()
	if len(f.Local) != 2 {
		t.Fatalf("local %v", f.Local)
	}
	for worker, pkg := range map[string]string{"demo-task": "functions/worker-demo-task", "export-orders": "functions/worker-export-orders"} {
		w, ok := f.Local[worker]
		if !ok || w.Command != nil || w.Dir != "internal/core/optype" {
			t.Errorf("%s: %+v", worker, w)
			continue
		}
		if got := filepath.ToSlash(filepath.Join(w.Dir, w.Go)); got != pkg {
			t.Errorf("%s resolves to %s, want %s", worker, got, pkg)
		}
		// This test runs in the package directory, three levels under the module root.
		if _, err := os.Stat(filepath.Join("../../..", pkg, "main.go")); err != nil {
			t.Errorf("%s: %v", worker, err)
		}
	}
	// BuiltinFile is a copy.
	f.Types[0].Name = "changed"
	delete(f.Local, "demo-task")
	if g := BuiltinFile(); g.Types[0].Name == "changed" || len(g.Local) != 2 {
		t.Error("BuiltinFile shares its contents")
	}
}
