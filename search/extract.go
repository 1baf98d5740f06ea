package search

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	readability "codeberg.org/readeck/go-readability"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// article is the main content of an HTML page as an extractor sees it.
type article struct {
	Title     string
	Byline    string
	SiteName  string
	Language  string
	Excerpt   string
	Published time.Time
	HTML      string // the main content, links absolute
	// Node is the main content as a tree (nil: parse HTML instead). It may
	// be modified.
	Node    *html.Node
	TextLen int // characters of visible text in HTML
}

// extractor finds a page's main content. It is an interface because the
// readability library is only available as a pseudo-version: if it breaks
// or goes away, one type changes.
type extractor interface {
	extract(doc *html.Node, pageURL *url.URL) (article, error)
}

// readabilityExtractor uses readeck's port of Mozilla's Readability.
type readabilityExtractor struct {
	maxElems int // documents with more elements are refused (cost bound)
}

func (e readabilityExtractor) extract(doc *html.Node, pageURL *url.URL) (article, error) {
	p := readability.NewParser() // a Parser holds per-document state: one per call
	p.MaxElemsToParse = e.maxElems
	a, err := p.ParseAndMutate(doc, pageURL)
	if err != nil {
		return article{}, err
	}
	out := article{
		Title: a.Title, Byline: a.Byline, SiteName: a.SiteName, Language: a.Language,
		Excerpt: a.Excerpt, HTML: a.Content, TextLen: a.Length,
	}
	if a.Node != nil {
		// Content is the inner HTML of Node's parent: converting that
		// element saves parsing Content again.
		out.Node = a.Node
		if a.Node.Parent != nil {
			out.Node = a.Node.Parent
		}
	}
	if a.PublishedTime != nil {
		out.Published = a.PublishedTime.UTC()
	}
	return out, nil
}

// minArticleText is the visible text below which an extracted article is
// suspected of having missed the content (listing pages, short notes), and
// the whole page body is considered instead.
const minArticleText = 140

// Budgets of convertHTML's scan of a page read for maxChars characters:
// the text of the document considered (by the extractor, which compares
// candidate blocks by their text) is scanFactor times the characters
// wanted, and at least minScanChars.
const (
	scanFactor   = 8
	minScanChars = 32 << 10
)

// htmlToMarkdown turns an HTML document into the page's title, metadata and
// main content as Markdown.
func (r *Reader) htmlToMarkdown(ctx context.Context, text string, pageURL *url.URL) (*Page, error) {
	return r.convertHTML(ctx, text, pageURL, 0)
}

// convertHTML is htmlToMarkdown for a reader that needs only the first
// maxChars characters of the content (0: all of it). It does not convert
// the whole page and then cut: it strips scripts, styles, SVG and comments
// with a tokenizer before parsing, parses only the first
// scanFactor×maxChars characters of text, and converts the main content
// only up to the first block boundary past maxChars. Page.Partial reports
// that something was left out.
func (r *Reader) convertHTML(ctx context.Context, text string, pageURL *url.URL, maxChars int) (*Page, error) {
	text = strings.ToValidUTF8(text, "\uFFFD")
	var limit scan
	if maxChars > 0 {
		limit = scanFor(max(scanFactor*maxChars, minScanChars))
	}
	text, partial := stripHTML(text, limit)
	doc, err := html.Parse(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	docTitle := documentTitle(doc)
	a, err := r.extractor.extract(doc, pageURL)
	var content *html.Node
	if err == nil && strings.TrimSpace(a.HTML) != "" {
		content = a.Node
		if content == nil {
			content, err = html.Parse(strings.NewReader(a.HTML))
			if err != nil {
				return nil, err
			}
		}
	}
	if content == nil || a.TextLen < minArticleText {
		// Readability found nothing, or so little that its scoring is
		// guesswork (and tends to keep the navigation): take the whole
		// body without its chrome, unless nothing is left of it.
		full, err := html.Parse(strings.NewReader(text))
		if err != nil {
			return nil, err
		}
		body := findBody(full)
		prune(body, true)
		if content == nil || visibleTextLen(body) > 0 {
			content = body
		}
	}
	prune(content, false)
	if maxChars > 0 && cutAfter(content, maxChars) {
		partial = true
	}
	md, err := toMarkdown(ctx, content, pageURL)
	if err != nil {
		return nil, err
	}
	title := strings.TrimSpace(a.Title)
	if title == "" || title == pageURL.String() {
		title = docTitle
	}
	return &Page{
		Title:     strings.Join(strings.Fields(title), " "),
		Content:   md,
		Partial:   partial,
		Byline:    strings.TrimSpace(a.Byline),
		SiteName:  strings.TrimSpace(a.SiteName),
		Language:  strings.TrimSpace(a.Language),
		Excerpt:   strings.TrimSpace(a.Excerpt),
		Published: a.Published,
	}, nil
}

// wholeBlocks are elements cutAfter keeps or drops whole: a cut never
// falls inside a paragraph, heading, list item or table row.
var wholeBlocks = map[atom.Atom]bool{
	atom.P: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true,
	atom.H6: true, atom.Pre: true, atom.Li: true, atom.Dt: true, atom.Dd: true, atom.Tr: true,
	atom.Caption: true, atom.Figcaption: true,
}

// cutAfter removes, in place, everything in n that follows the block in
// which its text passes budget characters, and reports whether anything
// was removed. Characters are counted without white space, so the
// Markdown of what is kept is longer than budget when something was cut.
func cutAfter(n *html.Node, budget int) bool {
	used := 0
	removed := false
	var walk func(*html.Node) bool // true: the budget is spent
	walk = func(n *html.Node) bool {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				used += visibleChars(c.Data)
			case c.Type == html.ElementNode && wholeBlocks[c.DataAtom]:
				used += visibleChars(textOf(c))
			case c.Type == html.ElementNode:
				if walk(c) {
					used = budget + 1
				}
			}
			if used > budget {
				for s := c.NextSibling; s != nil; {
					next := s.NextSibling
					n.RemoveChild(s)
					removed = true
					s = next
				}
				return true
			}
		}
		return false
	}
	walk(n)
	return removed
}

