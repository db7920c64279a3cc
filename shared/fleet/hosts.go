package fleet

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/net/idna"
)

// HostList is a fleet's network host list: the hosts http_request,
// web_fetch and pushover may reach. Only the host counts, on any port.
//
// Each entry is in normal form (see NormalizeHost): a lowercase ASCII host
// name (IDNA/punycode for unicode names, no trailing dot), an IPv4 address,
// an IPv6 address in brackets ("[2001:db8::1]"), or a wildcard "*.NAME".
// The list from Parse is sorted and holds no repeats.
//
// A wildcard "*.example.com" allows every host under example.com at any
// depth (a.example.com, a.b.example.com) but not example.com itself; list
// both to allow both. NAME must have at least two labels, so "*.com" is
// refused. A wildcard never matches an IP address.
//
// The list only narrows: it does not make a private, loopback or otherwise
// unsafe address reachable. The egress policy in the webtools λ refuses
// those whatever the list says, and checks the address it dials.
type HostList []string

// ParseHostList normalises entries into a HostList, sorted and without
// repeats. Each entry may be a host name, an IP address or a URL; see
// NormalizeHost. The error is an *Error listing every bad entry, its Path
// the entry's index ("[3]").
func ParseHostList(entries []string) (HostList, error) {
	var probs problems
	list := normalizeHosts(entries, nil, &probs)
	if err := probs.err(nil); err != nil {
		return nil, err
	}
	return list, nil
}

// normalizeHosts normalises entries, recording a problem at at.index(i) for
// each bad one; it returns the good ones sorted without repeats, nil if none.
func normalizeHosts(entries []string, at keyPath, probs *problems) HostList {
	var out HostList
	for i, e := range entries {
		h, err := NormalizeHost(e)
		if err != nil {
			probs.add(at.index(i), "%v", err)
			continue
		}
		out = append(out, h)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// NormalizeHost returns the normal form of one host list entry, or an error
// saying what is wrong with it.
//
// An entry is a host name, an IP address, a wildcard "*.NAME", any of these
// with ":PORT", or a URL ("https://api.github.com:443/repos"). Only the host
// is kept: scheme, port, path, query and fragment are dropped, so the
// example gives "api.github.com". The host is lowercased, loses one trailing
// dot, and a unicode name becomes punycode ("bücher.example" →
// "xn--bcher-kva.example"). IPv6 addresses may be given bare ("2001:db8::1")
// or in brackets, with a port only in brackets; they come back in brackets.
// An IPv4-mapped IPv6 address becomes the IPv4 address.
//
// Refused: an empty entry, one with spaces, user information ("user@host"),
// a path without a host, a port outside 1–65535, an IPv6 zone, a name that
// is not a valid DNS name (labels of letters, digits and inner dashes, at
// most 63 bytes each, 253 in all), a name whose last label is all digits
// (it would be read as an IP address), and any wildcard other than a whole
// leading "*." label over at least two labels.
func NormalizeHost(entry string) (string, error) {
	s := strings.TrimSpace(entry)
	quoted := clip(entry)
	if s == "" {
		return "", errors.New("empty host entry; give a host name such as api.github.com or a URL")
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return "", fmt.Errorf("host entry %q contains a space or control character", quoted)
	}
	rest := s
	if i := strings.Index(s, "://"); i >= 0 {
		if !validScheme(s[:i]) {
			return "", fmt.Errorf("host entry %q: %q is not a URL scheme", quoted, clip(s[:i]))
		}
		rest = s[i+3:]
	} else if strings.HasPrefix(s, "//") {
		rest = s[2:]
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if authority == "" {
		if authority != rest {
			return "", fmt.Errorf("host entry %q has a path but no host; give a host name such as api.github.com or a full URL", quoted)
		}
		return "", fmt.Errorf("host entry %q has no host", quoted)
	}
	if strings.Contains(authority, "@") {
		// Not quoted: the user information may hold a password.
		return "", errors.New("a host entry contains user information (user@); give only the host, and put credentials in secrets")
	}
	host, port, err := splitHostPort(authority)
	if err != nil {
		return "", fmt.Errorf("host entry %q: %v", quoted, err)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '+' {
			return "", fmt.Errorf("host entry %q: port %q is not a number from 1 to 65535", quoted, clip(port))
		}
	}
	h, err := normalizeHostname(host, true)
	if err != nil {
		return "", fmt.Errorf("host entry %q: %v", quoted, err)
	}
	return h, nil
}

// validScheme reports whether s is an RFC 3986 scheme.
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

// splitHostPort splits "host", "host:port", "[v6]", "[v6]:port" or a bare
// IPv6 address. The port is "" when absent.
func splitHostPort(a string) (host, port string, err error) {
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", "", errors.New("missing ] after an IPv6 address")
		}
		host, after := a[1:end], a[end+1:]
		if _, perr := netip.ParseAddr(host); perr != nil || !strings.Contains(host, ":") {
			return "", "", fmt.Errorf("%q in brackets is not an IPv6 address", clip(host))
		}
		switch {
		case after == "":
			return host, "", nil
		case strings.HasPrefix(after, ":") && len(after) > 1:
			return host, after[1:], nil
		}
		return "", "", fmt.Errorf("unexpected %q after the IPv6 address", clip(after))
	}
	if strings.Count(a, ":") > 1 {
		if _, perr := netip.ParseAddr(a); perr != nil {
			return "", "", fmt.Errorf("%q is neither a host nor an IPv6 address (write an IPv6 address with a port as [addr]:port)", clip(a))
		}
		return a, "", nil
	}
	host, port, found := strings.Cut(a, ":")
	if found && port == "" {
		return "", "", errors.New("empty port after the colon")
	}
	return host, port, nil
}

