/*===- tgx_support.c - runtime support linked into every cpu.so ----------===*
 *
 * The functions that lowered code may call, linked into the shared object of
 * every artifact so that it needs no MLIR library: the generic allocation
 * functions (counted, so the runtime can measure what the code allocates
 * outside the arena) and memrefCopy (MLIR's strided copy, with CRunnerUtils'
 * signature). The build compiles this file once, position-independent and
 * without sanitizers, and embeds the object in tgc (support/Embed.cmake);
 * tgc links it next to the generated code (codegen/artifact/CpuObject.cpp).
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every allocation the code still makes outside the arena goes through
   these (the CPU pipeline's generic allocation functions), so the runtime
   can measure it: bytes live now, the most live at once since the last
   reset, and the number of allocations. Not thread-safe: entry points run
   one at a time. */
static int64_t tgx_heap_live, tgx_heap_peak, tgx_heap_count;
static void *tgx_heap_take(uint64_t align, uint64_t size) {
  if (align < 16)
    align = 16;
  uint64_t header = align; /* holds the block's start and size */
  void *block = 0;
  if (posix_memalign(&block, align, header + size) != 0)
    return 0;
  char *p = (char *)block + header;
  ((uint64_t *)p)[-1] = size;
  ((void **)p)[-2] = block;
  tgx_heap_live += (int64_t)size;
  tgx_heap_count += 1;
  if (tgx_heap_live > tgx_heap_peak)
    tgx_heap_peak = tgx_heap_live;
  return p;
}
void *_mlir_memref_to_llvm_alloc(uint64_t size) {
  return tgx_heap_take(16, size);
}
void *_mlir_memref_to_llvm_aligned_alloc(uint64_t align, uint64_t size) {
  return tgx_heap_take(align, size);
}
void _mlir_memref_to_llvm_free(void *p) {
  if (!p)
    return;
  tgx_heap_live -= (int64_t)((uint64_t *)p)[-1];
  free(((void **)p)[-2]);
}
/* out[0] = live bytes, out[1] = peak since the last reset, out[2] = count. */
void tgx_heap_stats(int64_t *out) {
  out[0] = tgx_heap_live;
  out[1] = tgx_heap_peak;
  out[2] = tgx_heap_count;
}
void tgx_heap_reset(void) {
  tgx_heap_peak = tgx_heap_live;
  tgx_heap_count = 0;
}
/* Threads of the parallel loops (tg-parallelize-loops, docs/cpu-backend.md).
   The loops are OpenMP worksharing loops; tgc links libomp.so.5 into the
   cpu.so only where the code has some (and then defines
   tgx_parallel_loops), so the references here are weak: without libomp
   they are null and the code runs on one thread. The runtime calls this
   once after loading, from the thread that calls the entry points (the
   count is that thread's OpenMP setting); n <= 0 keeps OpenMP's default.
   Returns the number of threads the parallel loops run on. */
extern void omp_set_num_threads(int) __attribute__((weak));
extern int omp_get_max_threads(void) __attribute__((weak));
int tgx_set_threads(int n) {
  if (!omp_set_num_threads || !omp_get_max_threads)
    return 1;
  if (n > 0)
    omp_set_num_threads(n);
  return omp_get_max_threads();
}
/* Collectives (tg.all_reduce, docs/data-parallel.md). The runtime installs
   its communicator with tgx_set_all_reduce before the first call: `sum`
   replaces data[0..n) by its sum over every rank of the job. Without one
   (a single process) the sum over the one rank is the data itself. The
   artifact so depends on no communication library.
   The compiled code names the communicator of each collective (the id of
   its tg.comm_world: 0, the world, the one communicator a runtime
   installs); any other id cannot come from tgc, and ends the process with
   one line rather than communicating over the wrong group. */
