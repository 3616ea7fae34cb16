package step_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/longrun-dev/longrun/internal/core/runes"
	"github.com/longrun-dev/longrun/internal/core/step"
	"github.com/longrun-dev/longrun/internal/testkit/workerschema"
)

// The protocol's files, relative to this package.
var (
	schemaDir = filepath.Join("..", "..", "..", "api", "worker")
	sampleDir = filepath.Join("..", "..", "..", "events", "samples", "worker")
)

// schema compiles api/worker/<name>.schema.json.
func schema(t *testing.T, name string) *jsonschema.Schema {
	return workerschema.Compile(t, schemaDir, name)
}

func validate(s *jsonschema.Schema, doc []byte) error { return workerschema.Validate(s, doc) }

func intp(n int) *int              { return &n }
func floatp(f float64) *float64    { return &f }
func raw(s string) json.RawMessage { return json.RawMessage(s) }

// reportCase is a document and what it is: valid reports with the Report ParseReport must
// read from them.
type reportCase struct {
	doc   string
	valid bool
	want  step.Report
}

// name is the case's subtest name: whether it is valid, and the start of its document
// (t.Run makes names unique).
func (c reportCase) name() string {
	kind := "invalid"
	if c.valid {
		kind = "valid"
	}
	return kind + " " + runes.Cut(c.doc, 48)
}

func ok(doc string, want step.Report) reportCase {
	return reportCase{doc: doc, valid: true, want: want}
}
func bad(doc string) reportCase { return reportCase{doc: doc} }

