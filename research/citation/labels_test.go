package citation

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestForResult(t *testing.T) {
	tests := []struct {
		title, url string
		want       string
	}{
		{"UEFA", "https://www.uefa.com/euro2024/", "uefa"},
		{"BBC", "https://www.bbc.co.uk/sport", "bbc"},
		{"Wiki", "https://en.wikipedia.org/wiki/Go", "en"},
		{"Intranet", "http://localhost:8080/x", "localhost"},
		{"IP", "http://192.0.2.7/x", "192.0.2.7"},
		{"IPv6", "http://[2001:db8::1]/x", "2001:db8::1"},
		{"Guide", "file:///docs/guide.md#L10", "guide"},
		{"Nice Title. Sub", "::not a url", "Nice Title"},
		{"", "", "source"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			s := ForResult(tt.title, tt.url, 4, 2)
			assert.Equal(t, Source{Label: tt.want, ShortURL: ShortURL(4, 2), URL: tt.url, Title: tt.title}, s)
		})
	}
}

func TestFromLabels(t *testing.T) {
	sources := []Source{
		ForResult("UEFA", "https://www.uefa.com/a", 0, 0),
		ForResult("BBC", "https://www.bbc.co.uk/b", 0, 1),
		ForResult("ESPN", "https://espn.com/c", 0, 2),
		ForResult("Reuters", "https://reuters.com/d", 0, 3),
		ForResult("AP", "https://apnews.com/e", 0, 4),
	}
	m := func(i int) string { return Marker([]Source{sources[i]}) }
	tests := []struct {
		name    string
		summary string
		want    string
		used    []int
	}{
		{"none", "Nothing cited.", "Nothing cited.", nil},
		{"one", "Spain won [S1].", "Spain won" + m(0) + ".", []int{0}},
		{"after the period", "Spain won. [S1]", "Spain won." + m(0), []int{0}},
		{"list", "Fact [S2, S5].", "Fact" + m(1) + m(4) + ".", []int{1, 4}},
		{"semicolons and and", "Fact [S2; S3 and S1].", "Fact" + m(1) + m(2) + m(0) + ".", []int{1, 2, 0}},
		{"adjacent", "Fact [S1][S3].", "Fact" + m(0) + m(2) + ".", []int{0, 2}},
		{"parentheses are prose", "Fact (S4).", "Fact (S4).", nil},
		{"range", "Fact [S2-S4].", "Fact" + m(1) + m(2) + m(3) + ".", []int{1, 2, 3}},
		{"en-dash range", "Fact [S2–4].", "Fact" + m(1) + m(2) + m(3) + ".", []int{1, 2, 3}},
		{"lower case", "Fact [s2].", "Fact" + m(1) + ".", []int{1}},
		{"fullwidth", "事实【S1】。", "事实" + m(0) + "。", []int{0}},
		{"repeats in a group once", "Fact [S1, S1].", "Fact" + m(0) + ".", []int{0}},
		{"used once overall", "A [S2]. B [S1]. C [S2].", "A" + m(1) + ". B" + m(0) + ". C" + m(1) + ".", []int{1, 0}},
		{"unknown label removed", "Fact [S9] here.", "Fact here.", nil},
		{"unknown among known", "Fact [S1, S9, S0].", "Fact" + m(0) + ".", []int{0}},
		{"huge number", "Fact [S99999999999999999999].", "Fact.", nil},
		{"link made of a label", "Fact [S1](https://evil.example/).", "Fact" + m(0) + ".", []int{0}},
		{"line start", "[S1] opens.", m(0)[1:] + " opens.", []int{0}},
		{"not labels", "A [note], (an aside), S1 bare, [S1 is great].", "A [note], (an aside), S1 bare, [S1 is great].", nil},
		{"unclosed", "Fact [S1 and more", "Fact [S1 and more", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, used := FromLabels(tt.summary, sources)
			assert.Equal(t, tt.want, text)
			var want []Source
			for _, i := range tt.used {
				want = append(want, sources[i])
			}
			assert.Equal(t, want, used)
		})
	}
}

// TestFromLabelsThenFinalize checks the two back ends meet: label citations
// become markers that Finalize restores like Gemini's.
func TestFromLabelsThenFinalize(t *testing.T) {
	sources := []Source{
		ForResult("UEFA", "https://www.uefa.com/a", 2, 0),
		ForResult("BBC", "https://www.bbc.co.uk/b", 2, 1),
	}
	summary, _ := FromLabels("Spain won [S2]. Final in Berlin [S1, S7].", sources)
	res := Finalize(summary, sources)
	assert.Equal(t, "Spain won [1](https://www.bbc.co.uk/b). Final in Berlin [2](https://www.uefa.com/a).", res.Text)
	assert.Equal(t, []Source{sources[1], sources[0]}, res.Sources)
	assert.Zero(t, res.Dropped)
}

func TestFromLabelsUnsafeSources(t *testing.T) {
	sources := []Source{
		{Label: "[bad]\nlabel", ShortURL: ShortURL(0, 0), URL: "https://x.example/"},
		{Label: "", ShortURL: "", URL: "https://www.y.example/p"},
		{Label: "z", ShortURL: "", URL: ""},
		{Label: "w", ShortURL: "https://w.example/a (b)"},
	}
	text, used := FromLabels("A [S1]. B [S2]. C [S3]. D [S4].", sources)
	assert.Equal(t, "A [(bad) label]("+ShortURL(0, 0)+"). B [y](https://www.y.example/p). C. D.", text)
	assert.Equal(t, sources[:2], used)
}
