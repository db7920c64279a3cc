// The trampoline: confine this process and exec the command (doc.go).
//
// It is an ELF constructor, so it runs when the dynamic loader starts the
// binary, before the Go runtime exists: the process is single-threaded, and a
// confined command costs one exec of the binary and a few dozen system calls
// rather than a Go runtime start. In any other process it returns at once.
//
// The policy comes from sandboxd in AGENTSFLEET_CONFINE_POLICY, in the line
// format trampoline.go writes; everything that needs judgement (which rights on
// which paths, the seccomp program) was decided there. Any failure writes one
// line starting with "agentsfleet-confine:" and exits 125: the command never
// runs unconfined.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

// The securebits (linux/securebits.h) a process that keeps uid 0 without
// capabilities sets and locks: root gains nothing at exec (NOROOT), changing
// ids touches no capability (NO_SETUID_FIXUP), KEEP_CAPS stays off and
// nothing can be raised into the ambient set.
#define SECURE_BITS_NOCAPS ((1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5) | (1 << 6) | (1 << 7))
#define SECBIT_KEEP_CAPS_BIT (1 << 4)

enum {
	exit_confine = 125, // ExitConfineFailure
	warm_fd = 3,
	max_request = 1 << 20,
	max_rules = 256,
	max_limits = 8,
	max_filter = 4096, // BPF_MAXINSNS
};

static const char arg0_cold[] = "agentsfleet-confine";
static const char arg0_warm[] = "agentsfleet-confine-warm";
static const char policy_var[] = "AGENTSFLEET_CONFINE_POLICY=";
static const char policy_magic[] = "agentsfleet-confine-policy 1";
// nocaps_request, in the environment of a binary that imports confine,
// makes its constructor drop every capability before the Go runtime starts
// (ShedCapabilities); it then becomes nocaps_done.
static const char nocaps_request[] = "AGENTSFLEET_CONFINE_NOCAPS=1";
static char nocaps_done[] = "AGENTSFLEET_CONFINE_NOCAPS=done";

// Landlock's user ABI (linux/landlock.h), spelled out so that older headers
// build it: the kernel accepts the larger attribute with zeros it does not
// know.
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#define LL_RULE_PATH_BENEATH 1
// The rights that apply to files; a rule on a file may grant only these.
#define LL_FILE_RIGHTS ((1ULL << 0) | (1ULL << 1) | (1ULL << 2) | (1ULL << 14) | (1ULL << 15))

struct limit {
	int resource;
	uint64_t soft, hard;
};

struct rule {
	uint64_t access;
	char *path;
};

struct policy {
	int has_ids;
	uid_t uid;
	gid_t gid;
	int nocaps; // keep uid 0, without any capability
	pid_t guard;
	struct limit limits[max_limits];
	int nlimits;
	uint64_t address_space;
	int landlock;
	uint64_t handled, scoped;
	struct rule rules[max_rules];
	int nrules;
	int seccomp;
	struct sock_filter *filter;
	unsigned short nfilter;
};

// fail writes "agentsfleet-confine: MESSAGE" and exits with code. It
// allocates nothing, so it works under any RLIMIT_AS.
static void fail(int code, const char *format, ...) __attribute__((noreturn, format(printf, 2, 3)));

static void fail(int code, const char *format, ...) {
	char line[4096];
	int n = snprintf(line, sizeof line, "agentsfleet-confine: ");
	va_list ap;
	va_start(ap, format);
	n += vsnprintf(line + n, sizeof line - n - 1, format, ap);
	va_end(ap);
	if (n > (int)sizeof line - 2)
		n = sizeof line - 2;
	line[n++] = '\n';
	ssize_t w = write(2, line, n);
	(void)w;
	_exit(code);
}

// errtext is strerror as Go spells it: lower case.
static const char *errtext(int e) {
	static char text[256];
	snprintf(text, sizeof text, "%s", strerror(e));
	if (text[0] >= 'A' && text[0] <= 'Z' && !(text[1] >= 'A' && text[1] <= 'Z'))
		text[0] += 'a' - 'A';
	return text;
}

