package construct_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/construct"
	"github.com/longrun-dev/longrun/internal/aws/emf"
	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
	"github.com/longrun-dev/longrun/internal/testkit/emftest"
)

// widgetMetric is one line of a dashboard graph: a metric (namespace, name, dimensions,
// statistic) or an expression.
type widgetMetric struct {
	widget     string
	namespace  string
	name       string
	dims       map[string]string
	stat       string
	expression string
}

// dashboard reads the template's one dashboard's graphs.
func (tpl *template) dashboard(t *testing.T) (string, []widgetMetric) {
	t.Helper()
	_, d := tpl.only(t, "AWS::CloudWatch::Dashboard")
	var body struct {
		Widgets []struct {
			Type       string
			Properties struct {
				Title   string
				Metrics [][]any
			}
		}
	}
	if err := json.Unmarshal([]byte(cfntest.Render(d.Properties["DashboardBody"])), &body); err != nil {
		t.Fatalf("dashboard body: %v", err)
	}
	var out []widgetMetric
	for _, w := range body.Widgets {
		for _, line := range w.Properties.Metrics {
			m := widgetMetric{widget: w.Properties.Title, dims: map[string]string{}}
			opts, _ := line[len(line)-1].(map[string]any)
			if e, ok := opts["expression"].(string); ok {
				m.expression = e
				out = append(out, m)
				continue
			}
			m.namespace, m.name = line[0].(string), line[1].(string)
			for i := 2; i+1 < len(line); i += 2 {
				m.dims[line[i].(string)] = line[i+1].(string)
			}
			m.stat, _ = opts["stat"].(string)
			out = append(out, m)
		}
	}
	return d.Properties["DashboardName"].(string), out
}

// emitted is what internal/aws/emf writes for a metric of function fn with its own
// dimensions, under the environment the template gives fn: the namespace and the dimension
// set CloudWatch files the value under.
func (tpl *template) emitted(t *testing.T, stage, fn, name string, own map[string]string) (string, map[string]string) {
	t.Helper()
	_, props := tpl.function(t, "longrun-"+stage+"-"+fn)
	env := envOf(props)
	for _, k := range []string{"LONGRUN_METRICS_NAMESPACE", "LONGRUN_METRICS_DIMENSIONS"} {
		v, ok := env[k].(string)
		if !ok {
			t.Fatalf("%s: %s=%v", fn, k, env[k])
		}
		t.Setenv(k, v)
	}
	var buf bytes.Buffer
	enc, err := emf.New(&buf, "longrun-"+fn)
	if err != nil {
		t.Fatal(err)
	}
	var dims []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range own {
			if !yield(k) {
				return
			}
		}
	}) {
		dims = append(dims, k, own[k])
	}
	if err := enc.Emit(name, "Count", 1, dims...); err != nil {
		t.Fatal(err)
	}
	points, err := emftest.Parse(buf.Bytes())
	if err != nil || len(points) != 1 {
		t.Fatalf("%s %s: %v %v", fn, name, points, err)
	}
	return points[0].Namespace, points[0].Dims
}

// The metrics of longrun (docs/observability.md): each one's own dimensions and the
// functions that emit it.
var emitters = map[string]struct {
	own       []string
	functions []string
}{
	"Admissions":            {[]string{"Outcome"}, []string{"api"}},
	"TransactionConflicts":  {[]string{"Call"}, []string{"api", "dispatcher", "recorder", "reconciler"}},
	"DispatchLag":           {[]string{"Type"}, []string{"dispatcher", "reconciler"}},
	"DeadLetters":           {[]string{"Source"}, []string{"dispatcher", "reconciler"}},
	"OperationLatency":      {[]string{"Outcome", "Type"}, []string{"recorder", "reconciler"}},
	"StepsRun":              {[]string{"Outcome", "Type"}, []string{"recorder", "reconciler"}},
	"OutcomeUnknown":        {[]string{"Type"}, []string{"recorder", "reconciler"}},
	"Repairs":               {[]string{"Action"}, []string{"reconciler"}},
	"OutcomeUnknownWaiting": {nil, []string{"reconciler"}},
	"EventsPublished":       {nil, []string{"notifier"}},
	"PublishFailures":       {nil, []string{"notifier"}},
	"NotifyLag":             {nil, []string{"notifier"}},
}

