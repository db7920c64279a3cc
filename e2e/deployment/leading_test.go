package deployment

import (
	"net/http"
	"strings"
	"testing"
)

// TestLeadingKeys: the partition key value of a request, as IAM's
// dynamodb:LeadingKeys has it, for items, queries of the table and of an
// index, and each item of a transaction.
func TestLeadingKeys(t *testing.T) {
	t.Parallel()
	d := &Deployment{region: "us-east-1", account: "1", hashKeys: map[string]string{
		"arn:aws:dynamodb:us-east-1:1:table/T": "pk", "arn:aws:dynamodb:us-east-1:1:table/T/index/gsi1": "gsi1pk"}}
	for _, c := range []struct {
		op, body string
		want     []string
	}{
		{"GetItem", `{"TableName":"T","Key":{"pk":{"S":"POOL#small"},"sk":{"S":"SBX#1"}}}`, []string{"POOL#small"}},
		{"PutItem", `{"TableName":"T","Item":{"pk":{"S":"FLEET#a"},"sk":{"S":"FLEET"}}}`, []string{"FLEET#a"}},
		{"Query", `{"TableName":"T","KeyConditionExpression":"#n0 = :v0 AND begins_with(#n1, :v1)",
			"ExpressionAttributeNames":{"#n0":"pk","#n1":"sk"},"ExpressionAttributeValues":{":v0":{"S":"POOL#small"},":v1":{"S":"SBX#"}}}`, []string{"POOL#small"}},
		{"Query", `{"TableName":"T","IndexName":"gsi1","KeyConditionExpression":"gsi1pk = :p",
			"ExpressionAttributeValues":{":p":{"S":"FLEETS"}}}`, []string{"FLEETS"}},
		{"Scan", `{"TableName":"T"}`, []string{""}},
		{"TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"T","Item":{"pk":{"S":"RUN#1"},"sk":{"S":"RUN"}}}},
			{"Update":{"TableName":"T","Key":{"pk":{"S":"POOL#small"},"sk":{"S":"SBX#1"}}}}]}`, []string{"RUN#1", "POOL#small"}},
	} {
		r, _ := http.NewRequest("POST", "/", strings.NewReader(c.body))
		r.Header.Set("X-Amz-Target", "DynamoDB_20120810."+c.op)
		r.Header.Set("Content-Type", "application/x-amz-json-1.0")
		calls, err := d.classify("dynamodb", r, []byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, call := range calls {
			got = append(got, call.Context["dynamodb:LeadingKeys"])
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s %s: leading keys %q, want %q", c.op, c.body, got, c.want)
		}
	}
}
