//go:build linux

package confine

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter is a deny list: the call numbers come from x/sys/unix
// (seccomp_amd64.go, seccomp_arm64.go; the tests check them against
// go-seccomp-bpf's generated tables), the program is assembled here because
// that library's own assembler lets a foreign architecture's calls through
// to the default action, which for a deny list is "allow".

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	// ENOSYS makes libraries fall back to an older call the filter can see
	// into: clone3 to clone, pidfd_send_signal to kill.
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// x32Bit marks x32 system calls on x86_64.
const x32Bit = 0x40000000

// refused are the system calls a confined process may never make.
var refused = []string{
	// Other processes' memory and file descriptors.
	"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
	"move_pages", "migrate_pages",
	// Mounts and the root.
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
	"move_mount", "open_tree", "open_tree_attr", "mount_setattr",
	// Namespaces.
	"unshare", "setns",
	// Kernel attack surface a shell tool has no use for.
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key", "lookup_dcookie", "nfsservctl", "uselib", "_sysctl",
	"open_by_handle_at", "iopl", "ioperm", "modify_ldt", "syslog", "vhangup",
	// The machine itself.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
	"settimeofday", "clock_settime", "clock_adjtime", "sethostname", "setdomainname",
}

// fallback are refused with ENOSYS, see retENOSYS.
var fallback = []string{"clone3", "pidfd_send_signal"}

// Mandatory must resolve on every architecture the filter is built for; a
// table missing one of them is a bug, not a kernel difference.
var mandatory = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root", "chroot",
	"bpf", "perf_event_open", "kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "keyctl", "add_key", "request_key", "unshare", "setns", "reboot", "swapon",
	"swapoff", "userfaultfd", "open_by_handle_at", "acct", "quotactl", "settimeofday",
	"clock_settime", "clone3", "clone", "prctl", "kill", "tgkill", "tkill", "ioctl", "socket",
	"personality", "fcntl", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "prlimit64", "setpriority",
	"sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr", "ioprio_set",
}

// cmp tests one 32-bit half of a system call argument.
type cmp struct {
	arg int
	hi  bool // the upper half; by default the lower one
	op  bpf.JumpTest
	val uint32
}

// A conditional refusal: the call is refused when every cmp of any one of
// the conjunctions holds.
type condRule struct {
	name   string
	anyOf  [][]cmp
	action uint32
}

func lo(arg int, op bpf.JumpTest, v uint32) cmp { return cmp{arg: arg, op: op, val: v} }

const (
	// CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET.
	cloneNamespaces = 0x7E020000
	afVSOCK         = 40
	tiocsti         = 0x5412
	tioclinux       = 0x541C
	fiosetown       = 0x8901
	siocspgrp       = 0x8902
	fSetown         = 8
	fSetownEx       = 15
	// setpriority's and ioprio_set's "which".
	prioProcess, prioPgrp, prioUser       = 0, 1, 2
	ioprioProcess, ioprioPgrp, ioprioUser = 1, 2, 3
)

