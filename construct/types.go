package construct

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/core/optype"
)

// typesDir is where longrun's functions find the definitions files: the types layer's
// files are /opt/<name> on Lambda.
const typesDir = "/opt"

// typesMetadataKey is the CloudFormation metadata key each state machine carries its types'
// limits under: {"<type>": {"deadlineSeconds": …, "stepTimeoutSeconds": …, "maxSteps": …}}.
// The functions take the limits from the definitions file; the metadata shows in the
// template (and `cdk synth`) what a deployment gives each type.
const typesMetadataKey = "longrun:types"

// lambdaDefaultTimeout is a function's timeout when its props set none.
const lambdaDefaultTimeout = 3 * time.Second

// served is what a deployment serves: its types, and the files they come from.
type served struct {
	registry *optype.Registry
	all      *optype.Registry // demo types included: to tell a demo-only worker from a stranger
	paths    []string         // the definitions files as given; none for the built-in types
}

// loadTypes loads the types p serves: those of p.TypesFiles, or the built-in types without
// files, with the demo types when p.DemoTypes, as the functions will (internal/aws/config,
// Types); and refuses types whose steps the recorder could not run.
func loadTypes(p *Props) (served, error) {
	demo := optype.Demo(p.DemoTypes)
	if len(p.TypesFiles) == 0 {
		s := served{registry: optype.Deployed(demo), all: optype.Deployed(optype.WithDemo)}
		return s, s.checkSteps("the built-in types")
	}
	paths := slices.Clone(p.TypesFiles)
	source := strings.Join(paths, ", ")
	file, err := optype.LoadAll(paths...)
	if err != nil {
		return served{}, err
	}
	s := served{registry: file.Registry(demo), all: file.Registry(optype.WithDemo), paths: paths}
	if len(s.registry.Types()) == 0 {
		return served{}, fmt.Errorf("%s: every type is demo: true, and DemoTypes is off: the deployment would serve no type", source)
	}
	return s, s.checkSteps(source)
}

// checkSteps refuses a type served whose stepTimeout is longer than sizing.MaxStepTimeout.
// Most steps are sent to the worker asynchronously and hold no recorder invocation, but a
// step after a fast one (recorder.SyncBelow) is invoked synchronously, within the
// recorder's own invocation, which Lambda ends at 15 minutes; the recorder needs the minute
// after the step to record how it ended.
func (s served) checkSteps(source string) error {
	var errs []error
	for _, t := range s.registry.Types() {
		if t.StepTimeout > sizing.MaxStepTimeout {
			errs = append(errs, fmt.Errorf("%s: type %q: stepTimeout %s is longer than %s: a step after a fast one runs within the recorder's own Lambda invocation (at most 15m0s), which needs a minute after it to record how it ended; split the work into shorter steps (a step may ask to continue)",
				source, t.Name, t.StepTimeout, sizing.MaxStepTimeout))
		}
	}
	return errors.Join(errs...)
}

// longestStep is the longest stepTimeout of the types served: the recorder's timeout
// follows it (sizing.RecorderTimeout).
func (s served) longestStep() time.Duration {
	var longest time.Duration
	for _, t := range s.registry.Types() {
		longest = max(longest, t.StepTimeout)
	}
	return longest
}

// WorkerTimeouts lists the workers of the types props serve, each with the shortest timeout
// its Lambda function may have: the longest stepTimeout of its types. A team creating its
// workers in the app sets their Timeout from it, then hands New the same props with the
// workers added. Only TypesFiles and DemoTypes are read; nil props serve the built-in types.
// An invalid file is an error naming the file, type and field.
func WorkerTimeouts(props *Props) (map[string]time.Duration, error) {
	if props == nil {
		props = &Props{}
	}
	s, err := loadTypes(props)
	if err != nil {
		return nil, err
	}
	return s.workerTimeouts(), nil
}

func (s served) workerTimeouts() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, t := range s.registry.Types() {
		out[t.Worker] = max(out[t.Worker], t.StepTimeout)
	}
	return out
}

// typesOf lists the names of the worker's types in reg, sorted.
func typesOf(reg *optype.Registry, worker string) []string {
	var names []string
	for _, t := range reg.Types() {
		if t.Worker == worker {
			names = append(names, t.Name)
		}
	}
	return names
}

