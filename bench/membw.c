/* Memory read bandwidth probe for the benchmark report: sums a 1 GiB buffer with N threads
 * (best of 5) and prints GB/s. Decode speed is bounded by bytes of weights per token / this.
 * Built with -O3 -march=native so the sum runs on the widest vectors (a scalar loop measured
 * 15 GB/s on one Zen 5 core, which streams ~40); the buffer asks for transparent huge pages,
 * as the engine's packed weights do. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define SIZE (1ull << 30)

struct job { const uint64_t* p; size_t n; uint64_t sum; };

static void* run(void* arg) {
  struct job* j = (struct job*)arg;
  uint64_t s[16] = {0};
  for (size_t i = 0; i + 16 <= j->n; i += 16) {
    for (int k = 0; k < 16; ++k) s[k] += j->p[i + (size_t)k];
  }
  uint64_t t = 0;
  for (int k = 0; k < 16; ++k) t += s[k];
  j->sum = t;
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  uint64_t* buf = (uint64_t*)mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED || threads < 1 || threads > 64) return 1;
#ifdef MADV_HUGEPAGE
  madvise(buf, SIZE, MADV_HUGEPAGE);
#endif
  memset(buf, 1, SIZE);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    pthread_t t[64];
    struct job j[64];
    size_t per = SIZE / 8 / (size_t)threads;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < threads; ++i) { j[i].p = buf + per * (size_t)i; j[i].n = per; pthread_create(&t[i], NULL, run, &j[i]); }
    for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    double gbs = (double)SIZE / s / 1e9;
    if (gbs > best) best = gbs;
    if (j[0].sum == 42) puts("");  /* keep the sums live */
  }
  printf("%.2f\n", best);
  munmap(buf, SIZE);
  return 0;
}
