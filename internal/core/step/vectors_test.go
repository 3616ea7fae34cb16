package step_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/step"
)

// The protocol's report vectors (api/worker/vectors/reports) against the schema and both
// readings of a report: ParseReportCuttingText (the recorder's) reads exactly the reports
// a vector does not record as invalid_report; ParseReport (the schema's line) reads those
// of them whose text is within its limits, the same; and the schema accepts what the vector
// says, which is what ParseReport reads but for the sizes it cannot measure.
// internal/service/recorder holds what is recorded to the vectors.
func TestReportVectors(t *testing.T) {
	s := schema(t, "step-report")
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "api", "worker", "vectors", "reports", "*.json"))
	if err != nil || len(paths) < 150 {
		t.Fatalf("%d report vectors: %v", len(paths), err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".json"), func(t *testing.T) {
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Tags        []string        `json:"tags"`
				Report      json.RawMessage `json:"report"`
				ReportText  *string         `json:"reportText"`
				SchemaValid bool            `json:"schemaValid"`
				Recorder    struct {
					Kind string `json:"kind"`
					Code string `json:"code"`
				} `json:"recorder"`
			}
			if err := json.Unmarshal(file, &v); err != nil {
				t.Fatal(err)
			}
			payload := []byte(v.Report)
			if v.ReportText != nil {
				payload = []byte(*v.ReportText)
			}
			invalid := v.Recorder.Kind == "outcome_unknown" && v.Recorder.Code == "invalid_report"
			cut, sized := slices.Contains(v.Tags, "text-cut"), slices.Contains(v.Tags, "size-limit")

			lenient, lenientErr := step.ParseReportCuttingText(payload)
			if (lenientErr != nil) != invalid {
				t.Errorf("ParseReportCuttingText: %v; the vector records invalid_report %v", lenientErr, invalid)
			}
			if lenientErr != nil && !errors.Is(lenientErr, step.ErrInvalidReport) {
				t.Errorf("ParseReportCuttingText: %v is not ErrInvalidReport", lenientErr)
			}
			strict, strictErr := parseSafely(t, string(payload))
			switch {
			case (strictErr == nil) != (!invalid && !cut):
				t.Errorf("ParseReport: %v; the vector records invalid_report %v, text cut %v", strictErr, invalid, cut)
			case strictErr == nil && !reflect.DeepEqual(strict, lenient):
				t.Errorf("ParseReport reads %s, ParseReportCuttingText %s", show(strict), show(lenient))
			}
			schemaErr := validate(s, payload)
			if (schemaErr == nil) != v.SchemaValid {
				t.Errorf("the schema says %v; the vector says schemaValid %v", schemaErr, v.SchemaValid)
			}
			if (schemaErr == nil) != (strictErr == nil || sized && invalid) {
				t.Errorf("the schema says %v, ParseReport %v (a size limit: %v)", schemaErr, strictErr, sized)
			}
		})
	}
}
