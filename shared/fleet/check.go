package fleet

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// The checks of single values. Each returns "" for a good value, else what
// is wrong in the user's terms. None of them repeats a secret value.

func checkName(s string) string {
	const rule = "a fleet name is 1 to 63 lowercase letters, digits and dashes, starting with a letter and not ending with a dash, such as \"triage-bot\""
	switch {
	case s == "":
		return "required; " + rule
	case len(s) > MaxNameLen:
		return fmt.Sprintf("%q is %d characters long; %s", clip(s), len(s), rule)
	case strings.ToLower(s) != s && checkName(strings.ToLower(s)) == "":
		return fmt.Sprintf("%q has capital letters; %s", clip(s), rule)
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '-')
		if !ok {
			return fmt.Sprintf("%q is not a valid fleet name; %s", clip(s), rule)
		}
	}
	if strings.HasSuffix(s, "-") {
		return fmt.Sprintf("%q ends with a dash; %s", clip(s), rule)
	}
	return ""
}

func checkInstructions(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "required: say what the fleet is for and how it should work"
	case len(s) > MaxInstructionsBytes:
		return fmt.Sprintf("%d bytes long; at most %d are allowed", len(s), MaxInstructionsBytes)
	case !utf8.ValidString(s):
		return "not valid UTF-8 text"
	}
	return ""
}

// checkModel accepts the ids model providers use: Bedrock model and
// inference-profile ids ("anthropic.claude-sonnet-4-5-20250929-v1:0",
// "us.anthropic.…"), Bedrock ARNs, and Anthropic or OpenAI-style names
// ("claude-sonnet-4-5", "gpt-4.1", "org/model"). Which provider serves it is
// a deployment setting, interpreted by the model package.
func checkModel(s string) string {
	const rule = "a model id is up to 256 letters, digits and . _ : / @ + -, starting with a letter or digit"
	if len(s) > MaxModelLen {
		return fmt.Sprintf("%d characters long; %s", len(s), rule)
	}
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("._:/@+-", r)) {
			return fmt.Sprintf("%q is not a model id; %s", clip(s), rule)
		}
	}
	return ""
}

// systemDirs are refused as workdirs, with everything under them: the
// workdir is writable, and these belong to the sandbox image.
var systemDirs = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/run", "/sbin", "/sys", "/usr"}

func checkWorkdir(s string) string {
	switch {
	case s == "":
		return "empty; leave it out for the default " + DefaultWorkdir + ", or give an absolute path"
	case len(s) > MaxWorkdirLen:
		return fmt.Sprintf("%d bytes long; at most %d are allowed", len(s), MaxWorkdirLen)
	case !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return "contains a control character"
	case !strings.HasPrefix(s, "/"):
		return fmt.Sprintf("%q is not an absolute path; write it from the root, such as /agent/repo", clip(s))
	case path.Clean(s) != s:
		return fmt.Sprintf("%q is not a clean path; write %q", clip(s), clip(path.Clean(s)))
	case s == "/":
		return "the root directory cannot be the workdir, as the workdir is writable"
	}
	for _, d := range systemDirs {
		if s == d || strings.HasPrefix(s, d+"/") {
			return fmt.Sprintf("%q is inside the system directory %s, which cannot be the workdir, as the workdir is writable", clip(s), d)
		}
	}
	return ""
}

// checkSecretName accepts identifier-like names, as they are written in
// «secret:NAME» references: a letter or underscore, then letters, digits
// and underscores, at most 64 in all.
func checkSecretName(s string) string {
	const rule = "a secret name is 1 to 64 letters, digits and underscores, not starting with a digit, such as GITHUB_TOKEN"
	if s == "" || len(s) > 64 {
		return fmt.Sprintf("secret name %q is not valid; %s", clip(s), rule)
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || i > 0 && r >= '0' && r <= '9'
		if !ok {
			return fmt.Sprintf("secret name %q is not valid; %s", clip(s), rule)
		}
	}
	return ""
}

// plaintextHint ends every message about a secret value that may be the
// value itself. Messages never quote the value: it may be a credential.
const plaintextHint = "store the value in AWS Secrets Manager and give the secret's name or ARN here"