func reportCases() []reportCase {
	str := func(n int, r string) string { return strings.Repeat(r, n) }
	cont := func(r step.Report) step.Report { r.Status = step.Continue; return r }
	problem := func(code, title, detail string) *step.Problem {
		return &step.Problem{Code: code, Title: title, Detail: detail}
	}
	return []reportCase{
		// continue
		ok(`{"status":"continue"}`, step.Report{Status: step.Continue}),
		ok(`{"status":"continue","state":null}`, step.Report{Status: step.Continue}), // null is no state
		ok(`{"status":"continue","state":[1,"two",{"three":3}],"wait":true,"delaySeconds":0}`,
			cont(step.Report{State: raw(`[1,"two",{"three":3}]`), Wait: true, DelaySeconds: intp(0)})),
		ok(`{"status":"continue","state": { "a" : [ 1, 2 ] ,
			"b" : "x y" } }`, cont(step.Report{State: raw(`{"a":[1,2],"b":"x y"}`)})),
		ok(`{"status":"continue","state":"cursor"}`, cont(step.Report{State: raw(`"cursor"`)})),
		ok(`{"status":"continue","state":false}`, cont(step.Report{State: raw(`false`)})),
		ok(`{"status":"continue","state":0}`, cont(step.Report{State: raw(`0`)})),
		ok(`{"status":"continue","delaySeconds":86400}`, cont(step.Report{DelaySeconds: intp(86400)})),
		ok(`{"status":"continue","delaySeconds":30.0}`, cont(step.Report{DelaySeconds: intp(30)})),
		ok(`{"status":"continue","delaySeconds":3e1}`, cont(step.Report{DelaySeconds: intp(30)})),
		ok(`{"status":"continue","delaySeconds":300E-1}`, cont(step.Report{DelaySeconds: intp(30)})),
		ok(`{"status":"continue","delaySeconds":8.64e+4}`, cont(step.Report{DelaySeconds: intp(86400)})),
		ok(`{"status":"continue","delaySeconds":86400.000}`, cont(step.Report{DelaySeconds: intp(86400)})),
		ok(`{"status":"continue","delaySeconds":-0}`, cont(step.Report{DelaySeconds: intp(0)})),
		ok(`{"status":"continue","wait":false}`, step.Report{Status: step.Continue}),
		ok(`{"status":"continue","delaySeconds":420,"wait":true}`, cont(step.Report{DelaySeconds: intp(420), Wait: true})),
		ok(`{"status":"continue","progress":{"totalSteps":1,"percent":0,"message":"`+str(200, "é")+`"}}`,
			cont(step.Report{Progress: &step.Progress{TotalSteps: 1, Percent: floatp(0), Message: str(200, "é")}})),
		ok(`{"status":"continue","progress":{"message":"`+str(200, `\ud83d\ude00`)+`"}}`, // 200 characters, 400 UTF-16 units
			cont(step.Report{Progress: &step.Progress{Message: str(200, "😀")}})),
		ok(`{"status":"continue","progress":{"totalSteps":2.0,"percent":100.0}}`,
			cont(step.Report{Progress: &step.Progress{TotalSteps: 2, Percent: floatp(100)}})),
		ok(`{"status":"continue","progress":{"totalSteps":0.5e1,"percent":33.5,"message":""}}`,
			cont(step.Report{Progress: &step.Progress{TotalSteps: 5, Percent: floatp(33.5)}})),
		ok(`{"status":"continue","progress":{"percent":-0.0}}`, cont(step.Report{Progress: &step.Progress{Percent: floatp(0)}})),
		ok(`{"status":"continue","progress":{"percent":1e-400}}`, cont(step.Report{Progress: &step.Progress{Percent: floatp(0)}})),
		ok(`{"status":"continue","progress":{"totalSteps":1e400}}`, cont(step.Report{Progress: &step.Progress{TotalSteps: math.MaxInt}})),
		ok(`{"status":"continue","progress":{}}`, cont(step.Report{Progress: &step.Progress{}})),
		ok(`{"st\u0061tus":"contin\u0075e"}`, step.Report{Status: step.Continue}),
		// continue, waiting for a signal
		ok(`{"status":"continue","await":{"signal":"approval","timeoutSeconds":259200}}`,
			cont(step.Report{Await: &step.Await{Signal: "approval", TimeoutSeconds: 259200}})),
		ok(`{"status":"continue","state":{"n":1},"await":{"timeoutSeconds":1,"signal":"a"},"progress":{"message":"Waiting for an approval."}}`,
			cont(step.Report{State: raw(`{"n":1}`), Await: &step.Await{Signal: "a", TimeoutSeconds: 1},
				Progress: &step.Progress{Message: "Waiting for an approval."}})),
		ok(`{"status":"continue","await":{"signal":"a`+str(63, "-")+`","timeoutSeconds":2592000}}`,
			cont(step.Report{Await: &step.Await{Signal: "a" + str(63, "-"), TimeoutSeconds: 2592000}})),
		ok(`{"status":"continue","await":{"signal":"payment_settled-2","timeoutSeconds":2.592e6}}`,
			cont(step.Report{Await: &step.Await{Signal: "payment_settled-2", TimeoutSeconds: 2592000}})),
		ok(`{"status":"continue","await":{"signal":"a","timeoutSeconds":60.0},"wait":false}`, // wait false asks for no wait
			cont(step.Report{Await: &step.Await{Signal: "a", TimeoutSeconds: 60}})),
		ok(" \r\n\t{\"status\":\"continue\"} \n", step.Report{Status: step.Continue}),
		// succeeded
		ok(`{"status":"succeeded"}`, step.Report{Status: step.Succeeded}),
		ok(`{"status":"succeeded","result":{},"progress":{"percent":100}}`,
			step.Report{Status: step.Succeeded, Result: raw(`{}`), Progress: &step.Progress{Percent: floatp(100)}}),
		ok(`{"status":"succeeded","result": { "rows" : 3, "ids": [ "a" ] } }`,
			step.Report{Status: step.Succeeded, Result: raw(`{"rows":3,"ids":["a"]}`)}),
		ok(`{"status":"succeeded","result":null,"result":{"a":1}}`, // the last of duplicate members counts
			step.Report{Status: step.Succeeded, Result: raw(`{"a":1}`)}),
		// failed
		ok(`{"status":"failed","problem":{"code":"a","title":"t"}}`, step.Report{Status: step.Failed, Problem: problem("a", "t", "")}),
		ok(`{"status":"failed","problem":{"code":"a`+str(63, "_")+`","title":"`+str(200, "t")+`","detail":"`+str(2000, "d")+`"}}`,
			step.Report{Status: step.Failed, Problem: problem("a"+str(63, "_"), str(200, "t"), str(2000, "d"))}),
		ok(`{"status":"failed","problem":{"code":"quota_exhausted2","title":"`+str(200, "é")+`","detail":""},"progress":{"message":"m"}}`,
			step.Report{Status: step.Failed, Problem: problem("quota_exhausted2", str(200, "é"), ""), Progress: &step.Progress{Message: "m"}}),
		// outcome_unknown
		ok(`{"status":"outcome_unknown"}`, step.Report{Status: step.OutcomeUnknown}),
		ok(`{"status":"outcome_unknown","problem":{"code":"result_lost","title":"t"},"progress":{}}`,
			step.Report{Status: step.OutcomeUnknown, Problem: problem("result_lost", "t", ""), Progress: &step.Progress{}}),
		ok(`{"status":"failed","status":"outcome_unknown"}`, step.Report{Status: step.OutcomeUnknown}),

		// not a report at all
		bad(``), bad(`null`), bad(`[]`), bad(`"continue"`), bad(`{}`), bad(`1`),
		bad(`{"status":"continue"} x`),
		bad(`{"status":"continue"}}`),
		bad(`{"status":"continue"}{"status":"continue"}`),
		bad(`{"status":"continue",}`),
		bad("\v{\"status\":\"continue\"}"),
		// status
		bad(`{"status":"done"}`),
		bad(`{"status":null}`),
		bad(`{"status":1}`),
		bad(`{"status":"Continue"}`),
		bad(`{"status":"succeeded ","result":{}}`),
		// member names are exact, at every level
		bad(`{"Status":"continue"}`),
		bad(`{"status":"continue","Status":"continue"}`),
		bad(`{"status":"continue","State":{}}`),
		bad(`{"status":"continue","delayseconds":1}`),
		bad(`{"status":"continue","WAIT":true}`),
		bad(`{"status":"succeeded","Result":{}}`),
		bad(`{"status":"continue","extra":1}`),
		bad(`{"status":"continue","progress":{"TotalSteps":2}}`),
		bad(`{"status":"continue","progress":{"Percent":2}}`),
		bad(`{"status":"continue","progress":{"Message":"m"}}`),
		bad(`{"status":"continue","progress":{"completedSteps":2}}`),
		bad(`{"status":"continue","Await":{"signal":"a","timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"Signal":"a","timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutseconds":1}}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":1,"data":{}}}`),
		bad(`{"status":"failed","problem":{"Code":"a","title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"a","Title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"t","Detail":"d"}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"t","type":"about:blank"}}`),
		// members a status does not allow, whatever their value
		bad(`{"status":"continue","result":{}}`),
		bad(`{"status":"continue","result":null}`),
		bad(`{"status":"continue","problem":{"code":"a","title":"t"}}`),
		bad(`{"status":"continue","problem":null}`),
		bad(`{"status":"succeeded","state":{}}`),
		bad(`{"status":"succeeded","state":null}`),
		bad(`{"status":"succeeded","wait":false}`),
		bad(`{"status":"succeeded","wait":true}`),
		bad(`{"status":"succeeded","delaySeconds":0}`),
		bad(`{"status":"succeeded","problem":{"code":"a","title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"t"},"state":{}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"t"},"result":{}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"t"},"wait":false}`),
		bad(`{"status":"outcome_unknown","problem":{"code":"a","title":"t"},"result":{}}`),
		bad(`{"status":"outcome_unknown","wait":true}`),
		bad(`{"status":"outcome_unknown","state":null}`),
		bad(`{"status":"outcome_unknown","delaySeconds":1}`),
		bad(`{"status":"succeeded","await":{"signal":"a","timeoutSeconds":1}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"t"},"await":{"signal":"a","timeoutSeconds":1}}`),
		bad(`{"status":"outcome_unknown","await":null}`),
		// null is not a value of a typed member
		bad(`{"status":"continue","delaySeconds":null}`),
		bad(`{"status":"continue","wait":null}`),
		bad(`{"status":"continue","progress":null}`),
		bad(`{"status":"succeeded","result":null}`),
		bad(`{"status":"failed","problem":null}`),
		bad(`{"status":"outcome_unknown","problem":null}`),
		bad(`{"status":"failed","problem":{"code":null,"title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":null}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"t","detail":null}}`),
		bad(`{"status":"continue","progress":{"totalSteps":null}}`),
		bad(`{"status":"continue","progress":{"percent":null}}`),
		bad(`{"status":"continue","progress":{"message":null}}`),
		bad(`{"status":"continue","await":null}`),
		bad(`{"status":"continue","await":{"signal":null,"timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":null}}`),
		// delaySeconds
		bad(`{"status":"continue","delaySeconds":86401}`),
		bad(`{"status":"continue","delaySeconds":-1}`),
		bad(`{"status":"continue","delaySeconds":1.5}`),
		bad(`{"status":"continue","delaySeconds":86400.5}`),
		bad(`{"status":"continue","delaySeconds":86400.0000000000001}`), // 86400 as a float64
		bad(`{"status":"continue","delaySeconds":1e400}`),
		bad(`{"status":"continue","delaySeconds":"30"}`),
		bad(`{"status":"continue","delaySeconds":true}`),
		// wait
		bad(`{"status":"continue","wait":"yes"}`),
		bad(`{"status":"continue","wait":1}`),
		// await: a signal and a timeout, and never with a wait for a time
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":1},"wait":true}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":1},"delaySeconds":0}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":1},"delaySeconds":30,"wait":true}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":0}}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":-1}}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":2592001}}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":2592000.5}}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":1.5}}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":1e400}}`),
		bad(`{"status":"continue","await":{"signal":"a","timeoutSeconds":"60"}}`),
		bad(`{"status":"continue","await":{"signal":"Approval","timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"signal":"1a","timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"signal":"-a","timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"signal":"","timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"signal":"a.b","timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"signal":"a\n","timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"signal":"a` + str(64, "b") + `","timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"signal":7,"timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{"signal":"a"}}`),
		bad(`{"status":"continue","await":{"timeoutSeconds":1}}`),
		bad(`{"status":"continue","await":{}}`),
		bad(`{"status":"continue","await":"approval"}`),
		bad(`{"status":"continue","await":["approval",60]}`),
		// result
		bad(`{"status":"succeeded","result":[]}`),
		bad(`{"status":"succeeded","result":"ok"}`),
		bad(`{"status":"succeeded","result":1}`),
		// problem
		bad(`{"status":"failed"}`),
		bad(`{"status":"failed","progress":{}}`),
		bad(`{"status":"failed","problem":"quota"}`),
		bad(`{"status":"failed","problem":[]}`),
		bad(`{"status":"failed","problem":{"code":"Quota","title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"_a","title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"1a","title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"a-b","title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"","title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"a\n","title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"a` + str(64, "b") + `","title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":1,"title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"a"}}`),
		bad(`{"status":"failed","problem":{"title":"t"}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":""}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"` + str(201, "t") + `"}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"` + str(201, "😀") + `"}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"t","detail":"` + str(2001, "d") + `"}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"t","detail":7}}`),
		bad(`{"status":"outcome_unknown","problem":{"code":"result_lost"}}`),
		bad(`{"status":"outcome_unknown","problem":{}}`),
		// progress
		bad(`{"status":"continue","progress":"half"}`),
		bad(`{"status":"continue","progress":[]}`),
		bad(`{"status":"succeeded","progress":50}`),
		bad(`{"status":"continue","progress":{"totalSteps":0}}`),
		bad(`{"status":"continue","progress":{"totalSteps":-0}}`),
		bad(`{"status":"continue","progress":{"totalSteps":-1}}`),
		bad(`{"status":"continue","progress":{"totalSteps":2.5}}`),
		bad(`{"status":"continue","progress":{"totalSteps":1e-1}}`),
		bad(`{"status":"continue","progress":{"totalSteps":"3"}}`),
		bad(`{"status":"continue","progress":{"percent":100.5}}`),
		bad(`{"status":"continue","progress":{"percent":100.00000000000000001}}`), // 100 as a float64
		bad(`{"status":"continue","progress":{"percent":-1}}`),
		bad(`{"status":"continue","progress":{"percent":-1e-400}}`), // -0 as a float64
		bad(`{"status":"continue","progress":{"percent":1e400}}`),
		bad(`{"status":"continue","progress":{"percent":"40"}}`),
		bad(`{"status":"continue","progress":{"message":"` + str(201, "é") + `"}}`),
		bad(`{"status":"continue","progress":{"message":1}}`),
		bad(`{"status":"failed","problem":{"code":"a","title":"t"},"progress":{"totalSteps":0}}`),
		bad(`{"status":"outcome_unknown","progress":{"percent":101}}`),
	}
}

