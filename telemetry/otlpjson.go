package telemetry

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// JSONExporter is a span exporter writing OTLP/JSON: each batch of spans is
// one line holding a TracesData object ({"resourceSpans": …}), the format
// of the OpenTelemetry Collector's file exporter and otlpjsonfile receiver,
// with trace and span ids in hex as the OTLP/JSON mapping says. It is safe
// for concurrent use; Shutdown flushes, and closes w when it is an
// io.Closer.
type JSONExporter struct {
	mu     sync.Mutex
	w      *bufio.Writer
	closer io.Closer
	done   bool
}

// NewJSONExporter returns an exporter writing to w.
func NewJSONExporter(w io.Writer) *JSONExporter {
	e := &JSONExporter{w: bufio.NewWriter(w)}
	if c, ok := w.(io.Closer); ok {
		e.closer = c
	}
	return e
}

// ExportSpans writes spans as one line of OTLP/JSON.
func (e *JSONExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	data, err := json.Marshal(TracesData(spans))
	if err != nil {
		return fmt.Errorf("telemetry: encoding spans as OTLP/JSON: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return fmt.Errorf("telemetry: the OTLP/JSON exporter is shut down")
	}
	e.w.Write(data)
	e.w.WriteByte('\n')
	return e.w.Flush()
}

// Shutdown flushes what is written and closes the writer it owns.
func (e *JSONExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return nil
	}
	e.done = true
	err := e.w.Flush()
	if e.closer != nil {
		if cerr := e.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// The OTLP/JSON shapes of opentelemetry-proto's trace messages.
type (
	// OTLPTraces is opentelemetry.proto.trace.v1.TracesData.
	OTLPTraces struct {
		ResourceSpans []OTLPResourceSpans `json:"resourceSpans"`
	}
	OTLPResourceSpans struct {
		Resource   OTLPResource     `json:"resource"`
		ScopeSpans []OTLPScopeSpans `json:"scopeSpans"`
		SchemaURL  string           `json:"schemaUrl,omitempty"`
	}
	OTLPResource struct {
		Attributes []OTLPKeyValue `json:"attributes,omitempty"`
	}
	OTLPScopeSpans struct {
		Scope     OTLPScope  `json:"scope"`
		Spans     []OTLPSpan `json:"spans"`
		SchemaURL string     `json:"schemaUrl,omitempty"`
	}
	OTLPScope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	OTLPSpan struct {
		TraceID           string         `json:"traceId"`
		SpanID            string         `json:"spanId"`
		TraceState        string         `json:"traceState,omitempty"`
		ParentSpanID      string         `json:"parentSpanId,omitempty"`
		Flags             uint32         `json:"flags,omitempty"`
		Name              string         `json:"name"`
		Kind              int            `json:"kind"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		EndTimeUnixNano   string         `json:"endTimeUnixNano"`
		Attributes        []OTLPKeyValue `json:"attributes,omitempty"`
		DroppedAttributes int            `json:"droppedAttributesCount,omitempty"`
		Events            []OTLPEvent    `json:"events,omitempty"`
		DroppedEvents     int            `json:"droppedEventsCount,omitempty"`
		Links             []OTLPLink     `json:"links,omitempty"`
		DroppedLinks      int            `json:"droppedLinksCount,omitempty"`
		Status            OTLPStatus     `json:"status"`
	}
	OTLPEvent struct {
		TimeUnixNano string         `json:"timeUnixNano"`
		Name         string         `json:"name"`
		Attributes   []OTLPKeyValue `json:"attributes,omitempty"`
	}
	OTLPLink struct {
		TraceID    string         `json:"traceId"`
		SpanID     string         `json:"spanId"`
		TraceState string         `json:"traceState,omitempty"`
		Attributes []OTLPKeyValue `json:"attributes,omitempty"`
	}
	OTLPStatus struct {
		Message string `json:"message,omitempty"`
		Code    int    `json:"code,omitempty"` // 0 unset, 1 ok, 2 error
	}
	OTLPKeyValue struct {
		Key   string       `json:"key"`
		Value OTLPAnyValue `json:"value"`
	}
	// OTLPAnyValue holds one of its fields; int64s are strings, as the
	// proto3 JSON mapping writes them.
	OTLPAnyValue struct {
		StringValue *string         `json:"stringValue,omitempty"`
		BoolValue   *bool           `json:"boolValue,omitempty"`
		IntValue    *string         `json:"intValue,omitempty"`
		DoubleValue *float64        `json:"doubleValue,omitempty"`
		ArrayValue  *OTLPArrayValue `json:"arrayValue,omitempty"`
	}
	OTLPArrayValue struct {
		Values []OTLPAnyValue `json:"values"`
	}
)

// TracesData converts spans to OTLP/JSON's TracesData, grouped by resource
// and instrumentation scope in the order first seen.
func TracesData(spans []sdktrace.ReadOnlySpan) OTLPTraces {
	var out OTLPTraces
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	resIdx := map[*resource.Resource]int{}
	scopeIdx := map[scopeKey]int{}
	for _, s := range spans {
		res := s.Resource()
		ri, ok := resIdx[res]
		if !ok {
			ri = len(out.ResourceSpans)
			resIdx[res] = ri
			rs := OTLPResourceSpans{}
			if res != nil {
				rs.Resource.Attributes = keyValues(res.Attributes())
				rs.SchemaURL = res.SchemaURL()
			}
			out.ResourceSpans = append(out.ResourceSpans, rs)
		}
		sc := s.InstrumentationScope()
		k := scopeKey{res, instrumentation.Scope{Name: sc.Name, Version: sc.Version, SchemaURL: sc.SchemaURL}}
		si, ok := scopeIdx[k]
		rs := &out.ResourceSpans[ri]
		if !ok {
			si = len(rs.ScopeSpans)
			scopeIdx[k] = si
			rs.ScopeSpans = append(rs.ScopeSpans, OTLPScopeSpans{Scope: OTLPScope{Name: sc.Name, Version: sc.Version}, SchemaURL: sc.SchemaURL})
		}
		rs.ScopeSpans[si].Spans = append(rs.ScopeSpans[si].Spans, otlpSpan(s))
	}
	return out
}

func otlpSpan(s sdktrace.ReadOnlySpan) OTLPSpan {
	sc := s.SpanContext()
	o := OTLPSpan{
		TraceID:           sc.TraceID().String(),
		SpanID:            sc.SpanID().String(),
		TraceState:        sc.TraceState().String(),
		Flags:             uint32(sc.TraceFlags()),
		Name:              s.Name(),
		Kind:              otlpKind(s.SpanKind()),
		StartTimeUnixNano: nanos(s.StartTime().UnixNano()),
		EndTimeUnixNano:   nanos(s.EndTime().UnixNano()),
		Attributes:        keyValues(s.Attributes()),
		DroppedAttributes: s.DroppedAttributes(),
		DroppedEvents:     s.DroppedEvents(),
		DroppedLinks:      s.DroppedLinks(),
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		o.ParentSpanID = p.SpanID().String()
	}
	for _, ev := range s.Events() {
		o.Events = append(o.Events, OTLPEvent{TimeUnixNano: nanos(ev.Time.UnixNano()), Name: ev.Name, Attributes: keyValues(ev.Attributes)})
	}
	for _, l := range s.Links() {
		o.Links = append(o.Links, OTLPLink{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String(),
			TraceState: l.SpanContext.TraceState().String(), Attributes: keyValues(l.Attributes)})
	}
	switch st := s.Status(); st.Code {
	case codes.Error:
		o.Status = OTLPStatus{Code: 2, Message: st.Description}
	case codes.Ok:
		o.Status = OTLPStatus{Code: 1}
	}
	return o
}

// otlpKind maps a span kind onto OTLP's enum (internal 1 … consumer 5).
func otlpKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer:
		return int(k)
	}
	return 1
}

func nanos(n int64) string { return strconv.FormatInt(n, 10) }

func keyValues(kvs []attribute.KeyValue) []OTLPKeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]OTLPKeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = OTLPKeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)}
	}
	return out
}

func anyValue(v attribute.Value) OTLPAnyValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return OTLPAnyValue{BoolValue: &b}
	case attribute.INT64:
		s := strconv.FormatInt(v.AsInt64(), 10)
		return OTLPAnyValue{IntValue: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return OTLPAnyValue{DoubleValue: &f}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), func(b bool) attribute.Value { return attribute.BoolValue(b) })
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), func(n int64) attribute.Value { return attribute.Int64Value(n) })
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), func(f float64) attribute.Value { return attribute.Float64Value(f) })
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), func(s string) attribute.Value { return attribute.StringValue(s) })
	}
	s := v.Emit()
	return OTLPAnyValue{StringValue: &s}
}

func array[T any](vs []T, conv func(T) attribute.Value) OTLPAnyValue {
	arr := &OTLPArrayValue{Values: make([]OTLPAnyValue, len(vs))}
	for i, v := range vs {
		arr.Values[i] = anyValue(conv(v))
	}
	return OTLPAnyValue{ArrayValue: arr}
}