var blankLines = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n{3,}`) })

// toMarkdown converts a node with the CommonMark and table plugins,
// resolving relative links against pageURL.
func toMarkdown(ctx context.Context, n *html.Node, pageURL *url.URL) (string, error) {
	conv := htmltomarkdown.NewConverter(htmltomarkdown.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
	))
	out, err := conv.ConvertNode(n, htmltomarkdown.WithDomain(pageURL.String()), htmltomarkdown.WithContext(ctx))
	if err != nil {
		return "", err
	}
	md := strings.ReplaceAll(string(out), "\r\n", "\n")
	md = blankLines().ReplaceAllString(md, "\n\n")
	return strings.TrimSpace(md), nil
}

// dropAlways are elements that never hold readable content.
var dropAlways = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Svg: true,
	atom.Canvas: true, atom.Form: true, atom.Button: true, atom.Input: true, atom.Select: true,
	atom.Textarea: true, atom.Dialog: true, atom.Link: true, atom.Meta: true, atom.Head: true,
}

// dropChrome are page furniture, dropped when the whole body is used.
var dropChrome = map[atom.Atom]bool{
	atom.Nav: true, atom.Header: true, atom.Footer: true, atom.Aside: true,
}

// prune removes non-content elements, hidden elements, links that are not
// web links (javascript:, data:, …) and inline data: images, in place.
func prune(n *html.Node, chrome bool) {
	if n == nil {
		return
	}
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		switch {
		case c.Type == html.CommentNode:
			n.RemoveChild(c)
		case c.Type == html.ElementNode && (dropAlways[c.DataAtom] || chrome && dropChrome[c.DataAtom] || hidden(c)):
			n.RemoveChild(c)
		case c.Type == html.ElementNode && c.DataAtom == atom.Img && unsafeURL(attr(c, "src")):
			n.RemoveChild(c)
		default:
			if c.Type == html.ElementNode && c.DataAtom == atom.A && unsafeURL(attr(c, "href")) {
				removeAttr(c, "href")
			}
			prune(c, chrome)
		}
		c = next
	}
}

func hidden(n *html.Node) bool {
	for _, a := range n.Attr {
		switch strings.ToLower(a.Key) {
		case "hidden":
			return true
		case "aria-hidden":
			if strings.EqualFold(strings.TrimSpace(a.Val), "true") {
				return true
			}
		case "style":
			s := strings.ToLower(strings.ReplaceAll(a.Val, " ", ""))
			if strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden") {
				return true
			}
		}
	}
	return false
}

// unsafeURL reports a link or image source that is not an http(s) or
// relative URL: javascript:, vbscript:, data:, file:, ….
func unsafeURL(raw string) bool {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	switch strings.ToLower(u.Scheme) {
	case "", "http", "https", "mailto":
		return false
	}
	return true
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

func removeAttr(n *html.Node, key string) {
	kept := n.Attr[:0]
	for _, a := range n.Attr {
		if !strings.EqualFold(a.Key, key) {
			kept = append(kept, a)
		}
	}
	n.Attr = kept
}

func findBody(doc *html.Node) *html.Node {
	var found *html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if found != nil {
			return
		}
		if n.Type == html.ElementNode && n.DataAtom == atom.Body {
			found = n
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if found == nil {
		return doc
	}
	return found
}

// documentTitle returns the text of the first <title>.
func documentTitle(doc *html.Node) string {
	var title string
	var walk func(*html.Node) bool
	walk = func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.Title {
			title = textOf(n)
			return true
		}
		if n.Type == html.ElementNode && n.DataAtom == atom.Svg {
			return false
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if walk(c) {
				return true
			}
		}
		return false
	}
	walk(doc)
	return strings.Join(strings.Fields(title), " ")
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if n.Type == html.ElementNode && (n.DataAtom == atom.Script || n.DataAtom == atom.Style) {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func visibleTextLen(n *html.Node) int {
	return len([]rune(strings.Join(strings.Fields(textOf(n)), " ")))
}
