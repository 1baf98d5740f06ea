package citation

import (
	"bytes"
	"html"
	"slices"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The guard
//
// Finalize's passes recognise links the way Markdown is usually written;
// a renderer reads more: an escaped bracket inside link text, a reference
// definition to "//host/x" or "https:host", a scheme spelled with an HTML
// entity, a www. autolink inside emphasis, raw HTML. So the last step of
// Finalize reads its output as a CommonMark + GFM renderer does — with
// goldmark and its GFM extension (tables, strikethrough, task lists, and
// linkify: bare www. and http(s):// autolinks) — and makes inert whatever
// such a renderer would make a link of that resolves to no gathered source:
//
//   - a link goes, its text stays (an image goes whole);
//   - an autolink becomes its host in a code span (an e-mail address is
//     left: it names no page);
//   - a reference definition goes;
//   - a raw HTML tag with attributes, or one that can load or run
//     something (script, style, iframe, img, a, svg, …), gets its '<'
//     escaped so that it shows as text, and an HTML block holding one stops
//     being an HTML block.
//
// It then reads the result again, since an edit can make a new construct,
// at most maxGuardRounds times; whatever is still foreign after that
// (adversarial input only) is made inert by escaping every punctuation
// character around the citations (inert). Goldmark's inline parsing is
// quadratic on some inputs (a paragraph of "[x](y" repeated), so a
// paragraph that could make it so — long and full of punctuation — is made
// inert before goldmark reads it (see budget): the work stays linear.

// maxGuardRounds bounds the parses of the guard.
const maxGuardRounds = 4

// mdReader reads Markdown as goldmark does, remembering where each link
// ends and where its text closes, which goldmark's AST does not keep.
type mdReader struct {
	md     goldmark.Markdown
	ends   map[ast.Node]int // link or image → end of its source
	closes map[ast.Node]int // link or image → the ']' that closes its text
}

func newMDReader() *mdReader {
	r := &mdReader{ends: map[ast.Node]int{}, closes: map[ast.Node]int{}}
	inline := parser.DefaultInlineParsers()
	for i, p := range inline {
		if p.Value == parser.NewLinkParser() {
			inline[i] = util.Prioritized(&linkTracker{inner: parser.NewLinkParser(), r: r}, p.Priority)
		}
	}
	p := parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(inline...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	)
	r.md = goldmark.New(goldmark.WithParser(p), goldmark.WithExtensions(extension.GFM))
	return r
}

// mdReaders pools mdReaders: building one (goldmark with GFM, and the
// parser's first-use setup) cost more than parsing a short answer, and
// every Finalize needs one or two. A reader's parser is stateless between
// parses but its position maps are not, so a reader serves one goroutine
// at a time: take it with getMDReader, give it back with put.
var mdReaders = sync.Pool{New: func() any { return newMDReader() }}

func getMDReader() *mdReader { return mdReaders.Get().(*mdReader) }

// put clears what the last parse recorded (so the pool holds no AST) and
// returns r to the pool; r must not be used afterwards.
func (r *mdReader) put() {
	clear(r.ends)
	clear(r.closes)
	mdReaders.Put(r)
}

// parse reads src; the positions it records are for this src.
func (r *mdReader) parse(src []byte) ast.Node {
	clear(r.ends)
	clear(r.closes)
	return r.md.Parser().Parse(text.NewReader(src))
}

// linkTracker is goldmark's link parser, recording the source extent of
// each link and image it makes.
type linkTracker struct {
	inner parser.InlineParser
	r     *mdReader
}

func (t *linkTracker) Trigger() []byte { return t.inner.Trigger() }

func (t *linkTracker) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	line, seg := block.PeekLine()
	closing := len(line) > 0 && line[0] == ']'
	n := t.inner.Parse(parent, block, pc)
	if !closing || n == nil {
		return n
	}
	_, pos := block.Position()
	end := pos.Start
	if end < 0 { // the link ends its block
		end = blockEnd(parent, block.Source())
	}
	t.r.ends[n] = end
	t.r.closes[n] = seg.Start
	return n
}

