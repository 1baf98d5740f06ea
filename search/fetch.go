package search

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// fetched is a response body read within the limits.
type fetched struct {
	url         *url.URL // final, after redirects
	contentType string   // the Content-Type header
	body        []byte   // decompressed, at most maxBytes
	truncated   bool
}

const acceptHeader = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5"

// ratioFloor is the decompressed size below which the compression ratio is
// not judged: small, very repetitive pages are legitimate.
const ratioFloor = 1 << 20

// fetch GETs u and reads its body, decompressing it itself so that both the
// decompressed size and the compression ratio are bounded.
func (r *Reader) fetch(ctx context.Context, u *url.URL) (*fetched, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("search: reading %s: %w", u.Redacted(), err)
	}
	req.Header.Set("User-Agent", r.userAgent)
	req.Header.Set("Accept", acceptHeader)
	// Asking explicitly turns off the transport's own transparent
	// decompression, which would hide the compressed size.
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("search: reading page: %w", err)
	}
	defer resp.Body.Close()
	final := u
	if resp.Request != nil && resp.Request.URL != nil {
		final = resp.Request.URL
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.CopyN(io.Discard, resp.Body, 16<<10)
		return nil, &StatusError{URL: final.Redacted(), Status: resp.StatusCode}
	}
	body, err := r.decoded(resp)
	if err != nil {
		return nil, fmt.Errorf("search: reading %s: %w", final.Redacted(), err)
	}
	data, err := io.ReadAll(io.LimitReader(body, r.maxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("search: reading %s: %w", final.Redacted(), ctx.Err())
		}
		return nil, fmt.Errorf("search: reading %s: %w", final.Redacted(), err)
	}
	f := &fetched{url: final, contentType: resp.Header.Get("Content-Type"), body: data}
	if int64(len(data)) > r.maxBytes {
		f.body, f.truncated = data[:r.maxBytes], true
	}
	return f, nil
}

// decoded returns the response body with its Content-Encoding undone,
// guarded against decompression bombs.
func (r *Reader) decoded(resp *http.Response) (io.Reader, error) {
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	if enc == "" || enc == "identity" || resp.Uncompressed {
		return resp.Body, nil
	}
	in := &countingReader{r: resp.Body}
	var out io.Reader
	switch enc {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, fmt.Errorf("invalid gzip body: %w", err)
		}
		out = zr
	case "deflate":
		// "deflate" should be zlib-wrapped; some servers send raw DEFLATE.
		br := bufio.NewReader(in)
		if hdr, err := br.Peek(2); err == nil && isZlibHeader(hdr) {
			zr, err := zlib.NewReader(br)
			if err != nil {
				return nil, fmt.Errorf("invalid deflate body: %w", err)
			}
			out = zr
		} else {
			out = flate.NewReader(br)
		}
	default:
		return nil, fmt.Errorf("content encoding %q is not supported (asked for gzip or deflate): %w", enc, ErrUnsupportedContent)
	}
	return &ratioGuard{r: out, in: in, ratio: r.maxRatio}, nil
}

func isZlibHeader(h []byte) bool {
	return h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ratioGuard fails a decompressed stream once it has produced more than
// ratioFloor bytes and more than ratio times the compressed bytes consumed.
type ratioGuard struct {
	r     io.Reader
	in    *countingReader
	out   int64
	ratio float64
}

func (g *ratioGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.out += int64(n)
	if g.out > ratioFloor && float64(g.out) > g.ratio*float64(max(g.in.n, 1)) {
		return n, fmt.Errorf("%w: %d bytes from %d compressed, more than %gx (MaxCompressionRatio)", ErrCompressionBomb, g.out, g.in.n, g.ratio)
	}
	return n, err
}
