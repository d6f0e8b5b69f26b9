import { canonicalJson, requestFingerprint } from './fingerprint';

describe('requestFingerprint', () => {
  const base = { method: 'POST', url: '/orders?region=eu', body: { sku: 'A-1', qty: 2, tags: ['x', 'y'] } };

  it('is a SHA-256 in base64url, the same for the same request', () => {
    expect(requestFingerprint(base)).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
    expect(requestFingerprint({ ...base })).toBe(requestFingerprint(base));
  });

  it('ignores the key order of a JSON body and the case of the method', () => {
    const reordered = { method: 'post', url: base.url, body: { tags: ['x', 'y'], qty: 2, sku: 'A-1' } };
    expect(requestFingerprint(reordered)).toBe(requestFingerprint(base));
  });

  it.each([
    ['the method', { method: 'PUT' }],
    ['the path', { url: '/orders/2?region=eu' }],
    ['the query', { url: '/orders?region=us' }],
    ['a body value', { body: { ...base.body, qty: 3 } }],
    ['the order of an array', { body: { ...base.body, tags: ['y', 'x'] } }],
    ['the caller', { identity: 'user-7' }],
  ])('changes with %s', (_what, change) => {
    expect(requestFingerprint({ ...base, ...change })).not.toBe(requestFingerprint(base));
  });

  it('reads a string body and the same bytes alike, and no body as empty', () => {
    const text = '{"raw":true}';
    expect(requestFingerprint({ ...base, body: text })).toBe(requestFingerprint({ ...base, body: Buffer.from(text) }));
    expect(requestFingerprint({ ...base, body: undefined })).toBe(requestFingerprint({ ...base, body: null }));
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every depth and leaves out undefined values, as JSON does', () => {
    expect(canonicalJson({ b: { d: 1, c: [{ f: 1, e: 2 }] }, a: undefined, z: null })).toBe(
      '{"b":{"c":[{"e":2,"f":1}],"d":1},"z":null}',
    );
  });
});
