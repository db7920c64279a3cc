package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// ParseHost reads the host part of a URL or of a dial address (without
// brackets or port) the way a browser or inet_aton would:
//
//   - an IPv6 or dotted-decimal IPv4 literal is that address;
//   - a host whose last label is a number ("2130706433", "0177.0.0.1",
//     "0x7f.1", "127.1", "1.2.3.4.") is a legacy IPv4 literal, read with
//     octal, hexadecimal and short forms as the WHATWG URL standard does;
//     if it is not a valid one, ParseHost returns an error rather than let
//     it reach a resolver that might read it differently;
//   - anything else is a name: returned in name, lower-cased, without a
//     trailing dot, and converted to its ASCII (punycode) form as net/http
//     does before dialing, so that host lists compare what is dialed.
//
// Normalising here means that a check and the dial see the same address.
func ParseHost(host string) (addr netip.Addr, name string, err error) {
	if host == "" {
		return netip.Addr{}, "", errors.New("empty host")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a, "", nil
	}
	h := strings.ToLower(host)
	if !isASCII(h) {
		// As browsers do, map to ASCII first: full-width digits become
		// digits, so "１２７.０.０.１" is read as the address it spells.
		a, err := idna.Lookup.ToASCII(h)
		if err != nil {
			return netip.Addr{}, "", fmt.Errorf("host %q is not a valid host name", host)
		}
		h = a
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return netip.Addr{}, "", fmt.Errorf("host %q is not a valid host name", host)
	}
	if endsInNumber(h) {
		a, err := parseLegacyIPv4(h)
		if err != nil {
			return netip.Addr{}, "", fmt.Errorf("host %q looks like an IPv4 address but is not a valid one", host)
		}
		return a, "", nil
	}
	if strings.ContainsAny(h, " /\\?#@[]%:") {
		return netip.Addr{}, "", fmt.Errorf("host %q is not a valid host name", host)
	}
	return netip.Addr{}, h, nil
}

// CanonicalHost returns host as ParseHost reads it: the address in standard
// form for an IP literal (without zone), the lower-cased name otherwise.
func CanonicalHost(host string) (string, error) {
	a, name, err := ParseHost(host)
	if err != nil {
		return "", err
	}
	if a.IsValid() {
		return a.WithZone("").Unmap().String(), nil
	}
	return name, nil
}

// endsInNumber is the WHATWG "ends in a number" check: the last label
// (ignoring one trailing dot) is all decimal digits or a 0x hex number.
func endsInNumber(h string) bool {
	labels := strings.Split(h, ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if isDigits(last) {
		return true
	}
	if rest, ok := strings.CutPrefix(last, "0x"); ok {
		return rest == "" || isHex(rest)
	}
	return false
}

// parseLegacyIPv4 reads 1 to 4 parts, each decimal, octal (leading 0) or
// hex (0x), the last part filling the remaining bytes: "127.1" is
// 127.0.0.1 and "2130706433" is 127.0.0.1.
func parseLegacyIPv4(h string) (netip.Addr, error) {
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return netip.Addr{}, errors.New("too many parts")
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, err := parseLegacyPart(p)
		if err != nil {
			return netip.Addr{}, err
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, fmt.Errorf("part %d out of range", i+1)
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, errors.New("last part out of range")
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), nil
}

func parseLegacyPart(p string) (uint64, error) {
	base := 10
	switch {
	case p == "":
		return 0, errors.New("empty part")
	case strings.HasPrefix(p, "0x"):
		p, base = p[2:], 16
		if p == "" {
			return 0, nil
		}
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil || n > 0xffffffff {
		return 0, fmt.Errorf("bad part %q", p)
	}
	return n, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}