func (t *linkTracker) CloseBlock(parent ast.Node, block text.Reader, pc parser.Context) {
	if cb, ok := t.inner.(parser.CloseBlocker); ok {
		cb.CloseBlock(parent, block, pc)
	}
}

// blockEnd returns the end of the last line of the block holding n,
// without its trailing white space.
func blockEnd(n ast.Node, src []byte) int {
	for ; n != nil; n = n.Parent() {
		if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 {
			end := n.Lines().At(n.Lines().Len() - 1).Stop
			for end > 0 && isSpace(src[end-1]) {
				end--
			}
			return end
		}
	}
	return len(src)
}

// edit replaces src[start:end] with repl.
type edit struct {
	start, end int
	repl       string
}

// foreign finds what a renderer would link in src that resolves to no
// gathered source, as edits that make each inert.
func (ix *index) foreign(r *mdReader, src []byte) []edit {
	doc := r.parse(src)
	var edits []edit
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			if !ix.resolves(n.Destination) {
				start, end, close := n.Pos(), r.ends[n], r.closes[n]
				if start >= 0 && close > start && end > close {
					edits = append(edits, edit{start, end, string(src[start+1 : close])})
				}
			}
		case *ast.Image:
			if !ix.resolves(n.Destination) {
				if start, end := n.Pos(), r.ends[n]; start >= 0 && end > start {
					edits = append(edits, edit{start, end, ""})
				}
				return ast.WalkSkipChildren, nil
			}
		case *ast.AutoLink:
			if n.AutoLinkType == ast.AutoLinkEmail || ix.resolves(n.URL(src)) {
				break
			}
			label := n.Label(src)
			start := n.Pos()
			if start >= 0 && start < len(src) && !bytes.HasPrefix(src[start:], label) {
				start++ // linkify's position is that of the character before the URL
			}
			end := start + len(label)
			if start > 0 && src[start-1] == '<' && end < len(src) && src[end] == '>' {
				start, end = start-1, end+1
			}
			if start >= 0 && end <= len(src) {
				edits = append(edits, edit{start, end, codeHost(string(label))})
			}
		case *ast.RawHTML:
			if s := n.Segments; s.Len() > 0 && !harmlessTag(segmentsText(s, src)) {
				edits = append(edits, edit{s.At(0).Start, s.At(0).Start, "\\"})
			}
		case *ast.HTMLBlock:
			edits = append(edits, htmlBlockEdits(n, src)...)
		case *ast.LinkReferenceDefinition:
			if !ix.resolves(n.Destination) && n.Lines().Len() > 0 {
				start := lineStart(src, n.Lines().At(0).Start)
				end := lineEnd(src, n.Lines().At(n.Lines().Len()-1).Stop)
				edits = append(edits, edit{start, end, ""})
			}
		}
		return ast.WalkContinue, nil
	})
	return edits
}

// resolves reports whether a destination, as a renderer decodes it
// (backslash escapes and HTML entities), is a gathered source.
func (ix *index) resolves(dest []byte) bool {
	d := html.UnescapeString(unescapePunct(string(dest)))
	_, ok := ix.lookup(d)
	return ok && restorable(strings.TrimSpace(d))
}

