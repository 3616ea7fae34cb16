package construct

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/internal/aws/cdkid"
	"github.com/longrun-dev/longrun/internal/aws/emf"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

// stageDimension is the dimension every longrun function adds to its metrics
// (LONGRUN_METRICS_DIMENSIONS=Stage=<Stage>), so stages sharing an account and namespace
// keep their metrics apart.
const stageDimension = "Stage"

// metricPeriod is the period of every widget and alarm.
const metricPeriod = 5

// metrics names longrun's EMF metrics as CloudWatch stores them. internal/aws/emf writes one
// dimension set per line: Service (the function), the deployment's
// LONGRUN_METRICS_DIMENSIONS (Stage) and the metric's own; a CloudWatch metric is its
// namespace, name and exact dimension set, so every widget and alarm names all of them.
type metrics struct {
	namespace string
	stage     string
}

func newMetrics(p *Props) metrics {
	ns := p.MetricsNamespace
	if ns == "" {
		ns = emf.DefaultNamespace
	}
	return metrics{namespace: ns, stage: p.Stage}
}

// dimensionsEnv is LONGRUN_METRICS_DIMENSIONS.
func (m metrics) dimensionsEnv() string { return stageDimension + "=" + m.stage }

// serviceDimension is the Service dimension of function fn's metrics: the name it logs as
// (functions/<fn>/main.go: config.MustFunction("longrun-<fn>")).
func serviceDimension(fn string) string { return "longrun-" + fn }

// metric is the metric name that function fn emits with its own dimensions (name, value
// pairs), read with stat.
func (m metrics) metric(fn, name, stat, label string, own ...string) awscloudwatch.Metric {
	dims := map[string]*string{"Service": jsii.String(serviceDimension(fn)), stageDimension: jsii.String(m.stage)}
	for i := 0; i+1 < len(own); i += 2 {
		dims[own[i]] = jsii.String(own[i+1])
	}
	props := &awscloudwatch.MetricProps{
		Namespace: jsii.String(m.namespace), MetricName: jsii.String(name), DimensionsMap: &dims,
		Statistic: jsii.String(stat), Period: awscdk.Duration_Minutes(jsii.Number(metricPeriod)),
	}
	if label != "" {
		props.Label = jsii.String(label)
	}
	return awscloudwatch.NewMetric(props)
}

// search is every series of the metric name with the dimensions Service, Stage (this
// stage's) and own, for a graph where the own dimensions' values are open-ended (alarms
// cannot use SEARCH). where narrows it (`Service="longrun-reconciler"`, say).
func (m metrics) search(name, stat, where string, own ...string) awscloudwatch.MathExpression {
	names := append([]string{"Service", stageDimension}, own...)
	sort.Strings(names)
	query := fmt.Sprintf(`{%q,%s} MetricName=%q %s=%q`, m.namespace, strings.Join(names, ","), name, stageDimension, m.stage)
	if where != "" {
		query += " " + where
	}
	label := "${PROP('Dim.Service')}"
	for _, d := range own {
		label += " ${PROP('Dim." + d + "')}"
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("SEARCH('%s', '%s', %d)", query, stat, metricPeriod*60)),
		Label:      jsii.String(label),
		Period:     awscdk.Duration_Minutes(jsii.Number(metricPeriod)),
	})
}

// The values of the metrics' own dimensions that are known at synthesis
// (docs/observability.md, "Metrics").
var (
	// admissionOutcomes are the Outcome values of Admissions.
	admissionOutcomes = []string{httpapi.OutcomeCreated, httpapi.OutcomeReplayed, httpapi.OutcomeKeyReused, httpapi.OutcomeTargetBusy,
		httpapi.OutcomeQuotaExceeded, httpapi.OutcomeInvalid, httpapi.OutcomeUnavailable, httpapi.OutcomeInternal}
	// operationOutcomes are the Outcome values of OperationLatency and StepsRun.
	operationOutcomes = []string{"succeeded", "failed", "canceled", "outcome_unknown"}
	// repairActions are the Action values of Repairs: deferred is an operation a run left due
	// because a call it needed was throttled or its budget ran out.
	repairActions = []string{"dispatched", "recorded", "stopped", "continued", "rescheduled", "deferred", "error"}
)

// conflictSources are the functions and calls whose transactions DynamoDB may cancel for a
// conflict (internal/aws/dynamo: admit is the API's admission; append every fact writer's:
// cancel and resolve on the API, dispatched, the recorder's, the reconciler's). The
// notifier writes nothing.
var conflictSources = [][2]string{{"api", "admit"}, {"api", "append"}, {"dispatcher", "append"}, {"recorder", "append"}, {"reconciler", "append"}}

// conflicts is the TransactionConflicts series, one per function and call.
func (m metrics) conflicts() []awscloudwatch.Metric {
	var out []awscloudwatch.Metric
	for _, s := range conflictSources {
		out = append(out, m.metric(s[0], "TransactionConflicts", "Sum", s[0]+" "+s[1], "Call", s[1]))
	}
	return out
}

// typeIDs are construct ids for the types' per-type resources (alarms): the type's name
// in title case, with a number added where two names would give the same id.
func typeIDs(reg *optype.Registry) map[string]string {
	out := map[string]string{}
	taken := map[string]bool{}
	for _, name := range typeNames(reg) {
		id := cdkid.Title(name)
		for n := 2; taken[id]; n++ {
			id = fmt.Sprintf("%s%d", cdkid.Title(name), n)
		}
		taken[id] = true
		out[name] = id
	}
	return out
}

// typeNames are the registry's type names, sorted.
func typeNames(reg *optype.Registry) []string {
	var out []string
	for _, t := range reg.Types() {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}
