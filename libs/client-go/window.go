package sluice

// window counts a few fields over a sliding window of per-second buckets.
type window struct {
	buckets map[int64]*[3]int64
}

func (w *window) add(second int64, windowSeconds int, field int, delta int64) {
	if delta == 0 {
		return
	}
	w.prune(second, windowSeconds)
	if w.buckets == nil {
		w.buckets = make(map[int64]*[3]int64)
	}
	b := w.buckets[second]
	if b == nil {
		b = new([3]int64)
		w.buckets[second] = b
	}
	b[field] += delta
}

func (w *window) sum(second int64, windowSeconds int) (totals [3]int64) {
	w.prune(second, windowSeconds)
	for _, b := range w.buckets {
		for i := range totals {
			totals[i] += b[i]
		}
	}
	return totals
}

func (w *window) prune(second int64, windowSeconds int) {
	cutoff := second - int64(windowSeconds)
	for s := range w.buckets {
		if s <= cutoff || s > second {
			delete(w.buckets, s)
		}
	}
}

func (w *window) clear() { w.buckets = nil }
