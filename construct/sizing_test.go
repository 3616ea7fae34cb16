package construct_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/construct"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
)

// Longrun's functions are sized by internal/aws/sizing, the table the cost model prices,
// except the recorder's timeout: a step after a fast one runs within its own invocation,
// so it is the longest stepTimeout served plus a minute (at least a minute, at most Lambda's 15).
// Tracing is on (the default): each function hosts the collector, and has room for it.
func TestFunctionsAreSizedBySizing(t *testing.T) {
	sizes := sizing.Functions()
	for _, tc := range []struct {
		name     string
		types    []string
		worker   time.Duration
		recorder float64 // seconds
	}{
		{"the team's types (5m steps)", []string{"testdata/team.types.yaml"}, 5 * time.Minute, 360},
		{"the longest step allowed (14m)", []string{"testdata/longest-step.types.yaml"}, 14 * time.Minute, 900},
		{"the built-in types (1m steps)", nil, time.Minute, 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(t)
			workers := map[string]awslambda.IFunction{"export-orders": a.pythonWorker("ExportOrders", tc.worker)}
			if tc.types != nil {
				workers = map[string]awslambda.IFunction{"provisioner": a.pythonWorker("Provisioner", tc.worker)}
				if strings.Contains(tc.types[0], "team") {
					workers["mailer"] = awslambda.Function_FromFunctionArn(a.stack, jsii.String("Mailer"), jsii.String(mailerArn))
				}
			}
			construct.New(a.stack, "Longrun", &construct.Props{Stage: "dev", TypesFiles: tc.types, CodeDir: codeDir(), Workers: workers})
			tpl := a.template(t)
			for _, f := range longrunFunctions {
				_, props := tpl.function(t, "longrun-dev-"+f)
				want := sizes[f].WithCollector()
				timeout := want.Timeout.Seconds()
				if f == sizing.Recorder {
					timeout = tc.recorder
					if got := sizing.RecorderTimeout(tc.worker).Seconds(); got != tc.recorder {
						t.Errorf("sizing.RecorderTimeout(%s) = %vs, want %vs", tc.worker, got, tc.recorder)
					}
				}
				var reserved any
				if want.Reserved > 0 {
					reserved = float64(want.Reserved)
				}
				if props["MemorySize"] != float64(want.MemoryMB) || props["Timeout"] != timeout || props["ReservedConcurrentExecutions"] != reserved {
					t.Errorf("%s: %v MB, %vs, reserved %v; want %d MB, %vs, reserved %v", f, props["MemorySize"], props["Timeout"],
						props["ReservedConcurrentExecutions"], want.MemoryMB, timeout, reserved)
				}
			}
		})
	}
}

// The collector extension shares its function's memory: with tracing on, no function has
// less than sizing.CollectorMemoryMB (the recorder, 128 MB untraced, is raised); with tracing
// off, every function has sizing's memory.
func TestTheCollectorHasRoom(t *testing.T) {
	sizes := sizing.Functions()
	if sizes[sizing.Recorder].MemoryMB >= sizing.CollectorMemoryMB {
		t.Fatalf("the recorder is %d MB untraced: this test proves nothing", sizes[sizing.Recorder].MemoryMB)
	}
	for _, off := range []bool{false, true} {
		a := newApp(t)
		construct.New(a.stack, "Longrun", &construct.Props{Stage: "dev", CodeDir: codeDir(), Tracing: construct.TracingOptions{Disabled: off},
			Workers: map[string]awslambda.IFunction{"export-orders": a.pythonWorker("ExportOrders", time.Minute)}})
		tpl := a.template(t)
		for _, f := range longrunFunctions {
			_, props := tpl.function(t, "longrun-dev-"+f)
			want := sizes[f].MemoryMB
			if !off {
				want = max(want, sizing.CollectorMemoryMB)
			}
			if props["MemorySize"] != float64(want) {
				t.Errorf("tracing off %v: %s has %v MB, want %d", off, f, props["MemorySize"], want)
			}
		}
	}
}

// A step longer than the recorder can run within its invocation stops synthesis, and WorkerTimeouts says so
// too (a team sizes its workers with it before New).
func TestStepsTheRecorderCannotWaitForAreRefused(t *testing.T) {
	const want = `testdata/too-long-step.types.yaml: type "provision.environment": stepTimeout 14m30s is longer than 14m0s`
	a := newApp(t)
	msg := mustPanic(t, func() {
		construct.New(a.stack, "Longrun", &construct.Props{Stage: "dev", TypesFiles: []string{"testdata/too-long-step.types.yaml"}, CodeDir: codeDir(),
			Workers: map[string]awslambda.IFunction{"provisioner": a.pythonWorker("Provisioner", 15*time.Minute)}})
	})
	if !strings.Contains(msg, want) || !strings.Contains(msg, "a step after a fast one runs within the recorder's own Lambda invocation") {
		t.Errorf("panic %q, want %q", msg, want)
	}
	if _, err := construct.WorkerTimeouts(&construct.Props{TypesFiles: []string{"testdata/too-long-step.types.yaml"}}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("WorkerTimeouts: %v", err)
	}
}
