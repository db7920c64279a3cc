package deployment

import (
	"encoding/json"
	"testing"
)

func TestAllowed(t *testing.T) {
	t.Parallel()
	var stmts []statement
	json.Unmarshal([]byte(`[
		{"Effect":"Allow","Action":["dynamodb:GetItem","dynamodb:Query"],"Resource":["arn:aws:dynamodb:us-east-1:1:table/T","arn:aws:dynamodb:us-east-1:1:table/T/index/*"]},
		{"Effect":"Allow","Action":"ecs:RunTask","Resource":"arn:aws:ecs:us-east-1:1:task-definition/sb:*","Condition":{"ArnEquals":{"ecs:cluster":"arn:aws:ecs:us-east-1:1:cluster/c"}}},
		{"Effect":"Allow","Action":"secretsmanager:*","Resource":"*"},
		{"Effect":"Deny","Action":"secretsmanager:*","Resource":"arn:aws:secretsmanager:us-east-1:1:secret:slack-??????"},
		{"Effect":"Deny","Action":"dynamodb:*","Resource":["arn:aws:dynamodb:us-east-1:1:table/T","arn:aws:dynamodb:us-east-1:1:table/T/index/*"],
		 "Condition":{"ForAnyValue:StringLike":{"dynamodb:LeadingKeys":["POOL#*"]}}},
		{"Effect":"Allow","Action":"dynamodb:DeleteItem","Resource":"arn:aws:dynamodb:us-east-1:1:table/T"},
		{"Effect":"Deny","Action":"dynamodb:DeleteItem","Resource":"arn:aws:dynamodb:us-east-1:1:table/T","Condition":{"NumericLessThan":{"x":"1"}}},
		{"Effect":"Allow","Action":"dynamodb:PutItem","Resource":"arn:aws:dynamodb:us-east-1:1:table/U","Condition":{"NumericLessThan":{"x":"1"}}}
	]`), &stmts)
	pool := func(action, pk string) Call {
		return Call{Action: action, Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T"}, Context: map[string]string{"dynamodb:LeadingKeys": pk}}
	}
	for _, c := range []struct {
		call Call
		want bool
	}{
		{Call{Action: "dynamodb:GetItem", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T"}}, true},
		// A Deny whose operator the harness does not know applies; such an
		// Allow does not.
		{Call{Action: "dynamodb:DeleteItem", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T"}}, false},
		{Call{Action: "dynamodb:PutItem", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/U"}}, false},
		{pool("dynamodb:Query", "POOL#small"), false},
		{pool("dynamodb:Query", "FLEET#a"), true},
		{pool("dynamodb:Query", "XPOOL#small"), true},
		{Call{Action: "dynamodb:Query", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T"}}, true},
		{Call{Action: "dynamodb:Query", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T/index/gsi1"}}, true},
		{Call{Action: "dynamodb:PutItem", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/T"}}, false},
		{Call{Action: "dynamodb:GetItem", Resource: []string{"arn:aws:dynamodb:us-east-1:1:table/Other"}}, false},
		{Call{Action: "ecs:RunTask", Resource: []string{"arn:aws:ecs:us-east-1:1:task-definition/sb:3"},
			Context: map[string]string{"ecs:cluster": "arn:aws:ecs:us-east-1:1:cluster/c"}}, true},
		{Call{Action: "ecs:RunTask", Resource: []string{"arn:aws:ecs:us-east-1:1:task-definition/sb:3"},
			Context: map[string]string{"ecs:cluster": "arn:aws:ecs:us-east-1:1:cluster/other"}}, false},
		{Call{Action: "ecs:RunTask", Resource: []string{"arn:aws:ecs:us-east-1:1:task-definition/sb:3"}}, false},
		{Call{Action: "secretsmanager:GetSecretValue", Resource: []string{"arn:aws:secretsmanager:us-east-1:1:secret:fleet-AbCdEf"}}, true},
		{Call{Action: "secretsmanager:GetSecretValue", Resource: []string{"arn:aws:secretsmanager:us-east-1:1:secret:slack-AbCdEf"}}, false},
	} {
		if got, why := Allowed(stmts, c.call); got != c.want {
			t.Errorf("Allowed(%v) = %v (%s), want %v", c.call, got, why, c.want)
		}
	}
}

func TestRouteMatch(t *testing.T) {
	t.Parallel()
	v1 := route{key: "ANY /v1/{proxy+}", method: "ANY", segments: []string{"v1", "{proxy+}"}}
	events := route{key: "POST /slack/events", method: "POST", segments: []string{"slack", "events"}}
	for _, c := range []struct {
		rt           route
		method, path string
		want         bool
		proxy        string
	}{
		{v1, "GET", "/v1/runs/r1/events", true, "runs/r1/events"},
		{v1, "PUT", "/v1/fleets/a", true, "fleets/a"},
		{v1, "GET", "/v1", false, ""},
		{v1, "GET", "/v2/runs", false, ""},
		{events, "POST", "/slack/events", true, ""},
		{events, "GET", "/slack/events", false, ""},
		{events, "POST", "/slack/events/x", false, ""},
	} {
		params, ok := c.rt.match(c.method, c.path)
		if ok != c.want || (ok && params["proxy"] != c.proxy) {
			t.Errorf("%s matches %s %s = %v %v, want %v %q", c.rt.key, c.method, c.path, ok, params, c.want, c.proxy)
		}
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	vs := &values{region: "us-east-1", account: "1", refs: map[string]string{"Table": "T"}, attrs: map[string]string{"Table.Arn": "arn:t"}}
	var v any
	json.Unmarshal([]byte(`{"a":{"Fn::Join":["",["x-",{"Ref":"Table"},"-",{"Fn::GetAtt":["Table","Arn"]}]]},
		"b":{"Fn::Sub":"${AWS::Region}:${Table}:${Table.Arn}:${!Literal}"},
		"c":{"Fn::Select":[1,{"Fn::Split":[",","p,q,r"]}]}}`), &v)
	got, err := vs.resolve(v)
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	for k, want := range map[string]string{"a": "x-T-arn:t", "b": "us-east-1:T:arn:t:${Literal}", "c": "q"} {
		if m[k] != want {
			t.Errorf("%s = %v, want %q", k, m[k], want)
		}
	}
	if _, err := vs.resolve(map[string]any{"Ref": "Missing"}); err == nil {
		t.Error("a Ref to a resource the harness never made resolved")
	}
}