static int unhex_digit(char c) {
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

// unhex decodes the hex string s of length n into a new buffer, with a NUL
// after the bytes; NULL when s is not hex.
static unsigned char *unhex(const char *s, size_t n, size_t *len) {
	if (n % 2 != 0)
		return NULL;
	unsigned char *out = malloc(n / 2 + 1);
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i += 2) {
		int hi = unhex_digit(s[i]), lo = unhex_digit(s[i + 1]);
		if (hi < 0 || lo < 0) {
			free(out);
			return NULL;
		}
		out[i / 2] = (unsigned char)(hi << 4 | lo);
	}
	out[n / 2] = 0;
	*len = n / 2;
	return out;
}

// number parses the decimal at *s and moves past it and one space.
static int number(const char **s, uint64_t *v) {
	char *end;
	if (**s < '0' || **s > '9')
		return -1;
	errno = 0;
	unsigned long long x = strtoull(*s, &end, 10);
	if (errno != 0 || (*end != ' ' && *end != '\n' && *end != 0))
		return -1;
	*v = x;
	*s = *end == ' ' ? end + 1 : end;
	return 0;
}

// word moves past the token at *s if it is w followed by a space or the end
// of the line.
static int word(const char **s, const char *w) {
	size_t n = strlen(w);
	if (strncmp(*s, w, n) != 0 || ((*s)[n] != ' ' && (*s)[n] != '\n' && (*s)[n] != 0))
		return 0;
	*s += (*s)[n] == ' ' ? n + 1 : n;
	return 1;
}

// parse reads the policy text; on failure it returns what is wrong.
static const char *parse(const char *text, struct policy *p) {
	memset(p, 0, sizeof *p);
	size_t magic = strlen(policy_magic);
	if (strncmp(text, policy_magic, magic) != 0 || text[magic] != '\n')
		return "not a policy of this version";
	const char *s = text + magic + 1;
	while (*s) {
		const char *eol = strchr(s, '\n');
		if (eol == NULL)
			return "unterminated line";
		uint64_t a, b, c;
		if (word(&s, "ids")) {
			if (number(&s, &a) || number(&s, &b) || a == 0 || b == 0 || a > 0x7fffffff || b > 0x7fffffff)
				return "bad ids line";
			p->has_ids = 1, p->uid = (uid_t)a, p->gid = (gid_t)b;
		} else if (word(&s, "nocaps")) {
			p->nocaps = 1;
		} else if (word(&s, "guard")) {
			if (number(&s, &a) || a > 0x7fffffff)
				return "bad guard line";
			p->guard = (pid_t)a;
		} else if (word(&s, "rlimit")) {
			if (number(&s, &a) || number(&s, &b) || number(&s, &c) || a >= RLIM_NLIMITS || p->nlimits == max_limits)
				return "bad rlimit line";
			p->limits[p->nlimits++] = (struct limit){(int)a, b, c};
		} else if (word(&s, "as")) {
			if (number(&s, &a) || a == 0)
				return "bad as line";
			p->address_space = a;
		} else if (word(&s, "landlock")) {
			if (number(&s, &a) || number(&s, &b) || a == 0)
				return "bad landlock line";
			p->landlock = 1, p->handled = a, p->scoped = b;
		} else if (word(&s, "rule")) {
			const char *sp;
			size_t len;
			if (number(&s, &a) || (sp = strchr(s, '\n')) == NULL || p->nrules == max_rules)
				return "bad rule line";
			char *path = (char *)unhex(s, (size_t)(sp - s), &len);
			if (path == NULL || len == 0 || strlen(path) != len || path[0] != '/')
				return "bad rule path";
			p->rules[p->nrules++] = (struct rule){a, path};
			s = sp;
		} else if (word(&s, "seccomp")) {
			p->seccomp = 1;
		} else if (word(&s, "bpf")) {
			size_t len;
			unsigned char *prog = unhex(s, (size_t)(eol - s), &len);
			if (prog == NULL || len == 0 || len % sizeof(struct sock_filter) != 0 ||
			    len / sizeof(struct sock_filter) > max_filter)
				return "bad bpf line";
			p->filter = (struct sock_filter *)prog;
			p->nfilter = (unsigned short)(len / sizeof(struct sock_filter));
			s = eol;
		} else {
			return "unknown line";
		}
		if (*s != '\n')
			return "trailing text on a line";
		s++;
	}
	if (p->address_space == 0)
		return "no address-space limit";
	if (p->seccomp && p->filter == NULL)
		return "no seccomp filter";
	if (p->nocaps && p->has_ids)
		return "both ids and nocaps";
	if (p->nocaps && !p->landlock)
		return "nocaps without landlock";
	return NULL;
}

