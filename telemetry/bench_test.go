package telemetry_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/deepgraph/deepgraph/internal/benchshapes"
	"github.com/deepgraph/deepgraph/telemetry"
)

// The engine's benchmark shapes traced: with OpenTelemetry's no-op
// provider (New returns nil: the engine's own cost; ≤ 1 µs per node is the
// budget), with an SDK that samples nothing (the adapter's cost: spans
// started and ended, none recorded) and with the SDK recording every span
// (what tracing on costs). Compare with graph's BenchmarkChain3 /
// BenchmarkFanOut100.

func benchChain(b *testing.B, tp trace.TracerProvider) {
	c, err := benchshapes.Chain()
	if err != nil {
		b.Fatal(err)
	}
	ctx := telemetry.ContextWith(context.Background(), telemetry.New(tp, telemetry.Options{}))
	b.ReportAllocs()
	for b.Loop() {
		if out, err := c.Invoke(ctx, benchshapes.ChainState{}); err != nil || out.C != 3 {
			b.Fatal(out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/3, "ns/node")
}

func benchFanOut(b *testing.B, tp trace.TracerProvider) {
	c, err := benchshapes.FanOut(100)
	if err != nil {
		b.Fatal(err)
	}
	ctx := telemetry.ContextWith(context.Background(), telemetry.New(tp, telemetry.Options{}))
	b.ReportAllocs()
	for b.Loop() {
		if out, err := c.Invoke(ctx, benchshapes.FanState{}); err != nil || out.Sum != 9900 {
			b.Fatal(out.Sum, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/102, "ns/node")
}

func BenchmarkChain3NoopProvider(b *testing.B)    { benchChain(b, noop.NewTracerProvider()) }
func BenchmarkFanOut100NoopProvider(b *testing.B) { benchFanOut(b, noop.NewTracerProvider()) }

// BenchmarkChain3Unsampled is the adapter's own cost: spans are started
// and ended, but the sampler records none.
func BenchmarkChain3Unsampled(b *testing.B) {
	benchChain(b, sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())))
}

func BenchmarkFanOut100Unsampled(b *testing.B) {
	benchFanOut(b, sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())))
}

func recording() trace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(&discard{})))
}

// discard is an exporter that drops spans, so the benchmark measures
// recording, not memory growth.
type discard struct{ tracetest.NoopExporter }

func BenchmarkChain3RecordingSDK(b *testing.B)    { benchChain(b, recording()) }
func BenchmarkFanOut100RecordingSDK(b *testing.B) { benchFanOut(b, recording()) }
