// Package export sets deepgraph's tracing and metrics up the OpenTelemetry
// way: from the standard OTEL_* variables (OTLP over HTTP) and an optional
// OTLP/JSON trace file. It is apart from package telemetry because the OTLP exporter
// brings the SDK's and protobuf's packages along; programs that bring their own
// TracerProvider need only telemetry. The OTLP/HTTP client is this package's
// own (otlphttp.go says why: OpenTelemetry's imports gRPC).
package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepgraph/deepgraph/telemetry"
)

// DefaultServiceName is the service.name of deepgraph's spans unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says otherwise.
const DefaultServiceName = "deepgraph"

// Config says where spans go. The OTLP exporter is configured the
// OpenTelemetry way, by the standard environment variables:
//
//   - OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
//     turns export on (e.g. http://localhost:4318); with neither, and no
//     OTEL_TRACES_EXPORTER=otlp, nothing is exported;
//   - OTEL_EXPORTER_OTLP_PROTOCOL / OTEL_EXPORTER_OTLP_TRACES_PROTOCOL:
//     http/protobuf (the default) is built in; grpc and http/json are not
//     and are refused with an error saying so;
//   - OTEL_EXPORTER_OTLP_HEADERS, …_TIMEOUT, …_COMPRESSION, …_CERTIFICATE,
//     …_CLIENT_CERTIFICATE and …_CLIENT_KEY, each also per signal
//     (OTEL_EXPORTER_OTLP_TRACES_HEADERS, …), as the specification says;
//     OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE (cumulative,
//     delta, lowmemory);
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the service;
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG choose the sampler
//     (default parentbased_always_on);
//   - OTEL_TRACES_EXPORTER=none turns spans off, OTEL_METRICS_EXPORTER=none
//     metrics; OTEL_SDK_DISABLED=true turns both off;
//   - metrics go to the same endpoint (or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
//     with OTEL_EXPORTER_OTLP_METRICS_PROTOCOL), every
//     OTEL_METRIC_EXPORT_INTERVAL milliseconds (default 60000) and once
//     more at Shutdown.
type Config struct {
	// TraceFile, when set, receives the spans as OTLP/JSON lines (see
	// telemetry.JSONExporter), whatever the environment says.
	TraceFile string
	// Options say what spans carry.
	Options telemetry.Options
	// Getenv reads the environment; nil is os.Getenv. The SDK reads the
	// variables it handles (the sampler, the resource, the metric
	// interval) from the process environment itself.
	Getenv func(string) string
	// ServiceVersion is service.version, when known.
	ServiceVersion string
}

// Provider is a running tracer and meter provider with their exporters.
type Provider struct {
	*telemetry.Telemetry
	tp *sdktrace.TracerProvider
	mp *sdkmetric.MeterProvider
}

// TracerProvider returns the SDK's tracer provider; nil when no spans are
// exported (only metrics are).
func (p *Provider) TracerProvider() *sdktrace.TracerProvider { return p.tp }

// MeterProvider returns the SDK's meter provider; nil when no metrics are
// exported (OTEL_METRICS_EXPORTER=none, or only --trace FILE is set).
func (p *Provider) MeterProvider() *sdkmetric.MeterProvider { return p.mp }

