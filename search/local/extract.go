package local

import (
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// A document is a parsed corpus file: a title and a sequence of blocks
// (paragraphs, list items, code blocks, headings), each knowing the source
// lines it came from.
type document struct {
	title  string
	blocks []block
}

// A block is a run of text that the chunker never splits unless it is
// larger than a passage. Its text is the concatenation of its segments.
type block struct {
	segs []segment
	// heading is 1–6 for a heading block, 0 otherwise; headingText is the
	// heading's plain text.
	heading     int
	headingText string
}

// A segment is a piece of a block's text with the source lines it spans
// (1-based, inclusive). Markdown and plain text use one segment per line;
// HTML uses one per text node.
type segment struct {
	text       string
	start, end int
}

func (b block) startLine() int { return b.segs[0].start }
func (b block) endLine() int   { return b.segs[len(b.segs)-1].end }

func (b block) text() string {
	if len(b.segs) == 1 {
		return trimBlock(b.segs[0].text)
	}
	var sb strings.Builder
	for _, s := range b.segs {
		sb.WriteString(s.text)
	}
	return trimBlock(sb.String())
}

// trimBlock drops leading blank lines and trailing white space but keeps
// the first line's indentation (which matters in code).
func trimBlock(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	for {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok || strings.TrimSpace(line) != "" {
			return s
		}
		s = rest
	}
}

func (b block) size() int {
	n := 0
	for _, s := range b.segs {
		n += len(s.text)
	}
	return n
}

// fileKind is how a file is parsed, decided by its extension.
type fileKind int

const (
	kindOther fileKind = iota // not indexed, silently ignored
	kindMarkdown
	kindText
	kindHTML
	kindPDF // recognised but unsupported: reported as skipped
)

// kindOf maps a file name to its kind by extension (case-insensitive).
func kindOf(name string) fileKind {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown", ".mdown", ".mkd", ".mkdn", ".mdx":
		return kindMarkdown
	case ".txt", ".text", ".rst", ".org", ".adoc", ".asciidoc":
		return kindText
	case ".html", ".htm", ".xhtml":
		return kindHTML
	case ".pdf":
		return kindPDF
	default:
		return kindOther
	}
}

// parse parses text (valid UTF-8, BOM removed) of the given kind. name is
// the file's base name, the title when the file has none of its own.
func parse(kind fileKind, text, name string) document {
	switch kind {
	case kindMarkdown:
		return parseMarkdown(text, name)
	case kindHTML:
		return parseHTML(text, name)
	default:
		return parsePlain(text, name)
	}
}

// splitLines splits text into lines without their terminators ("\n" or
// "\r\n"). A final terminator does not start an extra line.
func splitLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// paragraphBuilder collects consecutive non-blank lines into one block.
type paragraphBuilder struct {
	segs []segment
}

func (p *paragraphBuilder) add(line string, n int) {
	if len(p.segs) > 0 {
		p.segs[len(p.segs)-1].text += "\n"
	}
	p.segs = append(p.segs, segment{text: line, start: n, end: n})
}

func (p *paragraphBuilder) flush(doc *document) {
	if len(p.segs) == 0 {
		return
	}
	doc.blocks = append(doc.blocks, block{segs: p.segs})
	p.segs = nil
}

// parsePlain splits plain text into paragraphs at blank lines. Plain text
// has no headings; its title is the file name.
func parsePlain(text, name string) document {
	doc := document{title: name}
	var para paragraphBuilder
	for i, line := range splitLines(text) {
		if strings.TrimSpace(line) == "" {
			para.flush(&doc)
			continue
		}
		para.add(line, i+1)
	}
	para.flush(&doc)
	return doc
}

