import { LabelIndex } from './label-index';

describe('LabelIndex', () => {
  const made: string[] = [];
  const index = () =>
    new LabelIndex((values) => {
      const child = { values: values.join('/') };
      made.push(child.values);
      return child;
    });

  beforeEach(() => (made.length = 0));

  it('makes a child once per label set and finds it again', () => {
    const children = index();
    const granted = children.get(['shop', 'pay', 'granted']);
    expect(children.get(['shop', 'pay', 'granted'])).toBe(granted);
    expect(children.get(['shop', 'pay', 'budget_exhausted'])).not.toBe(granted);
    expect(children.get(['shop', 'search', 'granted'])).not.toBe(granted);
    expect(children.get(['other', 'pay', 'granted'])).not.toBe(granted);
    expect(made).toEqual(['shop/pay/granted', 'shop/pay/budget_exhausted', 'shop/search/granted', 'other/pay/granted']);
    expect(children.children().map((child) => child.values)).toEqual(made);
  });

  it('drops the children asked for, and makes them afresh when asked again', () => {
    const children = index();
    const kept = children.get(['shop', 'search', 'granted']);
    const dropped = children.get(['shop', 'pay', 'granted']);
    children.get(['shop', 'pay', 'budget_exhausted']);
    children.deleteWhere((child) => child.values.startsWith('shop/pay/'));
    expect(children.children()).toEqual([kept]);
    expect(children.get(['shop', 'search', 'granted'])).toBe(kept);
    const again = children.get(['shop', 'pay', 'granted']);
    expect(again).not.toBe(dropped);
    expect(again).toEqual(dropped);
    children.clear();
    expect(children.children()).toEqual([]);
  });
});
