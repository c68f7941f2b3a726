/* CQ_CUDA_TIMING=1: where a GPU step's time goes, without a profiler (the lent device machines have Nsight Compute,
 * which times kernels one by one at locked clocks, but no Nsight Systems). Every launch, copy and clear of the
 * backend is bracketed by two events on its stream; cq_cuda_timing_report sums, per operation, the device time
 * between its events, and the device's idle time between one operation's end and the next one's start (the host
 * not keeping up: launch latency, synchronisations, host work). Off (one branch per operation) unless the variable
 * is set when the first backend is created. Included once by cuda.cu. */

#define CQK_TIMED_MAX 4096 /* operations in flight before a harvest (one stream synchronisation) */
#define CQK_TIMED_KINDS 64

typedef struct {
  const char* what;
  cudaEvent_t start, end;
} cqk_timed_op;

static struct {
  int read, on; /* the variable was read; timing is on */
  cqk_timed_op op[CQK_TIMED_MAX];
  int pending;          /* recorded ops not harvested yet */
  cudaEvent_t last_end; /* the end event of the last harvested op (NULL after a report) */
  struct {
    const char* what;
    long count;
    double ms;
  } kind[CQK_TIMED_KINDS];
  int kinds;
  double idle_ms;
  long ops;
} cqk_timing;

static int timing_on(void) {
  if (!cqk_timing.read) {
    cqk_timing.read = 1;
    const char* v = getenv("CQ_CUDA_TIMING");
    cqk_timing.on = v && *v && strcmp(v, "0") != 0;
    for (int i = 0; cqk_timing.on && i < CQK_TIMED_MAX; i++)
      if (cudaEventCreate(&cqk_timing.op[i].start) != cudaSuccess ||
          cudaEventCreate(&cqk_timing.op[i].end) != cudaSuccess)
        cqk_timing.on = 0;
  }
  return cqk_timing.on;
}

static void timing_add(const char* what, double ms) {
  int k = 0;
  while (k < cqk_timing.kinds && strcmp(cqk_timing.kind[k].what, what) != 0) k++;
  if (k == CQK_TIMED_KINDS) k = CQK_TIMED_KINDS - 1; /* the rest under the last kind */
  if (k == cqk_timing.kinds) cqk_timing.kind[cqk_timing.kinds++].what = what;
  cqk_timing.kind[k].count++;
  cqk_timing.kind[k].ms += ms;
}

/* Waits for the recorded operations and adds them up; their events become free again. */
static void timing_harvest(void) {
  for (int i = 0; i < cqk_timing.pending; i++) {
    cqk_timed_op* o = &cqk_timing.op[i];
    float ms = 0, idle = 0;
    if (cudaEventSynchronize(o->end) != cudaSuccess || cudaEventElapsedTime(&ms, o->start, o->end) != cudaSuccess)
      continue;
    timing_add(o->what, ms);
    if (cqk_timing.last_end && cudaEventElapsedTime(&idle, cqk_timing.last_end, o->start) == cudaSuccess && idle > 0)
      cqk_timing.idle_ms += idle;
    cqk_timing.ops++;
    cqk_timing.last_end = o->end;
  }
  /* keep the last end event out of the pool's reuse until the next op is compared with it */
  if (cqk_timing.pending > 0) {
    cqk_timed_op* last = &cqk_timing.op[cqk_timing.pending - 1];
    cudaEvent_t spare = cqk_timing.op[CQK_TIMED_MAX - 1].end;
    cqk_timing.op[CQK_TIMED_MAX - 1].end = last->end;
    last->end = spare;
    cqk_timing.last_end = cqk_timing.op[CQK_TIMED_MAX - 1].end;
  }
  cqk_timing.pending = 0;
  cudaGetLastError();
}

/* Brackets one operation on stream st: timing_begin before it, timing_end after. */
static void timing_begin(cudaStream_t st, const char* what) {
  if (!timing_on()) return;
  if (cqk_timing.pending == CQK_TIMED_MAX - 1) timing_harvest(); /* the last slot's end is the kept event */
  cqk_timed_op* o = &cqk_timing.op[cqk_timing.pending];
  o->what = what;
  cudaEventRecord(o->start, st);
}
static void timing_end(cudaStream_t st) {
  if (!timing_on()) return;
  cudaEventRecord(cqk_timing.op[cqk_timing.pending++].end, st);
}

/* The table of operations since the last report (then reset) into buf; the number of operations timed. */
extern "C" long cq_cuda_timing_report(char* buf, int len) {
  if (!buf || len <= 0) return -1;
  buf[0] = 0;
  if (!timing_on()) {
    snprintf(buf, len, "GPU timing is off: set CQ_CUDA_TIMING=1 before the first CUDA world is created\n");
    return 0;
  }
  timing_harvest();
  double busy = 0;
  for (int k = 0; k < cqk_timing.kinds; k++) busy += cqk_timing.kind[k].ms;
  int used = snprintf(buf, len, "%-28s %8s %11s %10s %6s\n", "operation", "count", "total ms", "mean us", "share");
  for (int k = 0; k < cqk_timing.kinds && used < len; k++)
    used += snprintf(buf + used, len - used, "%-28s %8ld %11.3f %10.2f %5.1f%%\n", cqk_timing.kind[k].what,
                     cqk_timing.kind[k].count, cqk_timing.kind[k].ms,
                     1e3 * cqk_timing.kind[k].ms / cqk_timing.kind[k].count,
                     busy > 0 ? 100 * cqk_timing.kind[k].ms / busy : 0);
  if (used < len)
    snprintf(buf + used, len - used,
             "%-28s %8ld %11.3f   (device idle between operations: the host's share)\n"
             "%-28s %8s %11.3f\n",
             "idle", cqk_timing.ops, cqk_timing.idle_ms, "busy", "", busy);
  long ops = cqk_timing.ops;
  memset(cqk_timing.kind, 0, sizeof cqk_timing.kind);
  cqk_timing.kinds = 0;
  cqk_timing.idle_ms = 0;
  cqk_timing.ops = 0;
  cqk_timing.last_end = NULL;
  return ops;
}