// ParseReport draws the line between a report and not one where the schema does, and reads
// what a valid report says.
func TestParseReportAgreesWithTheSchema(t *testing.T) {
	s := schema(t, "step-report")
	cases := reportCases()
	if len(cases) < 60 {
		t.Fatalf("only %d documents", len(cases))
	}
	statuses := map[step.Status]int{}
	var valid, invalid int
	for _, tc := range cases {
		if tc.valid {
			valid++
			statuses[tc.want.Status]++
		} else {
			invalid++
		}
		t.Run(tc.name(), func(t *testing.T) {
			schemaErr := validate(s, []byte(tc.doc))
			rep, err := parseSafely(t, tc.doc)
			if (schemaErr == nil) != (err == nil) {
				t.Errorf("%.120q: the schema says %v, ParseReport says %v", tc.doc, schemaErr, err)
			}
			if (schemaErr == nil) != tc.valid {
				t.Errorf("%.120q: the schema says %v, want valid %v", tc.doc, schemaErr, tc.valid)
			}
			switch {
			case !tc.valid && err == nil:
				t.Errorf("%.120q: ParseReport accepts it as %+v", tc.doc, rep)
			case !tc.valid && (!errors.Is(err, step.ErrInvalidReport) || !reflect.DeepEqual(rep, step.Report{})):
				t.Errorf("%.120q: %v (not ErrInvalidReport) with %+v", tc.doc, err, rep)
			case tc.valid && err == nil && !reflect.DeepEqual(rep, tc.want):
				t.Errorf("%.120q:\n got %s\nwant %s", tc.doc, show(rep), show(tc.want))
			}
		})
	}
	for _, st := range []step.Status{step.Continue, step.Succeeded, step.Failed, step.OutcomeUnknown} {
		if statuses[st] == 0 {
			t.Errorf("no valid %s document", st)
		}
	}
	if valid < 20 || invalid < 40 {
		t.Errorf("%d valid and %d invalid documents", valid, invalid)
	}
}

