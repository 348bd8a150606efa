/**
 * OpenTelemetry tracing: the span tree cycle → page → owner → outbox publish, stitched across the
 * worker and the relay by W3C trace context (through Temporal headers, and the outbox row's
 * `trace_context`). Export is off unless an OTLP endpoint is configured; tests plug in their own
 * span processor.
 */
import * as otel from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  NoopSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** Workflow interceptor module of Temporal's OpenTelemetry package, bundled with the workflow code. */
export const OTEL_WORKFLOW_INTERCEPTORS =
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

export interface Tracing {
  tracer: otel.Tracer;
  /** Whether spans go anywhere (an OTLP endpoint or a given processor); callers may skip spans when not. */
  exporting: boolean;
  resource: Resource;
  spanProcessor: SpanProcessor;
  /** Flushes and stops export. */
  shutdown(): Promise<void>;
}

let globalsInstalled = false;

/** Context propagation for the whole process: async context for active spans, W3C headers. */
function installGlobals(): void {
  if (globalsInstalled) return;
  globalsInstalled = true;
  otel.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  otel.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

export interface TracingOptions {
  serviceName: string;
  /** OTLP/HTTP endpoint (e.g. http://otel-collector:4318); spans go nowhere without it. */
  otlpEndpoint?: string;
  /** Overrides the exporter (tests: an in-memory exporter behind a SimpleSpanProcessor). */
  spanProcessor?: SpanProcessor;
}

/** A tracer for this process, exporting through OTLP when configured and dropping spans otherwise. */
export function createTracing(options: TracingOptions): Tracing {
  installGlobals();
  const resource = new Resource({ 'service.name': options.serviceName });
  const spanProcessor =
    options.spanProcessor ??
    (options.otlpEndpoint
      ? new BatchSpanProcessor(new OTLPTraceExporter({ url: `${options.otlpEndpoint.replace(/\/$/, '')}/v1/traces` }))
      : new NoopSpanProcessor());
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  return {
    tracer: provider.getTracer('expiry-reminder'),
    exporting: Boolean(options.spanProcessor ?? options.otlpEndpoint),
    resource,
    spanProcessor,
    shutdown: () => provider.shutdown(),
  };
}

/** The active span's W3C `traceparent`, to carry across the outbox; undefined outside a sampled span. */
export function currentTraceparent(): string | undefined {
  const carrier: Record<string, string> = {};
  otel.propagation.inject(otel.context.active(), carrier);
  return carrier.traceparent;
}

/** The context a stored `traceparent` names, to parent a span in another process. */
export function contextFromTraceparent(traceparent: string | null | undefined): otel.Context {
  return traceparent ? otel.propagation.extract(otel.ROOT_CONTEXT, { traceparent }) : otel.ROOT_CONTEXT;
}
