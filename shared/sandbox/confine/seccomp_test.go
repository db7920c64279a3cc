//go:build linux

package confine

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData lays out struct seccomp_data for golang.org/x/net/bpf's VM,
// whose loads are big-endian: each 32-bit word the filter loads is written
// big-endian at the offset the kernel would use.
func seccompData(archID arch.AuditArch, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], uint32(archID))
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[16+8*i+4:], uint32(a>>32))
	}
	return b
}

func TestSeccompFilterDecisions(t *testing.T) {
	t.Parallel()
	g := guard{PID: 4242, PGID: 4200, TIDs: []int{4243, 4244}, PPID: 4100}
	neg := func(v int) uint64 { return uint64(uint32(int32(-v))) }
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			prog, err := buildFilter(tableOf(a), g)
			if err != nil {
				t.Fatal(err)
			}
			vm, err := bpf.NewVM(prog)
			if err != nil {
				t.Fatalf("the filter is not valid BPF: %v", err)
			}
			nr := func(name string) uint32 {
				n, ok := a.SyscallNames[name]
				if !ok {
					t.Fatalf("%s has no %s", a.Name, name)
				}
				return uint32(n)
			}
			type tc struct {
				desc string
				in   []byte
				want uint32
			}
			tests := []tc{
				{"read", seccompData(a.ID, nr("read")), retAllow},
				{"execve", seccompData(a.ID, nr("execve")), retAllow},
				{"clone for a thread", seccompData(a.ID, nr("clone"), unix.CLONE_VM|unix.CLONE_THREAD|unix.CLONE_SIGHAND), retAllow},
				{"clone CLONE_NEWUSER", seccompData(a.ID, nr("clone"), unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), retEPERM},
				{"clone CLONE_NEWNS", seccompData(a.ID, nr("clone"), unix.CLONE_NEWNS), retEPERM},
				{"clone3", seccompData(a.ID, nr("clone3")), retENOSYS},
				{"pidfd_send_signal", seccompData(a.ID, nr("pidfd_send_signal")), retENOSYS},
				{"prctl subreaper off", seccompData(a.ID, nr("prctl"), unix.PR_SET_CHILD_SUBREAPER, 0), retEPERM},
				{"prctl subreaper on", seccompData(a.ID, nr("prctl"), unix.PR_SET_CHILD_SUBREAPER, 1), retAllow},
				{"prctl subreaper, upper half set", seccompData(a.ID, nr("prctl"), unix.PR_SET_CHILD_SUBREAPER, 1<<32), retAllow},
				{"prctl name", seccompData(a.ID, nr("prctl"), unix.PR_SET_NAME, 0), retAllow},
				{"kill sandboxd", seccompData(a.ID, nr("kill"), 4242, 9), retEPERM},
				{"kill sandboxd, upper half set", seccompData(a.ID, nr("kill"), 1<<32|4242, 9), retEPERM},
				{"kill sandboxd's group", seccompData(a.ID, nr("kill"), neg(4200), 9), retEPERM},
				{"kill -1", seccompData(a.ID, nr("kill"), neg(1), 9), retEPERM},
				{"kill another pid", seccompData(a.ID, nr("kill"), 4300, 9), retAllow},
				{"kill a sandboxd thread", seccompData(a.ID, nr("kill"), 4243, 9), retEPERM},
				{"rt_sigqueueinfo a sandboxd thread", seccompData(a.ID, nr("rt_sigqueueinfo"), 4244, 9), retEPERM},
				{"rt_sigqueueinfo another pid", seccompData(a.ID, nr("rt_sigqueueinfo"), 4300, 9), retAllow},
				{"rt_tgsigqueueinfo sandboxd", seccompData(a.ID, nr("rt_tgsigqueueinfo"), 4242, 4243, 9), retEPERM},
				{"prlimit64 sandboxd", seccompData(a.ID, nr("prlimit64"), 4242, unix.RLIMIT_NOFILE), retEPERM},
				{"prlimit64 a sandboxd thread", seccompData(a.ID, nr("prlimit64"), 4244, unix.RLIMIT_CPU), retEPERM},
				{"prlimit64 itself", seccompData(a.ID, nr("prlimit64"), 0, unix.RLIMIT_NOFILE), retAllow},
				{"prlimit64 another pid", seccompData(a.ID, nr("prlimit64"), 4300, unix.RLIMIT_NOFILE), retAllow},
				{"fcntl F_SETOWN a sandboxd thread", seccompData(a.ID, nr("fcntl"), 3, fSetown, 4243), retEPERM},
				{"fcntl F_SETOWN sandboxd's group", seccompData(a.ID, nr("fcntl"), 3, fSetown, neg(4200)), retEPERM},
				{"kill sandboxd's parent", seccompData(a.ID, nr("kill"), 4100, 15), retEPERM},
				{"kill init", seccompData(a.ID, nr("kill"), 1, 15), retEPERM},
				{"tgkill init", seccompData(a.ID, nr("tgkill"), 1, 1, 15), retEPERM},
				{"tkill sandboxd's parent", seccompData(a.ID, nr("tkill"), 4100, 15), retEPERM},
				{"setpriority a sandboxd thread", seccompData(a.ID, nr("setpriority"), prioProcess, 4243, 19), retEPERM},
				{"setpriority itself", seccompData(a.ID, nr("setpriority"), prioProcess, 0, 19), retAllow},
				{"setpriority another pid", seccompData(a.ID, nr("setpriority"), prioProcess, 4300, 19), retAllow},
				{"setpriority sandboxd's group", seccompData(a.ID, nr("setpriority"), prioPgrp, 4200, 19), retEPERM},
				{"setpriority a user", seccompData(a.ID, nr("setpriority"), prioUser, 0, 19), retEPERM},
				{"ioprio_set sandboxd", seccompData(a.ID, nr("ioprio_set"), ioprioProcess, 4242, 0), retEPERM},
				{"ioprio_set a user", seccompData(a.ID, nr("ioprio_set"), ioprioUser, 0, 0), retEPERM},
				{"ioprio_set another pid", seccompData(a.ID, nr("ioprio_set"), ioprioProcess, 4300, 0), retAllow},
				{"sched_setaffinity a sandboxd thread", seccompData(a.ID, nr("sched_setaffinity"), 4244, 8, 0), retEPERM},
				{"sched_setaffinity itself", seccompData(a.ID, nr("sched_setaffinity"), 0, 8, 0), retAllow},
				{"sched_setscheduler sandboxd", seccompData(a.ID, nr("sched_setscheduler"), 4242, 0, 0), retEPERM},
				{"sched_setparam sandboxd", seccompData(a.ID, nr("sched_setparam"), 4242, 0), retEPERM},
				{"sched_setattr sandboxd", seccompData(a.ID, nr("sched_setattr"), 4242, 0, 0), retEPERM},
				{"tgkill sandboxd", seccompData(a.ID, nr("tgkill"), 4242, 4242, 9), retEPERM},
				{"tkill a sandboxd thread", seccompData(a.ID, nr("tkill"), 4244, 9), retEPERM},
				{"tkill another thread", seccompData(a.ID, nr("tkill"), 5000, 9), retAllow},
				{"rt_sigqueueinfo sandboxd", seccompData(a.ID, nr("rt_sigqueueinfo"), 4242, 9), retEPERM},
				{"fcntl F_SETOWN sandboxd", seccompData(a.ID, nr("fcntl"), 3, fSetown, 4242), retEPERM},
				{"fcntl F_SETOWN other", seccompData(a.ID, nr("fcntl"), 3, fSetown, 4300), retAllow},
				{"fcntl F_SETOWN_EX", seccompData(a.ID, nr("fcntl"), 3, fSetownEx, 0), retEPERM},
				{"fcntl F_GETFL", seccompData(a.ID, nr("fcntl"), 3, unix.F_GETFL), retAllow},
				{"ioctl TIOCSTI", seccompData(a.ID, nr("ioctl"), 0, tiocsti), retEPERM},
				{"ioctl TCGETS", seccompData(a.ID, nr("ioctl"), 0, unix.TCGETS), retAllow},
				{"socket AF_VSOCK", seccompData(a.ID, nr("socket"), afVSOCK, 1, 0), retEPERM},
				{"socket AF_INET", seccompData(a.ID, nr("socket"), unix.AF_INET, 1, 0), retAllow},
				{"personality query", seccompData(a.ID, nr("personality"), 0xffffffff), retAllow},
				{"personality PER_LINUX", seccompData(a.ID, nr("personality"), 0), retAllow},
				{"personality ADDR_NO_RANDOMIZE", seccompData(a.ID, nr("personality"), 0x0040000 /* ADDR_NO_RANDOMIZE */), retEPERM},
				{"foreign architecture", seccompData(arch.I386.ID, 26 /* ptrace on i386 */), retKill},
				{"foreign architecture, harmless call", seccompData(arch.ARM.ID, 3), retKill},
			}
			for _, name := range append(append([]string{}, refused...), fallback...) {
				n, ok := a.SyscallNames[name]
				if !ok {
					continue
				}
				want := retEPERM
				if name == "clone3" || name == "pidfd_send_signal" {
					want = retENOSYS
				}
				tests = append(tests, tc{name, seccompData(a.ID, uint32(n)), want})
			}
			if a.ID == arch.X86_64.ID {
				tests = append(tests, tc{"x32 read", seccompData(a.ID, x32Bit), retKill})
			}
			// Every other call of the table, and numbers past it, are allowed
			// (with zero arguments no conditional rule matches).
			ruled := map[string]bool{}
			for _, n := range append(append([]string{}, refused...), fallback...) {
				ruled[n] = true
			}
			for nr, name := range a.SyscallNumbers {
				if !ruled[name] {
					tests = append(tests, tc{name, seccompData(a.ID, uint32(nr)), retAllow})
				}
			}
			tests = append(tests, tc{"unknown call 1000", seccompData(a.ID, 1000), retAllow})
			for _, tt := range tests {
				got, err := vm.Run(tt.in)
				if err != nil {
					t.Fatalf("%s: %v", tt.desc, err)
				}
				if uint32(got) != tt.want {
					t.Errorf("%s: got %s, want %s", tt.desc, action(uint32(got)), action(tt.want))
				}
			}
		})
	}
}