// normalizeHostname returns the normal form of a bare host: an IP address
// or a DNS name, or, when wildcard is true, "*.NAME".
func normalizeHostname(h string, wildcard bool) (string, error) {
	if h == "" {
		return "", errors.New("empty host")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("IPv6 zone %q is not allowed", a.Zone())
		}
		a = a.Unmap()
		if a.Is4() {
			return a.String(), nil
		}
		return "[" + a.String() + "]", nil
	}
	if strings.Contains(h, "*") {
		if !wildcard {
			return "", errors.New("a wildcard is not a host")
		}
		name, ok := strings.CutPrefix(h, "*.")
		if !ok || strings.Contains(name, "*") {
			return "", fmt.Errorf("%q: a wildcard must be the whole first label, as in *.example.com", clip(h))
		}
		n, err := normalizeName(name)
		if err != nil {
			return "", err
		}
		if !strings.Contains(n, ".") {
			return "", fmt.Errorf("%q is too broad; a wildcard needs at least two labels after it, as in *.example.com", clip(h))
		}
		return "*." + n, nil
	}
	return normalizeName(h)
}

// normalizeName returns the lowercase ASCII (punycode) form of a DNS name
// without its trailing dot.
func normalizeName(h string) (string, error) {
	h = strings.TrimSuffix(h, ".")
	if h == "" || strings.HasSuffix(h, ".") {
		return "", errors.New("empty host name label")
	}
	a, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("%q is not a valid host name (%v)", clip(h), strings.TrimPrefix(err.Error(), "idna: "))
	}
	if len(a) > 253 {
		return "", fmt.Errorf("host name is %d bytes long; at most 253 are allowed", len(a))
	}
	labels := strings.Split(a, ".")
	for _, l := range labels {
		if l == "" {
			return "", fmt.Errorf("%q has an empty label", clip(h))
		}
		if len(l) > 63 {
			return "", fmt.Errorf("%q has a label longer than 63 bytes", clip(h))
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return "", fmt.Errorf("%q is not a valid host name (character %q)", clip(h), r)
			}
		}
	}
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" {
		return "", fmt.Errorf("%q is neither an IP address nor a host name (its last label is a number)", clip(h))
	}
	return a, nil
}

// Allows reports whether l allows host. host is a host name or IP address,
// optionally with a port ("api.github.com:8443", "[::1]:443"); the port is
// ignored, case does not matter, and a trailing dot or unicode form of the
// name is normalised as in NormalizeHost. A host that is not a valid host
// or address is never allowed. Allows expects l in normal form, as
// ParseHostList and Parse give it; it is safe for concurrent use.
func (l HostList) Allows(host string) bool {
	if len(l) == 0 {
		return false
	}
	h, port, err := splitHostPort(strings.TrimSpace(host))
	if err != nil {
		return false
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return false
		}
	}
	h, err = normalizeHostname(h, false)
	if err != nil {
		return false
	}
	for _, e := range l {
		if e == h {
			return true
		}
		if suffix, ok := strings.CutPrefix(e, "*"); ok && strings.HasSuffix(h, suffix) && len(h) > len(suffix) {
			return true
		}
	}
	return false
}