// The dashboard graphs every metric under exactly the namespace and dimension set the
// encoder files it under with the functions' environment (a metric with one dimension more
// or less is another metric, and the graph would stay empty), for each of the two types
// where the metric is per type, and the API's and the functions' own metrics beside them.
func TestDashboardShowsTheMetricsAsEmitted(t *testing.T) {
	tpl := team(t)
	name, lines := tpl.dashboard(t)
	if name != "longrun-prod-dashboard" || tpl.lr.Dashboard == nil {
		t.Errorf("dashboard %q, exposed %v", name, tpl.lr.Dashboard)
	}
	seen := map[string]bool{} // "metric fn stat own=value …"
	for _, m := range lines {
		if m.expression != "" || m.namespace != "longrun" {
			continue
		}
		e, ok := emitters[m.name]
		if !ok {
			t.Errorf("%s: %s is no metric of longrun's", m.widget, m.name)
			continue
		}
		fn := strings.TrimPrefix(m.dims["Service"], "longrun-")
		if !slices.Contains(e.functions, fn) {
			t.Errorf("%s: %s of %q, which does not emit it", m.widget, m.name, m.dims["Service"])
			continue
		}
		own := map[string]string{}
		for _, d := range e.own {
			own[d] = m.dims[d]
		}
		ns, dims := tpl.emitted(t, "prod", fn, m.name, own)
		if ns != m.namespace || !reflect.DeepEqual(dims, m.dims) {
			t.Errorf("%s: %s %v, but %s writes it as %s %v", m.widget, m.name, m.dims, fn, ns, dims)
		}
		key := []string{m.name, fn, m.stat}
		for _, d := range e.own {
			key = append(key, d+"="+m.dims[d])
		}
		seen[strings.Join(key, " ")] = true
	}
	var want []string
	for _, o := range []string{"created", "replayed", "key_reused", "target_busy", "quota_exceeded", "invalid", "unavailable", "internal"} {
		want = append(want, "Admissions api Sum Outcome="+o)
	}
	want = append(want, "TransactionConflicts api Sum Call=admit", "TransactionConflicts recorder Sum Call=append",
		"DeadLetters dispatcher Sum Source=dispatcher", "OutcomeUnknownWaiting reconciler Maximum",
		"EventsPublished notifier Sum", "NotifyLag notifier p99")
	for _, a := range []string{"dispatched", "recorded", "stopped", "continued", "rescheduled", "deferred", "error"} {
		want = append(want, "Repairs reconciler Sum Action="+a)
	}
	for _, typ := range []string{"provision.environment", "notify.mail"} {
		for _, p := range []string{"p50", "p99"} {
			want = append(want, "DispatchLag dispatcher "+p+" Type="+typ)
			for _, o := range []string{"succeeded", "failed", "canceled", "outcome_unknown"} {
				want = append(want, "OperationLatency recorder "+p+" Outcome="+o+" Type="+typ)
			}
		}
		want = append(want, "StepsRun recorder Sum Outcome=failed Type="+typ, "OutcomeUnknown recorder Sum Type="+typ, "OutcomeUnknown reconciler Sum Type="+typ)
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("the dashboard lacks %s", w)
		}
	}

	// Open-ended dimensions: a SEARCH on exactly the metric's dimension names, this stage only.
	var searches []string
	for _, m := range lines {
		if m.expression != "" {
			searches = append(searches, m.expression)
		}
	}
	for _, want := range []string{
		`SEARCH('{"longrun",Call,Service,Stage} MetricName="StoreRetries" Stage="prod"', 'Sum', 300)`,
		`SEARCH('{"longrun",Call,Service,Stage} MetricName="StoreBusy" Stage="prod"', 'Sum', 300)`,
		`SEARCH('{"longrun",Outcome,Service,Stage,Type} MetricName="OperationLatency" Stage="prod" Service="longrun-reconciler"', 'p99', 300)`,
	} {
		if !slices.Contains(searches, want) {
			t.Errorf("no graph of %s in %v", want, searches)
		}
	}

	// The API's answers and every function's errors and throttles, the workers' included.
	restAPI, _ := tpl.only(t, "AWS::ApiGateway::RestApi")
	stage, _ := tpl.only(t, "AWS::ApiGateway::Stage")
	_ = restAPI
	other := map[string]bool{}
	for _, m := range lines {
		if m.namespace == "AWS/ApiGateway" {
			if m.dims["ApiName"] != "longrun-prod-api" || m.dims["Stage"] != "${"+stage+"}" || len(m.dims) != 2 {
				t.Errorf("%s: %s %v", m.widget, m.name, m.dims)
			}
			other[m.name] = true
		}
		if m.namespace == "AWS/Lambda" {
			other[m.name+" "+m.dims["FunctionName"]] = true
		}
	}
	for _, n := range []string{"4XXError", "5XXError", "Count"} {
		if !other[n] {
			t.Errorf("no API Gateway %s", n)
		}
	}
	for _, f := range longrunFunctions {
		id, _ := tpl.function(t, "longrun-prod-"+f)
		for _, m := range []string{"Errors", "Throttles"} {
			if !other[m+" ${"+id+"}"] {
				t.Errorf("no %s of %s", m, f)
			}
		}
	}
	for _, fn := range []string{"${" + tpl.provisioner + "}", "team-mailer"} {
		if !other["Errors "+fn] || !other["Throttles "+fn] {
			t.Errorf("no errors or throttles of the worker %s: %v", fn, other)
		}
	}
}

