package deployment

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
)

// tasks stands in for Fargate: moto records the sandbox tasks the runner
// starts (RunTask, DescribeTasks, StopTask), and for each the harness
// starts the real sandboxd with the task definition's command, the task's
// overrides (its token), and an address of its own on loopback. moto gives
// a task a made-up private IP in 10.0.0.0/8 and its ENI no public IP; the
// harness replaces the one with the task's loopback address in the
// responses the runner reads and gives the ENI that address as its public
// IP when the task asked for one, as AWS would.
type tasks struct {
	d *Deployment

	mu     sync.Mutex
	next   int
	byIP   map[string]string // moto's private IP → the task's loopback address
	byENI  map[string]*task
	byARN  map[string]*task
	closed bool
}

// task is one sandbox task and its sandboxd.
type task struct {
	arn, eni, addr string
	sandbox        *sandboxContainer // its task definition's
	cluster        string
	public         bool
	stopping       atomic.Bool
	cmd            *exec.Cmd
	dir            string
	exited         chan struct{}
}

func newTasks(d *Deployment) *tasks {
	return &tasks{d: d, byIP: map[string]string{}, byENI: map[string]*task{}, byARN: map[string]*task{}}
}

// after sees each successful response the functions get from moto, and
// returns the body they are to read.
func (ts *tasks) after(e *endpoint, call Call, reqBody, respBody []byte) []byte {
	switch call.Action {
	case "ecs:RunTask":
		if err := ts.run(reqBody, respBody); err != nil {
			e.d.logf("RunTask: %v", err)
		}
		return ts.rewrite(respBody)
	case "ecs:DescribeTasks":
		return ts.rewrite(respBody)
	case "ecs:StopTask":
		var req struct {
			Task string `json:"task"`
		}
		json.Unmarshal(reqBody, &req)
		ts.stop(req.Task)
		return ts.rewrite(respBody)
	case "ec2:DescribeNetworkInterfaces":
		return ts.rewriteENIs(respBody)
	}
	return respBody
}

type ecsTask struct {
	TaskArn           string `json:"taskArn"`
	TaskDefinitionArn string `json:"taskDefinitionArn"`
	Attachments       []struct {
		Details []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"details"`
	} `json:"attachments"`
}

// run starts a sandboxd for each task RunTask started.
func (ts *tasks) run(reqBody, respBody []byte) error {
	var req struct {
		Cluster        string `json:"cluster"`
		TaskDefinition string `json:"taskDefinition"`
		Overrides      struct {
			ContainerOverrides []struct {
				Name        string `json:"name"`
				Environment []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"environment"`
			} `json:"containerOverrides"`
		} `json:"overrides"`
		NetworkConfiguration struct {
			AwsvpcConfiguration struct {
				AssignPublicIP string `json:"assignPublicIp"`
			} `json:"awsvpcConfiguration"`
		} `json:"networkConfiguration"`
	}
	if err := json.Unmarshal(reqBody, &req); err != nil {
		return err
	}
	var resp struct {
		Tasks []ecsTask `json:"tasks"`
	}
	if err := json.Unmarshal(respBody, &resp); err != nil {
		return err
	}
	// Each task runs its own task definition's container.
	container := ts.d.sandboxOf(req.TaskDefinition)
	if container == nil {
		return fmt.Errorf("RunTask of %q, which is none of the template's task definitions", req.TaskDefinition)
	}
	env := append([]string(nil), container.env...)
	for _, o := range req.Overrides.ContainerOverrides {
		if o.Name != container.name {
			continue
		}
		for _, e := range o.Environment {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	for k, v := range ts.d.opts.TaskEnv {
		env = append(env, k+"="+v)
	}
	for _, t := range resp.Tasks {
		if t.TaskDefinitionArn != "" && t.TaskDefinitionArn != container.taskDef {
			return fmt.Errorf("task %s: RunTask of %s started it from %s", t.TaskArn, container.taskDef, t.TaskDefinitionArn)
		}
		tk := &task{arn: t.TaskArn, sandbox: container, cluster: req.Cluster, public: req.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIP == "ENABLED", exited: make(chan struct{})}
		ts.mu.Lock()
		ts.next++
		tk.addr = fmt.Sprintf("127.0.%d.%d", 100+ts.next/250, 1+ts.next%250)
		for _, a := range t.Attachments {
			for _, dt := range a.Details {
				switch dt.Name {
				case "privateIPv4Address":
					ts.byIP[dt.Value] = tk.addr
				case "networkInterfaceId":
					tk.eni = dt.Value
					ts.byENI[dt.Value] = tk
				}
			}
		}
		ts.byARN[tk.arn] = tk
		closed := ts.closed
		ts.mu.Unlock()
		if closed {
			return errClosed
		}
		if err := ts.start(tk, env); err != nil {
			return fmt.Errorf("task %s: %w", tk.arn, err)
		}
	}
	return nil
}

var listenRE = regexp.MustCompile(`^(.*):([0-9]+)$`)

// start runs sandboxd for tk as the image would, with its task
// definition's command: its --listen address on the task's own loopback
// address, the image's folders (/work, /agent, /data, /workspace) made in
// a folder of the task's own, its --browser this machine's Chromium
// (Options.Browser), and its --user kept when the harness runs as root
// (the folders are then that user's), else this user's.
func (ts *tasks) start(tk *task, env []string) error {
	c := tk.sandbox
	dir, err := os.MkdirTemp(ts.d.dir, "task-")
	if err != nil {
		return err
	}
	os.Chmod(dir, 0o755)
	tk.dir = dir
	uid, gid := os.Getuid(), os.Getgid()
	var args []string
	for i := 0; i < len(c.command); i++ {
		a := c.command[i]
		switch {
		case a == "--listen" && i+1 < len(c.command):
			m := listenRE.FindStringSubmatch(c.command[i+1])
			if m == nil {
				return fmt.Errorf("the task definition's --listen %q has no port", c.command[i+1])
			}
			args = append(args, a, net.JoinHostPort(tk.addr, m[2]))
			i++
		case a == "--browser" && i+1 < len(c.command):
			chromium := ts.d.opts.Browser
			if chromium == "" {
				chromium = c.command[i+1]
			}
			if _, err := os.Stat(chromium); err != nil {
				return fmt.Errorf("task definition %s runs sandboxd with --browser %s: no such Chromium on this machine (Options.Browser): %w", c.id, c.command[i+1], err)
			}
			args = append(args, a, chromium)
			i++
		case a == "--user" && i+1 < len(c.command):
			if uid == 0 {
				fmt.Sscanf(c.command[i+1], "%d:%d", &uid, &gid)
				args = append(args, a, c.command[i+1])
			} else {
				args = append(args, a, fmt.Sprintf("%d:%d", uid, gid))
			}
			i++
		case strings.HasPrefix(a, "/") && i > 0 && strings.HasPrefix(c.command[i-1], "--"):
			local := filepath.Join(dir, filepath.Base(a))
			if err := os.MkdirAll(local, 0o755); err != nil {
				return err
			}
			args = append(args, local)
		default:
			args = append(args, a)
		}
	}
	if uid != os.Getuid() {
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
			if p != dir && filepath.Base(p) != "data" {
				os.Lchown(p, uid, gid)
			}
			return nil
		})
	}
	cmd := exec.Command(ts.d.opts.Sandboxd, args...)
	cmd.Dir = filepath.Join(dir, "work")
	cmd.Env = append(env, "HOME="+filepath.Join(dir, "agent"), "PATH="+os.Getenv("PATH"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	tk.cmd = cmd
	ts.d.wg.Add(1)
	go func() {
		defer ts.d.wg.Done()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ts.d.logf("sandbox %s| %s", tk.addr, sc.Text())
		}
		err := cmd.Wait()
		close(tk.exited)
		if !tk.stopping.Load() {
			// sandboxd was the task's essential container: ECS stops the
			// task when it exits.
			ts.d.logf("sandbox %s exited (%v): stopping its task", tk.addr, err)
			ecs.NewFromConfig(ts.d.aws).StopTask(context.Background(), &ecs.StopTaskInput{Cluster: aws.String(tk.cluster),
				Task: aws.String(tk.arn), Reason: aws.String("Essential container in task exited")})
		}
	}()
	return nil
}

