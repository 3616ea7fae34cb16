package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/worker"
)

// vectorFiles reads every vector of a folder of worker/vectors as its members.
func vectorFiles(t *testing.T, folder string) map[string]map[string]json.RawMessage {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(schemaDir, "vectors", folder, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors in %s (%v)", folder, err)
	}
	all := map[string]map[string]json.RawMessage{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		all[strings.TrimSuffix(filepath.Base(p), ".json")] = m
	}
	return all
}

// payload is a vector's document: the member as written, or the text of its …Text member.
func payload(t *testing.T, m map[string]json.RawMessage, member string) []byte {
	t.Helper()
	if raw, ok := m[member]; ok {
		return raw
	}
	var text string
	if err := json.Unmarshal(m[member+"Text"], &text); err != nil {
		t.Fatalf("neither %s nor %sText: %v", member, member, err)
	}
	return []byte(text)
}

// The vectors' schemaValid is what the JSON Schema says of each request and report, the
// report every build vector expects is valid, and so is what the Go worker package writes
// again of every report it reads. (The worker module's tests, which run the vectors through
// the Go package, need no JSON Schema library: this holds the schema side.)
func TestTheVectorsAgreeWithTheSchemas(t *testing.T) {
	for folder, schemaName := range map[string]string{"requests": "step-request", "reports": "step-report"} {
		s := schema(t, schemaName)
		for name, m := range vectorFiles(t, folder) {
			doc := payload(t, m, strings.TrimSuffix(folder, "s"))
			var schemaValid bool
			if err := json.Unmarshal(m["schemaValid"], &schemaValid); err != nil {
				t.Fatalf("%s/%s: schemaValid: %v", folder, name, err)
			}
			if err := validate(s, doc); (err == nil) != schemaValid {
				t.Errorf("%s/%s: schemaValid is %v, the schema says %v", folder, name, schemaValid, err)
			}
			if folder != "reports" {
				continue
			}
			var rep worker.Report
			if json.Unmarshal(doc, &rep) != nil {
				continue // the Go package refuses it, as the recorder does (worker/vectors_test.go)
			}
			again, err := json.Marshal(rep)
			if err != nil {
				t.Fatalf("reports/%s: %v", name, err)
			}
			if err := validate(s, again); err != nil {
				t.Errorf("reports/%s: written again as %.200s, which the schema refuses: %v", name, again, err)
			}
		}
	}
	s := schema(t, "step-report")
	for name, m := range vectorFiles(t, "builds") {
		if string(m["report"]) == "null" {
			continue
		}
		if err := validate(s, m["report"]); err != nil {
			t.Errorf("builds/%s: the schema refuses the report: %v", name, err)
		}
	}
}