// conditional builds the argument-dependent refusals. g is sandboxd.
func conditional(g guard) []condRule {
	eq := func(arg int, v uint32) []cmp { return []cmp{lo(arg, bpf.JumpEqual, v)} }
	rules := []condRule{
		{"clone", [][]cmp{{lo(0, bpf.JumpBitsSet, cloneNamespaces)}}, retEPERM},
		// The trampoline made the process a child subreaper, so that no
		// descendant leaves its tree; it may not undo that. (arg2 is an
		// unsigned long the kernel tests as a whole.)
		{"prctl", [][]cmp{{lo(0, bpf.JumpEqual, unix.PR_SET_CHILD_SUBREAPER), lo(1, bpf.JumpEqual, 0), {arg: 1, hi: true, op: bpf.JumpEqual, val: 0}}}, retEPERM},
		{"ioctl", [][]cmp{eq(1, tiocsti), eq(1, tioclinux), eq(1, fiosetown), eq(1, siocspgrp)}, retEPERM},
		{"socket", [][]cmp{eq(0, afVSOCK)}, retEPERM},
		// personality: only the values Docker allows (PER_LINUX,
		// PER_LINUX32, UNAME26 and the query 0xffffffff).
		{"personality", [][]cmp{{
			lo(0, bpf.JumpNotEqual, 0), lo(0, bpf.JumpNotEqual, 0x8), lo(0, bpf.JumpNotEqual, 0x20000),
			lo(0, bpf.JumpNotEqual, 0x20008), lo(0, bpf.JumpNotEqual, 0xffffffff),
		}}, retEPERM},
	}
	if g.PID <= 1 {
		return rules
	}
	// What a process of sandboxd's uid (where sandboxd is not root and
	// they share one) could do to it: signal it, lower its resource limits
	// or its scheduling; a root sandboxd acting as their uid (ActAs) can
	// still be reniced or pinned by it. kill(2), rt_sigqueueinfo(2), prlimit64(2) and F_SETOWN
	// take the id of any of its threads as well as its pid, and then act
	// on the whole process; the scheduling calls act on the thread named.
	// Its parent (tini in the image) and init pass signals on to it, so
	// they count as sandboxd. setpriority and ioprio_set for a whole user
	// would reach it too and are refused. pid_t arguments are ints: the
	// kernel ignores the upper half, so only the lower one is compared.
	ids, procs := append([]int{g.PID}, g.TIDs...), []int{g.PID}
	for _, pid := range []int{g.PPID, 1} {
		if pid > 0 && !slices.Contains(ids, pid) {
			ids, procs = append(ids, pid), append(procs, pid)
		}
	}
	// Any id that stands for sandboxd, as argument 0: its threads were
	// mostly started together (ReserveThreads), so their ids are runs of
	// consecutive numbers, each tested as a range rather than one by one.
	// That keeps the filter short, and the kernel compiles it again for
	// every command.
	self := idTests(ids)
	var targets [][]cmp // a process id
	for _, pid := range procs {
		targets = append(targets, eq(0, uint32(pid)))
	}
	var group [][]cmp // its process group, as a negative pid
	if g.PGID > 1 {
		group = [][]cmp{eq(0, uint32(-int32(g.PGID)))}
		targets = append(targets, group...)
	}
	killTargets := append(append(slices.Clone(self), group...), eq(0, 0xffffffff)) // kill(-1)
	// first holds and the id tests hold of argument arg.
	when := func(first cmp, arg int, tests [][]cmp) [][]cmp {
		var out [][]cmp
		for _, conj := range tests {
			c := []cmp{first}
			for _, t := range conj {
				t.arg = arg
				c = append(c, t)
			}
			out = append(out, c)
		}
		return out
	}
	owners := append([][]cmp{eq(1, fSetownEx)}, when(lo(1, bpf.JumpEqual, fSetown), 2, append(slices.Clone(self), group...))...)
	pgrp := [][]cmp{eq(0, uint32(g.PGID))}
	priority := append(append(when(lo(0, bpf.JumpEqual, prioProcess), 1, self), when(lo(0, bpf.JumpEqual, prioPgrp), 1, pgrp)...), eq(0, prioUser))
	ioPriority := append(append(when(lo(0, bpf.JumpEqual, ioprioProcess), 1, self), when(lo(0, bpf.JumpEqual, ioprioPgrp), 1, pgrp)...), eq(0, ioprioUser))
	rules = append(rules,
		condRule{"kill", killTargets, retEPERM},
		condRule{"tgkill", targets, retEPERM},
		condRule{"rt_tgsigqueueinfo", targets, retEPERM},
		condRule{"fcntl", owners, retEPERM},
		condRule{"setpriority", priority, retEPERM},
		condRule{"ioprio_set", ioPriority, retEPERM},
	)
	// The calls whose first argument is the process or thread acted on.
	for _, name := range []string{"tkill", "rt_sigqueueinfo", "prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"} {
		rules = append(rules, condRule{name, self, retEPERM})
	}
	return rules
}

// minRange is the shortest run of consecutive ids tested as a range (two
// comparisons in a group of its own, six instructions); a shorter run's
// ids are tested one by one (one comparison each in a shared group).
const minRange = 8

// idTests returns the tests of argument 0 that hold exactly when it is one
// of ids: an equality for each id outside a long run of consecutive ones,
// then each such run as a range. Only the lower half of the argument is
// compared (pid_t is an int).
func idTests(ids []int) [][]cmp {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var single, ranges [][]cmp
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j] == sorted[j-1]+1 {
			j++
		}
		if j-i >= minRange {
			ranges = append(ranges, []cmp{lo(0, bpf.JumpGreaterOrEqual, uint32(sorted[i])), lo(0, bpf.JumpLessOrEqual, uint32(sorted[j-1]))})
		} else {
			for _, id := range sorted[i:j] {
				single = append(single, []cmp{lo(0, bpf.JumpEqual, uint32(id))})
			}
		}
		i = j
	}
	return append(single, ranges...)
}

