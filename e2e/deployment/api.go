package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// URL is the HTTP API's endpoint, as the stack's HttpApi output gives it.
func (d *Deployment) URL() string { return d.gateway.url }

// Functions are the short names of the template's functions, sorted.
func (d *Deployment) Functions() []string {
	var out []string
	for _, f := range d.functions {
		out = append(out, f.Short())
	}
	sort.Strings(out)
	return out
}

func (d *Deployment) function(short string) *function {
	for _, f := range d.functions {
		if f.Short() == short || f.name == short {
			return f
		}
	}
	return nil
}

// Invoke invokes the function short (RequestResponse) and returns its
// answer; a function error is a *FunctionError.
func (d *Deployment) Invoke(ctx context.Context, short string, payload []byte) ([]byte, error) {
	f := d.function(short)
	if f == nil {
		return nil, fmt.Errorf("no function %s", short)
	}
	return f.Invoke(ctx, payload)
}

// InvokeAsync invokes the function short as an Event.
func (d *Deployment) InvokeAsync(short string, payload []byte) error {
	f := d.function(short)
	if f == nil {
		return fmt.Errorf("no function %s", short)
	}
	f.InvokeAsync(payload)
	return nil
}

// Kill kills every running container of the function short, as a crash
// or Lambda's timeout would, and says how many. With drop the
// asynchronous invocations they ran are not retried (as when every retry
// failed too).
func (d *Deployment) Kill(short string, drop bool) int {
	f := d.function(short)
	if f == nil {
		return 0
	}
	return f.Kill("killed by the test", drop)
}

// Invocations counts the function's invocations so far (each attempt of
// an asynchronous one).
func (d *Deployment) Invocations(short string) int64 {
	if f := d.function(short); f != nil {
		return f.invocations.Load()
	}
	return 0
}

// Completed counts the function's invocations that have ended, however.
func (d *Deployment) Completed(short string) int64 {
	if f := d.function(short); f != nil {
		return f.completed.Load()
	}
	return 0
}

// Metrics are the EMF documents the function short has written to its
// output so far, each as its members: what CloudWatch Logs would turn
// into metrics.
func (d *Deployment) Metrics(short string) []map[string]any {
	f := d.function(short)
	f.metricsMu.Lock()
	defer f.metricsMu.Unlock()
	return slices.Clone(f.metrics)
}

// Calls are the AWS requests the function short made, in order.
func (d *Deployment) Calls(short string) []Call {
	if f := d.function(short); f != nil {
		return f.aws.Calls()
	}
	return nil
}

// Denied lists every AWS request a function made that its role's
// statements in the template do not allow, with why.
func (d *Deployment) Denied() []string {
	var out []string
	for _, short := range d.Functions() {
		f := d.function(short)
		stmts := d.policies[f.role]
		for _, c := range f.aws.Calls() {
			if ok, why := Allowed(stmts, c); !ok {
				out = append(out, fmt.Sprintf("%s: %s: %s", short, c, why))
			}
		}
	}
	return out
}

// AWS is the AWS configuration the code of the function short gets: its
// endpoint, so that each request is recorded as the function's and held
// to its role by Denied, and its role's credentials. A test makes requests
// with it as that function's code could.
func (d *Deployment) AWS(short string) (aws.Config, error) {
	f := d.function(short)
	if f == nil {
		return aws.Config{}, fmt.Errorf("no function %s", short)
	}
	cfg := d.aws.Copy()
	cfg.BaseEndpoint = aws.String(f.aws.url)
	cfg.Credentials = aws.NewCredentialsCache(staticCreds(f))
	// The configuration's sources hold the harness' own endpoint (moto's),
	// which a client would take over BaseEndpoint.
	cfg.ConfigSources = nil
	return cfg, nil
}

// SandboxTasks is how many sandbox tasks have a sandboxd running now.
func (d *Deployment) SandboxTasks() int { return d.tasks.running() }

