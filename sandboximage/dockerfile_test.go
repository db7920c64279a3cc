package sandboximage_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/sandboximage"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, …
	args string
}

func parseDockerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if body, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		full := strings.TrimSpace(cur.String())
		cur.Reset()
		if full == "" {
			continue
		}
		cmd, args, _ := strings.Cut(full, " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
	}
	return out
}

// stages splits the instructions at each FROM.
func stages(ins []instruction) [][]instruction {
	var out [][]instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			out = append(out, nil)
		}
		if len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], in)
		}
	}
	return out
}

// stageName is the name a stage's FROM gives it ("" for none) and the
// image it starts from.
func stageName(from instruction) (image, name string) {
	image, name, _ = strings.Cut(from.args, " AS ")
	return strings.TrimSpace(image), strings.TrimSpace(name)
}

// image is stage i as built: the instructions of the stages it starts from
// (FROM an earlier stage's name), then its own, its FROM left out; the
// first instruction is the FROM of the external image at its root.
func image(st [][]instruction, i int) []instruction {
	from, _ := stageName(st[i][0])
	for j := range i {
		if _, name := stageName(st[j][0]); name != "" && name == from {
			return append(image(st, j), st[i][1:]...)
		}
	}
	return st[i]
}

// target is the index of the stage named name, or -1.
func target(st [][]instruction, name string) int {
	for i, stage := range st {
		if _, n := stageName(stage[0]); n == name {
			return i
		}
	}
	return -1
}

// last is the last value of cmd in an image: what a later CMD overrides.
func last(img []instruction, cmd string) []string {
	got := find(img, cmd)
	if len(got) == 0 {
		return nil
	}
	return got[len(got)-1:]
}

