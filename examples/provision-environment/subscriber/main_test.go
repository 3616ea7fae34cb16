package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func event(detail string) events.EventBridgeEvent {
	return events.EventBridgeEvent{Source: "longrun", DetailType: "Operation State Changed", Detail: json.RawMessage(detail)}
}

func TestNotices(t *testing.T) {
	for _, tc := range []struct {
		detail string
		msg    string
		attrs  string
	}{
		{`{"operationId":"op_1","type":"provision.environment","target":"env:shop/qa","state":"succeeded","version":9,"result":{"url":"https://qa.shop.example.test"}}`,
			"environment ready", "[operation_id op_1 version 9 target env:shop/qa url https://qa.shop.example.test]"},
		{`{"operationId":"op_1","type":"provision.environment","state":"succeeded","version":9,"resultOmitted":true}`,
			"environment ready (GET the operation for its URL)", "[operation_id op_1 version 9 target ]"},
		{`{"operationId":"op_2","type":"provision.environment","state":"failed","version":4,"problem":{"code":"unknown_template"}}`,
			"environment not made", "[operation_id op_2 version 4 target  state failed code unknown_template]"},
		{`{"operationId":"op_3","type":"provision.environment","state":"running","version":3}`, "", "[]"},
		{`{"operationId":"op_4","type":"demo.task","state":"succeeded","version":4}`, "", "[]"},
	} {
		msg, attrs, ok, err := Notice(event(tc.detail))
		if err != nil || msg != tc.msg || ok != (tc.msg != "") || fmt.Sprint(attrs) != tc.attrs && tc.msg != "" {
			t.Errorf("%s: %q %v %v %v", tc.detail, msg, attrs, ok, err)
		}
	}
	if _, _, ok, _ := Notice(events.EventBridgeEvent{Source: "someone", DetailType: "Operation State Changed"}); ok {
		t.Error("another source's event was read")
	}
}
