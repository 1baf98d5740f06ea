package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/search/netguard"
	"github.com/deepgraph/deepgraph/telemetry"
)

func TestReaderSpansSayCacheHit(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("a page"))
	}))
	defer site.Close()
	inner, err := search.NewReader(search.ReaderConfig{Guard: netguard.Config{Allow: []string{"127.0.0.1"}}})
	require.NoError(t, err)
	defer inner.Close()
	tel, exp, _ := newTel(telemetry.Options{})
	r := tel.Reader(inner)
	for range 2 {
		_, err := r.Read(context.Background(), site.URL+"/a")
		require.NoError(t, err)
	}
	spans := exp.GetSpans()
	require.Len(t, spans, 2)
	assert.False(t, attrs(spans[0])[telemetry.AttrPageCacheHit].AsBool(), "the first read fetches")
	hit, ok := attrs(spans[1])[telemetry.AttrPageCacheHit]
	require.True(t, ok)
	assert.True(t, hit.AsBool(), "the second read is served by the reader's cache")
}