// checkWorkers holds the given functions to the workers the types name: every worker
// served has a function, no function is for a worker nobody serves, and a function whose
// timeout is known (an awslambda.Function of the app) runs at least as long as its types'
// longest step. Every problem is reported.
func (s served) checkWorkers(given map[string]awslambda.IFunction) error {
	var errs []error
	workers := s.registry.Workers()
	timeouts := s.workerTimeouts()
	for _, w := range workers {
		f, ok := given[w]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("worker %q (%s) has no function in Props.Workers", w, strings.Join(typesOf(s.registry, w), ", ")))
			continue
		case f == nil:
			errs = append(errs, fmt.Errorf("Props.Workers[%q] is nil", w))
			continue
		}
		if got, known := knownTimeout(f); known && got < timeouts[w] {
			var longest string
			for _, t := range s.registry.Types() {
				if t.Worker == w && t.StepTimeout == timeouts[w] {
					longest = t.Name
					break
				}
			}
			errs = append(errs, fmt.Errorf("worker %q: its function's timeout %s is shorter than the stepTimeout %s of %s: Lambda would cut its steps short (give it Timeout: awscdk.Duration_Seconds(%d) or more)",
				w, got, timeouts[w], longest, int(timeouts[w].Seconds())))
		}
		if hasOwnInvokeConfig(f) {
			errs = append(errs, fmt.Errorf("Props.Workers[%q]: its function configures asynchronous invocation itself (OnSuccess, OnFailure, RetryAttempts or MaxEventAge in its props, or ConfigureAsyncInvoke): the construct gives it its own (the recorder as its destinations, no retries), Lambda allows one per function, and a retry would run a step twice; leave those out", w))
		}
	}
	var extra []string
	for w := range given {
		if !slices.Contains(workers, w) {
			extra = append(extra, w)
		}
	}
	slices.Sort(extra)
	for _, w := range extra {
		if demo := typesOf(s.all, w); len(demo) > 0 {
			errs = append(errs, fmt.Errorf("Props.Workers[%q]: the worker serves only demo types (%s), which are not served without DemoTypes", w, strings.Join(demo, ", ")))
			continue
		}
		errs = append(errs, fmt.Errorf("Props.Workers[%q]: no type served names worker %q (the workers are %s)", w, w, strings.Join(workers, ", ")))
	}
	return errors.Join(errs...)
}

// asyncInvokeConfigID is the construct id under which CDK puts a function's event invoke
// config (FunctionBase.configureAsyncInvoke, which the props OnSuccess, OnFailure,
// RetryAttempts and MaxEventAge call too).
const asyncInvokeConfigID = "EventInvokeConfig"

// hasOwnInvokeConfig reports whether the app gave a worker function of its own an event
// invoke config on $LATEST. sendSteps creates the one a worker may have, and CloudFormation
// would refuse the second only at deployment. An imported function's cannot be seen.
func hasOwnInvokeConfig(f awslambda.IFunction) bool {
	fn, ok := f.(awslambda.Function)
	return ok && fn.Node().TryFindChild(jsii.String(asyncInvokeConfigID)) != nil
}

// knownTimeout is a worker function's timeout when the app defines it (Lambda's default
// without one); an imported function's is not known.
func knownTimeout(f awslambda.IFunction) (time.Duration, bool) {
	fn, ok := f.(awslambda.Function)
	if !ok {
		return 0, false
	}
	d := fn.Timeout()
	if d == nil {
		return lambdaDefaultTimeout, true
	}
	var secs float64
	resolved := func() (ok bool) {
		defer func() {
			if recover() != nil {
				ok = false // a timeout from a token: not known until deployment
			}
		}()
		secs = *d.ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
		return true
	}()
	if !resolved {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

// typesMetadata is a worker's types' limits, as its state machine's metadata.
func (s served) typesMetadata(worker string) map[string]any {
	out := map[string]any{}
	for _, t := range s.registry.Types() {
		if t.Worker == worker {
			out[t.Name] = map[string]any{
				"deadlineSeconds":    int(t.Deadline.Seconds()),
				"stepTimeoutSeconds": int(t.StepTimeout.Seconds()),
				"maxSteps":           t.MaxSteps,
			}
		}
	}
	return out
}

// stageTypes copies the definitions files into a directory for the types layer, each under
// its own name (a name two files share gets a prefix: 2-<name>, 3-<name>), and returns the
// directory and the files' paths on Lambda. The directory is named for its contents, so
// equal files stage once and give the same asset.
func stageTypes(paths []string) (string, []string, error) {
	type staged struct {
		name string
		data []byte
	}
	var files []staged
	taken := map[string]bool{}
	h := sha256.New()
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", nil, err
		}
		name := filepath.Base(p)
		for n := i + 1; taken[name]; n++ {
			name = strconv.Itoa(n) + "-" + filepath.Base(p)
		}
		taken[name] = true
		files = append(files, staged{name, data})
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(data))
		h.Write(data)
	}
	dir := filepath.Join(os.TempDir(), "longrun-types-"+hex.EncodeToString(h.Sum(nil))[:20])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	var onLambda []string
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return "", nil, err
		}
		onLambda = append(onLambda, typesDir+"/"+f.name)
	}
	return dir, onLambda, nil
}