// checkSecretValue accepts a Secrets Manager secret name (1 to 512 of
// letters, digits and /_+=.@-) or a secret ARN
// (arn:PARTITION:secretsmanager:REGION:ACCOUNT:secret:NAME). It refuses
// values that look like credentials themselves: known token prefixes
// (ghp_, xoxb-, sk-, AKIA…) and long random-looking runs.
func checkSecretValue(s string) string {
	if s == "" {
		return "empty; give the name or ARN of the AWS Secrets Manager secret that holds the value"
	}
	if strings.HasPrefix(s, "arn:") {
		return checkSecretARN(s)
	}
	if !secretNameChars(s) || len(s) > 512 {
		return "not the name or ARN of a Secrets Manager secret (a name is up to 512 letters, digits and /_+=.@-); if it is the secret's value, " + plaintextHint
	}
	if looksLikeCredential(s) {
		return "looks like a credential, not the name or ARN of a Secrets Manager secret; " + plaintextHint
	}
	return ""
}

func checkSecretARN(s string) string {
	const want = "want arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME"
	parts := strings.SplitN(s, ":", 6)
	if len(parts) < 6 {
		return "not a complete Secrets Manager secret ARN; " + want
	}
	partition, service, region, account, resource := parts[1], parts[2], parts[3], parts[4], parts[5]
	kind, name, _ := strings.Cut(resource, ":")
	switch {
	case partition != "aws" && !strings.HasPrefix(partition, "aws-"):
		return fmt.Sprintf("ARN partition %q is not an AWS partition", clip(partition))
	case service != "secretsmanager":
		return fmt.Sprintf("an ARN of the %q service, not of a Secrets Manager secret; %s", clip(service), want)
	case !validRegion(region):
		return fmt.Sprintf("%q in the ARN is not an AWS region", clip(region))
	case len(account) != 12 || strings.Trim(account, "0123456789") != "":
		return "the account in the ARN is not 12 digits"
	case kind != "secret":
		return fmt.Sprintf("ARN resource type %q is not \"secret\"; %s", clip(kind), want)
	case name == "" || len(name) > 512 || !secretNameChars(name):
		return "the secret name in the ARN is not a Secrets Manager secret name (letters, digits and /_+=.@-)"
	}
	return ""
}

// validRegion accepts region names such as us-east-1 and us-gov-west-1.
func validRegion(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) < 3 {
		return false
	}
	for i, p := range parts {
		if p == "" {
			return false
		}
		digits := strings.Trim(p, "0123456789") == ""
		letters := strings.Trim(p, "abcdefghijklmnopqrstuvwxyz") == ""
		if i == len(parts)-1 && !digits || i < len(parts)-1 && !letters {
			return false
		}
	}
	return true
}

func secretNameChars(s string) bool {
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/_+=.@-", r)
		if !ok {
			return false
		}
	}
	return true
}

// credentialPrefixes start common API tokens (GitHub, GitLab, Slack,
// OpenAI/Anthropic/Stripe, AWS access keys, Google, Hugging Face, npm, PyPI,
// SendGrid, JWTs).
var credentialPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
	"xoxb-", "xoxp-", "xoxa-", "xoxs-", "xoxe-", "xapp-",
	"sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_",
	"AKIA", "ASIA", "AIza", "hf_", "npm_", "pypi-", "SG.", "eyJ",
}

// looksLikeCredential reports whether s, which passed as a secret name
// syntactically, is more likely a token: a known prefix on a long value,
// or a "/"-separated part of 32 bytes or more mixing upper case, lower case
// and digits.
func looksLikeCredential(s string) bool {
	if len(s) >= 20 && !strings.Contains(s, "/") {
		for _, p := range credentialPrefixes {
			if strings.HasPrefix(s, p) {
				return true
			}
		}
	}
	for _, part := range strings.Split(s, "/") {
		if len(part) < 32 {
			continue
		}
		upper := strings.IndexFunc(part, func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0
		lower := strings.IndexFunc(part, func(r rune) bool { return r >= 'a' && r <= 'z' }) >= 0
		digit := strings.IndexFunc(part, func(r rune) bool { return r >= '0' && r <= '9' }) >= 0
		if upper && lower && digit {
			return true
		}
	}
	return false
}

func checkSize(s string) string {
	if SandboxSize(s).Valid() {
		return ""
	}
	return fmt.Sprintf("%q is not a sandbox size; want small (0.5 vCPU, 1 GiB), medium (1 vCPU, 2 GiB), large (2 vCPU, 4 GiB) or xlarge (4 vCPU, 8 GiB)", clip(s))
}

// clip shortens a value quoted in a message to a readable length.
func clip(s string) string {
	const max = 60
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}
