package web

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"codeberg.org/readeck/go-readability/v2/render"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// pageText turns a response body into the text the model reads. HTML
// (text/html, application/xhtml+xml) is reduced to its main content with
// readability (Mozilla's algorithm, in Go): menus, headers, footers,
// scripts and styles are dropped, links kept as [text](url), code blocks
// keep their lines, table cells are separated by tabs. If readability finds
// no article, the page's <main>, <article> or <body> is used with the same
// clutter removed. Other text types are returned decoded to UTF-8 as they
// are. ok is false for a type that is not text (images, PDFs, archives).
func pageText(body []byte, contentType string, pageURL *url.URL) (text string, ok bool) {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	if mediaType == "" {
		mediaType, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	switch {
	case mediaType == "text/html" || mediaType == "application/xhtml+xml":
		return htmlText(body, contentType, pageURL), true
	case textual(mediaType):
		return tidy(decode(body, contentType)), true
	}
	return "", false
}

// decode converts body to UTF-8 using the charset in contentType, a BOM or
// (for HTML) a <meta> tag; UTF-8 if none is given.
func decode(body []byte, contentType string) string {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// minArticle is the least text readability must find for its article to
// be preferred over the whole page's cleaned text.
const minArticle = 200

func htmlText(body []byte, contentType string, pageURL *url.URL) string {
	doc, err := html.Parse(strings.NewReader(decode(body, contentType)))
	if err != nil {
		return tidy(decode(body, contentType))
	}
	title, byline := "", ""
	var text string
	if art, err := readability.FromDocument(doc, pageURL); err == nil && art.Node != nil {
		title = strings.TrimSpace(art.Title())
		byline = strings.Join(strings.Fields(art.Byline()), " ")
		markLinks(art.Node, pageURL)
		text = tidy(render.InnerText(art.Node))
	}
	if len(text) < minArticle {
		root := declutter(doc)
		markLinks(root, pageURL)
		// Readability is tuned for articles; on a short page its pick may
		// keep a menu, so the decluttered page wins when it has any text.
		if t := tidy(render.InnerText(root)); t != "" {
			text = t
		}
	}
	if title == "" {
		title = documentTitle(doc)
	}
	if byline != "" && !strings.Contains(text, byline) {
		text = byline + "\n\n" + text
	}
	if title != "" && text != title && !strings.HasPrefix(text, title+"\n") {
		text = title + "\n\n" + text
	}
	return text
}

// declutter removes what is not content from doc and returns the node to
// render: <main>, else the first <article>, else <body>.
func declutter(doc *html.Node) *html.Node {
	var drop []*html.Node
	var main, article, body *html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Nav, atom.Header,
				atom.Footer, atom.Aside, atom.Form, atom.Iframe, atom.Svg, atom.Button, atom.Select, atom.Dialog:
				drop = append(drop, n)
				return
			case atom.Main:
				if main == nil {
					main = n
				}
			case atom.Article:
				if article == nil {
					article = n
				}
			case atom.Body:
				body = n
			}
			for _, a := range n.Attr {
				if a.Key == "role" && (a.Val == "navigation" || a.Val == "banner" || a.Val == "contentinfo" || a.Val == "search") ||
					a.Key == "aria-hidden" && a.Val == "true" || a.Key == "hidden" {
					drop = append(drop, n)
					return
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	for _, n := range drop {
		if n.Parent != nil {
			n.Parent.RemoveChild(n)
		}
	}
	switch {
	case main != nil:
		return main
	case article != nil:
		return article
	case body != nil:
		return body
	}
	return doc
}

// markLinks rewrites each link with text to "[text](absolute URL)" so the
// model can follow it. Links to the same page, javascript: and the like
// are left as plain text.
func markLinks(root *html.Node, base *url.URL) {
	var links []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.DataAtom == atom.A {
			links = append(links, n)
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	for _, a := range links {
		href := ""
		for _, at := range a.Attr {
			if at.Key == "href" {
				href = strings.TrimSpace(at.Val)
			}
		}
		u, err := url.Parse(href)
		if err != nil || href == "" || strings.HasPrefix(href, "#") {
			continue
		}
		if base != nil {
			u = base.ResolveReference(u)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			continue
		}
		label := strings.TrimSpace(render.InnerText(a))
		if label == "" || label == u.String() {
			continue
		}
		a.InsertBefore(&html.Node{Type: html.TextNode, Data: "["}, a.FirstChild)
		a.AppendChild(&html.Node{Type: html.TextNode, Data: "](" + u.String() + ")"})
	}
}

func documentTitle(doc *html.Node) string {
	var title string
	var walk func(*html.Node) bool
	walk = func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.Title {
			title = strings.Join(strings.Fields(render.InnerText(n)), " ")
			return true
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if walk(c) {
				return true
			}
		}
		return false
	}
	walk(doc)
	return title
}

var blankLines = regexp.MustCompile(`\n{3,}`)

// tidy trims trailing space from lines and leaves at most one blank line
// in a row.
func tidy(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\u00a0")
	}
	return strings.TrimSpace(blankLines.ReplaceAllString(strings.Join(lines, "\n"), "\n\n"))
}
