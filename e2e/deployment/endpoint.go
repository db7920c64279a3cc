package deployment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Call is one AWS request a function made, as IAM sees it: the service's
// action, the resources it names and the condition keys it carries.
type Call struct {
	Function string
	Action   string   // such as dynamodb:PutItem
	Resource []string // ARNs, or * for an action that takes none
	// Context holds the condition keys IAM evaluates for it, such as
	// ecs:cluster, iam:PassedToService or dynamodb:LeadingKeys (the
	// partition key value of the item or query; a transaction is one Call
	// for each item).
	Context map[string]string
	Status  int // moto's (or the harness') HTTP status
}

func (c Call) String() string { return c.Action + " " + strings.Join(c.Resource, ",") }

// endpoint is one function's AWS endpoint (its AWS_ENDPOINT_URL): every
// request is recorded as the function's, Lambda's Invoke is served by the
// harness (which runs the functions), and everything else goes to moto,
// with what moto does not model filled in: the sandbox tasks' addresses
// (see tasks.go).
type endpoint struct {
	d   *Deployment
	fn  string
	url string
	srv *http.Server

	mu    sync.Mutex
	calls []Call
}

func (d *Deployment) newEndpoint(fn string) (*endpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &endpoint{d: d, fn: fn, url: "http://" + ln.Addr().String()}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go e.srv.Serve(ln)
	return e, nil
}

func (e *endpoint) record(c Call) {
	c.Function = e.fn
	e.mu.Lock()
	e.calls = append(e.calls, c)
	e.mu.Unlock()
}

func (e *endpoint) recordAll(calls []Call, status int) {
	for _, c := range calls {
		c.Status = status
		e.record(c)
	}
}

func (e *endpoint) Calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.calls...)
}

var credentialRE = regexp.MustCompile(`Credential=[^/]+/[0-9]+/([^/]+)/([^/]+)/aws4_request`)

// service is the SigV4 signing name of a request: from its Authorization
// header, or a presigned URL's X-Amz-Credential.
func service(r *http.Request) string {
	if m := credentialRE.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		return m[2]
	}
	if c := r.URL.Query().Get("X-Amz-Credential"); c != "" {
		if parts := strings.Split(c, "/"); len(parts) == 5 {
			return parts[3]
		}
	}
	return ""
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	svc := service(r)
	if svc == "" {
		http.Error(w, "the harness' AWS endpoint takes only signed requests", http.StatusForbidden)
		return
	}
	calls, err := e.d.classify(svc, r, body)
	if err != nil {
		e.record(Call{Action: svc + ":?", Resource: []string{r.Method + " " + r.URL.Path}, Status: 400})
		http.Error(w, "harness: "+err.Error(), http.StatusBadRequest)
		return
	}
	call := calls[0]
	if svc == "lambda" {
		status := e.d.serveInvoke(w, r, body, call.Resource[0])
		e.recordAll(calls, status)
		return
	}
	status, respBody, header, err := e.d.forward(r, body)
	if err != nil {
		http.Error(w, "harness: the emulator: "+err.Error(), http.StatusBadGateway)
		return
	}
	e.recordAll(calls, status)
	if status >= 500 {
		e.d.logf("%s: %s %.2000s answered %d: %.600s", e.fn, call.Action, body, status, respBody)
	}
	if status/100 == 2 {
		respBody = e.d.tasks.after(e, call, body, respBody)
	}
	for k, vs := range header {
		if k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(respBody)))
	w.WriteHeader(status)
	w.Write(respBody)
}

// forward sends the request to moto as it came.
func (d *Deployment) forward(r *http.Request, body []byte) (int, []byte, http.Header, error) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, d.opts.Endpoint+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Host = strings.TrimPrefix(d.opts.Endpoint, "http://")
	resp, err := d.moto.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

