// Package confine starts the processes sandboxd runs for a fleet (bash, grep,
// exec_command) confined, and kills them again, descendants included.
//
// # How a process is confined
//
// Go's os/exec cannot run code between fork and exec, so [Policy.Command]
// returns a command that re-executes the current binary (/proc/self/exe) with
// argv[0] "agentsfleet-confine" and the encoded policy in the environment
// variable AGENTSFLEET_CONFINE_POLICY. The trampoline that reads them is C
// (trampoline.c), an ELF constructor that runs when the binary starts,
// before the Go runtime: the process is single-threaded and a confined
// command costs one exec of the binary and a few dozen system calls, not a
// Go runtime start. (This is why the package needs cgo: sandboxd is built
// with CGO_ENABLED=1, static; see sandboximage.BuildFlags.) Everything that
// takes judgement (which rights on which paths, the seccomp program) is
// decided by sandboxd in Go; the trampoline removes the variable and, in
// this order:
//
//  1. when sandboxd is root, drops to the policy's uid and gid ([NobodyID]
//     by default) with no supplementary groups, after the child has
//     entered cmd.Dir, re-arms the parent-death signal and checks that
//     sandboxd still lives and that the uid may use the directory; under
//     a [Policy.KeepRoot] policy (sandboxd's local mode for a workdir root
//     owns) it keeps uid 0 and drops every capability instead: the
//     securebits NOROOT, NO_SETUID_FIXUP, KEEP_CAPS (off) and
//     NO_CAP_AMBIENT_RAISE set and locked, every capability up to the
//     kernel's last dropped from the bounding set, the ambient set
//     cleared, the effective, permitted and inheritable sets emptied
//     (capset), and checks that nothing is left;
//  2. looks the program up in the final PATH, as the confined uid;
//  3. sets the rlimits (processes, file size, open files, CPU seconds; core
//     dumps off);
//  4. makes the process a child subreaper, so that descendants whose parent
//     dies are re-parented to it rather than to init (see [KillGroup]);
//  5. sets no_new_privs;
//  6. enforces Landlock, when the kernel has it, at the best ABI it offers
//     (up to 11);
//  7. loads the seccomp filter, which sandboxd compiled;
//  8. sets RLIMIT_AS, last, and execs the target with its environment
//     scrubbed once more ([Scrub], comparing ASCII letters without case).
//
// If any step fails it writes one line to stderr, starting with
// "agentsfleet-confine:", and exits with [ExitConfineFailure]; it never runs
// the target unconfined. A target that cannot be executed exits 127 (not
// found) or 126, as a shell would.
//
// Because the trampoline is part of the package, every binary that imports
// confine works without extra wiring: sandboxd, and the test binary of every
// package that imports it (directly or not). The child is started with
// Setsid (its own session and process group) and Pdeathsig SIGKILL (it dies
// with the sandboxd thread that started it). BenchmarkSpawn reports what a
// confined command costs against a bare one.
//
// [Start] hides most of that cost: it hands the command to a warm
// trampoline, one started and confined ahead of time for the same policy
// (steps 1 and 3 to 7; the directory is entered through a descriptor
// sandboxd opened, the stdio descriptors arrive over a socket), which then
// takes steps 2 and 8 and becomes the command. The process, its session, its
// subreaper and KillGroup are as above; the differences are in warm.go.
// Commands it cannot hand over (other stdio than files, ExtraFiles, a
// context) start cold, as with cmd.Start.
//
// sandboxd calls [SetNonDumpable] first thing at start. When it runs as
// root it then calls [ActAs] with its commands' identity: it keeps root as
// its real and saved ids, which keeps its commands from it, and opens files
// with their permissions; a trampoline starts as root again, which the real
// id allows, and drops every id for good. In local mode for a workdir root
// owns (--local --user 0) it calls [ShedCapabilities] instead: it stays uid
// 0 and sheds every capability of every thread, which the constructor in
// trampoline.c does when sandboxd executes itself again, before the Go
// runtime starts a thread. Tests call [PrepareRoots] to hand writable roots
// to the confined uid.
//
// # Security boundary
//
// Confinement prevents a confined process and its descendants from:
//   - gaining privileges through set-uid binaries or file capabilities
//     (no_new_privs);
//   - calling ptrace, process_vm_readv/writev, process_madvise, pidfd_getfd,
//     kcmp, mount and the new mount API, umount2, pivot_root, chroot, bpf,
//     perf_event_open, userfaultfd, io_uring, kexec_load, kexec_file_load,
//     module loading and unloading, keyctl, add_key, request_key, unshare,
//     setns, clone with namespace flags, reboot, swapon/swapoff, acct,
//     quotactl, open_by_handle_at, iopl/ioperm/modify_ldt, settimeofday,
//     clock_settime/clock_adjtime, syslog, vhangup, sethostname,
//     move_pages/migrate_pages, the TIOCSTI, TIOCLINUX, FIOSETOWN and
//     SIOCSPGRP ioctls, fcntl F_SETOWN_EX, AF_VSOCK sockets and unusual
//     personality flags: each fails with EPERM. clone3 and
//     pidfd_send_signal fail with ENOSYS, so that libraries fall back to
//     clone and kill, which the filter can inspect;
//   - making system calls of another ABI (i386 or arm32 compat, x32): the
//     process is killed;
//   - signalling sandboxd, setting its resource limits or changing its
//     scheduling, with kill, tgkill, tkill, sigqueue, prlimit, fcntl
//     F_SETOWN, setpriority, ioprio_set or sched_set*, by its pid, the id
//     of any of its threads, its process group, its parent (tini in the
//     image, which passes signals on), init, -1 or its whole user (EPERM).
//     The threads are those sandboxd has when the command starts: [Start]
//     does not use a warm trampoline whose filter predates one of them,
//     and sandboxd keeps idle threads in reserve ([ReserveThreads]) so
//     that it seldom starts one;
//   - connecting to abstract UNIX sockets created outside the command, and,
//     from Landlock ABI 9, to pathname UNIX sockets outside the writable
//     roots and /tmp (Landlock);
//   - opening for writing, creating, removing or renaming anything outside
//     the writable roots, /tmp and /dev/shm, and opening for reading or
//     executing anything outside the read-only roots, the system
//     directories, /proc, a few /sys and /dev entries and the writable
//     roots (Landlock; EACCES). A policy with UncheckedReads (grep's, when
//     sandboxd runs as root) leaves reading, executing and truncate(2) to
//     file permissions;
//   - exceeding the rlimits;
//   - reading sandboxd's memory or /proc/<pid>/environ, mem, maps or fd,
//     once sandboxd has called [SetNonDumpable] (the kernel refuses; with
//     Landlock it refuses even without that, as it does for any process
//     outside the command's Landlock domain);
//   - seeing sandboxd's environment: the child's environment is [BaseEnv]
//     plus the policy's Env, scrubbed.
//
// It does not:
//   - restrict the network: sockets (other than AF_VSOCK), connect and bind
//     are allowed; egress is decided by the task's network configuration;
//   - restrict files when the kernel lacks Landlock: file permissions are
//     then the only boundary, and one warning is logged;
//   - make a read-only root read-only when it lies inside a writable root,
//     /tmp or /dev/shm (Landlock grants by hierarchy and cannot subtract);
//   - restrict stat, chdir, chmod, chown, utime, xattrs, flock or fcntl on
//     files it may not open (Landlock does not cover them);
//   - prevent a confined process from signalling confined processes of
//     other commands that share its uid (so that one command can stop a
//     server another started), nor, without Landlock, from reading their
//     /proc/<pid>/environ;
//   - bound the processes of a [Policy.KeepRoot] command: the kernel does
//     not apply RLIMIT_NPROC to uid 0, with or without capabilities, so
//     only the machine's (or container's) pid limit does;
//   - keep a [Policy.KeepRoot] command from writing files root owns inside
//     the writable roots, or from reading those it may read: file
//     ownership decides there, as for any uid;
//   - bound memory use: RLIMIT_AS bounds virtual address space, which is not
//     the same thing (programs that reserve large address ranges, like
//     Chromium or a JVM on a large host, need a larger limit);
//   - close every path to sandboxd when both share a uid (sandboxd started
//     by a user other than root): a thread sandboxd starts while a command
//     runs is not in that command's filter (the reserve makes this rare), a
//     command can use up the uid's RLIMIT_NPROC, which sandboxd's own
//     threads count against, and, without Landlock, it can read the
//     environment of sandboxd's parent. Running sandboxd as root with its
//     commands under another uid (Policy.UID; --user), as the image, CI
//     and a root local run do, closes these: the kernel then refuses them
//     all.
package confine