func unescapePunct(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// codeHost is the host of a URL in a code span, as bare URLs are shown
// (see bareurl.go), or "" when it has none.
func codeHost(u string) string {
	if h := bareHost(u); h != "" {
		return "`" + h + "`"
	}
	return ""
}

func segmentsText(s *text.Segments, src []byte) string {
	var b strings.Builder
	for i := range s.Len() {
		seg := s.At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

// loaders are HTML elements that load, run or link something, or hide
// what follows: never harmless, even without attributes.
var loaders = []string{"a", "applet", "area", "audio", "base", "embed", "form", "frame", "frameset", "iframe", "img", "image", "input", "link", "math", "meta", "noscript", "object", "picture", "plaintext", "portal", "script", "source", "style", "svg", "template", "textarea", "title", "track", "video", "xmp"}

// harmlessTag reports whether raw HTML is a tag without attributes that
// loads and runs nothing (<br>, <sup>, …), a closing tag, or a comment.
func harmlessTag(tag string) bool {
	if strings.HasPrefix(tag, "<!--") {
		return true
	}
	closing := strings.HasPrefix(tag, "</")
	t := strings.TrimPrefix(strings.TrimPrefix(tag, "<"), "/")
	t = strings.TrimSuffix(strings.TrimSuffix(t, ">"), "/")
	t = strings.TrimSpace(t)
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if !isAlnum(t[i]) {
			return false // attributes, or not a tag name
		}
	}
	return closing || !slices.Contains(loaders, strings.ToLower(t))
}

// htmlBlockEdits makes an HTML block that holds anything but harmless tags
// inert: its first '<' is escaped, which ends the block (its lines become
// a paragraph), and so is the '<' of every other tag that is not harmless.
func htmlBlockEdits(n *ast.HTMLBlock, src []byte) []edit {
	lines := n.Lines()
	if lines.Len() == 0 {
		return nil
	}
	var tags []int
	for i := range lines.Len() {
		seg := lines.At(i)
		line := string(seg.Value(src))
		for k := 0; k < len(line); k++ {
			if line[k] != '<' {
				continue
			}
			end := strings.IndexByte(line[k:], '>')
			if end < 0 {
				end = len(line) - k - 1
			}
			if !harmlessTag(line[k : k+end+1]) {
				tags = append(tags, seg.Start+k)
			}
		}
	}
	if n.HasClosure() {
		c := &n.ClosureLine
		line := string(c.Value(src))
		if k := strings.IndexByte(line, '<'); k >= 0 && !harmlessTag(strings.TrimSpace(line[k:])) {
			tags = append(tags, c.Start+k)
		}
	}
	if len(tags) == 0 {
		return nil
	}
	first := lines.At(0).Start
	for first < len(src) && src[first] != '<' {
		first++
	}
	if tags[0] != first {
		tags = append([]int{first}, tags...)
	}
	edits := make([]edit, len(tags))
	for i, at := range tags {
		edits[i] = edit{at, at, "\\"}
	}
	return edits
}

func lineStart(src []byte, i int) int {
	for i > 0 && src[i-1] != '\n' {
		i--
	}
	return i
}

// lineEnd returns the end of the line holding src[i-1], its newline
// included.
func lineEnd(src []byte, i int) int {
	for i < len(src) && src[i] != '\n' {
		i++
	}
	return min(i+1, len(src))
}

// apply makes the edits, outermost first; an edit inside one already made
// is left out. It returns the text and the number of edits made.
func apply(src []byte, edits []edit) (string, int) {
	slices.SortStableFunc(edits, func(a, b edit) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	var b strings.Builder
	at, n := 0, 0
	for _, e := range edits {
		if e.start < at || (n > 0 && e == edits[n-1]) {
			continue // inside an edit made, or the same edit again
		}
		b.Write(src[at:e.start])
		b.WriteString(e.repl)
		at = e.end
		edits[n] = e
		n++
	}
	b.Write(src[at:])
	return b.String(), n
}

// guard makes inert every link of text that a CommonMark + GFM renderer
// would show and that resolves to no gathered source. It returns the text
// and how many links it made inert.
func (ix *index) guard(text string) (string, int) {
	r := getMDReader()
	defer r.put()
	made := 0
	text, n := budget(text, ix)
	made += n
	for range maxGuardRounds {
		src := []byte(text)
		edits := ix.foreign(r, src)
		if len(edits) == 0 {
			return text, made
		}
		var k int
		text, k = apply(src, edits)
		made += k
	}
	if edits := ix.foreign(r, []byte(text)); len(edits) > 0 {
		text = inert(newDoc(text), ix, 0, len(text))
		made++
	}
	return text, made
}

// checkRendered lists the destinations of what a CommonMark + GFM renderer
// would link in text and that resolve to no gathered source: empty for
// any output of Finalize.
func checkRendered(text string, ix *index) []string {
	r := getMDReader()
	defer r.put()
	src := []byte(text)
	var out []string
	for _, e := range ix.foreign(r, src) {
		out = append(out, string(src[e.start:e.end]))
	}
	return out
}
