// Package emf writes metrics as CloudWatch Embedded Metric Format lines: one JSON object per
// line, which CloudWatch Logs turns into metrics when a Lambda function prints it to stdout
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
// Each Add is one line, written at once: nothing is buffered, so nothing is lost when a
// function's process is frozen or ends. The services see it through their own small
// Metrics ports (Add(name, unit, value, dims...)); docs/observability.md lists the metrics.
package emf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// Units CloudWatch accepts (the spec's MetricDefinition.Unit).
const (
	Count        = "Count"
	Milliseconds = "Milliseconds"
	Seconds      = "Seconds"
	Bytes        = "Bytes"
	None         = "None"
)

// knownUnit reports whether u is one of CloudWatch's units.
func knownUnit(u string) bool {
	switch u {
	case "Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
		"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second", "Kilobytes/Second",
		"Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second", "Megabits/Second",
		"Gigabits/Second", "Terabits/Second", "Count/Second", "None":
		return true
	}
	return false
}

// Limits of the format.
const (
	MaxDimensions = 30 // per dimension set
	// MaxMetrics per directive; this encoder writes one metric per line.
	MaxMetrics = 100
	// DefaultNamespace is the namespace without LONGRUN_METRICS_NAMESPACE.
	DefaultNamespace = "longrun"
)

// Encoder writes EMF lines to W. Its zero value is not usable: use New or set W,
// Namespace and Now.
type Encoder struct {
	W         io.Writer
	Namespace string
	// Dimensions are on every line, name then value: Service (the function) and any
	// extra ones from LONGRUN_METRICS_DIMENSIONS.
	Dimensions []string
	Now        func() time.Time
	// OnError, when set, hears of a metric that could not be written (a bad unit, name,
	// dimension or value, or a failed write); otherwise it is dropped silently.
	OnError func(error)

	mu sync.Mutex
}

// New is the encoder of a function named service writing to w: namespace
// LONGRUN_METRICS_NAMESPACE (default "longrun"), dimension Service=service plus those of
// LONGRUN_METRICS_DIMENSIONS ("Name=value,Name=value"), the real clock.
func New(w io.Writer, service string) (*Encoder, error) {
	e := &Encoder{W: w, Namespace: DefaultNamespace, Dimensions: []string{"Service", service}, Now: time.Now}
	if ns := strings.TrimSpace(os.Getenv("LONGRUN_METRICS_NAMESPACE")); ns != "" {
		e.Namespace = ns
	}
	for _, pair := range strings.Split(os.Getenv("LONGRUN_METRICS_DIMENSIONS"), ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(value) == "" {
			return nil, fmt.Errorf("emf: LONGRUN_METRICS_DIMENSIONS entry %q is not Name=value", pair)
		}
		e.Dimensions = append(e.Dimensions, strings.TrimSpace(name), strings.TrimSpace(value))
	}
	if err := checkDims(e.Dimensions); err != nil {
		return nil, err
	}
	return e, nil
}

// Add writes one metric value: dims are the metric's own dimensions, name then value
// (Outcome, "created"), added to the encoder's. A metric that breaks the format's rules is
// not written (OnError hears why).
func (e *Encoder) Add(name, unit string, value float64, dims ...string) {
	if err := e.Emit(name, unit, value, dims...); err != nil && e.OnError != nil {
		e.OnError(err)
	}
}

// Emit is Add with the error.
func (e *Encoder) Emit(name, unit string, value float64, dims ...string) error {
	line, err := e.Line(name, unit, value, dims...)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.W.Write(line)
	return err
}

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Line is the EMF line (with its newline) Add would write.
func (e *Encoder) Line(name, unit string, value float64, dims ...string) ([]byte, error) {
	switch {
	case name == "" || len(name) > 255 || name == "_aws":
		return nil, fmt.Errorf("emf: metric name %q is empty, longer than 255 or reserved", name)
	case !knownUnit(unit):
		return nil, fmt.Errorf("emf: %s: unit %q is not a CloudWatch unit", name, unit)
	case math.IsNaN(value) || math.IsInf(value, 0):
		return nil, fmt.Errorf("emf: %s: value %v is not a finite number", name, value)
	}
	all := append(append([]string(nil), e.Dimensions...), dims...)
	if err := checkDims(all); err != nil {
		return nil, fmt.Errorf("%w (metric %s)", err, name)
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	root := map[string]any{}
	names := []string{}
	for i := 0; i < len(all); i += 2 {
		if _, dup := root[all[i]]; dup {
			return nil, fmt.Errorf("emf: %s: dimension %q given twice", name, all[i])
		}
		root[all[i]] = all[i+1]
		names = append(names, all[i])
	}
	if _, clash := root[name]; clash {
		return nil, fmt.Errorf("emf: metric %q has a dimension's name", name)
	}
	root[name] = value
	root["_aws"] = metadata{Timestamp: now().UnixMilli(), CloudWatchMetrics: []directive{{
		Namespace: e.Namespace, Dimensions: [][]string{names}, Metrics: []metricDef{{Name: name, Unit: unit}},
	}}}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func checkDims(dims []string) error {
	if len(dims)%2 != 0 {
		return errors.New("emf: dimensions come in name, value pairs")
	}
	if len(dims)/2 > MaxDimensions {
		return fmt.Errorf("emf: %d dimensions, more than %d", len(dims)/2, MaxDimensions)
	}
	for i := 0; i < len(dims); i += 2 {
		n, v := dims[i], dims[i+1]
		if strings.TrimSpace(n) == "" || len(n) > 250 || strings.HasPrefix(n, ":") || n == "_aws" {
			return fmt.Errorf("emf: dimension name %q is empty, too long or reserved", n)
		}
		if strings.TrimSpace(v) == "" || len(v) > 1024 {
			return fmt.Errorf("emf: dimension %s's value %q is blank or longer than 1024", n, v)
		}
	}
	return nil
}