func action(v uint32) string {
	switch v & unix.SECCOMP_RET_ACTION_FULL {
	case retAllow:
		return "ALLOW"
	case retKill:
		return "KILL_PROCESS"
	case unix.SECCOMP_RET_ERRNO:
		return fmt.Sprintf("ERRNO(%v)", unix.Errno(v&unix.SECCOMP_RET_DATA))
	}
	return fmt.Sprintf("%#x", v)
}

func TestSeccompFilterIsShort(t *testing.T) {
	t.Parallel()
	// A binary tree keeps an allowed call to a few comparisons: count the
	// instructions read on the way to ALLOW for read(2).
	prog, err := buildFilter(tableOf(arch.X86_64), guard{PID: 10, PGID: 10, TIDs: make([]int, maxGuardTIDs)})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d instructions", len(raw))
	words := map[uint32]uint32{0: uint32(arch.X86_64.SyscallNames["read"]), 4: uint32(arch.X86_64.ID)}
	var acc uint32
	for pc, steps := 0, 1; pc < len(prog); steps++ {
		switch in := prog[pc].(type) {
		case bpf.LoadAbsolute:
			acc = words[in.Off]
			pc++
		case bpf.JumpIf:
			var taken bool
			switch in.Cond {
			case bpf.JumpEqual:
				taken = acc == in.Val
			case bpf.JumpGreaterOrEqual:
				taken = acc >= in.Val
			default:
				t.Fatalf("unexpected test %v on the way to read", in)
			}
			if taken {
				pc += 1 + int(in.SkipTrue)
			} else {
				pc += 1 + int(in.SkipFalse)
			}
		case bpf.Jump:
			pc += 1 + int(in.Skip)
		case bpf.RetConstant:
			if in.Val != retAllow {
				t.Fatalf("read: got %s", action(in.Val))
			}
			t.Logf("read(2) is allowed after %d instructions", steps)
			if steps > 24 {
				t.Errorf("read(2) runs %d instructions, want at most 24", steps)
			}
			return
		default:
			t.Fatalf("unexpected instruction %v", in)
		}
	}
	t.Fatal("no return reached")
}