// Shutdown exports the spans still buffered and the metrics' last points,
// and stops the exporters. A nil Provider has nothing to do.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.tp != nil {
		errs = append(errs, p.tp.Shutdown(ctx))
	}
	if p.mp != nil {
		errs = append(errs, p.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// Enabled reports whether cfg and the environment ask for any export.
func Enabled(cfg Config) bool {
	getenv := cfg.getenv()
	return cfg.TraceFile != "" || otlpWanted(getenv) || metricsWanted(getenv)
}

func (cfg Config) getenv() func(string) string {
	if cfg.Getenv != nil {
		return cfg.Getenv
	}
	return os.Getenv
}

func otlpWanted(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// metricsWanted reports whether the environment asks for OTLP metrics:
// OTEL_METRICS_EXPORTER=otlp, or an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) unless OTEL_METRICS_EXPORTER=none
// or OTEL_SDK_DISABLED=true.
func metricsWanted(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")); exp {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
}

// ErrConfig matches every error of a telemetry configuration the program
// cannot follow; the user has to change a variable or a flag.
var ErrConfig = errors.New("telemetry configuration")

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

// Start sets up tracing and metrics from cfg and the environment. It
// returns nil (and no error) when nothing asks for spans or metrics:
// telemetry is then off and costs nothing. Call Shutdown on the Provider
// before the program exits so the last spans and metric points are
// exported.
func Start(ctx context.Context, cfg Config) (*Provider, error) {
	getenv := cfg.getenv()
	var opts []sdktrace.TracerProviderOption
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	if otlpWanted(getenv) {
		if exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp != "" && exp != "otlp" {
			return nil, configErr("OTEL_TRACES_EXPORTER=%q: only otlp and none are built in", exp)
		}
		if err := checkProtocol(getenv, "TRACES"); err != nil {
			return nil, err
		}
		exp, err := newTraceExporter(ctx, getenv)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if cfg.TraceFile != "" {
		f, err := os.Create(cfg.TraceFile)
		if err != nil {
			return nil, configErr("--trace %s: %v", cfg.TraceFile, err)
		}
		closers = append(closers, func() { _ = f.Close() })
		opts = append(opts, sdktrace.WithBatcher(telemetry.NewJSONExporter(f)))
	}
	var reader sdkmetric.Reader
	if metricsWanted(getenv) {
		if exp := strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")); exp != "" && exp != "otlp" {
			return nil, configErr("OTEL_METRICS_EXPORTER=%q: only otlp and none are built in", exp)
		}
		if err := checkProtocol(getenv, "METRICS"); err != nil {
			return nil, err
		}
		exp, err := newMetricExporter(getenv)
		if err != nil {
			return nil, err
		}
		// The periodic reader reads OTEL_METRIC_EXPORT_INTERVAL and
		// OTEL_METRIC_EXPORT_TIMEOUT itself (default 60s and 30s).
		reader = sdkmetric.NewPeriodicReader(exp)
	}
	if len(opts) == 0 && reader == nil {
		return nil, nil
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.ServiceVersion))
	}
	// Later detectors win: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
	// override the default name.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		if reader != nil {
			_ = reader.Shutdown(ctx)
		}
		return nil, configErr("OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME: %v", err)
	}
	closers = nil // the exporters own the file now
	p := &Provider{}
	topts := cfg.Options
	if len(opts) > 0 {
		p.tp = sdktrace.NewTracerProvider(append(opts, sdktrace.WithResource(res))...)
	}
	if reader != nil {
		p.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
		topts.MeterProvider = p.mp
	}
	var tp trace.TracerProvider
	if p.tp != nil {
		tp = p.tp
	}
	p.Telemetry = telemetry.New(tp, topts)
	return p, nil
}

// checkProtocol refuses an OTLP protocol other than http/protobuf for
// signal (TRACES, METRICS), from OTEL_EXPORTER_OTLP_<signal>_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL.
func checkProtocol(getenv func(string) string, signal string) error {
	name := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	proto := getenv(name)
	if proto == "" {
		proto, name = getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	switch strings.TrimSpace(proto) {
	case "", "http/protobuf":
		return nil
	case "grpc":
		return configErr("%s=grpc: deepgraph exports OTLP over HTTP only; set it to http/protobuf and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (usually 4318)", name)
	case "http/json":
		return configErr("%s=http/json: the OTLP/HTTP exporter sends http/protobuf only; set it to http/protobuf (any collector accepts it), or use --trace FILE for OTLP/JSON", name)
	default:
		return configErr("%s=%q: unknown protocol; use http/protobuf", name, proto)
	}
}

// Tel returns the provider's Telemetry; nil for a nil Provider, so that
// telemetry.ContextWith(ctx, p.Tel()) works whether tracing is on or not.
func (p *Provider) Tel() *telemetry.Telemetry {
	if p == nil {
		return nil
	}
	return p.Telemetry
}
