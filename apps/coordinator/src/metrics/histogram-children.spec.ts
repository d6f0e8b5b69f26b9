import { Histogram, Registry } from 'prom-client';
import { HistogramChildren } from './histogram-children';

const config = {
  name: 'sluice_test_duration_seconds',
  help: 'Test durations.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.01, 0.1, 1],
};
const OBSERVATIONS: Array<[string, string, number, number]> = [
  ['POST', '/v1/:ns/deps/:dep/retry', 200, 0.0004],
  ['POST', '/v1/:ns/deps/:dep/retry', 200, 0.001], // on a bound: in that bucket
  ['POST', '/v1/:ns/deps/:dep/retry', 503, 0.05],
  ['GET', '/health/ready', 200, 2.5], // past the last bound: +Inf only
  ['POST', '/v1/:ns/deps/:dep/retry', 200, 0.02],
];

describe('HistogramChildren', () => {
  it('writes the same exposition as prom-client’s Histogram for the same observations', async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const histogram = new Histogram({ ...config, labelNames: [...config.labelNames], registers: [theirs] });
    const children = new HistogramChildren({ ...config, registers: [ours] });
    for (const [method, route, status, seconds] of OBSERVATIONS) {
      histogram.observe({ method, route, status: String(status) }, seconds);
      children.child(method, route, status).observe(seconds);
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain(
      'sluice_test_duration_seconds_bucket{le="0.01",method="POST",route="/v1/:ns/deps/:dep/retry",status="200"} 2',
    );
  });

  it('finds a label set’s child once: the same child for the same values, another for others', () => {
    const children = new HistogramChildren({ ...config, registers: [new Registry()] });
    const child = children.child('POST', '/a', 200);
    expect(children.child('POST', '/a', 200)).toBe(child);
    expect(children.child('POST', '/a', 503)).not.toBe(child);
    expect(children.child('GET', '/a', 200)).not.toBe(child);
  });

  it('forgets its series on reset', async () => {
    const registry = new Registry();
    const children = new HistogramChildren({ ...config, registers: [registry] });
    children.child('POST', '/a', 200).observe(0.5);
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain('_count{');
  });
});