func TestSeccompFilterWithoutGuard(t *testing.T) {
	t.Parallel()
	prog, err := buildFilter(tableOf(arch.X86_64), guard{})
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := vm.Run(seccompData(arch.X86_64.ID, uint32(arch.X86_64.SyscallNames["kill"]), 1, 9))
	if uint32(got) != retAllow {
		t.Fatalf("kill with no guard: got %s, want ALLOW", action(uint32(got)))
	}
}

// tableOf is go-seccomp-bpf's table for a as the filter takes it.
func tableOf(a *arch.Info) *sysTable {
	return &sysTable{Name: a.Name, ID: uint32(a.ID), SyscallNames: a.SyscallNames}
}

// TestNativeTable checks the filter's own table of the running architecture
// against go-seccomp-bpf's: the same calls, with the same numbers, so that
// the filter the trampoline loads is the one the other tests examine.
func TestNativeTable(t *testing.T) {
	native, err := nativeArch()
	if err != nil {
		t.Skip(err)
	}
	a, err := arch.GetInfo(native.Name)
	if err != nil {
		t.Fatal(err)
	}
	if native.ID != uint32(a.ID) {
		t.Errorf("audit arch %#x, go-seccomp-bpf says %#x", native.ID, uint32(a.ID))
	}
	names := append(append(append([]string{}, refused...), fallback...), mandatory...)
	for _, r := range conditional(guard{PID: 10, PGID: 10}) {
		names = append(names, r.name)
	}
	distinct := map[string]bool{}
	for _, name := range names {
		distinct[name] = true
		want, inLib := a.SyscallNames[name]
		got, inOurs := native.SyscallNames[name]
		if inLib != inOurs || got != want {
			t.Errorf("%s on %s: ours %d (%v), go-seccomp-bpf %d (%v)", name, a.Name, got, inOurs, want, inLib)
		}
	}
	if len(native.SyscallNames) > len(distinct) {
		t.Errorf("the table has %d calls, the filter names %d", len(native.SyscallNames), len(distinct))
	}
	want, _ := buildFilter(tableOf(a), guard{PID: 10, PGID: 10, TIDs: []int{11}})
	got, _ := buildFilter(native, guard{PID: 10, PGID: 10, TIDs: []int{11}})
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Error("the filters built from the two tables differ")
	}
}

