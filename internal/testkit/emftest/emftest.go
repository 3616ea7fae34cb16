// Package emftest reads CloudWatch Embedded Metric Format output back for tests: every line
// validated against internal/aws/emf/testdata/emf.schema.json and the rules a schema cannot
// state, then its metric values.
package emftest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/longrun-dev/longrun/internal/aws/emf"
)

// Point is one metric value read back from an EMF line.
type Point struct {
	Namespace string
	Name      string
	Unit      string
	Value     float64
	Timestamp int64
	// Dims are the line's dimensions: name to value.
	Dims map[string]string
}

var schemaOnce = sync.OnceValues(func() (*jsonschema.Schema, error) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "aws", "emf", "testdata", "emf.schema.json")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(path, doc); err != nil {
		return nil, err
	}
	return c.Compile(path)
})

// Parse validates EMF output (one object a line) against internal/aws/emf/testdata/emf.schema.json and the
// rules a schema cannot state (every dimension and metric a directive names is a member of
// the line; metric members are numbers or arrays of numbers), and returns its metric values.
func Parse(out []byte) ([]Point, error) {
	schema, err := schemaOnce()
	if err != nil {
		return nil, fmt.Errorf("emf schema: %w", err)
	}
	var points []Point
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
		if err != nil {
			return nil, fmt.Errorf("not JSON: %w: %s", err, line)
		}
		if err := schema.Validate(inst); err != nil {
			return nil, fmt.Errorf("not EMF: %v: %s", err, line)
		}
		var root map[string]json.RawMessage
		var meta struct {
			AWS struct {
				Timestamp         int64
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal(line, &root); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(line, &meta); err != nil {
			return nil, err
		}
		for _, d := range meta.AWS.CloudWatchMetrics {
			dims := map[string]string{}
			for _, set := range d.Dimensions {
				for _, n := range set {
					var v string
					if err := json.Unmarshal(root[n], &v); err != nil {
						return nil, fmt.Errorf("dimension %q is not a string member: %s", n, line)
					}
					dims[n] = v
				}
			}
			for _, m := range d.Metrics {
				raw, ok := root[m.Name]
				if !ok {
					return nil, fmt.Errorf("metric %q is not a member: %s", m.Name, line)
				}
				var values []float64
				var v float64
				if err := json.Unmarshal(raw, &v); err == nil {
					values = []float64{v}
				} else if err := json.Unmarshal(raw, &values); err != nil {
					return nil, fmt.Errorf("metric %q is neither a number nor an array of numbers: %s", m.Name, line)
				}
				for _, v := range values {
					points = append(points, Point{Namespace: d.Namespace, Name: m.Name, Unit: m.Unit, Value: v,
						Timestamp: meta.AWS.Timestamp, Dims: dims})
				}
			}
		}
	}
	return points, sc.Err()
}

// Key names a point by its metric and the value of one of its dimensions ("" without it).
type Key struct{ Name, Dim string }

// Want is a point's expected unit and value.
type Want struct {
	Unit  string
	Value float64
}

// Expect fails t unless points, less those skip drops, are exactly want, keyed by name and
// the value of dim, each reported once; every point kept must also pass check (its
// dimensions, say), which reports its own failures.
func Expect(t testing.TB, points []Point, dim string, skip func(Point) bool, check func(Point), want map[Key]Want) {
	t.Helper()
	got := map[Key]Point{}
	for _, p := range points {
		if skip != nil && skip(p) {
			continue
		}
		if check != nil {
			check(p)
		}
		k := Key{p.Name, p.Dims[dim]}
		if _, dup := got[k]; dup {
			t.Errorf("%v reported twice", k)
		}
		got[k] = p
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for k, w := range want {
		if p, ok := got[k]; !ok || p.Unit != w.Unit || p.Value != w.Value {
			t.Errorf("%v = %+v, want %v %v", k, p, w.Value, w.Unit)
		}
	}
}

// Encoder is an EMF encoder for service writing into the returned buffer, with the default
// namespace and no configured dimensions whatever the environment, the clock now (nil: the
// encoder's own), and every metric it refuses to write failing t.
func Encoder(t testing.TB, service string, now func() time.Time) (*emf.Encoder, *bytes.Buffer) {
	t.Helper()
	t.Setenv("LONGRUN_METRICS_NAMESPACE", "")
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "")
	var buf bytes.Buffer
	enc, err := emf.New(&buf, service)
	if err != nil {
		t.Fatal(err)
	}
	if now != nil {
		enc.Now = now
	}
	enc.OnError = func(err error) { t.Errorf("metric not written: %v", err) }
	return enc, &buf
}
