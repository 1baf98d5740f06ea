// Package export sets deepgraph's tracing up the OpenTelemetry way: from
// the standard OTEL_* variables (OTLP over HTTP) and an optional OTLP/JSON
// trace file. It is apart from package telemetry because the OTLP exporter
// brings gRPC's and protobuf's packages along; programs that bring their own
// TracerProvider need only telemetry.
package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

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
//   - OTEL_EXPORTER_OTLP_HEADERS, …_TIMEOUT, …_COMPRESSION, …_CERTIFICATE
//     as the OTLP/HTTP exporter reads them;
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the service;
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG choose the sampler
//     (default parentbased_always_on);
//   - OTEL_TRACES_EXPORTER=none, or OTEL_SDK_DISABLED=true, turn export off.
type Config struct {
	// TraceFile, when set, receives the spans as OTLP/JSON lines (see
	// telemetry.JSONExporter), whatever the environment says.
	TraceFile string
	// Options say what spans carry.
	Options telemetry.Options
	// Getenv reads the environment; nil is os.Getenv. The SDK and the
	// OTLP exporter read the variables they handle from the process
	// environment themselves.
	Getenv func(string) string
	// ServiceVersion is service.version, when known.
	ServiceVersion string
}

// Provider is a running tracer provider with its exporters.
type Provider struct {
	*telemetry.Telemetry
	tp *sdktrace.TracerProvider
}

// TracerProvider returns the SDK's provider.
func (p *Provider) TracerProvider() *sdktrace.TracerProvider { return p.tp }

// Shutdown exports the spans still buffered and stops the exporters. A nil
// Provider has nothing to do.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.Shutdown(ctx)
}

// Enabled reports whether cfg and the environment ask for any export.
func Enabled(cfg Config) bool {
	getenv := cfg.getenv()
	return cfg.TraceFile != "" || otlpWanted(getenv)
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

// ErrConfig matches every error of a telemetry configuration the program
// cannot follow; the user has to change a variable or a flag.
var ErrConfig = errors.New("telemetry configuration")

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

// Start sets up tracing from cfg and the environment. It returns nil (and
// no error) when nothing asks for spans: tracing is then off and costs
// nothing. Call Shutdown on the Provider before the program exits so the
// last spans are exported.
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
		proto, name := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
		if proto == "" {
			proto, name = getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
		}
		switch strings.TrimSpace(proto) {
		case "", "http/protobuf":
		case "grpc":
			return nil, configErr("%s=grpc: deepgraph exports OTLP over HTTP only; set it to http/protobuf and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (usually 4318)", name)
		case "http/json":
			return nil, configErr("%s=http/json: the OTLP/HTTP exporter sends http/protobuf only; set it to http/protobuf (any collector accepts it), or use --trace FILE for OTLP/JSON", name)
		default:
			return nil, configErr("%s=%q: unknown protocol; use http/protobuf", name, proto)
		}
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, configErr("OTLP/HTTP trace exporter: %v", err)
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
	if len(opts) == 0 {
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
		return nil, configErr("OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME: %v", err)
	}
	closers = nil // the exporters own the file now
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithResource(res))...)
	return &Provider{Telemetry: telemetry.New(tp, cfg.Options), tp: tp}, nil
}

// Tel returns the provider's Telemetry; nil for a nil Provider, so that
// telemetry.ContextWith(ctx, p.Tel()) works whether tracing is on or not.
func (p *Provider) Tel() *telemetry.Telemetry {
	if p == nil {
		return nil
	}
	return p.Telemetry
}