// stop ends the sandboxd of the task named arn (an ARN or its id).
func (ts *tasks) stop(arn string) {
	ts.mu.Lock()
	var tk *task
	for a, t := range ts.byARN {
		if a == arn || strings.HasSuffix(a, "/"+arn) {
			tk = t
		}
	}
	ts.mu.Unlock()
	if tk != nil && tk.cmd != nil {
		tk.stopping.Store(true)
		syscall.Kill(-tk.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-tk.exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-tk.cmd.Process.Pid, syscall.SIGKILL)
			<-tk.exited
		}
	}
}

// Running is how many sandbox tasks have a sandboxd running.
func (ts *tasks) running() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := 0
	for _, t := range ts.byARN {
		if t.cmd != nil {
			select {
			case <-t.exited:
			default:
				n++
			}
		}
	}
	return n
}

func (ts *tasks) close() {
	ts.mu.Lock()
	ts.closed = true
	var all []string
	for a := range ts.byARN {
		all = append(all, a)
	}
	ts.mu.Unlock()
	for _, a := range all {
		ts.stop(a)
	}
}

// rewrite replaces moto's private IPs with the tasks' loopback addresses.
func (ts *tasks) rewrite(body []byte) []byte {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s := string(body)
	for ip, addr := range ts.byIP {
		s = strings.ReplaceAll(s, `"`+ip+`"`, `"`+addr+`"`)
	}
	return []byte(s)
}

var eniItemRE = regexp.MustCompile(`(?s)<networkInterfaceId>(eni-[0-9a-f]+)</networkInterfaceId>`)

// rewriteENIs does the same in EC2's DescribeNetworkInterfaces (XML), and
// gives a public task's ENI its public IP.
func (ts *tasks) rewriteENIs(body []byte) []byte {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s := string(body)
	for ip, addr := range ts.byIP {
		s = strings.ReplaceAll(s, ">"+ip+"<", ">"+addr+"<")
	}
	s = eniItemRE.ReplaceAllStringFunc(s, func(m string) string {
		eni := eniItemRE.FindStringSubmatch(m)[1]
		if tk := ts.byENI[eni]; tk != nil && tk.public && !strings.Contains(s, "<publicIp>"+tk.addr) {
			return m + "<association><publicIp>" + tk.addr + "</publicIp><ipOwnerId>amazon</ipOwnerId></association>"
		}
		return m
	})
	return []byte(s)
}