// policy_text returns the policy variable's value and removes the variable
// from env (every copy of it).
static const char *policy_text(char **env) {
	const char *text = NULL;
	char **out = env;
	for (char **e = env; *e; e++) {
		if (strncmp(*e, policy_var, sizeof policy_var - 1) == 0)
			text = *e + sizeof policy_var - 1;
		else
			*out++ = *e;
	}
	*out = NULL;
	return text;
}

// secret_name reports whether the variable kv is one Scrub (confine.go)
// removes, comparing ASCII letters without case.
static int secret_name(const char *kv) {
	char name[256];
	size_t n = strcspn(kv, "=");
	if (n >= sizeof name)
		return 1; // longer than any name worth keeping
	for (size_t i = 0; i < n; i++)
		name[i] = (kv[i] >= 'a' && kv[i] <= 'z') ? kv[i] - ('a' - 'A') : kv[i];
	name[n] = 0;
	return strncmp(name, "AWS_", 4) == 0 || strncmp(name, "ECS_", 4) == 0 ||
	       strncmp(name, "SANDBOXD_", 9) == 0 || strstr(name, "TOKEN") || strstr(name, "SECRET") ||
	       strstr(name, "PASSWORD") || (n >= 4 && strcmp(name + n - 4, "_KEY") == 0);
}

// scrub removes secret variables from env, in place, and returns the value
// of PATH in what is left.
static const char *scrub(char **env) {
	const char *path = "";
	char **out = env;
	for (char **e = env; *e; e++) {
		if (secret_name(*e))
			continue;
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
		*out++ = *e;
	}
	*out = NULL;
	return path;
}

// executable reports whether file is a file this process may execute, as
// Go's exec.LookPath checks it; otherwise it sets *err.
static int executable(const char *file, int *err) {
	struct stat st;
	if (stat(file, &st) != 0) {
		*err = errno;
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		*err = EISDIR;
		return 0;
	}
	if (eaccess(file, X_OK) != 0 && errno != ENOSYS && errno != EPERM) {
		*err = errno;
		return 0;
	}
	if (!(st.st_mode & 0111)) {
		*err = EACCES;
		return 0;
	}
	return 1;
}

// find looks name up in path as a shell would, or exits as one does: 127
// when it is not there, 126 when it cannot be run.
static const char *find(const char *name, const char *path) {
	int err = 0;
	if (strchr(name, '/')) {
		if (executable(name, &err))
			return name;
		if (err == ENOENT || err == ENOTDIR)
			fail(err == ENOENT ? 127 : 126, "%s: stat %s: %s", name, name, errtext(err));
		fail(126, "%s: %s", name, errtext(err));
	}
	for (const char *dir = path; *path;) { // an empty PATH finds nothing, as in Go
		size_t n = strcspn(dir, ":");
		static char file[8192];
		if (n == 0) // an empty element is the current directory
			snprintf(file, sizeof file, "./%s", name);
		else
			snprintf(file, sizeof file, "%.*s/%s", (int)n, dir, name);
		if (strlen(file) < sizeof file - 1 && executable(file, &err))
			return file;
		dir += n;
		if (*dir++ == 0)
			break;
	}
	fail(127, "%s: not found", name);
}

