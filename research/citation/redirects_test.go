package citation

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFinalizeRedirects: a source resolved from a redirect is shown with
// its real URL; a citation of the redirect, of the real URL or of either
// short URL is that one source.
func TestFinalizeRedirects(t *testing.T) {
	const (
		red1 = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AAA"
		red2 = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/BBB"
		page = "https://go.dev/doc/go1.22"
	)
	gathered := []Source{
		{Label: "go", ShortURL: ShortURL(0, 0), URL: page, Title: "Go 1.22 Release Notes", Redirects: []string{red1}},
		{Label: "go", ShortURL: ShortURL(1, 0), URL: page, Title: "Go 1.22 Release Notes", Redirects: []string{red2}},
	}
	res := Finalize("A [go]("+ShortURL(0, 0)+"). B [go]("+ShortURL(1, 0)+"). C [1]("+red1+"). D [S2]("+red2+"). E [go]("+page+").", gathered)
	assert.Equal(t, "A [1]("+page+"). B [1]("+page+"). C [1]("+page+"). D [1]("+page+"). E [1]("+page+").", res.Text)
	assert.Equal(t, 0, res.Dropped)
	if assert.Len(t, res.Sources, 1) {
		assert.Equal(t, page, res.Sources[0].URL)
	}
}