func find(stage []instruction, cmd string) []string {
	var out []string
	for _, in := range stage {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

func jsonArray(t *testing.T, s string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q is not an exec-form JSON array: %v", s, err)
	}
	return v
}

func TestDockerfileMatchesTheImageConstants(t *testing.T) {
	t.Parallel()
	st := stages(parseDockerfile(t))
	if len(st) < 2 {
		t.Fatalf("the Dockerfile has %d stages, want a multi-stage build", len(st))
	}
	// The default build (no --target) is the last stage, as built.
	build, final := st[0], image(st, len(st)-1)

	from := build[0].args
	if !strings.Contains(from, "golang:") || !strings.HasSuffix(from, " AS build") {
		t.Errorf("first stage FROM %q, want a golang builder named build", from)
	}
	builtTo := ""
	for _, run := range find(build, "RUN") {
		if m := regexp.MustCompile(`go build .*-o (\S+) \./sandboximage/sandboxd\b`).FindStringSubmatch(run); m != nil {
			builtTo = m[1]
		}
	}
	if builtTo == "" {
		t.Fatal("the builder does not go build ./sandboximage/sandboxd with -o")
	}
	wantFlags := shellFlags("=")
	runs := strings.Join(find(build, "RUN"), " ")
	if !strings.Contains(runs, "CGO_ENABLED=1") || !strings.Contains(runs, "go build "+wantFlags+" -o") {
		t.Errorf("sandboxd is not built with CGO_ENABLED=1 and go build %s (sandboximage.BuildFlags): %q", wantFlags, runs)
	}

	if base, _ := stageName(final[0]); !regexp.MustCompile(`^debian:(trixie|bookworm)-slim$`).MatchString(base) {
		t.Errorf("runtime FROM %q, want debian:trixie-slim or bookworm-slim", final[0].args)
	}
	runs = strings.Join(find(final, "RUN"), "\n")
	installed := regexp.MustCompile(`apt-get install[^&]*`).FindString(runs)
	for _, pkg := range []string{"bash", "coreutils", "git", "ripgrep", "python3", "ca-certificates", "tini"} {
		if !slices.Contains(strings.Fields(installed), pkg) {
			t.Errorf("apt-get install lacks %s: %q", pkg, installed)
		}
	}
	if !strings.Contains(runs, "rm -rf /var/lib/apt/lists/*") {
		t.Error("the apt lists are left in the image")
	}
	for _, want := range []string{
		fmt.Sprintf("groupadd --gid %d %s", sandboximage.GID, sandboximage.User),
		fmt.Sprintf("useradd --uid %d --gid %d", sandboximage.UID, sandboximage.GID),
		fmt.Sprintf("chown %s:%s %s %s %s", sandboximage.User, sandboximage.User, sandboximage.AgentDir, sandboximage.Workdir, sandboximage.WorkspaceDir),
	} {
		if !strings.Contains(runs, want) {
			t.Errorf("no %q in the runtime stage's RUN lines", want)
		}
	}
	if !regexp.MustCompile(`useradd [^&]* ` + sandboximage.User + `\b`).MatchString(runs) {
		t.Errorf("useradd does not name user %s", sandboximage.User)
	}
	for _, dir := range []string{sandboximage.AgentDir, sandboximage.Workdir, sandboximage.WorkspaceDir, sandboximage.DataDir} {
		if !regexp.MustCompile(`mkdir -p [^&]*` + regexp.QuoteMeta(dir) + `\b`).MatchString(runs) {
			t.Errorf("the image does not create %s", dir)
		}
	}

	want := map[string]string{
		"COPY":    "--from=build " + builtTo + " " + sandboximage.BinaryPath,
		"WORKDIR": sandboximage.Workdir,
		"EXPOSE":  fmt.Sprint(sandboximage.Port),
	}
	for cmd, w := range want {
		got := find(final, cmd)
		if len(got) != 1 || got[0] != w {
			t.Errorf("runtime stage %s = %q, want [%q]", cmd, got, w)
		}
	}
	// sandboxd runs as root, its commands as the agent user.
	if users := find(final, "USER"); len(users) != 0 {
		t.Errorf("runtime stage USER %q: sandboxd must run as root, to start its commands as %s (--user) apart from itself", users, sandboximage.User)
	}
	if args := strings.Join(sandboximage.ServeArgs(), " "); !strings.Contains(args, fmt.Sprintf("--user %d:%d", sandboximage.UID, sandboximage.GID)) {
		t.Errorf("sandboxd serve %s does not run its commands as %d:%d", args, sandboximage.UID, sandboximage.GID)
	}
	health := find(final, "HEALTHCHECK")
	if len(health) != 1 {
		t.Fatalf("HEALTHCHECK lines: %q, want one", health)
	}
	_, healthCmd, ok := strings.Cut(health[0], " CMD ")
	if !ok || !slices.Equal(jsonArray(t, healthCmd), sandboximage.HealthCheck()) {
		t.Errorf("HEALTHCHECK %q, want CMD %q", health[0], sandboximage.HealthCheck())
	}
	for cmd, w := range map[string][]string{"ENTRYPOINT": sandboximage.Entrypoint(), "CMD": sandboximage.ServeArgs()} {
		got := last(final, cmd)
		if len(got) != 1 || !slices.Equal(jsonArray(t, got[0]), w) {
			t.Errorf("%s = %q, want %q", cmd, got, w)
		}
	}
	if !strings.Contains(strings.Join(sandboximage.ServeArgs(), " "), "--listen :"+fmt.Sprint(sandboximage.Port)) {
		t.Errorf("sandboxd serve does not listen on port %d", sandboximage.Port)
	}
	// On every address of the task, the token must not cross the network
	// in clear text: sandboxd serves TLS with the key the runner pins, and
	// the health check speaks TLS.
	if args := sandboximage.ServeArgs(); !slices.Contains(args, "--tls-from-token") || slices.Contains(args, "--plain-http") {
		t.Errorf("sandboxd serve %q does not serve TLS from the token", args)
	}
	if !slices.Contains(sandboximage.HealthCheck(), "--tls") {
		t.Errorf("the health check %q does not speak TLS, which sandboxd serves", sandboximage.HealthCheck())
	}
}

// TestBrowserImage: the browser target is the default image with Debian's
// chromium and a font, running sandboxd with --browser at Chromium's path
// (sandboximage.BrowserServeArgs); the default build, the last stage, has
// neither, so fleets without browser tools keep the small image.
func TestBrowserImage(t *testing.T) {
	t.Parallel()
	st := stages(parseDockerfile(t))
	i := target(st, sandboximage.BrowserTarget)
	if i < 0 {
		t.Fatalf("no stage named %s (docker build --target %s)", sandboximage.BrowserTarget, sandboximage.BrowserTarget)
	}
	if i == len(st)-1 {
		t.Fatalf("the %s stage is the last: a build without --target would make the browser image", sandboximage.BrowserTarget)
	}
	browser, plain := image(st, i), image(st, len(st)-1)
	// Both start from one stage, and the default one adds only its CMD:
	// the browser image is the default image with Chromium.
	own, plainOwn := st[i][1:], st[len(st)-1][1:]
	if from, _ := stageName(st[i][0]); from != firstWord(st[len(st)-1][0].args) || len(plainOwn) != 1 || plainOwn[0].cmd != "CMD" {
		t.Errorf("the %s stage starts FROM %s and the default one adds %v: want one stage under both, the default adding its CMD alone",
			sandboximage.BrowserTarget, from, plainOwn)
	}
	if len(browser) != len(plain)-1+len(own) || !slices.Equal(browser[:len(plain)-1], plain[:len(plain)-1]) {
		t.Errorf("the %s image is not the default image's base with Chromium", sandboximage.BrowserTarget)
	}
	runs := strings.Join(find(own, "RUN"), "\n")
	installed := strings.Fields(regexp.MustCompile(`apt-get install[^&]*`).FindString(runs))
	if !slices.Contains(installed, "chromium") || !(slices.Contains(installed, "fonts-liberation") || slices.Contains(installed, "fonts-dejavu-core")) {
		t.Errorf("the %s stage installs %q; want Debian's chromium and a font package", sandboximage.BrowserTarget, installed)
	}
	if !strings.Contains(runs, "--no-install-recommends") || !strings.Contains(runs, "rm -rf /var/lib/apt/lists/*") {
		t.Errorf("the %s stage's apt-get %q: want --no-install-recommends and the lists removed", sandboximage.BrowserTarget, runs)
	}
	if got := last(browser, "CMD"); len(got) != 1 || !slices.Equal(jsonArray(t, got[0]), sandboximage.BrowserServeArgs()) {
		t.Errorf("the %s image's CMD = %q, want %q", sandboximage.BrowserTarget, got, sandboximage.BrowserServeArgs())
	}
	if args := sandboximage.BrowserServeArgs(); !slices.Equal(args[len(args)-2:], []string{"--browser", sandboximage.BrowserPath}) ||
		!slices.Equal(args[:len(args)-2], sandboximage.ServeArgs()) || sandboximage.BrowserPath != "/usr/bin/chromium" {
		t.Errorf("BrowserServeArgs = %q; want ServeArgs and --browser /usr/bin/chromium (where Debian's chromium is)", args)
	}
	if got := last(plain, "CMD"); len(got) != 1 || slices.Contains(jsonArray(t, got[0]), "--browser") {
		t.Errorf("the default image's CMD %q passes --browser", got)
	}
	for _, in := range plain {
		if strings.Contains(in.args, "chromium") {
			t.Errorf("the default image has %s %s", in.cmd, in.args)
		}
	}
	for _, in := range own {
		switch in.cmd {
		case "RUN", "CMD":
		default:
			t.Errorf("the %s stage has %s %s: it may add Chromium and its CMD alone", sandboximage.BrowserTarget, in.cmd, in.args)
		}
	}
}

// firstWord is s up to its first space.
func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

// TestLastCMDIsTheDefaultImages: a reader of the Dockerfile's last CMD
// (e2e/deployment, standing in for the image) gets the default image's.
func TestLastCMDIsTheDefaultImages(t *testing.T) {
	t.Parallel()
	cmds := find(parseDockerfile(t), "CMD")
	if len(cmds) == 0 || !slices.Equal(jsonArray(t, cmds[len(cmds)-1]), sandboximage.ServeArgs()) {
		t.Errorf("the Dockerfile's CMDs %q; want the last to be the default image's, %q", cmds, sandboximage.ServeArgs())
	}
}

// TestBrowserMemory: each sandbox size with a browser's memory added is
// still a CPU and memory pairing Fargate accepts.
func TestBrowserMemory(t *testing.T) {
	t.Parallel()
	// Fargate's memory range in MiB for each CPU, in steps of 1024.
	valid := map[int][2]int{512: {1024, 4096}, 1024: {2048, 8192}, 2048: {4096, 16384}, 4096: {8192, 30720}}
	for _, size := range fleet.SandboxSizes() {
		mem := size.MemoryMiB() + sandboximage.BrowserMemoryMiB
		r, ok := valid[size.CPU()]
		if !ok || mem < r[0] || mem > r[1] || mem%1024 != 0 {
			t.Errorf("size %s with a browser: %d CPU, %d MiB; not a Fargate pairing", size, size.CPU(), mem)
		}
	}
	if sandboximage.BrowserMemoryMiB < 1024 {
		t.Errorf("BrowserMemoryMiB = %d; Chromium needs about a gigabyte", sandboximage.BrowserMemoryMiB)
	}
}

// TestBuildNamesTheBinarySandboxd: `go build ./sandboximage/...` makes a
// binary named sandboxd, whose call entry point works.
func TestBuildNamesTheBinarySandboxd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out := t.TempDir()
	build := exec.Command(goBin, "build", "-o", out+"/", "./...")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./sandboximage/...: %v\n%s", err, b)
	}
	bin := filepath.Join(out, "sandboxd")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no sandboxd binary: %v", err)
	}
	work := sandboxtest.Base(t) // as root, sandboxd acts as an unprivileged uid
	if err := os.WriteFile(filepath.Join(work, "x.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := exec.Command(bin, "call", "--workdir", work, "list", "{}")
	if b, err := call.CombinedOutput(); err != nil || string(b) != "x.txt" {
		t.Fatalf("sandboxd call list = %q, %v; want x.txt", b, err)
	}
}

// shellFlags is sandboximage.BuildFlags as a shell line, the -ldflags value
// quoted and joined to its flag by sep ("=" or " ").
func shellFlags(sep string) string {
	flags := slices.Clone(sandboximage.BuildFlags)
	for i := range flags {
		if i > 0 && flags[i-1] == "-ldflags" {
			flags[i] = strconv.Quote(flags[i])
		}
	}
	return strings.ReplaceAll(strings.Join(flags, " "), "-ldflags \"", "-ldflags"+sep+"\"")
}

// TestMakefileBuildsSandboxdAsTheImage: bin/sandboxd, which make dev and
// make bench use, is built like the image's.
func TestMakefileBuildsSandboxdAsTheImage(t *testing.T) {
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	want := "CGO_ENABLED=1 $(GO) build " + shellFlags(" ") + " -o $(BIN)/ ./sandboximage/..."
	if !strings.Contains(string(b), want) {
		t.Errorf("the Makefile does not build sandboxd with\n%s", want)
	}
}
