package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/emulator"
)

const (
	approvalFleet  = "e2e-approval"
	approvalAsk    = "check the account, then charge it"
	approvalAnswer = "checked, not charged."
	approvalToken  = "tok-e2e-approval-4Kd8sW1"
)

// TestDeployedApprovals: through the deployed shape, a run waits for a
// person twice and each decision, sent to the api function, starts the
// runner function again. First the just-in-time secret: its use for the
// outside host waits, and once approved the request carries it; then a
// POST that the approval table holds, which is denied with a note the
// model is told. The outside host gets the approved request and never the
// denied one.
func TestDeployedApprovals(t *testing.T) {
	var mu sync.Mutex
	var got []string
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, "balance: 12")
	}))
	defer outside.Close()
	conv := conversation{marker: approvalAsk, next: func(step int, results []string) turn {
		switch step {
		case 0:
			return turn{calls: []call{{"http_request", map[string]any{"method": "GET", "url": outside.URL + "/balance",
				"headers": map[string]string{"Authorization": "Bearer «secret:TOKEN»"}}}}}
		case 1:
			return turn{calls: []call{{"http_request", map[string]any{"method": "POST", "url": outside.URL + "/charge", "body": "12"}}}}
		}
		return turn{text: approvalAnswer + " " + strings.Join(results, " | ")}
	}}
	dp := deploy(t, outside, nil, conv)
	cfg := aws.Config{Region: emulator.Region, BaseEndpoint: aws.String(dp.moto),
		Credentials: credentials.NewStaticCredentialsProvider("operator", "operator", "")}
	sec, err := secretsmanager.NewFromConfig(cfg).CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String("e2e/approval-token"), SecretString: aws.String(approvalToken)})
	if err != nil {
		t.Fatal(err)
	}
	def := fmt.Sprintf(`name = %q
instructions = "You look before you pay."
[x-agentsfleet]
tools = ["http_request"]
[x-agentsfleet.network]
hosts = ["127.0.0.1"]
[x-agentsfleet.secrets]
TOKEN = { id = %q, approve = true }
[x-agentsfleet.approval]
tools = ["http_request"]
methods = ["POST"]
`, approvalFleet, aws.ToString(sec.ARN))
	dp.call(t, "PUT", "/v1/fleets/"+approvalFleet, "application/toml", []byte(def), http.StatusOK)
	start, _ := json.Marshal(map[string]any{"input": approvalAsk})
	id := dp.call(t, "POST", "/v1/fleets/"+approvalFleet+"/runs", "application/json", start, http.StatusAccepted)["run_id"].(string)

	secretAsk := dp.waitPending(t, id)
	if secretAsk["secret"] != "TOKEN" || secretAsk["host"] != "127.0.0.1" || secretAsk["method"] != "GET" {
		t.Fatalf("the first approval is %v, want TOKEN for GET 127.0.0.1", secretAsk)
	}
	approve, _ := json.Marshal(map[string]any{"decision": "approve"})
	dp.call(t, "POST", "/v1/runs/"+id+"/approvals/"+secretAsk["approval_id"].(string), "application/json", approve, http.StatusOK)

	postAsk := dp.waitPending(t, id)
	if postAsk["secret"] != nil || !strings.Contains(fmt.Sprint(postAsk["arguments"]), "/charge") {
		t.Fatalf("the second approval is %v, want the POST's", postAsk)
	}
	deny, _ := json.Marshal(map[string]any{"decision": "deny", "note": "not before month end"})
	dp.call(t, "POST", "/v1/runs/"+id+"/approvals/"+postAsk["approval_id"].(string), "application/json", deny, http.StatusOK)

	ended := dp.waitRun(t, id)
	if ended["status"] != "succeeded" || !strings.Contains(fmt.Sprint(ended["answer"]), "not before month end") {
		t.Fatalf("the run ended %v; the model fake noted %q", ended, dp.model.problems)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "GET /balance Bearer "+approvalToken {
		t.Fatalf("the outside host got %q, want the approved GET with the secret alone", got)
	}
	all, _ := json.Marshal(dp.events(t, id))
	if strings.Contains(string(all), approvalToken) {
		t.Errorf("the secret's value is in the run's events: %s", all)
	}
}

// waitPending waits until run id waits for a person and returns its one
// pending approval.
func (dp *deployed) waitPending(t testing.TB, id string) map[string]any {
	t.Helper()
	var r map[string]any
	waitFor(t, "run "+id+" to wait for an approval", func() bool {
		r = dp.call(t, "GET", "/v1/runs/"+id, "", nil, http.StatusOK)
		p, _ := r["pending_approvals"].([]any)
		if r["status"] == "failed" || r["status"] == "succeeded" {
			t.Fatalf("run %s ended %v before waiting; the model fake noted %q", id, r, dp.model.problems)
		}
		return r["status"] == "waiting" && len(p) == 1
	})
	return r["pending_approvals"].([]any)[0].(map[string]any)
}