// classify names the IAM action, resources and condition keys of one
// request of service svc, for the services the functions call.
func (d *Deployment) classify(svc string, r *http.Request, body []byte) ([]Call, error) {
	arn := func(service, resource string) string {
		return "arn:aws:" + service + ":" + d.region + ":" + d.account + ":" + resource
	}
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndex(target, ".")+1:]
	var js map[string]any
	if strings.Contains(r.Header.Get("Content-Type"), "json") && len(body) > 0 {
		json.Unmarshal(body, &js)
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	c := Call{Context: map[string]string{}}
	var extra []Call
	switch svc {
	case "dynamodb":
		c.Action = "dynamodb:" + op
		table := func(name string) string {
			if strings.HasPrefix(name, "arn:") {
				return name
			}
			return arn("dynamodb", "table/"+name)
		}
		switch op {
		case "TransactWriteItems", "TransactGetItems":
			items, _ := js["TransactItems"].([]any)
			seen := map[string]bool{}
			var out []Call
			for _, it := range items {
				m, _ := it.(map[string]any)
				for kind, v := range m {
					action := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
						"ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}[kind]
					vm, _ := v.(map[string]any)
					res := table(str(vm, "TableName"))
					ctx := d.leadingKeys(res, vm)
					// IAM authorizes a transaction item by item: one
					// check for each kind of item, table and partition.
					if k := action + " " + res + " " + ctx["dynamodb:LeadingKeys"]; !seen[k] {
						seen[k] = true
						out = append(out, Call{Action: "dynamodb:" + action, Resource: []string{res}, Context: ctx})
					}
				}
			}
			return out, nil
		case "BatchWriteItem", "BatchGetItem":
			items, _ := js["RequestItems"].(map[string]any)
			for name := range items {
				c.Resource = append(c.Resource, table(name))
			}
		default:
			res := table(str(js, "TableName"))
			if idx := str(js, "IndexName"); idx != "" {
				res += "/index/" + idx
			}
			c.Resource = []string{res}
			c.Context = d.leadingKeys(res, js)
		}
	case "secretsmanager":
		c.Action = "secretsmanager:" + op
		c.Resource = []string{d.secretARN(str(js, "SecretId"))}
	case "ecs":
		c.Action = "ecs:" + op
		cluster := d.clusterARN(str(js, "cluster"))
		c.Context["ecs:cluster"] = cluster
		switch op {
		case "RunTask":
			td := d.taskDefARN(str(js, "taskDefinition"))
			c.Resource = []string{td}
			// RunTask passes the task definition's roles to ECS, and tags
			// the task it creates.
			for _, role := range d.taskRoles(str(js, "taskDefinition")) {
				extra = append(extra, Call{Action: "iam:PassRole", Resource: []string{role},
					Context: map[string]string{"iam:PassedToService": "ecs-tasks.amazonaws.com"}})
			}
			if _, ok := js["tags"]; ok {
				extra = append(extra, Call{Action: "ecs:TagResource", Resource: []string{d.taskARN(cluster, "*")},
					Context: map[string]string{"ecs:CreateAction": "RunTask", "ecs:cluster": cluster}})
			}
		case "StopTask":
			c.Resource = []string{d.taskARN(cluster, str(js, "task"))}
		case "DescribeTasks":
			tasks, _ := js["tasks"].([]any)
			for _, t := range tasks {
				c.Resource = append(c.Resource, d.taskARN(cluster, fmt.Sprint(t)))
			}
		default:
			c.Resource = []string{"*"}
		}
	case "ec2":
		form, _ := url.ParseQuery(string(body))
		c.Action = "ec2:" + form.Get("Action")
		c.Resource = []string{"*"}
	case "sqs":
		c.Action = "sqs:" + op
		c.Resource = []string{d.queueARN(str(js, "QueueUrl"))}
	case "s3":
		bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		q := r.URL.Query()
		switch {
		case key == "" && r.Method == http.MethodGet:
			c.Action, c.Resource = "s3:ListBucket", []string{"arn:aws:s3:::" + bucket}
		case key == "":
			c.Action, c.Resource = "s3:"+r.Method+"Bucket", []string{"arn:aws:s3:::" + bucket}
		default:
			c.Resource = []string{"arn:aws:s3:::" + bucket + "/" + key}
			switch {
			case r.Method == http.MethodGet || r.Method == http.MethodHead:
				c.Action = "s3:GetObject"
				if q.Has("versionId") {
					c.Action = "s3:GetObjectVersion"
				}
			case r.Method == http.MethodPut:
				c.Action = "s3:PutObject"
			case r.Method == http.MethodDelete:
				c.Action = "s3:DeleteObject"
			default:
				c.Action = "s3:PutObject" // multipart uploads
			}
		}
	case "scheduler":
		// The REST API: /schedules/{Name}?groupName=… and /schedule-groups/{Name}.
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		name := ""
		if len(parts) > 1 {
			name, _ = url.PathUnescape(parts[1])
		}
		switch parts[0] {
		case "schedules":
			group := r.URL.Query().Get("groupName")
			if g := str(js, "GroupName"); g != "" {
				group = g
			}
			if group == "" {
				group = "default"
			}
			c.Resource = []string{arn("scheduler", "schedule/"+group+"/"+name)}
			c.Action = "scheduler:" + map[string]string{http.MethodPost: "CreateSchedule", http.MethodPut: "UpdateSchedule",
				http.MethodGet: "GetSchedule", http.MethodDelete: "DeleteSchedule"}[r.Method]
			if name == "" {
				c.Action, c.Resource = "scheduler:ListSchedules", []string{"*"}
			}
			if t, ok := js["Target"].(map[string]any); ok && str(t, "RoleArn") != "" {
				extra = append(extra, Call{Action: "iam:PassRole", Resource: []string{str(t, "RoleArn")},
					Context: map[string]string{"iam:PassedToService": "scheduler.amazonaws.com"}})
			}
		case "schedule-groups":
			c.Resource = []string{arn("scheduler", "schedule-group/"+name)}
			c.Action = "scheduler:" + map[string]string{http.MethodPost: "CreateScheduleGroup", http.MethodGet: "GetScheduleGroup",
				http.MethodDelete: "DeleteScheduleGroup"}[r.Method]
		default:
			return nil, fmt.Errorf("scheduler %s %s: not a path the harness knows", r.Method, r.URL.Path)
		}
	case "lambda":
		// /2015-03-31/functions/{name}/invocations
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(parts) == 4 && parts[1] == "functions" && parts[3] == "invocations" {
			name, _ := url.PathUnescape(parts[2])
			c.Action = "lambda:InvokeFunction"
			c.Resource = []string{d.functionARN(name)}
			return []Call{c}, nil
		}
		return nil, fmt.Errorf("lambda %s %s: the harness serves only Invoke", r.Method, r.URL.Path)
	default:
		c.Action = svc + ":" + op
		c.Resource = []string{"*"}
	}
	if c.Action == "" || strings.HasSuffix(c.Action, ":") {
		return nil, fmt.Errorf("%s %s %s: no action the harness knows", svc, r.Method, r.URL.Path)
	}
	return append([]Call{c}, extra...), nil
}

