import { Sluice } from './sluice';

describe('Sluice options', () => {
  it.each([
    [
      '127.0.0.1:8081',
      'baseUrls[0] must start with http:// or https://, e.g. http://127.0.0.1:8080; got "127.0.0.1:8081"',
    ],
    [
      'sluice-0:8080/',
      'baseUrls[0] must start with http:// or https://, e.g. http://127.0.0.1:8080; got "sluice-0:8080/"',
    ],
    ['http://', 'baseUrls[0] is not a URL, e.g. http://127.0.0.1:8080; got "http://"'],
  ])('a base URL %j is refused at construction, naming the option', (url, message) => {
    expect(() => new Sluice({ baseUrls: [url], namespace: 'shop', logger: false })).toThrow(new TypeError(message));
  });

  it('names the index of the bad one among several', () => {
    expect(
      () => new Sluice({ baseUrls: ['http://127.0.0.1:8080', 'sluice-1:8080'], namespace: 'shop', logger: false }),
    ).toThrow(/^baseUrls\[1\] must start with http:\/\//);
  });
});