// ParseReportCuttingText reads every report ParseReport reads, the same; of the documents
// ParseReport refuses, it reads only those whose one fault is text over its length limit,
// with that text cut to the limit (its first characters, the last of them "…"). A document
// with any other fault is refused as before, so the recorder's leniency is about text only.
func TestParseReportCuttingText(t *testing.T) {
	str := strings.Repeat
	cut := func(s string, limit int) string { return string([]rune(s)[:limit-1]) + "…" }
	problem := func(code, title, detail string) *step.Problem {
		return &step.Problem{Code: code, Title: title, Detail: detail}
	}
	// Of reportCases' invalid documents, those whose one fault is text length, and more.
	textOnly := map[string]step.Report{
		`{"status":"failed","problem":{"code":"a","title":"` + str("t", 201) + `"}}`: {Status: step.Failed, Problem: problem("a", cut(str("t", 201), 200), "")},
		`{"status":"failed","problem":{"code":"a","title":"` + str("😀", 201) + `"}}`: {Status: step.Failed, Problem: problem("a", cut(str("😀", 201), 200), "")},
		`{"status":"failed","problem":{"code":"a","title":"t","detail":"` + str("d", 2001) + `"}}`: {Status: step.Failed,
			Problem: problem("a", "t", cut(str("d", 2001), 2000))},
		`{"status":"continue","progress":{"message":"` + str("é", 201) + `"}}`: {Status: step.Continue, Progress: &step.Progress{Message: cut(str("é", 201), 200)}},
		// every text at once, and the other members kept
		`{"status":"outcome_unknown","problem":{"code":"conn_reset","title":"` + str("t", 300) + `","detail":"` + str(`\ud83d\ude00`, 2500) + `"},` +
			`"progress":{"totalSteps":4,"percent":50,"message":"` + str("m", 1000) + `"}}`: {Status: step.OutcomeUnknown,
			Problem:  problem("conn_reset", cut(str("t", 300), 200), cut(str("😀", 2500), 2000)),
			Progress: &step.Progress{TotalSteps: 4, Percent: floatp(50), Message: cut(str("m", 1000), 200)}},
		`{"status":"succeeded","result":{"a":1},"progress":{"message":"` + str("m", 201) + `"}}`: {Status: step.Succeeded,
			Result: raw(`{"a":1}`), Progress: &step.Progress{Message: cut(str("m", 201), 200)}},
	}
	cases := reportCases()
	for doc := range textOnly {
		cases = append(cases, bad(doc))
	}
	// Text over its limit and another fault.
	for _, doc := range []string{
		`{"status":"failed","problem":{"code":"Quota","title":"t","detail":"` + str("d", 2001) + `"}}`,
		`{"status":"failed","problem":{"code":"a","title":"","detail":"` + str("d", 2001) + `"}}`,
		`{"status":"failed","problem":{"code":"a","detail":"` + str("d", 2001) + `"}}`,
		`{"status":"failed","problem":{"code":"a","title":"` + str("t", 201) + `","Detail":"d"}}`,
		`{"status":"failed","problem":{"code":"a","title":"t","detail":"` + str("d", 2001) + `"},"result":{}}`,
		`{"status":"continue","progress":{"message":"` + str("m", 201) + `","percent":101}}`,
		`{"status":"continue","progress":{"message":"` + str("m", 201) + `"},"delaySeconds":86401}`,
		`{"status":"continue","progress":{"message":"` + str("m", 201) + `"},"state":"` + str("x", step.MaxStateBytes) + `"}`,
		`{"status":"succeeded","progress":{"message":"` + str("m", 201) + `"},"result":[]}`,
		`{"status":"failed","progress":{"message":"` + str("m", 201) + `"}}`,
	} {
		cases = append(cases, bad(doc))
	}
	read := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name(), func(t *testing.T) {
			strict, strictErr := step.ParseReport([]byte(tc.doc))
			got, err := step.ParseReportCuttingText([]byte(tc.doc))
			want, isTextOnly := textOnly[tc.doc]
			switch {
			case strictErr == nil:
				if err != nil || !reflect.DeepEqual(got, strict) {
					t.Errorf("%.120q: read as %s, %v; ParseReport reads %s", tc.doc, show(got), err, show(strict))
				}
			case isTextOnly:
				read[tc.doc] = true
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("%.120q:\n got %.300s %v\nwant %.300s", tc.doc, show(got), err, show(want))
				}
			default:
				if !errors.Is(err, step.ErrInvalidReport) || !reflect.DeepEqual(got, step.Report{}) {
					t.Errorf("%.120q: read as %s, %v; ParseReport refuses it: %v", tc.doc, show(got), err, strictErr)
				}
			}
		})
	}
	if len(read) != len(textOnly) {
		t.Fatalf("only %d of the %d text-only documents are refused by ParseReport", len(read), len(textOnly))
	}
}

