package export

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// metricExporter is an OTLP/HTTP metric exporter (see otlphttp.go for why
// it is written here): the SDK's points turned into OTLP's MetricsData.
type metricExporter struct {
	h           *otlpHTTP
	temporality sdkmetric.TemporalitySelector

	mu   sync.Mutex
	done bool
}

// newMetricExporter is the OTLP/HTTP metric exporter of the environment,
// with OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE (cumulative, the
// default; delta; lowmemory).
func newMetricExporter(getenv func(string) string) (*metricExporter, error) {
	h, err := newOTLPHTTP(getenv, "METRICS", "v1/metrics")
	if err != nil {
		return nil, err
	}
	e := &metricExporter{h: h, temporality: sdkmetric.DefaultTemporalitySelector}
	const pref = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"
	switch s := strings.ToLower(strings.TrimSpace(getenv(pref))); s {
	case "", "cumulative":
	case "delta":
		e.temporality = func(k sdkmetric.InstrumentKind) metricdata.Temporality {
			switch k {
			case sdkmetric.InstrumentKindUpDownCounter, sdkmetric.InstrumentKindObservableUpDownCounter:
				return metricdata.CumulativeTemporality
			}
			return metricdata.DeltaTemporality
		}
	case "lowmemory":
		e.temporality = func(k sdkmetric.InstrumentKind) metricdata.Temporality {
			switch k {
			case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindHistogram:
				return metricdata.DeltaTemporality
			}
			return metricdata.CumulativeTemporality
		}
	default:
		return nil, configErr("%s=%q: use cumulative, delta or lowmemory", pref, s)
	}
	return e, nil
}

func (e *metricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return e.temporality(k)
}

func (e *metricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	e.mu.Lock()
	done := e.done
	e.mu.Unlock()
	if done {
		return sdkmetric.ErrExporterShutdown
	}
	out, err := resourceMetrics(rm)
	if err != nil {
		return err
	}
	if len(out.ScopeMetrics) == 0 {
		return nil
	}
	return e.h.send(ctx, &metricpb.MetricsData{ResourceMetrics: []*metricpb.ResourceMetrics{out}})
}

func (e *metricExporter) ForceFlush(context.Context) error { return nil }

func (e *metricExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return sdkmetric.ErrExporterShutdown
	}
	e.done = true
	e.h.client.CloseIdleConnections()
	return nil
}

// resourceMetrics is rm in OTLP's form.
func resourceMetrics(rm *metricdata.ResourceMetrics) (*metricpb.ResourceMetrics, error) {
	out := &metricpb.ResourceMetrics{Resource: &resourcepb.Resource{}}
	if rm.Resource != nil {
		out.Resource.Attributes = keyValues(rm.Resource.Attributes())
		out.SchemaUrl = rm.Resource.SchemaURL()
	}
	for _, sm := range rm.ScopeMetrics {
		s := &metricpb.ScopeMetrics{
			Scope: &commonpb.InstrumentationScope{
				Name: sm.Scope.Name, Version: sm.Scope.Version, Attributes: keyValues(sm.Scope.Attributes.ToSlice()),
			},
			SchemaUrl: sm.Scope.SchemaURL,
		}
		for _, m := range sm.Metrics {
			pm, err := metric(m)
			if err != nil {
				return nil, err
			}
			s.Metrics = append(s.Metrics, pm)
		}
		out.ScopeMetrics = append(out.ScopeMetrics, s)
	}
	return out, nil
}

// metric is one metric in OTLP's form.
func metric(m metricdata.Metrics) (*metricpb.Metric, error) {
	out := &metricpb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit}
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		out.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numberPoints(d.DataPoints)}}
	case metricdata.Gauge[float64]:
		out.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numberPoints(d.DataPoints)}}
	case metricdata.Sum[int64]:
		out.Data = &metricpb.Metric_Sum{Sum: &metricpb.Sum{DataPoints: numberPoints(d.DataPoints),
			AggregationTemporality: temporality(d.Temporality), IsMonotonic: d.IsMonotonic}}
	case metricdata.Sum[float64]:
		out.Data = &metricpb.Metric_Sum{Sum: &metricpb.Sum{DataPoints: numberPoints(d.DataPoints),
			AggregationTemporality: temporality(d.Temporality), IsMonotonic: d.IsMonotonic}}
	case metricdata.Histogram[int64]:
		out.Data = &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{DataPoints: histogramPoints(d.DataPoints),
			AggregationTemporality: temporality(d.Temporality)}}
	case metricdata.Histogram[float64]:
		out.Data = &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{DataPoints: histogramPoints(d.DataPoints),
			AggregationTemporality: temporality(d.Temporality)}}
	case metricdata.ExponentialHistogram[int64]:
		out.Data = &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{
			DataPoints: expHistogramPoints(d.DataPoints), AggregationTemporality: temporality(d.Temporality)}}
	case metricdata.ExponentialHistogram[float64]:
		out.Data = &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{
			DataPoints: expHistogramPoints(d.DataPoints), AggregationTemporality: temporality(d.Temporality)}}
	case metricdata.Summary:
		out.Data = &metricpb.Metric_Summary{Summary: &metricpb.Summary{DataPoints: summaryPoints(d.DataPoints)}}
	default:
		return nil, fmt.Errorf("OTLP: metric %s: aggregation %T is not exported", m.Name, m.Data)
	}
	return out, nil
}