// Schedules are the names of the schedules in group, as Scheduler holds
// them.
func (d *Deployment) Schedules(ctx context.Context, group string) ([]string, error) {
	c := scheduler.NewFromConfig(d.aws)
	var names []string
	p := scheduler.NewListSchedulesPaginator(c, &scheduler.ListSchedulesInput{GroupName: aws.String(group)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range out.Schedules {
			names = append(names, aws.ToString(s.Name))
		}
	}
	return names, nil
}

// TemplateSchedule is the group and name of the template's own schedule
// id (such as the sweep's), ok false when it has none of that id.
func (d *Deployment) TemplateSchedule(id string) (group, name string, ok bool) {
	gn, ok := d.own[id]
	return gn[0], gn[1], ok
}

// Fire fires the schedule group/name as EventBridge Scheduler does: its
// target invoked asynchronously (Lambda's Event) with its input, the
// context attributes filled in; a one-time schedule whose
// ActionAfterCompletion is DELETE is deleted after. moto stores schedules
// but never fires them.
func (d *Deployment) Fire(ctx context.Context, group, name string) error {
	c := scheduler.NewFromConfig(d.aws)
	s, err := c.GetSchedule(ctx, &scheduler.GetScheduleInput{GroupName: aws.String(group), Name: aws.String(name)})
	if err != nil {
		return fmt.Errorf("get schedule %s/%s: %w", group, name, err)
	}
	if s.Target == nil {
		return fmt.Errorf("schedule %s/%s has no target", group, name)
	}
	var fn *function
	for _, f := range d.functions {
		if f.arn == aws.ToString(s.Target.Arn) {
			fn = f
		}
	}
	if fn == nil {
		return fmt.Errorf("schedule %s/%s targets %s, which is not one of the functions", group, name, aws.ToString(s.Target.Arn))
	}
	input := aws.ToString(s.Target.Input)
	for k, v := range map[string]string{
		"<aws.scheduler.scheduled-time>": time.Now().UTC().Format(time.RFC3339),
		"<aws.scheduler.execution-id>":   newRequestID(),
		"<aws.scheduler.schedule-arn>":   aws.ToString(s.Arn),
		"<aws.scheduler.attempt-number>": "1",
	} {
		input = strings.ReplaceAll(input, k, v)
	}
	fn.InvokeAsync([]byte(input))
	if s.ActionAfterCompletion == "DELETE" && strings.HasPrefix(aws.ToString(s.ScheduleExpression), "at(") {
		if _, err := c.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{GroupName: aws.String(group), Name: aws.String(name)}); err != nil {
			return fmt.Errorf("delete the fired schedule %s/%s: %w", group, name, err)
		}
	}
	return nil
}

// serveInvoke is Lambda's Invoke for a function's request: Event answers
// 202 at once, RequestResponse the function's answer (a function error
// with X-Amz-Function-Error). The limits are Lambda's: 6 MB synchronous,
// 256 KB asynchronous payloads.
func (d *Deployment) serveInvoke(w http.ResponseWriter, r *http.Request, body []byte, arn string) int {
	fail := func(status int, typ, msg string) int {
		w.Header().Set("X-Amzn-Errortype", typ)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
		return status
	}
	var f *function
	for _, fn := range d.functions {
		if fn.arn == arn {
			f = fn
		}
	}
	if f == nil {
		return fail(http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+arn)
	}
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	switch typ := r.Header.Get("X-Amz-Invocation-Type"); typ {
	case "Event":
		if len(body) > 256*1024 {
			return fail(http.StatusRequestEntityTooLarge, "RequestTooLargeException", "Request must be smaller than 262144 bytes for the InvokeAsync operation")
		}
		f.InvokeAsync(body)
		w.WriteHeader(http.StatusAccepted)
		return http.StatusAccepted
	case "", "RequestResponse":
		if len(body) > 6*1024*1024 {
			return fail(http.StatusRequestEntityTooLarge, "RequestTooLargeException", "Request must be smaller than 6291456 bytes for the Invoke operation")
		}
		out, err := f.Invoke(r.Context(), body)
		var fe *FunctionError
		switch {
		case errors.As(err, &fe):
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.Write(fe.body())
			return http.StatusOK
		case err != nil:
			return fail(http.StatusInternalServerError, "ServiceException", err.Error())
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(out)
		return http.StatusOK
	default:
		return fail(http.StatusBadRequest, "InvalidParameterValueException", "unknown InvocationType "+typ)
	}
}

// sendToDestination sends an asynchronous invocation that failed every
// attempt to the function's on-failure destination, an SQS queue, as
// Lambda does (with the function's role: through its endpoint).
func (d *Deployment) sendToDestination(f *function, payload []byte, last outcome, attempts int) {
	url := ""
	for u, a := range d.queues {
		if a == f.onFailure {
			url = u
		}
	}
	if url == "" {
		f.logf("on-failure destination %s is not a queue of the template", f.onFailure)
		return
	}
	var request any = string(payload)
	json.Unmarshal(payload, &request)
	record := map[string]any{
		"version":   "1.0",
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"requestContext": map[string]any{"requestId": newRequestID(), "functionArn": f.arn + ":$LATEST",
			"condition": "RetriesExhausted", "approximateInvokeCount": attempts},
		"requestPayload":  request,
		"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
		"responsePayload": last.err,
	}
	body, _ := json.Marshal(record)
	cfg := d.aws.Copy()
	cfg.BaseEndpoint = aws.String(f.aws.url)
	cfg.Credentials = aws.NewCredentialsCache(staticCreds(f))
	if _, err := sqs.NewFromConfig(cfg).SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body))}); err != nil {
		f.logf("send to the on-failure destination: %v", err)
	}
}