// parseSafely calls ParseReport, turning a panic into a test failure.
func parseSafely(t *testing.T, doc string) (rep step.Report, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%.120q: ParseReport panics: %v", doc, p)
			err = errors.New("panic")
		}
	}()
	return step.ParseReport([]byte(doc))
}

func show(r step.Report) string {
	s := string(r.Status) + " state=" + string(r.State) + " result=" + string(r.Result)
	if r.DelaySeconds != nil {
		b, _ := json.Marshal(*r.DelaySeconds)
		s += " delaySeconds=" + string(b)
	}
	b, _ := json.Marshal(struct {
		W  bool
		A  *step.Await
		P  *step.Progress
		Pr *step.Problem
	}{r.Wait, r.Await, r.Progress, r.Problem})
	if r.State == nil {
		s += " (state nil)"
	}
	if r.Result == nil {
		s += " (result nil)"
	}
	return s + " " + string(b)
}

// Numbers are read exactly, whatever their size: the schema's numbers are not float64s.
// Where the schema library can read the number (it gives up on exponents beyond a million:
// it calls 1e1000001 no integer, and panics comparing 1e-1000001 with a minimum), it agrees.
func TestNumbersBeyondFloat64(t *testing.T) {
	s := schema(t, "step-report")
	for _, tc := range []struct {
		doc          string
		valid        bool
		beyondSchema bool
	}{
		{`{"status":"continue","progress":{"totalSteps":1e1000000000000000000000}}`, true, true},
		{`{"status":"continue","progress":{"totalSteps":1e-1000000000000000000000}}`, false, true},
		{`{"status":"continue","progress":{"percent":1e-1000000000000000000000}}`, true, true},
		{`{"status":"continue","delaySeconds":1e-1000000000000000000000}`, false, true},
		{`{"status":"continue","progress":{"totalSteps":10000000000000000000000000000.5}}`, false, false},
		{`{"status":"continue","progress":{"totalSteps":1e999999}}`, true, false},
		{`{"status":"continue","progress":{"totalSteps":9223372036854775807}}`, true, false},
		{`{"status":"continue","progress":{"totalSteps":9223372036854775808}}`, true, false},
		{`{"status":"continue","progress":{"percent":99.99999999999999999999999999999}}`, true, false},
		{`{"status":"continue","progress":{"percent":1e-999999}}`, true, false},
		{`{"status":"continue","progress":{"percent":0.000000000000000000000000000000001e35}}`, true, false}, // 100
		{`{"status":"continue","progress":{"percent":0.000000000000000000000000000000001000001e35}}`, false, false},
		{`{"status":"continue","delaySeconds":86399.99999999999999999999}`, false, false},
		{`{"status":"continue","delaySeconds":0.0000000000000000000000000000864e33}`, true, false}, // 86400
		{`{"status":"continue","delaySeconds":0.0000000000000000000000000000864000000001e33}`, false, false},
	} {
		_, err := parseSafely(t, tc.doc)
		if (err == nil) != tc.valid {
			t.Errorf("%s: want valid %v, got %v", tc.doc, tc.valid, err)
		}
		if tc.beyondSchema {
			continue
		}
		if schemaErr := validate(s, []byte(tc.doc)); (schemaErr == nil) != tc.valid {
			t.Errorf("%s: want valid %v, the schema says %v", tc.doc, tc.valid, schemaErr)
		}
	}
	rep, err := step.ParseReport([]byte(`{"status":"continue","progress":{"totalSteps":9223372036854775807}}`))
	if err != nil || rep.Progress.TotalSteps != math.MaxInt {
		t.Errorf("%+v %v", rep.Progress, err)
	}
	rep, err = step.ParseReport([]byte(`{"status":"continue","progress":{"totalSteps":123456789012345678e1}}`))
	if err != nil || rep.Progress.TotalSteps != 1234567890123456780 {
		t.Errorf("%+v %v", rep.Progress, err)
	}
}