// drop_privileges turns a root process into p's uid and gid with no
// supplementary groups; a process started as another uid must be p's
// already. It re-arms the parent-death signal, which changing credentials
// clears, and then checks that sandboxd still lives.
static const char *drop_privileges(const struct policy *p, char *why, size_t n) {
	if (geteuid() != 0) {
		uid_t ru, eu, su;
		gid_t rg, eg, sg;
		if (getresuid(&ru, &eu, &su) || getresgid(&rg, &eg, &sg) || ru != p->uid || eu != p->uid ||
		    rg != p->gid || eg != p->gid || getgroups(0, NULL) != 0) {
			snprintf(why, n, "started as uid %d gid %d, not %d:%d", (int)geteuid(), (int)getegid(),
			         (int)p->uid, (int)p->gid);
			return why;
		}
		return NULL;
	}
	if (setgroups(0, NULL) != 0)
		return snprintf(why, n, "setgroups: %s", errtext(errno)), why;
	if (setresgid(p->gid, p->gid, p->gid) != 0)
		return snprintf(why, n, "setresgid(%d): %s", (int)p->gid, errtext(errno)), why;
	if (setresuid(p->uid, p->uid, p->uid) != 0)
		return snprintf(why, n, "setresuid(%d): %s", (int)p->uid, errtext(errno)), why;
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	if (getresuid(&ru, &eu, &su) || getresgid(&rg, &eg, &sg) || ru != p->uid || eu != p->uid || su != p->uid ||
	    rg != p->gid || eg != p->gid || sg != p->gid || getgroups(0, NULL) != 0) {
		snprintf(why, n, "still uid %d gid %d after dropping to %d:%d", (int)eu, (int)eg, (int)p->uid, (int)p->gid);
		return why;
	}
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
		return snprintf(why, n, "prctl(PR_SET_PDEATHSIG): %s", errtext(errno)), why;
	if (p->guard > 0 && getppid() != p->guard)
		return "sandboxd exited";
	return NULL;
}

// drop_capabilities leaves this thread, which keeps its ids (root's), with
// no capability at all, for good: the securebits above, set and locked
// (which takes CAP_SETPCAP: when the thread lacks it they must be set
// already, by the sandboxd it comes from, unless strict is 0), every
// capability up to the kernel's last dropped from the bounding set, the
// ambient set cleared, and the effective, permitted and inheritable sets
// emptied. It then checks that nothing is left. A process of uid 0 so
// stripped meets file permissions as the owner root and nothing more: no
// CAP_DAC_OVERRIDE, CAP_CHOWN, CAP_FOWNER, CAP_MKNOD, CAP_NET_BIND_SERVICE,
// CAP_SETUID, CAP_SYS_ADMIN…; and no exec gives any back (NOROOT, the
// empty bounding set, and no_new_privs, set later).
static const char *drop_capabilities(int strict, char *why, size_t n) {
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) != 0)
		return snprintf(why, n, "capget: %s", errtext(errno)), why;
	int setpcap = (data[CAP_SETPCAP / 32].effective >> (CAP_SETPCAP % 32)) & 1;
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (bits < 0)
		return snprintf(why, n, "prctl(PR_GET_SECUREBITS): %s", errtext(errno)), why;
	if ((bits & SECURE_BITS_NOCAPS) != SECURE_BITS_NOCAPS) {
		if (setpcap) {
			if (prctl(PR_SET_SECUREBITS, (bits & ~SECBIT_KEEP_CAPS_BIT) | SECURE_BITS_NOCAPS, 0, 0, 0) != 0)
				return snprintf(why, n, "prctl(PR_SET_SECUREBITS): %s", errtext(errno)), why;
		} else if (strict) {
			return "the securebits cannot be set without CAP_SETPCAP";
		}
	}
	for (int cap = 0; cap < 64; cap++) {
		int r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (r < 0 && errno == EINVAL)
			break; // past the kernel's last capability
		if (r < 0)
			return snprintf(why, n, "prctl(PR_CAPBSET_READ, %d): %s", cap, errtext(errno)), why;
		if (r == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
			return snprintf(why, n, "drop capability %d from the bounding set: %s", cap, errtext(errno)), why;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
		return snprintf(why, n, "prctl(PR_CAP_AMBIENT_CLEAR_ALL): %s", errtext(errno)), why;
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) != 0)
		return snprintf(why, n, "capset: %s", errtext(errno)), why;
	if (syscall(SYS_capget, &hdr, data) != 0)
		return snprintf(why, n, "capget: %s", errtext(errno)), why;
	for (int i = 0; i < 2; i++)
		if (data[i].effective || data[i].permitted || data[i].inheritable)
			return "capabilities left after capset";
	for (int cap = 0; cap < 64; cap++) {
		int r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (r < 0)
			break;
		if (r != 0)
			return snprintf(why, n, "capability %d left in the bounding set", cap), why;
	}
	return NULL;
}