// sysTable is an architecture's audit id and the numbers of the calls the
// filter names.
type sysTable struct {
	Name         string
	ID           uint32 // AUDIT_ARCH_*
	SyscallNames map[string]int
}

// nativeArch is the syscall table of the running architecture.
func nativeArch() (*sysTable, error) {
	switch runtime.GOARCH {
	case "amd64", "arm64":
		return nativeTable, nil
	}
	return nil, fmt.Errorf("no seccomp filter for GOARCH %s", runtime.GOARCH)
}

// buildFilter assembles the filter for a (x86_64 or aarch64): check the
// architecture, then find the call number in a binary tree over the calls
// that have a rule, so that an allowed call costs a handful of comparisons
// rather than one per rule.
func buildFilter(a *sysTable, g guard) ([]bpf.Instruction, error) {
	for _, name := range mandatory {
		if _, ok := a.SyscallNames[name]; !ok {
			return nil, fmt.Errorf("seccomp: %s has no system call %s", a.Name, name)
		}
	}
	var entries []entry
	add := func(name string, block []bpf.Instruction) {
		if nr, ok := a.SyscallNames[name]; ok { // iopl is not on aarch64
			entries = append(entries, entry{uint32(nr), block})
		}
	}
	for _, name := range refused {
		add(name, []bpf.Instruction{bpf.RetConstant{Val: retEPERM}})
	}
	for _, name := range fallback {
		add(name, []bpf.Instruction{bpf.RetConstant{Val: retENOSYS}})
	}
	for _, r := range conditional(g) {
		block, err := r.assemble()
		if err != nil {
			return nil, err
		}
		add(r.name, block)
	}
	slices.SortFunc(entries, func(x, y entry) int { return cmpInt(x.nr, y.nr) })
	for k := 1; k < len(entries); k++ {
		if entries[k].nr == entries[k-1].nr {
			return nil, fmt.Errorf("seccomp: two rules for call %d on %s", entries[k].nr, a.Name)
		}
	}

	prog := []bpf.Instruction{
		// Another ABI's calls have other numbers: kill rather than guess.
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.ID, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		bpf.LoadAbsolute{Off: 0, Size: 4},
	}
	if a.ID == unix.AUDIT_ARCH_X86_64 {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: retKill})
	}
	tree, err := searchTree(entries)
	if err != nil {
		return nil, err
	}
	prog = append(prog, tree...)
	if len(prog) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp: filter has %d instructions", len(prog))
	}
	return prog, nil
}

func cmpInt(x, y uint32) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// entry is the code for one call number; it ends in a return on every
// path, and expects the call number in A.
type entry struct {
	nr    uint32
	block []bpf.Instruction
}

// searchTree returns code that, with the call number in A, runs the entry
// for it or allows the call. entries are sorted.
func searchTree(entries []entry) ([]bpf.Instruction, error) {
	if len(entries) <= 4 {
		var out []bpf.Instruction
		for _, e := range entries {
			if len(e.block) > 255 {
				return nil, fmt.Errorf("seccomp: rule for call %d too long", e.nr)
			}
			out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: e.nr, SkipFalse: uint8(len(e.block))})
			out = append(out, e.block...)
		}
		return append(out, bpf.RetConstant{Val: retAllow}), nil
	}
	mid := len(entries) / 2
	low, err := searchTree(entries[:mid])
	if err != nil {
		return nil, err
	}
	high, err := searchTree(entries[mid:])
	if err != nil {
		return nil, err
	}
	// nr >= pivot falls through to high; below it, jump over high.
	out := []bpf.Instruction{
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: entries[mid].nr, SkipTrue: 1},
		bpf.Jump{Skip: uint32(len(high))},
	}
	out = append(out, high...)
	return append(out, low...), nil
}

// assemble returns the code run once the call number matched: it returns
// r.action when a conjunction holds, and allows the call otherwise.
func (r condRule) assemble() ([]bpf.Instruction, error) {
	var block []bpf.Instruction
	if sameArg(r.anyOf) {
		// A list of values of one argument: load it once.
		c := r.anyOf[0][0]
		k := len(r.anyOf)
		block = append(block, bpf.LoadAbsolute{Off: argOffset(c), Size: 4})
		for i, conj := range r.anyOf {
			block = append(block, bpf.JumpIf{Cond: bpf.JumpEqual, Val: conj[0].val, SkipTrue: uint8(k - i)})
		}
		block = append(block, bpf.RetConstant{Val: retAllow}, bpf.RetConstant{Val: r.action})
	} else {
		for _, g := range groups(r.anyOf) {
			block = append(block, g.code(r.action)...)
		}
		block = append(block, bpf.RetConstant{Val: retAllow})
	}
	if len(block) > 255 {
		return nil, fmt.Errorf("seccomp: rule for %s too long", r.name)
	}
	return block, nil
}