// The size limits are beyond the schema (it accepts every one of these documents):
// ParseReport holds them, measured as compact JSON.
func TestSizeLimits(t *testing.T) {
	s := schema(t, "step-report")
	text := func(n int) string { return `"` + strings.Repeat("x", n-2) + `"` } // n bytes of JSON
	for _, tc := range []struct {
		doc  string
		ok   bool
		size int // of the state or result read
	}{
		{`{"status":"continue","state":` + text(step.MaxStateBytes) + `}`, true, step.MaxStateBytes},
		{`{"status":"continue","state":` + text(step.MaxStateBytes+1) + `}`, false, 0},
		// Whitespace is not counted: the state is measured, and read, as compact JSON.
		{`{"status":"continue","state":[ ` + text(step.MaxStateBytes-2) + ` ]}`, true, step.MaxStateBytes},
		{`{"status":"continue","state":[ ` + text(step.MaxStateBytes-1) + ` ]}`, false, 0},
		{"{\"status\":\"continue\",\"state\":{\n\t\"a\" : " + text(step.MaxStateBytes-6) + "\n}}", true, step.MaxStateBytes},
		{`{"status":"succeeded","result":{"a":` + text(step.MaxResultBytes-6) + `}}`, true, step.MaxResultBytes},
		{`{"status":"succeeded","result":{"a":` + text(step.MaxResultBytes-5) + `}}`, false, 0},
		{`{"status":"succeeded","result": { "a" : ` + text(step.MaxResultBytes-6) + ` } }`, true, step.MaxResultBytes},
		{`{"status":"succeeded","result": { "a" : ` + text(step.MaxResultBytes-5) + ` } }`, false, 0},
	} {
		if err := validate(s, []byte(tc.doc)); err != nil {
			t.Errorf("schema rejects a %d-byte report: %v", len(tc.doc), err)
		}
		rep, err := step.ParseReport([]byte(tc.doc))
		if (err == nil) != tc.ok {
			t.Errorf("%d-byte report: want ok %v, got %v", len(tc.doc), tc.ok, err)
			continue
		}
		if err != nil {
			if !errors.Is(err, step.ErrInvalidReport) {
				t.Errorf("%v is not ErrInvalidReport", err)
			}
			continue
		}
		if got := len(rep.State) + len(rep.Result); got != tc.size {
			t.Errorf("%d-byte report: read %d bytes, want %d", len(tc.doc), got, tc.size)
		}
	}
}

