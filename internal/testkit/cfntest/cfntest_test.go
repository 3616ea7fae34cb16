package cfntest_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
)

func TestRender(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`{"Ref":"Table1"}`, "${Table1}"},
		{`{"Fn::GetAtt":["Fn1","Arn"]}`, "${Fn1.Arn}"},
		{`{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":states:",{"Fn::GetAtt":["M","Name"]}]]}`, "arn:${AWS::Partition}:states:${M.Name}"},
		{`{"Fn::Sub":"x"}`, `{"Fn::Sub":"x"}`},
		{`30`, "30"},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.in), &v); err != nil {
			t.Fatal(err)
		}
		if got := cfntest.Render(v); got != tc.want {
			t.Errorf("Render(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStatement(t *testing.T) {
	var one, many map[string]any
	_ = json.Unmarshal([]byte(`{"Action":"sqs:SendMessage","Resource":{"Fn::GetAtt":["Q","Arn"]}}`), &one)
	_ = json.Unmarshal([]byte(`{"Action":["a:B","a:A"],"Resource":["z",{"Ref":"T"}]}`), &many)
	if got := cfntest.Actions(one); !reflect.DeepEqual(got, []string{"sqs:SendMessage"}) {
		t.Errorf("actions %v", got)
	}
	if got := cfntest.Resources(one); !reflect.DeepEqual(got, []string{"${Q.Arn}"}) {
		t.Errorf("resources %v", got)
	}
	if got := cfntest.Actions(many); !reflect.DeepEqual(got, []string{"a:B", "a:A"}) {
		t.Errorf("actions %v", got)
	}
	if got := cfntest.Resources(many); !reflect.DeepEqual(got, []string{"${T}", "z"}) {
		t.Errorf("resources %v", got)
	}
	if got := cfntest.Actions(map[string]any{}); got != nil {
		t.Errorf("no action: %v", got)
	}
}
