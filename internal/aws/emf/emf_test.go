package emf_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/emf"
	"github.com/longrun-dev/longrun/internal/testkit/emftest"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 5, 123_000_000, time.UTC)

func newEncoder(t *testing.T, buf *bytes.Buffer) *emf.Encoder {
	t.Helper()
	e, err := emf.New(buf, "longrun-api")
	if err != nil {
		t.Fatal(err)
	}
	e.Now = func() time.Time { return t0 }
	return e
}

func TestLinesAreEMF(t *testing.T) {
	t.Setenv("LONGRUN_METRICS_NAMESPACE", "")
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "")
	var buf bytes.Buffer
	e := newEncoder(t, &buf)
	e.Add("Admissions", emf.Count, 1, "Outcome", "created")
	e.Add("DispatchLag", emf.Milliseconds, 250.5)
	if strings.Count(buf.String(), "\n") != 2 {
		t.Fatalf("want two lines:\n%s", buf.String())
	}
	points, err := emftest.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := []emftest.Point{
		{Namespace: "longrun", Name: "Admissions", Unit: "Count", Value: 1, Timestamp: t0.UnixMilli(),
			Dims: map[string]string{"Service": "longrun-api", "Outcome": "created"}},
		{Namespace: "longrun", Name: "DispatchLag", Unit: "Milliseconds", Value: 250.5, Timestamp: t0.UnixMilli(),
			Dims: map[string]string{"Service": "longrun-api"}},
	}
	if len(points) != len(want) {
		t.Fatalf("points %+v", points)
	}
	for i := range want {
		if !equal(points[i], want[i]) {
			t.Errorf("point %d = %+v, want %+v", i, points[i], want[i])
		}
	}
	// The exact shape, dimension names in the order given (the encoder's first).
	var line map[string]any
	if err := json.Unmarshal(bytes.Split(buf.Bytes(), []byte("\n"))[0], &line); err != nil {
		t.Fatal(err)
	}
	dims := line["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"]
	if b, _ := json.Marshal(dims); string(b) != `[["Service","Outcome"]]` {
		t.Errorf("dimensions %s", b)
	}
	if ts := line["_aws"].(map[string]any)["Timestamp"]; ts != float64(t0.UnixMilli()) {
		t.Errorf("timestamp %v, want the injected clock in ms", ts)
	}
}

func equal(a, b emftest.Point) bool {
	if a.Namespace != b.Namespace || a.Name != b.Name || a.Unit != b.Unit || a.Value != b.Value ||
		a.Timestamp != b.Timestamp || len(a.Dims) != len(b.Dims) {
		return false
	}
	for k, v := range b.Dims {
		if a.Dims[k] != v {
			return false
		}
	}
	return true
}

func TestNamespaceAndDimensionsFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_METRICS_NAMESPACE", "acme/longrun")
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "Stage=prod, Region = eu-west-1")
	var buf bytes.Buffer
	newEncoder(t, &buf).Add("Repairs", emf.Count, 2, "Action", "redispatch")
	points, err := emftest.Parse(buf.Bytes())
	if err != nil || len(points) != 1 {
		t.Fatalf("%+v %v", points, err)
	}
	p := points[0]
	if p.Namespace != "acme/longrun" || p.Dims["Stage"] != "prod" || p.Dims["Region"] != "eu-west-1" ||
		p.Dims["Service"] != "longrun-api" || p.Dims["Action"] != "redispatch" || p.Value != 2 {
		t.Errorf("%+v", p)
	}
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "Stage")
	if _, err := emf.New(&buf, "x"); err == nil {
		t.Error("a dimension without a value was accepted")
	}
}