// The protocol's samples are what longrun reads and sends: each report is valid under the
// schema and to ParseReport, each request under the schema and strictly in step.Request.
func TestSamples(t *testing.T) {
	reqSchema, repSchema := schema(t, "step-request"), schema(t, "step-report")
	paths, err := filepath.Glob(filepath.Join(sampleDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[step.Status]bool{}
	var requests int
	for _, path := range paths {
		name := filepath.Base(path)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.Contains(name, "report"):
			if err := validate(repSchema, b); err != nil {
				t.Errorf("%s: the schema says %v", name, err)
			}
			rep, err := step.ParseReport(b)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			statuses[rep.Status] = true
			if want := "step-report-" + strings.ReplaceAll(string(rep.Status), "_", "-") + ".json"; name != want {
				t.Errorf("%s holds a %s report", name, rep.Status)
			}
			if rep.Status == step.Continue && (len(rep.State) == 0 || bytes.ContainsAny(rep.State, " \n")) {
				t.Errorf("%s: state %q, want it compact", name, rep.State)
			}
		case strings.Contains(name, "request"):
			requests++
			if err := validate(reqSchema, b); err != nil {
				t.Errorf("%s: the schema says %v", name, err)
			}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			var req step.Request
			if err := dec.Decode(&req); err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if _, err := dec.Token(); err != io.EOF {
				t.Errorf("%s: more than one JSON value (%v)", name, err)
			}
			if req.Protocol != step.Protocol || req.OperationID == "" || req.Step < 1 || req.MaxSteps < req.Step ||
				len(req.Input) == 0 || req.Deadline == "" || req.StepTimeoutSeconds < 1 {
				t.Errorf("%s: %+v", name, req)
			}
			// What longrun sends is the same JSON as the sample.
			again, err := json.Marshal(req)
			if err != nil || !sameJSON(t, b, again) {
				t.Errorf("%s does not round-trip: %s %v", name, again, err)
			}
		}
	}
	for _, st := range []step.Status{step.Continue, step.Succeeded, step.Failed, step.OutcomeUnknown} {
		if !statuses[st] {
			t.Errorf("no sample report of status %s", st)
		}
	}
	if requests < 2 {
		t.Errorf("%d request samples", requests)
	}
}

func sameJSON(t *testing.T, a, b []byte) bool { return workerschema.SameJSON(t, a, b) }

// A request that gives a step signals, what its wait came to and the type's callback URLs
// is valid under the request schema as step.Request writes it; the schema holds those
// members to their shapes.
func TestRequestWithSignals(t *testing.T) {
	s := schema(t, "step-request")
	req := step.Request{
		Protocol: step.Protocol, OperationID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", Type: "deploy.service", Version: 1,
		Input: raw(`{"service":"billing"}`), Step: 2, MaxSteps: 10, State: raw(`{"ticket":"CHG-1"}`),
		Deadline: "2026-12-08T12:00:00.000Z", StepTimeoutSeconds: 60,
		Signals: []step.Signal{
			{Name: "comment", Data: raw(`{"text":"looks fine"}`), ReceivedAt: "2026-12-02T14:01:00.000Z", Sender: "arn:aws:iam::123456789012:user/bob", Via: "api"},
			{Name: "approval", Data: raw(`{"approved":true}`), ReceivedAt: "2026-12-02T14:05:16.000Z", Sender: "arn:aws:iam::123456789012:user/alice", Via: "api"},
			{Name: "payment-settled", Data: raw(`{}`), ReceivedAt: "2026-12-02T14:05:17.250Z", Via: "callback"},
		},
		Awaited:   &step.Awaited{Signal: "approval"},
		Callbacks: map[string]string{"payment-settled": "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d"},
	}
	doc, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(s, doc); err != nil {
		t.Fatalf("the schema refuses %s: %v", doc, err)
	}
	if !strings.Contains(string(doc), `"awaited":{"signal":"approval","timedOut":false}`) {
		t.Fatalf("awaited must say timedOut, also when false: %s", doc)
	}
	// Without signals, awaited and callbacks, none of the members is sent.
	plain, _ := json.Marshal(step.Request{Signals: []step.Signal{}, Callbacks: map[string]string{}})
	for _, m := range []string{"signals", "awaited", "callbacks"} {
		if strings.Contains(string(plain), `"`+m+`"`) {
			t.Errorf("%s is sent empty: %s", m, plain)
		}
	}
	for name, edit := range map[string]func(m map[string]any){
		"no signals":                 func(m map[string]any) { m["signals"] = []any{} },
		"a signal without data":      func(m map[string]any) { delete(signal(m, 0), "data") },
		"data that is no object":     func(m map[string]any) { signal(m, 0)["data"] = []any{} },
		"a signal without a name":    func(m map[string]any) { delete(signal(m, 0), "name") },
		"a bad signal name":          func(m map[string]any) { signal(m, 0)["name"] = "Approval" },
		"receivedAt not in UTC":      func(m map[string]any) { signal(m, 0)["receivedAt"] = "2026-12-02T15:05:16.000+01:00" },
		"receivedAt in seconds":      func(m map[string]any) { signal(m, 0)["receivedAt"] = "2026-12-02T14:05:16Z" },
		"no via":                     func(m map[string]any) { delete(signal(m, 0), "via") },
		"another via":                func(m map[string]any) { signal(m, 0)["via"] = "email" },
		"a callback with a sender":   func(m map[string]any) { signal(m, 2)["sender"] = "someone" },
		"an empty sender":            func(m map[string]any) { signal(m, 0)["sender"] = "" },
		"an unknown signal member":   func(m map[string]any) { signal(m, 0)["key"] = "k1" },
		"awaited without timedOut":   func(m map[string]any) { delete(m["awaited"].(map[string]any), "timedOut") },
		"awaited without its signal": func(m map[string]any) { delete(m["awaited"].(map[string]any), "signal") },
		"an unknown awaited member":  func(m map[string]any) { m["awaited"].(map[string]any)["at"] = "2026-12-02T14:05:16.000Z" },
		"no callbacks":               func(m map[string]any) { m["callbacks"] = map[string]any{} },
		"a callback of a bad name":   func(m map[string]any) { m["callbacks"] = map[string]any{"Paid": "https://x.example/v1/callbacks/t"} },
		"a callback that is no URL":  func(m map[string]any) { m["callbacks"] = map[string]any{"paid": "cb_2f1e0d"} },
		"a callback elsewhere": func(m map[string]any) {
			m["callbacks"] = map[string]any{"paid": "https://x.example/v1/operations/op_1"}
		},
	} {
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		bad, _ := json.Marshal(m)
		if err := validate(s, bad); err == nil {
			t.Errorf("%s: the schema accepts %s", name, bad)
		}
	}
}

// signal is the i-th signal of a decoded request.
func signal(m map[string]any, i int) map[string]any {
	return m["signals"].([]any)[i].(map[string]any)
}