var (
	atxHeading = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	})
	fenceOpen   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^ {0,3}(`{3,}|~{3,})") })
	setextH1    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ {0,3}=+[ \t]*$`) })
	setextH2    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ {0,3}-+[ \t]*$`) })
	mdLink      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`) })
	frontTitle  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^title:[ \t]*(.+?)[ \t]*$`) })
	maxFrontRow = 200
)

// parseMarkdown splits Markdown into blocks: YAML front matter, fenced code
// blocks (kept whole, never mistaken for headings), ATX and setext headings,
// and paragraphs separated by blank lines. The title is the front matter's
// title, else the first level-1 heading, else the file name.
func parseMarkdown(text, name string) document {
	lines := splitLines(text)
	doc := document{}
	var frontMatterTitle, firstH1 string
	var para paragraphBuilder

	i := 0
	if len(lines) > 0 && strings.TrimRight(lines[0], " \t") == "---" {
		for j := 1; j < len(lines) && j < maxFrontRow; j++ {
			if l := strings.TrimRight(lines[j], " \t"); l == "---" || l == "..." {
				var b block
				for k := 0; k <= j; k++ {
					if m := frontTitle().FindStringSubmatch(lines[k]); m != nil && frontMatterTitle == "" {
						frontMatterTitle = cleanHeading(strings.Trim(m[1], `"'`))
					}
					t := lines[k]
					if k < j {
						t += "\n"
					}
					b.segs = append(b.segs, segment{text: t, start: k + 1, end: k + 1})
				}
				doc.blocks = append(doc.blocks, b)
				i = j + 1
				break
			}
		}
	}

	for ; i < len(lines); i++ {
		line := lines[i]
		n := i + 1
		if m := fenceOpen().FindStringSubmatch(line); m != nil {
			para.flush(&doc)
			marker := m[1]
			var b block
			b.segs = append(b.segs, segment{text: line, start: n, end: n})
			for i+1 < len(lines) {
				i++
				b.segs[len(b.segs)-1].text += "\n"
				b.segs = append(b.segs, segment{text: lines[i], start: i + 1, end: i + 1})
				if closesFence(lines[i], marker) {
					break
				}
			}
			doc.blocks = append(doc.blocks, b)
			continue
		}
		if strings.TrimSpace(line) == "" {
			para.flush(&doc)
			continue
		}
		if m := atxHeading().FindStringSubmatch(line); m != nil {
			para.flush(&doc)
			h := cleanHeading(m[2])
			level := len(m[1])
			if level == 1 && firstH1 == "" {
				firstH1 = h
			}
			doc.blocks = append(doc.blocks, block{
				segs:        []segment{{text: line, start: n, end: n}},
				heading:     level,
				headingText: h,
			})
			continue
		}
		if len(para.segs) > 0 && (setextH1().MatchString(line) || setextH2().MatchString(line)) {
			level := 2
			if setextH1().MatchString(line) {
				level = 1
			}
			var parts []string
			for _, s := range para.segs {
				parts = append(parts, strings.TrimSpace(s.text))
			}
			h := cleanHeading(strings.Join(parts, " "))
			if level == 1 && firstH1 == "" {
				firstH1 = h
			}
			para.add(line, n)
			doc.blocks = append(doc.blocks, block{segs: para.segs, heading: level, headingText: h})
			para.segs = nil
			continue
		}
		para.add(line, n)
	}
	para.flush(&doc)

	switch {
	case frontMatterTitle != "":
		doc.title = frontMatterTitle
	case firstH1 != "":
		doc.title = firstH1
	default:
		doc.title = name
	}
	return doc
}

// closesFence reports whether line closes a fence opened with marker: the
// same character, at least as many, nothing else but spaces.
func closesFence(line, marker string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	t = strings.TrimRight(t, " \t")
	if len(t) < len(marker) {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] != marker[0] {
			return false
		}
	}
	return true
}

// cleanHeading removes the most common inline Markdown from a heading so
// titles read as text: links become their text, code spans, emphasis
// markers and surplus whitespace go.
func cleanHeading(h string) string {
	h = mdLink().ReplaceAllString(h, "$1")
	h = strings.NewReplacer("`", "", "**", "", "__", "").Replace(h)
	return collapseSpace(h)
}

// collapseSpace trims s and turns every run of white space into one space.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