var (
	andRE   = regexp.MustCompile(`(?i)\s+AND\s+`)
	equalRE = regexp.MustCompile(`^\(?\s*([#\w]+)\s*=\s*(:\w+)\s*\)?$`)
)

// leadingKeys is the condition key dynamodb:LeadingKeys of a request on
// res (a table, or an index of it) whose body (or transaction item) is
// req: the partition key's value of its Key, its Item, or its
// KeyConditionExpression's equality on the partition key. A request
// without one (a Scan) has none.
func (d *Deployment) leadingKeys(res string, req map[string]any) map[string]string {
	ctx := map[string]string{}
	attr := d.hashKeys[res]
	if attr == "" {
		return ctx
	}
	str := func(v any) (string, bool) {
		m, _ := v.(map[string]any)
		s, ok := m["S"].(string)
		return s, ok
	}
	for _, k := range []string{"Key", "Item"} {
		if m, ok := req[k].(map[string]any); ok {
			if v, ok := str(m[attr]); ok {
				ctx["dynamodb:LeadingKeys"] = v
				return ctx
			}
		}
	}
	cond, _ := req["KeyConditionExpression"].(string)
	names, _ := req["ExpressionAttributeNames"].(map[string]any)
	values, _ := req["ExpressionAttributeValues"].(map[string]any)
	for _, part := range andRE.Split(strings.TrimSpace(cond), -1) {
		m := equalRE.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			continue
		}
		name := m[1]
		if n, ok := names[name].(string); ok {
			name = n
		}
		if name != attr {
			continue
		}
		if v, ok := str(values[m[2]]); ok {
			ctx["dynamodb:LeadingKeys"] = v
		}
	}
	return ctx
}