// A cmpGroup is conjunctions that differ only in their last test, an
// equality on one argument (F_SETOWN, then which pid): the tests before it
// run once, then the values.
type cmpGroup struct {
	prefix []cmp
	last   []cmp
}

// groups gathers neighbouring conjunctions into cmpGroups.
func groups(anyOf [][]cmp) []cmpGroup {
	var out []cmpGroup
	for _, conj := range anyOf {
		prefix, last := conj[:len(conj)-1], conj[len(conj)-1]
		if n := len(out); n > 0 {
			g := &out[n-1]
			first := g.last[0]
			if slices.Equal(g.prefix, prefix) && first.op == bpf.JumpEqual && last.op == bpf.JumpEqual &&
				first.arg == last.arg && first.hi == last.hi {
				g.last = append(g.last, last)
				continue
			}
		}
		out = append(out, cmpGroup{prefix: prefix, last: []cmp{last}})
	}
	return out
}

// code returns the group's instructions: return action when a conjunction
// holds, else go on to the instructions that follow.
func (g cmpGroup) code(action uint32) []bpf.Instruction {
	n := len(g.last)
	size := 2*len(g.prefix) + 1 + n + 2 // the prefix, a load, the values, a jump and the return
	var out []bpf.Instruction
	for _, c := range g.prefix {
		out = append(out, bpf.LoadAbsolute{Off: argOffset(c), Size: 4})
		out = append(out, bpf.JumpIf{Cond: c.op, Val: c.val, SkipFalse: uint8(size - len(out) - 1)})
	}
	out = append(out, bpf.LoadAbsolute{Off: argOffset(g.last[0]), Size: 4})
	for i, c := range g.last {
		out = append(out, bpf.JumpIf{Cond: c.op, Val: c.val, SkipTrue: uint8(n - i)})
	}
	return append(out, bpf.Jump{Skip: 1}, bpf.RetConstant{Val: action})
}

// sameArg reports whether every conjunction is one equality on the same
// half of the same argument.
func sameArg(anyOf [][]cmp) bool {
	if len(anyOf) < 2 {
		return false
	}
	first := anyOf[0]
	for _, conj := range anyOf {
		if len(conj) != 1 || conj[0].op != bpf.JumpEqual || conj[0].arg != first[0].arg || conj[0].hi != first[0].hi {
			return false
		}
	}
	return len(first) == 1
}

func argOffset(c cmp) uint32 {
	off := uint32(16 + 8*c.arg)
	if c.hi {
		off += 4 // both architectures are little-endian
	}
	return off
}

// compiledFilter returns the filter for g as the kernel takes it (struct
// sock_filter, 8 bytes an instruction, native byte order), hex-encoded as
// the policy carries it (withGuard), so that Command hands the trampoline a
// program to load rather than one to build. The last few programs are
// cached: g changes only when sandboxd's threads do.
func compiledFilter(g guard) (string, error) {
	key := strconv.Itoa(g.PID) + " " + strconv.Itoa(g.PGID) + " " + strconv.Itoa(g.PPID)
	for _, tid := range g.TIDs {
		key += " " + strconv.Itoa(tid)
	}
	filterCache.Lock()
	defer filterCache.Unlock()
	if prog, ok := filterCache.progs[key]; ok {
		return prog, nil
	}
	a, err := nativeArch()
	if err != nil {
		return "", err
	}
	insts, err := buildFilter(a, g)
	if err != nil {
		return "", err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return "", fmt.Errorf("seccomp: assemble: %w", err)
	}
	prog := make([]byte, 0, 8*len(raw))
	for _, in := range raw {
		prog = binary.NativeEndian.AppendUint16(prog, in.Op)
		prog = append(prog, in.Jt, in.Jf)
		prog = binary.NativeEndian.AppendUint32(prog, in.K)
	}
	if len(filterCache.progs) >= 16 {
		clear(filterCache.progs)
	}
	enc := hex.EncodeToString(prog)
	filterCache.progs[key] = enc
	return enc, nil
}

var filterCache = struct {
	sync.Mutex
	progs map[string]string
}{progs: map[string]string{}}