// keep_root drops every capability of a process that keeps uid 0
// (Policy.KeepRoot) and then checks, as drop_privileges does, that
// sandboxd still lives.
static const char *keep_root(const struct policy *p, char *why, size_t n) {
	if (getuid() != 0 || geteuid() != 0) {
		snprintf(why, n, "started as uid %d, not root", (int)geteuid());
		return why;
	}
	const char *err = drop_capabilities(0, why, n);
	if (err)
		return err;
	// Dropping capabilities keeps the parent-death signal; set it again
	// all the same, as drop_privileges does.
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
		return snprintf(why, n, "prctl(PR_SET_PDEATHSIG): %s", errtext(errno)), why;
	if (p->guard > 0 && getppid() != p->guard)
		return "sandboxd exited";
	return NULL;
}

// restrict_files enforces the Landlock ruleset of p. A path that does not
// exist or cannot be opened is left out: that only takes access away.
static const char *restrict_files(const struct policy *p, char *why, size_t n) {
	struct ll_ruleset_attr attr = {.handled_access_fs = p->handled, .scoped = p->scoped};
	int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (ruleset < 0) {
		int e = errno;
		if (e == ENOSYS || e == EOPNOTSUPP)
			return "landlock: sandboxd saw Landlock but this process cannot use it";
		return snprintf(why, n, "landlock_create_ruleset: %s", errtext(e)), why;
	}
	for (int i = 0; i < p->nrules; i++) {
		int fd = open(p->rules[i].path, O_PATH | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct stat st;
		struct ll_path_beneath_attr rule = {.allowed_access = p->rules[i].access & p->handled, .parent_fd = fd};
		if (fstat(fd, &st) != 0) {
			close(fd);
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			rule.allowed_access &= LL_FILE_RIGHTS;
		if (rule.allowed_access != 0 && syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) != 0) {
			int e = errno;
			close(fd);
			close(ruleset);
			return snprintf(why, n, "landlock_add_rule %s: %s", p->rules[i].path, errtext(e)), why;
		}
		close(fd);
	}
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
		int e = errno;
		close(ruleset);
		return snprintf(why, n, "landlock_restrict_self: %s", errtext(e)), why;
	}
	close(ruleset);
	return NULL;
}

