package citation

import (
	"strings"
	"testing"

	"github.com/deepgraph/deepgraph/llm"
)

// benchAnswer is a final answer of about 6 KB with 40 citations, a few of
// them invented.
func benchAnswer() (string, []Source) {
	var gathered []Source
	var b strings.Builder
	for i := range 40 {
		s := ForResult("Title", "https://site"+strings.Repeat("x", i%7)+".example/page/"+strings.Repeat("p", i), i/10, i%10)
		gathered = append(gathered, s)
		b.WriteString("Some claim about the topic that needs a source, with detail and numbers like 12.5% and 2024. ")
		b.WriteString("[" + s.Label + "](" + s.ShortURL + ")")
		if i%9 == 0 {
			b.WriteString(" [apnews](https://vertexaisearch.cloud.google.com/id/1-0)")
		}
		b.WriteString("\n")
	}
	return b.String(), gathered
}

func BenchmarkFinalize(b *testing.B) {
	answer, gathered := benchAnswer()
	b.SetBytes(int64(len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		Finalize(answer, gathered)
	}
}

// BenchmarkFinalizePathological is text made of unclosed links, angle
// brackets and titles, which a naive parser scans quadratically; compare
// the /1x and /4x throughput.
func BenchmarkFinalizePathological(b *testing.B) {
	for _, n := range []int{1, 4} {
		answer := strings.Repeat(`[a](b "x [c](<d (e`, 2000*n)
		b.Run("x"+string(rune('0'+n)), func(b *testing.B) {
			b.SetBytes(int64(len(answer)))
			for b.Loop() {
				Finalize(answer, nil)
			}
		})
	}
}

func BenchmarkGround(b *testing.B) {
	text := strings.Repeat("Ein Satz über Fußball und Europameisterschaften. ", 60)
	g := &llm.Grounding{}
	for i := range 20 {
		g.Chunks = append(g.Chunks, llm.GroundingChunk{URI: "https://r.example/" + strings.Repeat("r", i), Title: "site.de"})
	}
	for i := range 60 {
		g.Supports = append(g.Supports, llm.GroundingSupport{StartIndex: i * 50, EndIndex: i*50 + 49, ChunkIndices: []int{i % 20, (i + 3) % 20}})
	}
	resp := &llm.Response{Content: text, Grounding: g}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Ground(resp, 0, Options{})
	}
}

// BenchmarkFinalizeShort is a short answer with two citations: what
// finalizing costs when the answer is small and the fixed cost per call
// (building the Markdown readers) dominates.
func BenchmarkFinalizeShort(b *testing.B) {
	s1 := ForResult("Go blog", "https://go.dev/blog/range-functions", 0, 0)
	s2 := ForResult("Spec", "https://go.dev/ref/spec", 0, 1)
	answer := "Range over func arrived in Go 1.23 [" + s1.Label + "](" + s1.ShortURL + "). " +
		"The spec defines it [" + s2.Label + "](" + s2.ShortURL + ").\n"
	b.SetBytes(int64(len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		Finalize(answer, []Source{s1, s2})
	}
}