// What breaks the format's rules is not written, and OnError hears of it.
func TestRefusesWhatIsNotEMF(t *testing.T) {
	t.Setenv("LONGRUN_METRICS_NAMESPACE", "")
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "")
	many := []string{}
	for i := range 30 {
		many = append(many, "D"+string(rune('a'+i%26))+string(rune('a'+i/26)), "v")
	}
	cases := map[string]func(e *emf.Encoder){
		"unit":             func(e *emf.Encoder) { e.Add("M", "Widgets", 1) },
		"NaN":              func(e *emf.Encoder) { e.Add("M", emf.Count, nan()) },
		"odd dims":         func(e *emf.Encoder) { e.Add("M", emf.Count, 1, "Outcome") },
		"blank value":      func(e *emf.Encoder) { e.Add("M", emf.Count, 1, "Outcome", "") },
		"31 dimensions":    func(e *emf.Encoder) { e.Add("M", emf.Count, 1, many...) },
		"duplicate dim":    func(e *emf.Encoder) { e.Add("M", emf.Count, 1, "Service", "other") },
		"name is a dim":    func(e *emf.Encoder) { e.Add("Outcome", emf.Count, 1, "Outcome", "x") },
		"empty name":       func(e *emf.Encoder) { e.Add("", emf.Count, 1) },
		"reserved name":    func(e *emf.Encoder) { e.Add("_aws", emf.Count, 1) },
		"reserved dim":     func(e *emf.Encoder) { e.Add("M", emf.Count, 1, "_aws", "x") },
		"long dim value":   func(e *emf.Encoder) { e.Add("M", emf.Count, 1, "D", strings.Repeat("v", 1025)) },
		"dim name with :":  func(e *emf.Encoder) { e.Add("M", emf.Count, 1, ":D", "v") },
		"whitespace value": func(e *emf.Encoder) { e.Add("M", emf.Count, 1, "D", "  ") },
	}
	for name, add := range cases {
		var buf bytes.Buffer
		e := newEncoder(t, &buf)
		var errs int
		e.OnError = func(error) { errs++ }
		add(e)
		if buf.Len() != 0 || errs != 1 {
			t.Errorf("%s: wrote %q, %d errors", name, buf.String(), errs)
		}
	}
	// 29 own dimensions beside Service is the most a set may have.
	var buf bytes.Buffer
	e := newEncoder(t, &buf)
	if err := e.Emit("M", emf.Count, 1, many[:58]...); err != nil {
		t.Fatal(err)
	}
	if _, err := emftest.Parse(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func nan() float64 { var z float64; return z / z }

// The schema and the checks beside it refuse what CloudWatch would not extract.
func TestParseRefusesInvalidLines(t *testing.T) {
	for name, line := range map[string]string{
		"no _aws":          `{"M":1}`,
		"no timestamp":     `{"_aws":{"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"M"}]}]},"M":1}`,
		"bad unit":         `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"M","Unit":"Widgets"}]}]},"M":1}`,
		"missing metric":   `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"M","Unit":"Count"}]}]}}`,
		"string metric":    `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"M","Unit":"Count"}]}]},"M":"1"}`,
		"missing dim":      `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["D"]],"Metrics":[{"Name":"M","Unit":"Count"}]}]},"M":1}`,
		"numeric dim":      `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["D"]],"Metrics":[{"Name":"M","Unit":"Count"}]}]},"M":1,"D":2}`,
		"no namespace":     `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Dimensions":[],"Metrics":[{"Name":"M"}]}]},"M":1}`,
		"string timestamp": `{"_aws":{"Timestamp":"1","CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"M"}]}]},"M":1}`,
	} {
		if _, err := emftest.Parse([]byte(line + "\n")); err == nil {
			t.Errorf("%s: accepted %s", name, line)
		}
	}
	ok := `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["D"]],"Metrics":[{"Name":"M","Unit":"Count"}]}]},"M":[1,2],"D":"d"}`
	if p, err := emftest.Parse([]byte(ok)); err != nil || len(p) != 2 {
		t.Errorf("a valid line with an array of values: %+v %v", p, err)
	}
}