// alarm finds the alarm named name.
func (tpl *template) alarm(t *testing.T, name string) map[string]any {
	t.Helper()
	for _, r := range tpl.of("AWS::CloudWatch::Alarm") {
		if r.Properties["AlarmName"] == name {
			return r.Properties
		}
	}
	t.Fatalf("no alarm %s", name)
	return nil
}

// queries are a metric-math alarm's expression and its series by id, each as
// "namespace name stat dims".
func queries(p map[string]any) (string, map[string]string) {
	var expr string
	series := map[string]string{}
	for _, q := range p["Metrics"].([]any) {
		q := q.(map[string]any)
		if e, ok := q["Expression"].(string); ok {
			if q["ReturnData"] != true {
				return "expression without ReturnData", nil
			}
			expr = e
			continue
		}
		stat := q["MetricStat"].(map[string]any)
		m := stat["Metric"].(map[string]any)
		series[q["Id"].(string)] = fmt.Sprintf("%s %s %s/%v %s", m["Namespace"], m["MetricName"], stat["Stat"], stat["Period"], dimsOf(m["Dimensions"]))
	}
	return expr, series
}

func dimsOf(v any) string {
	var out []string
	for _, d := range v.([]any) {
		d := d.(map[string]any)
		out = append(out, cfntest.Render(d["Name"])+"="+cfntest.Render(d["Value"]))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// The alarms on the metrics, with the default thresholds: the API's 5xx rate (metric math
// with a floor of requests), the conflicts of every function and call together, each type's
// p99 dispatch lag and each type's outcome_unknown (the recorder's and the reconciler's).
// None has an action, and the existing alarms stay.
func TestMetricAlarms(t *testing.T) {
	tpl := team(t)
	stage, _ := tpl.only(t, "AWS::ApiGateway::Stage")
	gw := "ApiName=longrun-prod-api,Stage=${" + stage + "}"

	rate := tpl.alarm(t, "longrun-prod-ApiServerErrorRate")
	expr, series := queries(rate)
	if expr != "IF(requests >= 20, 100 * errors / requests, 0)" || rate["Threshold"] != float64(1) || rate["ComparisonOperator"] != "GreaterThanThreshold" ||
		!reflect.DeepEqual(series, map[string]string{
			"errors":   "AWS/ApiGateway 5XXError Sum/300 " + gw,
			"requests": "AWS/ApiGateway Count Sum/300 " + gw,
		}) {
		t.Errorf("5xx rate: %s %v %v", expr, series, rate)
	}

	conflicts := tpl.alarm(t, "longrun-prod-TransactionConflicts")
	expr, series = queries(conflicts)
	var got []string
	for id, s := range series {
		if !strings.Contains(expr, "FILL("+id+", 0)") {
			t.Errorf("conflicts: %s is not in %s", id, expr)
		}
		got = append(got, s)
	}
	sort.Strings(got)
	var want []string
	for _, s := range []string{"api admit", "api append", "dispatcher append", "recorder append", "reconciler append"} {
		fn, call, _ := strings.Cut(s, " ")
		want = append(want, "longrun TransactionConflicts Sum/300 Call="+call+",Service=longrun-"+fn+",Stage=prod")
	}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) || strings.Count(expr, "+") != 4 || conflicts["Threshold"] != float64(100) || conflicts["ComparisonOperator"] != "GreaterThanThreshold" {
		t.Errorf("conflicts: %s\n%v\nwant\n%v\n%v", expr, got, want, conflicts)
	}

	for typ, id := range map[string]string{"provision.environment": "ProvisionEnvironment", "notify.mail": "NotifyMail"} {
		lag := tpl.alarm(t, "longrun-prod-Type"+id+"DispatchLag")
		if lag["Namespace"] != "longrun" || lag["MetricName"] != "DispatchLag" || lag["ExtendedStatistic"] != "p99" || lag["Period"] != float64(300) ||
			dimsOf(lag["Dimensions"]) != "Service=longrun-dispatcher,Stage=prod,Type="+typ ||
			lag["Threshold"] != float64(60000) || lag["ComparisonOperator"] != "GreaterThanThreshold" {
			t.Errorf("%s dispatch lag: %v", typ, lag)
		}
		unknown := tpl.alarm(t, "longrun-prod-Type"+id+"OutcomeUnknown")
		expr, series := queries(unknown)
		if expr != "FILL(recorder, 0) + FILL(reconciler, 0)" || unknown["Threshold"] != float64(1) || unknown["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" ||
			!reflect.DeepEqual(series, map[string]string{
				"recorder":   "longrun OutcomeUnknown Sum/300 Service=longrun-recorder,Stage=prod,Type=" + typ,
				"reconciler": "longrun OutcomeUnknown Sum/300 Service=longrun-reconciler,Stage=prod,Type=" + typ,
			}) {
			t.Errorf("%s outcome_unknown: %s %v %v", typ, expr, series, unknown)
		}
	}
	for id, a := range tpl.of("AWS::CloudWatch::Alarm") {
		if a.Properties["AlarmActions"] != nil || a.Properties["OKActions"] != nil || a.Properties["TreatMissingData"] != "notBreaching" || a.Properties["EvaluationPeriods"] != float64(1) {
			t.Errorf("%s: %v", id, a.Properties)
		}
	}
	// The existing ones are still there.
	for _, name := range []string{"OutcomeUnknown", "OutcomeUnknownWaiting", "QuotaExceeded", "StuckOperations", "RecorderErrors", "WorkerMailerErrors", "MailerExecutionsFailed", "MailerResumeExecutionsFailed", "DispatcherDeadLettersVisible"} {
		tpl.alarm(t, "longrun-prod-"+name)
	}
}

// Thresholds and the namespace are props: the alarms and the functions follow them.
func TestAlarmThresholdsAndNamespaceAreProps(t *testing.T) {
	a := newApp(t)
	construct.New(a.stack, "Longrun", &construct.Props{
		Stage: "dev", TypesFiles: []string{"testdata/team.types.yaml"}, CodeDir: codeDir(), MetricsNamespace: "team/longrun",
		Alarms: construct.AlarmOptions{ServerErrorPercent: 5, ServerErrorMinRequests: 100, TransactionConflicts: 10, DispatchLag: 2 * time.Minute},
		Workers: map[string]awslambda.IFunction{
			"provisioner": a.pythonWorker("Provisioner", 5*time.Minute),
			"mailer":      awslambda.Function_FromFunctionArn(a.stack, jsii.String("Mailer"), jsii.String(mailerArn)),
		},
	})
	tpl := a.template(t)
	rate := tpl.alarm(t, "longrun-dev-ApiServerErrorRate")
	if expr, _ := queries(rate); expr != "IF(requests >= 100, 100 * errors / requests, 0)" || rate["Threshold"] != float64(5) {
		t.Errorf("5xx rate: %s %v", expr, rate["Threshold"])
	}
	conflicts := tpl.alarm(t, "longrun-dev-TransactionConflicts")
	_, series := queries(conflicts)
	if conflicts["Threshold"] != float64(10) || !strings.HasPrefix(series["c0"], "team/longrun TransactionConflicts ") {
		t.Errorf("conflicts: %v %v", conflicts["Threshold"], series)
	}
	lag := tpl.alarm(t, "longrun-dev-TypeNotifyMailDispatchLag")
	if lag["Threshold"] != float64(120000) || lag["Namespace"] != "team/longrun" || dimsOf(lag["Dimensions"]) != "Service=longrun-dispatcher,Stage=dev,Type=notify.mail" {
		t.Errorf("dispatch lag: %v", lag)
	}
	for _, f := range longrunFunctions {
		_, props := tpl.function(t, "longrun-dev-"+f)
		if env := envOf(props); env["LONGRUN_METRICS_NAMESPACE"] != "team/longrun" || env["LONGRUN_METRICS_DIMENSIONS"] != "Stage=dev" {
			t.Errorf("%s: %v", f, env)
		}
	}
	_, lines := tpl.dashboard(t)
	for _, m := range lines {
		if m.namespace == "longrun" || m.expression != "" && !strings.Contains(m.expression, `{"team/longrun",`) {
			t.Errorf("%s: %s in %q %s", m.widget, m.name, m.namespace, m.expression)
		}
	}
}

// collectorLayer is the ADOT collector layer's ARN in the template for the layer arch.
func collectorLayer(arch string) string {
	return "arn:aws:lambda:${AWS::Region}:901920570463:layer:aws-otel-collector-" + arch + "-ver-0-117-0:1"
}

// tracingOf is what a function's template says of tracing: its mode, its layers, the
// tracing variables and whether its role may send to X-Ray.
func (tpl *template) tracingOf(t *testing.T, fname string) (mode string, layers []string, env map[string]any, xray bool) {
	t.Helper()
	_, props := tpl.function(t, fname)
	if tc, ok := props["TracingConfig"].(map[string]any); ok {
		mode, _ = tc["Mode"].(string)
	}
	ls, _ := props["Layers"].([]any)
	for _, l := range ls {
		layers = append(layers, cfntest.Render(l))
	}
	env = map[string]any{}
	for k, v := range envOf(props) {
		if k == "LONGRUN_TRACING" || strings.HasPrefix(k, "OTEL_") {
			env[k] = v
		}
	}
	for _, st := range tpl.roleStatements(roleOf(t, props, "Role")) {
		if acts := cfntest.Actions(st); slices.Contains(acts, "xray:PutTraceSegments") && slices.Contains(acts, "xray:PutTelemetryRecords") {
			xray = true
		}
	}
	return mode, layers, env, xray
}

// By default everything longrun runs is traced: its functions actively (they may send to
// X-Ray), with the ADOT collector layer for their architecture and the OTLP variables; its
// state machines and the API stage. The team's workers are left as they are.
func TestTracingIsOnByDefault(t *testing.T) {
	tpl := team(t)
	on := map[string]any{"LONGRUN_TRACING": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}
	typesLayer, _ := tpl.only(t, "AWS::Lambda::LayerVersion")
	for _, f := range longrunFunctions {
		mode, layers, env, xray := tpl.tracingOf(t, "longrun-prod-"+f)
		if mode != "Active" || !xray || !reflect.DeepEqual(env, on) || !reflect.DeepEqual(layers, []string{"${" + typesLayer + "}", collectorLayer("arm64")}) {
			t.Errorf("%s: mode %q, may send to X-Ray %v, env %v, layers %v", f, mode, xray, env, layers)
		}
	}
	for _, w := range []string{"provisioner", "mailer"} {
		_, sm := tpl.machine(t, "longrun-prod-"+w)
		if !reflect.DeepEqual(sm.Properties["TracingConfiguration"], map[string]any{"Enabled": true}) {
			t.Errorf("%s's workflow: %v", w, sm.Properties["TracingConfiguration"])
		}
	}
	_, stage := tpl.only(t, "AWS::ApiGateway::Stage")
	if stage.Properties["TracingEnabled"] != true {
		t.Errorf("stage tracing %v", stage.Properties["TracingEnabled"])
	}
	if worker := tpl.Resources[tpl.provisioner].Properties; worker["TracingConfig"] != nil {
		t.Errorf("the team's worker got %v", worker["TracingConfig"])
	}
}

// The collector follows the architecture and the prop; where ADOT publishes no layer (a
// region of another partition) the functions export nothing but Lambda still traces; off,
// nothing of it is there.
func TestTracingSettings(t *testing.T) {
	const custom = "arn:aws:lambda:eu-west-1:123456789012:layer:team-collector:7"
	on := map[string]any{"LONGRUN_TRACING": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}
	off := map[string]any{"LONGRUN_TRACING": "off"}
	for _, tc := range []struct {
		name    string
		region  string
		props   construct.Props
		mode    string
		layers  []string
		env     map[string]any
		enabled bool
	}{
		{"x86_64", "", construct.Props{Architecture: awslambda.Architecture_X86_64()}, "Active", []string{collectorLayer("amd64")}, on, true},
		{"a collector of the team's", "", construct.Props{Tracing: construct.TracingOptions{CollectorLayerArn: custom}}, "Active", []string{custom}, on, true},
		{"no ADOT layer in the region", "cn-north-1", construct.Props{}, "Active", nil, off, true},
		{"a known region", "eu-west-1", construct.Props{}, "Active", []string{strings.Replace(collectorLayer("arm64"), "${AWS::Region}", "eu-west-1", 1)}, on, true},
		{"disabled", "", construct.Props{Tracing: construct.TracingOptions{Disabled: true}}, "", nil, off, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(t)
			if tc.region != "" {
				dir := t.TempDir()
				cdk := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(dir)})
				env := &awscdk.Environment{Region: jsii.String(tc.region), Account: jsii.String("123456789012")}
				a = &app{cdk: cdk, stack: awscdk.NewStack(cdk, jsii.String("Team"), &awscdk.StackProps{Env: env}), dir: dir}
			}
			props := tc.props
			props.Stage, props.CodeDir = "dev", codeDir()
			props.Workers = map[string]awslambda.IFunction{"export-orders": a.pythonWorker("ExportOrders", time.Minute)}
			construct.New(a.stack, "Longrun", &props)
			tpl := a.template(t)
			for _, f := range longrunFunctions {
				mode, layers, env, xray := tpl.tracingOf(t, "longrun-dev-"+f)
				if mode != tc.mode || xray != (tc.mode == "Active") || !reflect.DeepEqual(env, tc.env) || !reflect.DeepEqual(layers, tc.layers) {
					t.Errorf("%s: mode %q, X-Ray %v, env %v, layers %v; want %q, %v, %v", f, mode, xray, env, layers, tc.mode, tc.env, tc.layers)
				}
			}
			_, sm := tpl.machine(t, "longrun-dev-export-orders")
			enabled := reflect.DeepEqual(sm.Properties["TracingConfiguration"], map[string]any{"Enabled": true})
			_, stage := tpl.only(t, "AWS::ApiGateway::Stage")
			if enabled != tc.enabled || (stage.Properties["TracingEnabled"] == true) != tc.enabled {
				t.Errorf("workflow tracing %v, stage %v, want %v", sm.Properties["TracingConfiguration"], stage.Properties["TracingEnabled"], tc.enabled)
			}
			// Callback requests are never traced: API Gateway's segment records the URL,
			// token included.
			rules := tpl.of("AWS::XRay::SamplingRule")
			if tc.enabled {
				_, rule := tpl.only(t, "AWS::XRay::SamplingRule")
				r, _ := rule.Properties["SamplingRule"].(map[string]any)
				if r["URLPath"] != "*/v1/callbacks/*" || r["FixedRate"] != 0.0 || r["ReservoirSize"] != 0.0 ||
					r["ServiceType"] != "AWS::ApiGateway::Stage" || !strings.Contains(fmt.Sprint(r["ResourceARN"]), "/stages/dev") {
					t.Errorf("the callbacks' sampling rule: %v", r)
				}
			} else if len(rules) != 0 {
				t.Errorf("a sampling rule with tracing off: %v", rules)
			}
			if !tc.enabled {
				for id, p := range tpl.of("AWS::IAM::Policy") {
					if strings.Contains(fmt.Sprint(p.Properties["PolicyDocument"]), "xray:") {
						t.Errorf("%s may use X-Ray with tracing off", id)
					}
				}
			}
		})
	}
}