static void tgx_check_comm(int64_t comm) {
  if (comm == 0)
    return;
  fprintf(stderr, "tgx: error: the code runs a collective over communicator "
                  "%lld, but the runtime installs only the world (0)\n",
          (long long)comm);
  exit(1);
}
typedef void (*tgx_all_reduce_fn)(void *context, float *data, int64_t n);
static tgx_all_reduce_fn tgx_comm_sum;
static void *tgx_comm_context;
void tgx_set_all_reduce(tgx_all_reduce_fn sum, void *context) {
  tgx_comm_sum = sum;
  tgx_comm_context = context;
}
/* A bucket of n floats: summed over the ranks of `comm`, then scaled
   (1/ranks for a mean). */
void tgx_all_reduce_f32(int64_t comm, float *data, int64_t n, float scale) {
  tgx_check_comm(comm);
  if (tgx_comm_sum)
    tgx_comm_sum(tgx_comm_context, data, n);
  if (scale != 1.0f)
    for (int64_t i = 0; i < n; ++i)
      data[i] *= scale;
}
/* ZeRO stage 1 (tg.reduce_scatter, tg.all_gather, tg.shard): `data` holds
   one row of `block` floats per rank. reduce_scatter leaves row r's sum
   over the ranks in data[0..block) on rank r; all_gather fills every row
   from the rank that owns it. Installed with tgx_set_sharded; without it
   (a single process, rank 0) row 0 is already the sum and the only row. */
typedef void (*tgx_rows_fn)(void *context, float *data, int64_t block);
static tgx_rows_fn tgx_comm_reduce_scatter, tgx_comm_all_gather;
static void *tgx_rows_context;
static int64_t tgx_comm_rank;
void tgx_set_sharded(tgx_rows_fn reduce_scatter, tgx_rows_fn all_gather,
                     void *context, int64_t rank) {
  tgx_comm_reduce_scatter = reduce_scatter;
  tgx_comm_all_gather = all_gather;
  tgx_rows_context = context;
  tgx_comm_rank = rank;
}
int64_t tgx_rank(int64_t comm) {
  tgx_check_comm(comm);
  return tgx_comm_rank;
}
void tgx_reduce_scatter_f32(int64_t comm, float *data, int64_t block,
                            float scale) {
  tgx_check_comm(comm);
  if (tgx_comm_reduce_scatter)
    tgx_comm_reduce_scatter(tgx_rows_context, data, block);
  if (scale != 1.0f)
    for (int64_t i = 0; i < block; ++i)
      data[i] *= scale;
}
void tgx_all_gather_f32(int64_t comm, float *data, int64_t block) {
  tgx_check_comm(comm);
  if (tgx_comm_all_gather)
    tgx_comm_all_gather(tgx_rows_context, data, block);
}
typedef struct { int64_t rank; void *descriptor; } tgx_unranked_memref;
void memrefCopy(int64_t elemSize, tgx_unranked_memref *src,
                tgx_unranked_memref *dst) {
  int64_t rank = src->rank;
  char **s = (char **)src->descriptor, **d = (char **)dst->descriptor;
  char *sp = s[1], *dp = d[1];
  int64_t *sm = (int64_t *)(s + 2), *dm = (int64_t *)(d + 2);
  int64_t so = sm[0], dof = dm[0];
  if (rank == 0) {
    memcpy(dp + dof * elemSize, sp + so * elemSize, elemSize);
    return;
  }
  int64_t *sizes = sm + 1, *sstr = sm + 1 + rank, *dstr = dm + 1 + rank;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  int64_t idx[64] = {0};
  if (rank > 64)
    return;
  for (;;) {
    memcpy(dp + dof * elemSize, sp + so * elemSize, elemSize);
    int64_t k = rank - 1;
    for (; k >= 0; --k) {
      ++idx[k];
      so += sstr[k];
      dof += dstr[k];
      if (idx[k] < sizes[k])
        break;
      so -= sstr[k] * sizes[k];
      dof -= dstr[k] * sizes[k];
      idx[k] = 0;
    }
    if (k < 0)
      return;
  }
}
