// Package browser is sandboxd's headless browser: browser_open and
// screenshot, driving one Chromium per sandbox over the DevTools protocol
// (chromedp), confined as bash's commands are.
//
// The browser starts with the first browser_open, confined by the
// sandbox's confine.Policy (its uid, Landlock over the same roots, the same
// seccomp filter) with its own limits (policyFor), DevTools over fds 3
// and 4 (--remote-debugging-pipe, so no loopback port exists that a
// command or a page could drive it through), and every request through the
// egress proxy (package proxy), which refuses loopback, this machine's own
// addresses and link-local (metadata) destinations. Later calls navigate
// the same page; a crashed browser is restarted by the next browser_open.
// It is closed, its process group killed and its profile removed, when the
// server stops or when the agent that started it is closed.
package browser