// Failed are the records in the queue queueLogicalID (an on-failure
// destination), received and left in the queue.
func (d *Deployment) Failed(ctx context.Context, queueLogicalID string) ([]string, error) {
	url := d.vs.refs[queueLogicalID]
	if url == "" {
		return nil, fmt.Errorf("no queue %s", queueLogicalID)
	}
	out, err := sqs.NewFromConfig(d.aws).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 0})
	if err != nil {
		return nil, err
	}
	var bodies []string
	for _, m := range out.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	return bodies, nil
}

// Queues are the logical ids of the template's queues.
func (d *Deployment) Queues() []string { return d.t.ofType("AWS::SQS::Queue") }

type credsFunc func(context.Context) (aws.Credentials, error)

func (f credsFunc) Retrieve(ctx context.Context) (aws.Credentials, error) { return f(ctx) }

func staticCreds(f *function) aws.CredentialsProvider {
	return credsFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "ASIA" + strings.ToUpper(f.Short()), SecretAccessKey: "harness-" + f.Short(),
			SessionToken: "harness-session-" + f.Short(), Source: "harness"}, nil
	})
}

// The ARNs of what requests name, as IAM sees them.

func (d *Deployment) secretARN(id string) string {
	if strings.HasPrefix(id, "arn:") {
		return id
	}
	if arn, ok := d.secrets[id]; ok {
		return arn
	}
	return d.arn("secretsmanager", "secret:"+id)
}

func (d *Deployment) clusterARN(c string) string {
	if c == "" {
		c = "default"
	}
	if strings.HasPrefix(c, "arn:") {
		return c
	}
	return d.arn("ecs", "cluster/"+c)
}

func (d *Deployment) taskDefARN(td string) string {
	if strings.HasPrefix(td, "arn:") {
		return td
	}
	return d.arn("ecs", "task-definition/"+td)
}

func (d *Deployment) taskARN(cluster, task string) string {
	if strings.HasPrefix(task, "arn:") {
		return task
	}
	return d.arn("ecs", "task/"+cluster[strings.LastIndex(cluster, "/")+1:]+"/"+task)
}

func (d *Deployment) queueARN(url string) string {
	if arn, ok := d.queues[url]; ok {
		return arn
	}
	return d.arn("sqs", url[strings.LastIndex(url, "/")+1:])
}

func (d *Deployment) functionARN(name string) string {
	if strings.HasPrefix(name, "arn:") {
		// A qualified ARN (…:function:name:alias) is the function's.
		if parts := strings.Split(name, ":"); len(parts) > 7 {
			return strings.Join(parts[:7], ":")
		}
		return name
	}
	return d.arn("lambda", "function:"+name)
}

// taskRoles are the roles RunTask of task definition td passes to ECS.
func (d *Deployment) taskRoles(td string) []string {
	if sb := d.sandboxOf(td); sb != nil {
		return sb.roles
	}
	return nil
}
