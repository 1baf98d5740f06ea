package local

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// HTML elements whose content is not text a reader sees: skipped whole.
var htmlSkip = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "svg": true, "math": true,
	"nav": true, "iframe": true, "object": true, "canvas": true, "select": true, "textarea": true,
	"noembed": true, "noframes": true,
}

// HTML elements that start and end a block of text.
var htmlBlock = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "body": true, "caption": true,
	"dd": true, "details": true, "dialog": true, "div": true, "dl": true, "dt": true, "fieldset": true,
	"figcaption": true, "figure": true, "footer": true, "form": true, "header": true, "hgroup": true,
	"hr": true, "html": true, "legend": true, "li": true, "main": true, "ol": true, "p": true,
	"pre": true, "section": true, "summary": true, "table": true, "tbody": true, "tfoot": true,
	"thead": true, "tr": true, "ul": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
}

// parseHTML converts HTML to text blocks with their source line ranges. It
// walks the token stream (tolerant of malformed markup) rather than the
// parsed tree so that every piece of text keeps the line it was written on:
// results then cite the HTML file's own lines. Scripts, styles, navigation
// and other non-content elements are dropped; white space is collapsed
// except inside <pre>; headings h1–h6 become section headings. The title is
// the <title> element, else the first h1, else the file name.
func parseHTML(src, name string) document {
	p := htmlParser{}
	z := html.NewTokenizer(strings.NewReader(src))
	line := 1
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break // io.EOF, or a tokenizer error on malformed input: keep what we have
		}
		raw := z.Raw()
		tokLine := line
		line += bytes.Count(raw, []byte{'\n'})
		switch tt {
		case html.TextToken:
			switch {
			case p.inTitle:
				p.title.WriteString(html.UnescapeString(string(raw)))
				p.title.WriteByte(' ')
			case p.skip > 0:
			default:
				p.text(string(raw), tokLine)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			nameb, _ := z.TagName()
			p.startTag(string(nameb), tt == html.SelfClosingTagToken)
		case html.EndTagToken:
			nameb, _ := z.TagName()
			p.endTag(string(nameb))
		}
	}
	p.flush()

	doc := document{blocks: p.blocks}
	switch {
	case collapseSpace(p.title.String()) != "":
		doc.title = collapseSpace(p.title.String())
	case p.firstH1 != "":
		doc.title = p.firstH1
	default:
		doc.title = name
	}
	return doc
}

type htmlParser struct {
	blocks  []block
	segs    []segment // the block being built
	words   bool      // segs hold at least one word
	pending bool      // white space seen since the last word
	skip    int       // depth inside skipped elements
	pre     int       // depth inside <pre>
	heading int       // level of the open heading element, 0 if none
	inTitle bool
	title   strings.Builder
	firstH1 string
}

func (p *htmlParser) startTag(name string, selfClosing bool) {
	switch {
	case htmlSkip[name]:
		if !selfClosing {
			p.skip++
		}
		return
	case p.skip > 0:
		return
	case name == "title":
		p.inTitle = !selfClosing && p.title.Len() == 0
		return
	case name == "br":
		p.lineBreak()
		return
	case name == "td" || name == "th" || name == "img":
		p.pending = true
		return
	case !htmlBlock[name]:
		return
	}
	p.flush()
	if len(name) == 2 && name[0] == 'h' && name[1] >= '1' && name[1] <= '6' {
		p.heading = int(name[1] - '0')
	}
	if name == "pre" && !selfClosing {
		p.pre++
	}
}

func (p *htmlParser) endTag(name string) {
	switch {
	case htmlSkip[name]:
		if p.skip > 0 {
			p.skip--
		}
		return
	case name == "body" || name == "html":
		// An unclosed skipped element must not swallow the rest of a
		// document that has more after it.
		p.skip = 0
	case p.skip > 0:
		return
	case name == "title":
		p.inTitle = false
		return
	case name == "br":
		p.lineBreak()
		return
	case !htmlBlock[name]:
		return
	}
	p.flush()
	if name == "pre" && p.pre > 0 {
		p.pre--
	}
}

// text adds the raw text of one text token that starts on line.
func (p *htmlParser) text(raw string, line int) {
	lines := strings.Split(raw, "\n")
	for i, l := range lines {
		n := line + i
		l = strings.TrimSuffix(l, "\r")
		if p.pre > 0 {
			t := html.UnescapeString(l)
			if i < len(lines)-1 {
				t += "\n"
			}
			blank := strings.TrimSpace(t) == ""
			if blank && !p.words {
				continue // leading blank lines do not start the block
			}
			p.segs = append(p.segs, segment{text: t, start: n, end: n})
			p.words = p.words || !blank
			continue
		}
		if i > 0 {
			p.pending = true // the newline is white space
		}
		if l == "" {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(l); unicode.IsSpace(r) {
			p.pending = true
		}
		var sb strings.Builder
		for _, f := range strings.Fields(html.UnescapeString(l)) {
			if p.pending && (p.words || sb.Len() > 0) {
				sb.WriteByte(' ')
			}
			sb.WriteString(f)
			p.pending = true
		}
		if sb.Len() > 0 {
			p.segs = append(p.segs, segment{text: sb.String(), start: n, end: n})
			p.words = true
		}
		r, _ := utf8.DecodeLastRuneInString(l)
		p.pending = unicode.IsSpace(r)
	}
}

// lineBreak ends the current line of text (<br>).
func (p *htmlParser) lineBreak() {
	if p.skip > 0 || !p.words || len(p.segs) == 0 {
		return
	}
	p.segs[len(p.segs)-1].text += "\n"
	p.pending = false
}

// flush ends the current block.
func (p *htmlParser) flush() {
	for len(p.segs) > 0 && strings.TrimSpace(p.segs[len(p.segs)-1].text) == "" {
		p.segs = p.segs[:len(p.segs)-1] // trailing blank lines of a <pre>
	}
	if p.words && len(p.segs) > 0 {
		b := block{segs: p.segs}
		if p.heading > 0 {
			b.heading = p.heading
			b.headingText = collapseSpace(b.text())
			if p.heading == 1 && p.firstH1 == "" {
				p.firstH1 = b.headingText
			}
		}
		p.blocks = append(p.blocks, b)
	}
	p.segs, p.words, p.pending = nil, false, false
	p.heading = 0
}
