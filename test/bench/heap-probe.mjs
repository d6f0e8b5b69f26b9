// Preloaded into a benchmarked server (`node --import ./test/bench/heap-probe.mjs …`): answers
// GET http://127.0.0.1:$BENCH_PROBE_PORT/ with what the process's heap did since the previous GET:
// bytes allocated, scavenges and mark-compacts, and the milliseconds they took. Bytes allocated
// are V8's own count (`total_allocated_bytes`) where the heap statistics carry it (Node 26);
// elsewhere the used heap's growth plus what each collection freed (v8.GCProfiler's before and
// after statistics), which counts the same bytes. Nothing runs per request: V8 reports at each
// collection.
import http from 'node:http';
import v8 from 'node:v8';

const port = Number(process.env.BENCH_PROBE_PORT);
const counted = 'total_allocated_bytes' in v8.getHeapStatistics();

let profiler;
let usedAtStart = 0;
let allocatedAtStart = 0;

/** Ends the current interval, starts the next, and returns the ended one's figures. */
function interval() {
  const data = profiler?.stop();
  const heap = v8.getHeapStatistics();
  profiler = new v8.GCProfiler();
  profiler.start();
  const usedAtEnd = heap.used_heap_size;
  let freed = 0;
  let scavenges = 0;
  let markCompacts = 0;
  let gcMs = 0;
  for (const gc of data?.statistics ?? []) {
    freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
    gcMs += gc.cost / 1000;
    if (gc.gcType === 'Scavenge' || gc.gcType === 'MinorMarkSweep') scavenges++;
    else if (gc.gcType === 'MarkSweepCompact') markCompacts++;
  }
  const allocatedBytes = counted ? heap.total_allocated_bytes - allocatedAtStart : usedAtEnd - usedAtStart + freed;
  const seconds = data ? (data.endTime - data.startTime) / 1000 : 0;
  usedAtStart = usedAtEnd;
  allocatedAtStart = counted ? heap.total_allocated_bytes : 0;
  return { seconds, allocatedBytes, allocationCounter: counted ? 'v8' : 'gc-profiler', scavenges, markCompacts, gcMs };
}

if (port > 0) {
  const server = http.createServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(interval()));
  });
  server.listen(port, '127.0.0.1');
  server.unref();
}