// TestSeccompFilterRanges: sandboxd's ids tested as runs of consecutive
// numbers refuse every id of a run and none either side of it, in every
// call that names sandboxd, whatever the upper half of the argument.
func TestSeccompFilterRanges(t *testing.T) {
	t.Parallel()
	var tids []int
	for id := 5000; id < 5100; id++ { // a long run, tested as a range
		tids = append(tids, id)
	}
	tids = append(tids, 6001, 6003, 7000, 7001, 7002, 5050) // ids alone, a short run, a repeat
	g := guard{PID: 4999 - minRange, PGID: 4200, TIDs: tids, PPID: 4100}
	refused := []int{4999 - minRange, 5000, 5001, 5049, 5098, 5099, 6001, 6003, 7000, 7002}
	allowed := []int{4999, 5100, 6000, 6002, 6004, 6999, 7003, 4998 - minRange}
	prog, err := buildFilter(tableOf(arch.X86_64), g)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("the filter is not valid BPF: %v", err)
	}
	nr := func(name string) uint32 { return uint32(arch.X86_64.SyscallNames[name]) }
	calls := map[string]func(id uint64) []byte{
		"kill":               func(id uint64) []byte { return seccompData(arch.X86_64.ID, nr("kill"), id, 9) },
		"tkill":              func(id uint64) []byte { return seccompData(arch.X86_64.ID, nr("tkill"), id, 9) },
		"prlimit64":          func(id uint64) []byte { return seccompData(arch.X86_64.ID, nr("prlimit64"), id, unix.RLIMIT_NOFILE) },
		"sched_setaffinity":  func(id uint64) []byte { return seccompData(arch.X86_64.ID, nr("sched_setaffinity"), id, 8, 0) },
		"rt_sigqueueinfo":    func(id uint64) []byte { return seccompData(arch.X86_64.ID, nr("rt_sigqueueinfo"), id, 9) },
		"setpriority":        func(id uint64) []byte { return seccompData(arch.X86_64.ID, nr("setpriority"), prioProcess, id, 19) },
		"ioprio_set":         func(id uint64) []byte { return seccompData(arch.X86_64.ID, nr("ioprio_set"), ioprioProcess, id, 0) },
		"fcntl F_SETOWN":     func(id uint64) []byte { return seccompData(arch.X86_64.ID, nr("fcntl"), 3, fSetown, id) },
		"sched_setscheduler": func(id uint64) []byte { return seccompData(arch.X86_64.ID, nr("sched_setscheduler"), id, 0, 0) },
	}
	for name, call := range calls {
		for _, upper := range []uint64{0, 1 << 32} {
			for _, want := range []struct {
				ids []int
				ret uint32
			}{{refused, retEPERM}, {allowed, retAllow}} {
				for _, id := range want.ids {
					got, err := vm.Run(call(upper | uint64(id)))
					if err != nil {
						t.Fatalf("%s %d: %v", name, id, err)
					}
					if uint32(got) != want.ret {
						t.Errorf("%s of %d (upper half %#x): got %s, want %s", name, id, upper>>32, action(uint32(got)), action(want.ret))
					}
				}
			}
		}
	}
	// The setpriority and ioprio_set refusals are for the "which" that
	// names a process: a process group of the same number is another one.
	if got, _ := vm.Run(seccompData(arch.X86_64.ID, nr("setpriority"), prioPgrp, 5050, 19)); uint32(got) != retAllow {
		t.Errorf("setpriority of process group 5050: got %s, want ALLOW", action(uint32(got)))
	}
	// A run is two comparisons, not one per id.
	raw, err := bpf.Assemble(prog)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 600 {
		t.Errorf("the filter is %d instructions for %d ids, want at most 600", len(raw), len(tids))
	}
}