func temporality(t metricdata.Temporality) metricpb.AggregationTemporality {
	switch t {
	case metricdata.DeltaTemporality:
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	case metricdata.CumulativeTemporality:
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	}
	return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func numberPoints[N int64 | float64](dps []metricdata.DataPoint[N]) []*metricpb.NumberDataPoint {
	out := make([]*metricpb.NumberDataPoint, 0, len(dps))
	for _, dp := range dps {
		p := &metricpb.NumberDataPoint{Attributes: keyValues(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime), TimeUnixNano: unixNano(dp.Time), Exemplars: exemplars(dp.Exemplars)}
		switch v := any(dp.Value).(type) {
		case int64:
			p.Value = &metricpb.NumberDataPoint_AsInt{AsInt: v}
		case float64:
			p.Value = &metricpb.NumberDataPoint_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

// extremum is an Extrema as OTLP's optional double.
func extremum[N int64 | float64](e metricdata.Extrema[N]) *float64 {
	v, ok := e.Value()
	if !ok {
		return nil
	}
	f := float64(v)
	return &f
}

func histogramPoints[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) []*metricpb.HistogramDataPoint {
	out := make([]*metricpb.HistogramDataPoint, 0, len(dps))
	for _, dp := range dps {
		sum := float64(dp.Sum)
		out = append(out, &metricpb.HistogramDataPoint{Attributes: keyValues(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime), TimeUnixNano: unixNano(dp.Time),
			Count: dp.Count, Sum: &sum, BucketCounts: dp.BucketCounts, ExplicitBounds: dp.Bounds,
			Min: extremum(dp.Min), Max: extremum(dp.Max), Exemplars: exemplars(dp.Exemplars)})
	}
	return out
}

func expHistogramPoints[N int64 | float64](dps []metricdata.ExponentialHistogramDataPoint[N]) []*metricpb.ExponentialHistogramDataPoint {
	out := make([]*metricpb.ExponentialHistogramDataPoint, 0, len(dps))
	for _, dp := range dps {
		sum := float64(dp.Sum)
		out = append(out, &metricpb.ExponentialHistogramDataPoint{Attributes: keyValues(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime), TimeUnixNano: unixNano(dp.Time),
			Count: dp.Count, Sum: &sum, Scale: dp.Scale, ZeroCount: dp.ZeroCount, ZeroThreshold: dp.ZeroThreshold,
			Positive: &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: dp.PositiveBucket.Offset, BucketCounts: dp.PositiveBucket.Counts},
			Negative: &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: dp.NegativeBucket.Offset, BucketCounts: dp.NegativeBucket.Counts},
			Min:      extremum(dp.Min), Max: extremum(dp.Max), Exemplars: exemplars(dp.Exemplars)})
	}
	return out
}

func summaryPoints(dps []metricdata.SummaryDataPoint) []*metricpb.SummaryDataPoint {
	out := make([]*metricpb.SummaryDataPoint, 0, len(dps))
	for _, dp := range dps {
		p := &metricpb.SummaryDataPoint{Attributes: keyValues(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime), TimeUnixNano: unixNano(dp.Time), Count: dp.Count, Sum: dp.Sum}
		for _, q := range dp.QuantileValues {
			p.QuantileValues = append(p.QuantileValues, &metricpb.SummaryDataPoint_ValueAtQuantile{Quantile: q.Quantile, Value: q.Value})
		}
		out = append(out, p)
	}
	return out
}

func exemplars[N int64 | float64](es []metricdata.Exemplar[N]) []*metricpb.Exemplar {
	if len(es) == 0 {
		return nil
	}
	out := make([]*metricpb.Exemplar, 0, len(es))
	for _, e := range es {
		p := &metricpb.Exemplar{FilteredAttributes: keyValues(e.FilteredAttributes), TimeUnixNano: unixNano(e.Time),
			SpanId: e.SpanID, TraceId: e.TraceID}
		switch v := any(e.Value).(type) {
		case int64:
			p.Value = &metricpb.Exemplar_AsInt{AsInt: v}
		case float64:
			p.Value = &metricpb.Exemplar_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

// keyValues are attributes in OTLP's form.
func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BOOLSLICE:
		return arrayValue(v.AsBoolSlice(), func(b bool) attribute.Value { return attribute.BoolValue(b) })
	case attribute.INT64SLICE:
		return arrayValue(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayValue(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayValue(v.AsStringSlice(), attribute.StringValue)
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.Emit()}}
}

func arrayValue[T any](vs []T, value func(T) attribute.Value) *commonpb.AnyValue {
	arr := &commonpb.ArrayValue{Values: make([]*commonpb.AnyValue, 0, len(vs))}
	for _, v := range vs {
		arr.Values = append(arr.Values, anyValue(value(v)))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
}
