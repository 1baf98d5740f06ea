package export

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLP over HTTP (http/protobuf), written here rather than taken from
// OpenTelemetry's otlptracehttp and otlpmetrichttp: those import gRPC (for
// options they share with the gRPC exporters), and gRPC's init pulls in
// golang.org/x/net/trace, whose HTML templates keep Go's linker from
// dropping any unused method in the whole program — research was a third
// bigger and slower to start for it. The span transform is OpenTelemetry's
// (otlptrace, which has no gRPC); metrics are transformed in otlpmetrics.go.
// Requests carry TracesData and MetricsData, whose wire form is that of
// the collector's Export…ServiceRequest (the same field 1), so the
// collector packages (gRPC again) are not needed either.

// Defaults of the OTLP exporter settings, as the specification gives them.
const (
	defaultOTLPEndpoint = "http://localhost:4318"
	defaultOTLPTimeout  = 10 * time.Second
	// maxRetryTime bounds the retries of one export (429, 502, 503, 504,
	// or no connection).
	maxRetryTime = time.Minute
)

// otlpHTTP sends one signal's requests to its OTLP/HTTP endpoint.
type otlpHTTP struct {
	url     string
	headers http.Header
	gzip    bool
	timeout time.Duration
	client  *http.Client
}

// newOTLPHTTP reads the settings of signal (TRACES or METRICS) from the
// OTEL_EXPORTER_OTLP_* variables, the signal's own first; path is the
// signal's path under a base endpoint (v1/traces).
func newOTLPHTTP(getenv func(string) string, signal, path string) (*otlpHTTP, error) {
	setting := func(name string) (value, from string) {
		for _, v := range []string{"OTEL_EXPORTER_OTLP_" + signal + "_" + name, "OTEL_EXPORTER_OTLP_" + name} {
			if s := strings.TrimSpace(getenv(v)); s != "" {
				return s, v
			}
		}
		return "", ""
	}
	h := &otlpHTTP{headers: http.Header{}, timeout: defaultOTLPTimeout}
	if ep, from := setting("ENDPOINT"); from == "OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT" {
		h.url = ep
	} else {
		if ep == "" {
			ep = defaultOTLPEndpoint
		}
		h.url = strings.TrimRight(ep, "/") + "/" + path
	}
	if u, err := url.Parse(h.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, configErr("the OTLP %s endpoint %q is not an http:// or https:// URL", strings.ToLower(signal), h.url)
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_" + signal + "_HEADERS"} {
		if err := parseHeaders(getenv(v), h.headers); err != nil {
			return nil, configErr("%s: %v", v, err)
		}
	}
	if s, from := setting("TIMEOUT"); s != "" {
		ms, err := strconv.Atoi(s)
		if err != nil || ms < 0 {
			return nil, configErr("%s=%q: give milliseconds, e.g. 10000", from, s)
		}
		h.timeout = time.Duration(ms) * time.Millisecond
	}
	switch s, from := setting("COMPRESSION"); s {
	case "", "none":
	case "gzip":
		h.gzip = true
	default:
		return nil, configErr("%s=%q: use gzip or none", from, s)
	}
	tlsConf, err := tlsConfig(setting)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if tlsConf != nil {
		transport.TLSClientConfig = tlsConf
	}
	h.client = &http.Client{Transport: transport}
	return h, nil
}

// parseHeaders adds the headers of an OTEL_EXPORTER_OTLP_HEADERS value:
// comma-separated key=value pairs, the values percent-encoded.
func parseHeaders(s string, into http.Header) error {
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// The pair may hold a secret: name its place, not its text.
			return errors.New("a header is not key=value")
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("the value of header %s is not percent-encoded", k)
		}
		into.Set(k, dv)
	}
	return nil
}

// tlsConfig is the TLS configuration of the CERTIFICATE, CLIENT_CERTIFICATE
// and CLIENT_KEY settings; nil when none is set.
func tlsConfig(setting func(string) (string, string)) (*tls.Config, error) {
	ca, caFrom := setting("CERTIFICATE")
	cert, certFrom := setting("CLIENT_CERTIFICATE")
	key, keyFrom := setting("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, configErr("%s: %v", caFrom, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, configErr("%s: %s holds no PEM certificate", caFrom, ca)
		}
		conf.RootCAs = pool
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, configErr("a client certificate needs both OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY (or the signal's own)")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, configErr("%s / %s: %v", certFrom, keyFrom, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

// send posts one request body (a serialized protobuf message), retrying
// what the specification says to retry (429, 502, 503, 504, no connection)
// with growing waits, or as long as Retry-After says, for at most
// maxRetryTime or ctx.
func (h *otlpHTTP) send(ctx context.Context, msg proto.Message) error {
	body, err := proto.Marshal(msg)
	if err != nil {
		return fmt.Errorf("OTLP: encoding the request: %w", err)
	}
	encoding := ""
	if h.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body, encoding = b.Bytes(), "gzip"
	}
	deadline := time.Now().Add(maxRetryTime)
	wait := 500 * time.Millisecond
	for {
		retry, after, err := h.post(ctx, body, encoding)
		if err == nil || !retry {
			return err
		}
		if after <= 0 {
			after = wait
			wait = min(2*wait, 8*time.Second)
		}
		if time.Now().Add(after).After(deadline) {
			return err
		}
		t := time.NewTimer(after)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (then: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// post makes one attempt; retry says whether another may succeed, after
// how long when the server said (Retry-After).
func (h *otlpHTTP) post(ctx context.Context, body []byte, encoding string) (retry bool, after time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("OTLP: %w", err)
	}
	for k, v := range h.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, 0, fmt.Errorf("OTLP: sending to %s: %w", h.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 == 2 {
		return false, 0, nil
	}
	err = fmt.Errorf("OTLP: %s answered %s: %s", h.url, resp.Status, strings.TrimSpace(string(msg)))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return true, after, err
	}
	return false, 0, err
}

// traceClient is otlptrace's client over otlpHTTP.
type traceClient struct{ h *otlpHTTP }

var _ otlptrace.Client = traceClient{}

func (c traceClient) Start(context.Context) error { return nil }

func (c traceClient) Stop(context.Context) error {
	c.h.client.CloseIdleConnections()
	return nil
}

func (c traceClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	if len(spans) == 0 {
		return nil
	}
	return c.h.send(ctx, &tracepb.TracesData{ResourceSpans: spans})
}

// newTraceExporter is the OTLP/HTTP span exporter of the environment.
func newTraceExporter(ctx context.Context, getenv func(string) string) (*otlptrace.Exporter, error) {
	h, err := newOTLPHTTP(getenv, "TRACES", "v1/traces")
	if err != nil {
		return nil, err
	}
	return otlptrace.New(ctx, traceClient{h})
}
