// Package events holds the JSON Schemas of what longrun publishes (schemas/) and a sample
// input event for every function (samples/), embedded so tests use exactly these files.
package events

import (
	"bytes"
	"embed"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed schemas/*.json samples/*.json samples/worker/*.json
var files embed.FS

// Sample returns samples/<name>.json.
func Sample(name string) []byte { return mustRead("samples/" + name + ".json") }

// Samples lists the samples in samples/<dir>, as names for Sample ("<dir>/<name>").
func Samples(dir string) []string {
	entries, _ := files.ReadDir("samples/" + dir)
	var names []string
	for _, e := range entries {
		names = append(names, dir+"/"+strings.TrimSuffix(e.Name(), ".json"))
	}
	return names
}

// Schema returns schemas/<name>.json.
func Schema(name string) []byte { return mustRead("schemas/" + name + ".json") }

func mustRead(path string) []byte {
	b, err := files.ReadFile(path)
	if err != nil {
		panic(fmt.Sprintf("events: %s is not embedded", path))
	}
	return b
}

// StateChangedSchema is the id of the "Operation State Changed" schema.
const StateChangedSchema = "operation-state-changed"

// Validator checks events against a schema of schemas/.
type Validator struct{ schema *jsonschema.Schema }

// NewValidator compiles schemas/<name>.json, asserting formats such as date-time.
func NewValidator(name string) (*Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema(name)))
	if err != nil {
		return nil, fmt.Errorf("events: schema %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := "https://longrun.dev/schemas/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("events: compile %s: %w", name, err)
	}
	return &Validator{schema: s}, nil
}

// Validate checks one event (a JSON document).
func (v *Validator) Validate(event []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(event))
	if err != nil {
		return err
	}
	return v.schema.Validate(doc)
}