// confine applies p to this process in the order doc.go gives (the uid was
// dropped before); RLIMIT_AS waits for exec_limited.
static const char *confine(const struct policy *p, char *why, size_t n) {
	for (int i = 0; i < p->nlimits; i++) {
		const struct limit *l = &p->limits[i];
		struct rlimit cur, lim;
		if (getrlimit(l->resource, &cur) != 0)
			return snprintf(why, n, "getrlimit(%d): %s", l->resource, errtext(errno)), why;
		// An unprivileged process cannot raise a hard limit: the tighter
		// one wins.
		lim.rlim_max = l->hard < cur.rlim_max ? l->hard : cur.rlim_max;
		lim.rlim_cur = l->soft < lim.rlim_max ? l->soft : lim.rlim_max;
		if (setrlimit(l->resource, &lim) != 0)
			return snprintf(why, n, "setrlimit(%d, %llu): %s", l->resource, (unsigned long long)l->soft,
			                errtext(errno)), why;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
		return snprintf(why, n, "prctl(PR_SET_CHILD_SUBREAPER): %s", errtext(errno)), why;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return snprintf(why, n, "prctl(PR_SET_NO_NEW_PRIVS): %s", errtext(errno)), why;
	if (p->landlock) {
		const char *err = restrict_files(p, why, n);
		if (err)
			return err;
	}
	if (p->seccomp) {
		struct sock_fprog prog = {.len = p->nfilter, .filter = p->filter};
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
			return snprintf(why, n, "seccomp(SECCOMP_SET_MODE_FILTER): %s", errtext(errno)), why;
	}
	return NULL;
}

// exec_limited sets RLIMIT_AS, last because it may leave no room for
// anything else, and execs the command.
static void exec_limited(const struct policy *p, const char *file, char **argv, char **env) {
	struct rlimit cur, lim;
	if (getrlimit(RLIMIT_AS, &cur) != 0)
		fail(exit_confine, "getrlimit(RLIMIT_AS): %s; refusing to run %s unconfined", errtext(errno), argv[0]);
	lim.rlim_cur = lim.rlim_max = p->address_space < cur.rlim_max ? p->address_space : cur.rlim_max;
	if (setrlimit(RLIMIT_AS, &lim) != 0)
		fail(exit_confine, "setrlimit(RLIMIT_AS, %llu): %s; refusing to run %s unconfined",
		     (unsigned long long)p->address_space, errtext(errno), argv[0]);
	execve(file, argv, env);
	int e = errno;
	fail(e == ENOENT ? 127 : 126, "exec %s: %s", argv[0], errtext(e));
}

// cold is the trampoline started for one command: argv[1:] under the policy
// in env.
static void cold(int argc, char **argv, char **env) {
	static struct policy p;
	char why[1024];
	if (argc < 2 || argv[1][0] == 0)
		fail(exit_confine, "no program to run");
	const char *name = argv[1];
	const char *text = policy_text(env);
	if (text == NULL)
		fail(exit_confine, "AGENTSFLEET_CONFINE_POLICY is not set (was cmd.Env replaced instead of appended to?); refusing to run %s unconfined", name);
	const char *err = parse(text, &p);
	if (err)
		fail(exit_confine, "decode policy: %s; refusing to run %s unconfined", err, name);
	if (p.has_ids) {
		if ((err = drop_privileges(&p, why, sizeof why)))
			fail(exit_confine, "%s; refusing to run %s as root", err, name);
		// sandboxd entered the directory as root; the uid must be able to
		// use it (PrepareRoots).
		if (access(".", X_OK) != 0) {
			int e = errno;
			char wd[4096];
			if (getcwd(wd, sizeof wd) == NULL)
				snprintf(wd, sizeof wd, "(unknown)");
			fail(exit_confine, "the working directory %s is not usable by uid %d: %s (see confine.PrepareRoots); refusing to run %s as root",
			     wd, (int)p.uid, errtext(e), name);
		}
	} else if (p.nocaps) {
		if ((err = keep_root(&p, why, sizeof why)))
			fail(exit_confine, "%s; refusing to run %s with root's capabilities", err, name);
		if (access(".", X_OK) != 0) {
			int e = errno;
			char wd[4096];
			if (getcwd(wd, sizeof wd) == NULL)
				snprintf(wd, sizeof wd, "(unknown)");
			fail(exit_confine, "the working directory %s is not usable by uid 0 without capabilities: %s; refusing to run %s",
			     wd, errtext(e), name);
		}
	}
	// Look the program up before confining, as the confined uid, in the
	// final PATH.
	const char *file = find(name, scrub(env));
	if ((err = confine(&p, why, sizeof why)))
		fail(exit_confine, "%s; refusing to run %s unconfined", err, name);
	exec_limited(&p, file, argv + 1, env);
}

// request is a command sent to a warm trampoline (warm.go): a flags byte (1:
// stdin becomes the controlling terminal), the number of arguments and of
// environment variables (uint32, native order), then the directory, the
// arguments and the variables, each ending in NUL.
struct request {
	int tty;
	const char *dir;
	char **argv, **env;
};

static const char *decode_request(char *buf, size_t n, struct request *r) {
	uint32_t argc, envc;
	if (n < 9)
		return "short request";
	r->tty = buf[0] & 1;
	memcpy(&argc, buf + 1, 4);
	memcpy(&envc, buf + 5, 4);
	if (argc == 0 || argc > n || envc > n)
		return "bad counts";
	r->argv = calloc(argc + 1, sizeof(char *));
	r->env = calloc(envc + 1, sizeof(char *));
	if (r->argv == NULL || r->env == NULL)
		return "out of memory";
	char *s = buf + 9, *end = buf + n;
	for (uint32_t i = 0; i < 1 + argc + envc; i++) {
		char *nul = memchr(s, 0, (size_t)(end - s));
		if (nul == NULL)
			return "unterminated string";
		if (i == 0)
			r->dir = s;
		else if (i <= argc)
			r->argv[i - 1] = s;
		else
			r->env[i - 1 - argc] = s;
		s = nul + 1;
	}
	if (s != end || r->argv[0][0] == 0)
		return "malformed request";
	return NULL;
}

// answer tells sandboxd that the directory was entered (an empty message, a
// single NUL) or why not, and closes the socket.
static void answer(const char *msg) {
	ssize_t w = msg ? write(warm_fd, msg, strlen(msg)) : write(warm_fd, "", 1);
	(void)w;
	close(warm_fd);
}

// warm is the warm trampoline: confined ahead of time, it waits on warm_fd
// for one command and becomes it.
static void warm(char **env) {
	static struct policy p;
	char why[1024];
	const char *text = policy_text(env);
	if (text == NULL)
		fail(exit_confine, "AGENTSFLEET_CONFINE_POLICY is not set");
	const char *err = parse(text, &p);
	if (err)
		fail(exit_confine, "decode policy: %s", err);
	if (p.has_ids && (err = drop_privileges(&p, why, sizeof why)))
		fail(exit_confine, "%s", err);
	if (p.nocaps && (err = keep_root(&p, why, sizeof why)))
		fail(exit_confine, "%s", err);
	if ((err = confine(&p, why, sizeof why)))
		fail(exit_confine, "%s", err);
	// Until it execs, nothing of its uid may read its memory: it will hold
	// the next command's descriptors. The exec makes the command dumpable
	// again, as usual.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		fail(exit_confine, "prctl(PR_SET_DUMPABLE, 0): %s", errtext(errno));
	if (fcntl(warm_fd, F_SETFD, FD_CLOEXEC) != 0 || write(warm_fd, "", 1) != 1)
		fail(exit_confine, "socket: %s", errtext(errno));

	char *buf = malloc(max_request);
	union {
		char space[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} control;
	if (buf == NULL)
		fail(exit_confine, "out of memory");
	struct iovec iov = {.iov_base = buf, .iov_len = max_request};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space};
	ssize_t n;
	do
		n = recvmsg(warm_fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		_exit(0); // sandboxd let it go
	if (msg.msg_flags & MSG_TRUNC)
		fail(exit_confine, "bad request: longer than %d bytes", max_request);
	struct request r = {0};
	if ((err = decode_request(buf, (size_t)n, &r)))
		fail(exit_confine, "bad request: %s", err);
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(4 * sizeof(int)) || (msg.msg_flags & MSG_CTRUNC))
		fail(exit_confine, "want 4 descriptors");
	int fds[4];
	memcpy(fds, CMSG_DATA(c), sizeof fds);
	for (int i = 0; i < 3; i++) {
		if (fds[i] != i && dup3(fds[i], i, 0) < 0)
			fail(exit_confine, "dup3: %s", errtext(errno));
		if (fds[i] == i && fcntl(i, F_SETFD, 0) != 0)
			fail(exit_confine, "fcntl: %s", errtext(errno));
	}
	for (int i = 0; i < 3; i++)
		if (fds[i] > 2)
			close(fds[i]);
	if (r.tty && ioctl(0, TIOCSCTTY, 0) != 0) {
		int e = errno;
		snprintf(why, sizeof why, "setctty: %s", errtext(e));
		answer(why);
		fail(exit_confine, "%s", why);
	}
	// sandboxd opened the directory, so only the directory itself must be
	// usable by the uid, as in the cold trampoline.
	int e = fchdir(fds[3]) == 0 ? 0 : errno;
	close(fds[3]);
	if (e == EACCES) {
		answer(NULL);
		fail(exit_confine, "the working directory %s is not usable by uid %d: %s (see confine.PrepareRoots)", r.dir,
		     (int)getuid(), errtext(e));
	}
	if (e != 0) {
		answer(errtext(e));
		fail(exit_confine, "chdir %s: %s", r.dir, errtext(e));
	}
	answer(NULL);
	const char *file = find(r.argv[0], scrub(r.env));
	exec_limited(&p, file, r.argv, r.env);
}

// shed drops every capability of this process, still single-threaded, for
// a root sandboxd in local mode that keeps uid 0 (ShedCapabilities), and
// marks the request done; its threads, which the Go runtime starts later,
// inherit the empty sets.
static void shed(char **var) {
	char why[1024];
	const char *err = drop_capabilities(1, why, sizeof why);
	if (err)
		fail(exit_confine, "sandboxd cannot drop its capabilities: %s", err);
	*var = nocaps_done;
}

__attribute__((constructor)) static void agentsfleet_confine(int argc, char **argv, char **env) {
	if (argc < 1 || argv == NULL || argv[0] == NULL)
		return;
	if (strcmp(argv[0], arg0_cold) == 0)
		cold(argc, argv, env);
	else if (strcmp(argv[0], arg0_warm) == 0)
		warm(env);
	for (char **e = env; e && *e; e++)
		if (strcmp(*e, nocaps_request) == 0)
			shed(e);
}
