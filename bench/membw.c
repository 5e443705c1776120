/* Memory read bandwidth probe for the benchmark report: sums a 1 GiB buffer with N threads
 * (best of 5) and prints GB/s. Decode speed is bounded by bytes of weights per token / this. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIZE (1ull << 30)

struct job { const uint64_t* p; size_t n; uint64_t sum; };

static void* run(void* arg) {
  struct job* j = (struct job*)arg;
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i + 4 <= j->n; i += 4) { s0 += j->p[i]; s1 += j->p[i + 1]; s2 += j->p[i + 2]; s3 += j->p[i + 3]; }
  j->sum = s0 + s1 + s2 + s3;
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  uint64_t* buf = (uint64_t*)malloc(SIZE);
  if (!buf || threads < 1 || threads > 64) return 1;
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
  free(buf);
  return 0;
}
