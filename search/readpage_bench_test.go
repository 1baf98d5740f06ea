package search

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// bigArticlePage returns a realistic HTML article page of about size bytes:
// a head full of meta tags, styles and scripts (analytics, an app bundle,
// JSON state), a header with inline SVG icons and a navigation menu, then
// the article — many paragraphs with links, subheadings, lists and tables —
// followed by related links, comments and a footer. The article's first
// paragraphs start with "Lead paragraph N:" and each script holds
// "SCRIPTJUNK", each menu entry "NavJunk".
func bigArticlePage(size int) string {
	var b strings.Builder
	b.Grow(size + 16<<10)
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Consensus at Scale: A Field Guide | Systems Weekly</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="author" content="Grace Hopper">
<meta property="og:title" content="Consensus at Scale: A Field Guide">
<meta property="og:description" content="How production systems run Raft and Paxos.">
<meta property="article:published_time" content="2025-06-01T08:00:00Z">
<link rel="stylesheet" href="/static/site.css">
<script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle","headline":"Consensus at Scale","author":{"@type":"Person","name":"Grace Hopper"}}</script>
`)
	// Styles and scripts: about a quarter of the page, as on news sites.
	b.WriteString("<style>")
	for i := 0; b.Len() < size/20; i++ {
		fmt.Fprintf(&b, ".c%d{margin:%dpx;padding:0 %dpx;color:#%06x}\n", i, i%17, i%9, i*7919%0xffffff)
	}
	b.WriteString("</style>\n<script>/* SCRIPTJUNK analytics */\n")
	for i := 0; b.Len() < size/5; i++ {
		fmt.Fprintf(&b, "window.__a%d=function(e){if(e<%d){return document.querySelector('#x%d')}return null};\n", i, i, i)
	}
	b.WriteString("</script>\n<script>window.__STATE__={\"SCRIPTJUNK\":[")
	for i := 0; b.Len() < size/4; i++ {
		fmt.Fprintf(&b, `{"id":%d,"slug":"story-%d","title":"Story number %d"},`, i, i, i)
	}
	b.WriteString("{}]};</script></head>\n<body class=\"c1 c2\">\n")
	b.WriteString(`<header class="site-header"><a href="/" class="logo"><svg width="120" height="30" viewBox="0 0 120 30">`)
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, `<path d="M%d %d L%d %d Z" fill="#333"/>`, i, i*2, i+10, i*3)
	}
	b.WriteString("</svg></a>\n<nav class=\"main-nav\"><ul>")
	for i := 0; i < 150; i++ {
		fmt.Fprintf(&b, `<li class="nav-item"><a href="/section/%d">NavJunk section %d</a></li>`, i, i)
	}
	b.WriteString("</ul></nav><form action=\"/search\"><input name=q><button>Search</button></form></header>\n")
	b.WriteString(`<div class="layout"><main><article class="post"><h1>Consensus at Scale: A Field Guide</h1>
<p class="byline">By Grace Hopper, June 1, 2025</p>
`)
	topics := []string{"leader election", "log replication", "membership changes", "snapshots", "read leases", "batching", "pipelining", "witness replicas"}
	para := 0
	for sec := 0; b.Len() < size*85/100; sec++ {
		topic := topics[sec%len(topics)]
		fmt.Fprintf(&b, "<h2>Part %d: %s</h2>\n", sec+1, topic)
		for j := 0; j < 6; j++ {
			lead := "Body paragraph"
			if para < 5 {
				lead = "Lead paragraph"
			}
			fmt.Fprintf(&b, `<p>%s %d: production clusters tune %s carefully, because the <a href="/glossary/%d">timeouts</a> and quorum sizes decide both availability and latency. Operators measure the <em>tail</em> of commit latency, not its mean, and they compare it with <a href="https://example.org/paper/%d">published results</a> before changing anything in the <strong>critical path</strong> of the replicated state machine.</p>`+"\n", lead, para, topic, para, para)
			para++
		}
		if sec%3 == 0 {
			b.WriteString("<ul>")
			for k := 0; k < 5; k++ {
				fmt.Fprintf(&b, "<li>Checklist item %d for %s: verify quorum %d.</li>", k, topic, k+3)
			}
			b.WriteString("</ul>\n")
		}
		if sec%4 == 1 {
			b.WriteString("<table><thead><tr><th>Cluster</th><th>Nodes</th><th>p99 commit</th></tr></thead><tbody>")
			for k := 0; k < 8; k++ {
				fmt.Fprintf(&b, "<tr><td>cluster-%d</td><td>%d</td><td>%d ms</td></tr>", k, 3+2*(k%3), 4+k*3)
			}
			b.WriteString("</tbody></table>\n")
		}
		if sec%5 == 2 {
			b.WriteString(`<figure><img src="/img/chart.png" alt="latency chart"><figcaption>Commit latency by cluster size.</figcaption></figure>` + "\n")
		}
	}
	b.WriteString("</article></main>\n<aside class=\"sidebar\"><h3>Related</h3><ul>")
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&b, `<li><a href="/story/%d">NavJunk related story %d</a></li>`, i, i)
	}
	b.WriteString("</ul></aside></div>\n<section class=\"comments\">")
	for i := 0; b.Len() < size-4096; i++ {
		fmt.Fprintf(&b, `<div class="comment"><span class="who">user%d</span><p>Comment %d: interesting, thanks for the write-up.</p></div>`, i, i)
	}
	b.WriteString("</section>\n<footer><ul>")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, `<li><a href="/legal/%d">NavJunk footer %d</a></li>`, i, i)
	}
	b.WriteString("</ul><p>Copyright 2025 Systems Weekly</p></footer>\n<script>/* SCRIPTJUNK late */ boot();</script>\n")
	for b.Len() < size-16 {
		b.WriteString("<!-- pad -->\n")
	}
	b.WriteString("</body></html>")
	return b.String()
}

// BenchmarkReadPage500KB measures the CPU and memory of turning a fetched
// 500 KB HTML article into a Page (no network): charset decoding,
// extraction and Markdown conversion. "whole" converts the whole main
// content (Read, fetch_page); "summary" reads it for a summary prompt that
// uses the research back end's default 6,000 characters per source
// (ReadUpTo). ns/KB is per KB of HTML.
func BenchmarkReadPage500KB(b *testing.B) {
	body := []byte(bigArticlePage(500 << 10))
	u, err := url.Parse("https://news.example.com/2025/06/consensus-at-scale")
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewReader(ReaderConfig{})
	if err != nil {
		b.Fatal(err)
	}
	f := &fetched{url: u, contentType: "text/html; charset=utf-8", body: body}
	for _, bc := range []struct {
		name     string
		maxChars int
	}{{"whole", 0}, {"summary", 6000}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				p, err := r.toPage(ctx, f, bc.maxChars)
				if err != nil || len(p.Content) < bc.maxChars {
					b.Fatalf("toPage: %v (content %d bytes)", err, len(p.Content))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(float64(len(body))/1024), "ns/KB")
		})
	}
}
